#include "iotrace/capture/perf_capture.h"

#include <dirent.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"
#include "iotrace/event/block_dev.h"

namespace iotrace {
namespace {

constexpr uint32_t kWatchedTag = 0xffffffffu;  // epoll tag of WatchFd's fd; rings use their index

int PerfEventOpen(perf_event_attr* attr, pid_t pid, int cpu, int group, unsigned long flags) {
  return static_cast<int>(syscall(SYS_perf_event_open, attr, pid, cpu, group, flags));
}

absl::Status PerfOpenError(int err, const std::string& event, int cpu) {
  absl::Status s = ErrnoError(err, "open perf event", absl::StrFormat("%s on CPU %d", event, cpu));
  switch (err) {
    case EACCES:
    case EPERM:
      return WithHint(s,
                      "run as root, or grant CAP_PERFMON (or lower "
                      "/proc/sys/kernel/perf_event_paranoid to -1)");
    case EMFILE:
    case ENFILE:
      return WithHint(s, "raise the open-file limit (ulimit -n) or record fewer events");
    case ENOENT:
    case ENODEV:
      return WithHint(s, "the kernel does not offer this event to perf");
    default:
      return s;
  }
}

}  // namespace

perf_event_attr TracepointAttr(uint32_t tracepoint_id, int clockid, uint32_t wakeup_bytes,
                               bool track_comm) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.size = sizeof(attr);
  attr.config = tracepoint_id;
  attr.sample_period = 1;
  // IDENTIFIER first, so any record's id sits at a fixed place (right after the header for
  // samples, last in sample_id for other records) whatever the other bits are.
  attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                     PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
  attr.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
  attr.disabled = 1;
  attr.sample_id_all = 1;
  attr.use_clockid = 1;
  attr.clockid = clockid;
  attr.watermark = 1;
  attr.wakeup_watermark = wakeup_bytes;
  attr.comm = track_comm ? 1 : 0;
  attr.comm_exec = track_comm ? 1 : 0;
  return attr;
}

absl::StatusOr<std::unique_ptr<PerfCapture>> PerfCapture::Open(
    const PerfCaptureOptions& options) {
  if (options.events.empty()) return absl::InvalidArgumentError("no events to record");
  uint32_t pages = options.mmap_pages;
  if (pages == 0 || (pages & (pages - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--mmap-pages %u is not a power of two", pages));
  }
  std::unique_ptr<PerfCapture> cap(new PerfCapture());
  cap->cpus_ = options.cpus;
  if (cap->cpus_.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(cap->cpus_, OnlineCpus());
  }
  const size_t ncpu = cap->cpus_.size();
  const size_t page_size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t data_size = size_t{pages} * page_size;
  // Wake up when a quarter of the ring is full: few wakeups, and three quarters of headroom
  // for the time it takes us to drain.
  const uint32_t wakeup = static_cast<uint32_t>(data_size / 4);

  cap->epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!cap->epoll_.valid()) return ErrnoError(errno, "create", "epoll");

  cap->fds_.resize(options.events.size() * ncpu);
  cap->counts_.resize(options.events.size() * ncpu);
  cap->ring_counts_.resize(ncpu);
  for (size_t e = 0; e < options.events.size(); ++e) {
    const TraceEventInfo& ev = options.events[e];
    CapturedEvent ce;
    ce.name = ev.FullName();
    ce.tracepoint_id = ev.id;
    // COMM records (exec'd process names) come once per CPU, through the first event.
    ce.attr = TracepointAttr(ev.id, options.clockid, wakeup, /*track_comm=*/e == 0);
    cap->events_.push_back(ce);
  }
  for (size_t c = 0; c < ncpu; ++c) {
    const int cpu = cap->cpus_[c];
    std::vector<uint64_t> ring_ids;
    int leader = -1;
    for (size_t e = 0; e < options.events.size(); ++e) {
      CapturedEvent& ce = cap->events_[e];
      perf_event_attr attr = ce.attr;
      int fd = PerfEventOpen(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
      if (fd < 0) return PerfOpenError(errno, ce.name, cpu);
      cap->fds_[e * ncpu + c].Reset(fd);
      uint64_t id = 0;
      if (ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
        return ErrnoError(errno, "read perf event id of", ce.name);
      }
      ce.ids.push_back(id);
      ring_ids.push_back(id);
      if (!options.dev_filter.empty() && HasBlockDevField(options.events[e].format)) {
        if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, options.dev_filter.c_str()) != 0) {
          return ErrnoError(errno, "set filter '" + options.dev_filter + "' on", ce.name);
        }
      }
      if (leader < 0) {
        void* addr = mmap(nullptr, page_size + data_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (addr == MAP_FAILED) {
          int err = errno;
          absl::Status s = ErrnoError(
              err, "map perf ring", absl::StrFormat("of %zu KiB on CPU %d", data_size / 1024, cpu));
          if (err == EPERM || err == ENOMEM) {
            return WithHint(s, "use a smaller ring (-m/--mmap-pages) or raise "
                               "/proc/sys/kernel/perf_event_mlock_kb");
          }
          return s;
        }
        cap->maps_.emplace_back(addr, page_size + data_size);
        leader = fd;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u32 = static_cast<uint32_t>(c);
        if (epoll_ctl(cap->epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
          return ErrnoError(errno, "add perf ring to", "epoll");
        }
      } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, leader) != 0) {
        return ErrnoError(errno, "redirect perf event into the ring of", ce.name);
      }
    }
    cap->rings_.push_back(std::make_unique<PerfRing>(cap->maps_.back().addr(), page_size,
                                                     data_size, std::move(ring_ids)));
  }
  return cap;
}

