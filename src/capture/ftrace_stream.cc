#include "iotrace/capture/ftrace_stream.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"

namespace iotrace {

static_assert(offsetof(TraceBufferMeta, reader_lost_events) == 16);
static_assert(offsetof(TraceBufferMeta, reader_id) == 24);
static_assert(offsetof(TraceBufferMeta, reader_read) == 28);
static_assert(offsetof(TraceBufferMeta, entries) == 40);

const char* FtraceIngestName(FtraceIngest ingest) {
  switch (ingest) {
    case FtraceIngest::kAuto:
      return "auto";
    case FtraceIngest::kMmap:
      return "mmap";
    case FtraceIngest::kRead:
      return "read";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<FtraceStream>> FtraceStream::Create(FtraceStreamOptions options) {
  std::unique_ptr<FtraceStream> s(new FtraceStream());
  IOTRACE_ASSIGN_OR_RETURN(FtraceInstanceSetup setup, SetUpFtraceInstance(options.capture));
  options.capture.cpus = setup.cpus;
  s->options_ = options;
  s->cpus_ = setup.cpus;
  s->instance_ = std::move(setup.instance);
  s->layout_ = setup.layout;
  s->clock_ = setup.clock;
  s->meta_ = setup.meta;
  if (!options.capture.output.empty()) {
    TraceDatWriterOptions wopts;
    wopts.meta = setup.meta;
    wopts.nr_cpus = *std::max_element(s->cpus_.begin(), s->cpus_.end()) + 1;
    wopts.trace_clock = setup.clock;
    wopts.recorder = options.capture.recorder;
    IOTRACE_ASSIGN_OR_RETURN(s->writer_,
                             TraceDatWriter::Create(options.capture.output, std::move(wopts)));
  }
  s->cpu_state_.resize(s->cpus_.size());
  for (size_t i = 0; i < s->cpus_.size(); ++i) {
    Cpu& c = s->cpu_state_[i];
    c.cpu = s->cpus_[i];
    c.result.cpu = c.cpu;
    const std::string raw = s->instance_->PerCpuPath(c.cpu, "trace_pipe_raw");
    c.raw = UniqueFd(::open(raw.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (!c.raw.valid()) return ErrnoError(errno, "open", raw);
  }
  s->ingest_ = FtraceIngest::kRead;
  if (options.ingest != FtraceIngest::kRead) {
    absl::Status mapped = absl::OkStatus();
    for (Cpu& c : s->cpu_state_) {
      mapped = s->MapCpu(c);
      if (!mapped.ok()) break;
    }
    if (mapped.ok()) {
      s->ingest_ = FtraceIngest::kMmap;
    } else {
      if (options.ingest == FtraceIngest::kMmap) {
        return Annotate(mapped, "memory-map the ring buffer (--ingest mmap; the kernel maps "
                                "trace_pipe_raw from Linux 6.10)");
      }
      s->mmap_refused_ = std::string(mapped.message());
      for (Cpu& c : s->cpu_state_) {
        c.map.Reset();
        c.meta = nullptr;
      }
    }
  }
  for (Cpu& c : s->cpu_state_) {
    if (s->ingest_ == FtraceIngest::kRead) c.page.resize(s->layout_.page_size);
    if (s->ingest_ == FtraceIngest::kMmap && s->writer_ != nullptr) {
      c.staged.resize(s->layout_.page_size);
    }
  }
  return s;
}

FtraceStream::~FtraceStream() {
  if (!finished_ && instance_ != nullptr) (void)Finish();
}

absl::Status FtraceStream::MapCpu(Cpu& c) {
  const long system_page = ::sysconf(_SC_PAGESIZE);
  void* first = ::mmap(nullptr, system_page, PROT_READ, MAP_SHARED, c.raw.get(), 0);
  if (first == MAP_FAILED) {
    return ErrnoError(errno, absl::StrFormat("mmap CPU %d", c.cpu), "trace_pipe_raw");
  }
  TraceBufferMeta m;
  std::memcpy(&m, first, sizeof(m));
  ::munmap(first, system_page);
  if (m.meta_page_size == 0 || m.subbuf_size != layout_.page_size || m.nr_subbufs == 0 ||
      m.meta_struct_len < sizeof(TraceBufferMeta)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "CPU %d's meta page is not understood (meta page %u bytes, struct %u, sub-buffers %u x "
        "%u bytes; header_page says %u)",
        c.cpu, m.meta_page_size, m.meta_struct_len, m.nr_subbufs, m.subbuf_size,
        layout_.page_size));
  }
  const size_t size = size_t{m.meta_page_size} + size_t{m.nr_subbufs} * m.subbuf_size;
  void* all = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, c.raw.get(), 0);
  if (all == MAP_FAILED) {
    return ErrnoError(errno, absl::StrFormat("mmap CPU %d", c.cpu), "trace_pipe_raw");
  }
  c.map = UniqueMapping(all, size);
  c.meta = static_cast<const volatile TraceBufferMeta*>(all);
  return absl::OkStatus();
}

absl::Status FtraceStream::Start() { return instance_->SetTracingOn(true); }
absl::Status FtraceStream::Pause() { return instance_->SetTracingOn(false); }

absl::StatusOr<bool> FtraceStream::Wait(int timeout_ms) {
  std::vector<int> raw;
  raw.reserve(cpu_state_.size());
  for (const Cpu& c : cpu_state_) raw.push_back(c.raw.get());
  return WaitForFtraceData(watched_, raw, timeout_ms);
}

ByteView FtraceStream::ReaderPage(const Cpu& c) const {
  const auto* base = static_cast<const uint8_t*>(c.map.addr());
  const size_t off = size_t{c.meta->meta_page_size} + size_t{c.meta->subbuf_size} * c.reader_id;
  return ByteView(base + off, layout_.page_size);
}

void FtraceStream::Store(Cpu& c, ByteView page) {
  if (writer_ == nullptr || disk_full_) return;
  uint64_t commit = 0;
  LoadUnsigned(page, layout_.commit_offset, layout_.commit_size, &commit);
  if ((commit & kRbCommitSizeMask) == 0 && (commit & kRbMissedEvents) == 0) return;
  absl::Status s = writer_->AppendPages(c.cpu, page);
  if (!s.ok()) {
    disk_full_ = true;
    storage_error_ = s;
  }
}

absl::StatusOr<PageUpdate> FtraceStream::NextMapped(Cpu& c, ByteView* page) {
  const bool had = c.reader_id >= 0;
  if (had && writer_ != nullptr) {
    ByteView now = ReaderPage(c);
    std::memcpy(c.staged.data(), now.data, now.size);
  }
  for (;;) {
    if (::ioctl(c.raw.get(), kTraceMmapIoctlGetReader) == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return PageUpdate::kNone;
    return ErrnoError(errno, absl::StrFormat("get the reader sub-buffer of CPU %d from", c.cpu),
                      "trace_pipe_raw");
  }
  ++c.result.ioctls;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  const int64_t id = c.meta->reader_id;
  if (id >= c.meta->nr_subbufs) {
    return absl::DataLossError(absl::StrFormat(
        "CPU %d's meta page names sub-buffer %d of %u", c.cpu, id, c.meta->nr_subbufs));
  }
  if (had && id == c.reader_id) {
    *page = ReaderPage(c);
    return PageUpdate::kGrown;
  }
  if (had && writer_ != nullptr) {
    Store(c, ByteView(reinterpret_cast<const uint8_t*>(c.staged.data()), c.staged.size()));
  }
  c.reader_id = id;
  c.result.lost_meta += c.meta->reader_lost_events;
  ++c.result.pages;
  *page = ReaderPage(c);
  return PageUpdate::kNew;
}

absl::StatusOr<PageUpdate> FtraceStream::NextRead(Cpu& c, ByteView* page) {
  for (;;) {
    ssize_t n = ::read(c.raw.get(), c.page.data(), c.page.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return PageUpdate::kNone;
    if (n < 0) {
      return ErrnoError(errno, absl::StrFormat("read CPU %d pages from", c.cpu), "trace_pipe_raw");
    }
    if (n == 0) return PageUpdate::kNone;
    if (static_cast<size_t>(n) < c.page.size()) std::memset(c.page.data() + n, 0, c.page.size() - n);
    ++c.result.pages;
    *page = ByteView(reinterpret_cast<const uint8_t*>(c.page.data()), c.page.size());
    Store(c, *page);
    return PageUpdate::kNew;
  }
}

absl::StatusOr<PageUpdate> FtraceStream::Next(size_t index, ByteView* page) {
  Cpu& c = cpu_state_[index];
  return ingest_ == FtraceIngest::kMmap ? NextMapped(c, page) : NextRead(c, page);
}

absl::StatusOr<CpuBufferStats> FtraceStream::ReadCpuStats(size_t index) const {
  return instance_->ReadCpuStats(cpus_[index]);
}

absl::StatusOr<FtraceStreamResult> FtraceStream::Finish() {
  if (finished_) return absl::FailedPreconditionError("ftrace stream: Finish called twice");
  finished_ = true;
  FtraceStreamResult result;
  result.instance = instance_->name();
  result.ingest = FtraceIngestName(ingest_);
  result.clock = clock_;
  absl::Status status = instance_->SetTracingOn(false);
  for (Cpu& c : cpu_state_) {
    // The page being read last: what it holds now goes into the file.
    if (ingest_ == FtraceIngest::kMmap && c.reader_id >= 0) Store(c, ReaderPage(c));
    auto stats = instance_->ReadCpuStats(c.cpu);
    if (stats.ok()) {
      c.result.stats = *stats;
      if (writer_ != nullptr) writer_->SetCpuStats(c.cpu, stats->text);
    } else if (status.ok()) {
      status = stats.status();
    }
    result.cpus.push_back(c.result);
  }
  if (writer_ != nullptr) writer_->SetSavedCmdlines(ReadSavedCmdlines(options_.capture.tracefs));
  for (Cpu& c : cpu_state_) {
    c.map.Reset();
    c.meta = nullptr;
    c.raw.Reset();
  }
  absl::Status removed = instance_->Remove();
  if (status.ok()) status = removed;
  result.cleanup_error = status;
  result.disk_full = disk_full_;
  result.storage_error = storage_error_;
  if (writer_ != nullptr) {
    auto written = writer_->Finish();
    if (!written.ok()) return written.status();
    result.output_bytes = written->file_size;
    if (!written->storage_error.ok()) {
      result.disk_full = true;
      if (result.storage_error.ok()) result.storage_error = written->storage_error;
    }
  }
  return result;
}

}  // namespace iotrace