PerfCapture::~PerfCapture() {
  // Disable before the fds close so no event fires into a ring being unmapped.
  (void)Disable();
}

absl::Status PerfCapture::Enable() {
  for (const UniqueFd& fd : fds_) {
    if (fd.valid() && ioctl(fd.get(), PERF_EVENT_IOC_ENABLE, 0) != 0) {
      return ErrnoError(errno, "enable", "perf event");
    }
  }
  return absl::OkStatus();
}

absl::Status PerfCapture::Disable() {
  absl::Status first;
  for (const UniqueFd& fd : fds_) {
    if (fd.valid() && ioctl(fd.get(), PERF_EVENT_IOC_DISABLE, 0) != 0 && first.ok()) {
      first = ErrnoError(errno, "disable", "perf event");
    }
  }
  return first;
}

absl::Status PerfCapture::WatchFd(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = kWatchedTag;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    return ErrnoError(errno, "add fd to", "epoll");
  }
  return absl::OkStatus();
}

absl::Status PerfCapture::UnwatchFd(int fd) {
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr) != 0) {
    return ErrnoError(errno, "remove fd from", "epoll");
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> PerfCapture::Wait(int timeout_ms) {
  epoll_event evs[16];
  int n = epoll_wait(epoll_.get(), evs, 16, timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return false;
    return ErrnoError(errno, "wait on", "perf rings");
  }
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.u32 == kWatchedTag) return true;
  }
  return false;
}

absl::Status PerfCapture::DrainAll(
    absl::FunctionRef<absl::Status(int cpu, ByteView, ByteView)> sink) {
  for (size_t c = 0; c < rings_.size(); ++c) {
    const int cpu = cpus_[c];
    IOTRACE_RETURN_IF_ERROR(rings_[c]->Drain(
        [&](ByteView a, ByteView b) { return sink(cpu, a, b); }, &ring_counts_[c]));
    CountSamples(c);
  }
  return absl::OkStatus();
}

void PerfCapture::CountSamples(size_t c) {
  const size_t ncpu = cpus_.size();
  for (size_t e = 0; e < events_.size(); ++e) {
    counts_[e * ncpu + c].samples = ring_counts_[c].samples.size() > e
                                        ? ring_counts_[c].samples[e]
                                        : 0;
  }
}

void PerfCapture::CountReadSamples() {
  for (size_t c = 0; c < rings_.size(); ++c) CountSamples(c);
}

absl::Status PerfCapture::ReadCounts() {
  const size_t ncpu = cpus_.size();
  for (size_t i = 0; i < fds_.size(); ++i) {
    // read_format ID|LOST: { u64 value; u64 id; u64 lost; }
    uint64_t buf[3] = {0, 0, 0};
    ssize_t n = read(fds_[i].get(), buf, sizeof(buf));
    if (n != static_cast<ssize_t>(sizeof(buf))) {
      return ErrnoError(n < 0 ? errno : EIO, "read count of", events_[i / ncpu].name);
    }
    counts_[i].kernel_count = buf[0];
    counts_[i].ring_lost = buf[2];
  }
  return absl::OkStatus();
}

uint64_t PerfCapture::bytes_drained() const {
  uint64_t total = 0;
  for (const RingCounts& rc : ring_counts_) total += rc.bytes;
  return total;
}

uint64_t PerfCapture::bad_headers() const {
  uint64_t total = 0;
  for (const RingCounts& rc : ring_counts_) total += rc.bad_headers;
  return total;
}

std::vector<PerfEventSpec> PerfEventSpecs(const PerfCapture& capture) {
  std::vector<PerfEventSpec> specs;
  for (const CapturedEvent& ce : capture.events()) {
    PerfEventSpec spec;
    spec.attr = ce.attr;
    spec.name = ce.name;
    spec.ids = ce.ids;
    specs.push_back(std::move(spec));
  }
  return specs;
}

absl::Status WriteExistingComms(PerfDataWriter* writer, const CapturedEvent& first_event,
                                int first_cpu) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return absl::OkStatus();
  while (dirent* e = readdir(proc)) {
    int pid = atoi(e->d_name);
    if (pid <= 0) continue;
    auto comm = ReadFileToString(absl::StrFormat("/proc/%d/comm", pid));
    if (!comm.ok()) continue;
    std::string name = *comm;
    while (!name.empty() && name.back() == '\n') name.pop_back();
    perf::SampleId id;
    id.pid = id.tid = static_cast<uint32_t>(pid);
    id.id = first_event.ids[0];
    id.cpu = static_cast<uint32_t>(first_cpu);
    absl::Status s = writer->AppendComm(pid, pid, name, id);
    if (!s.ok()) {
      closedir(proc);
      return s;
    }
  }
  closedir(proc);
  return absl::OkStatus();
}

}  // namespace iotrace
