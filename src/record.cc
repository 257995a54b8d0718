#include "iotrace/record.h"

#include <dirent.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <memory>
#include <optional>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/block_dev.h"
#include "iotrace/perf_capture.h"
#include "iotrace/perf_data_writer.h"
#include "iotrace/process.h"
#include "iotrace/status.h"
#include "iotrace/tracefs.h"

namespace iotrace {
namespace {

uint64_t NowNs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}


// Blocks the signals the recorder handles and reads them from a signalfd instead, so that the
// run loop, not a handler, decides what to do; restores the old mask when done.
class SignalGuard {
 public:
  SignalGuard() {
    sigemptyset(&set_);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set_, s);
    sigprocmask(SIG_BLOCK, &set_, &old_);
    fd_.Reset(signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ~SignalGuard() {
    fd_.Reset();
    // Drop what is pending for signals we handled (SIGCHLD), then restore.
    sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  int fd() const { return fd_.get(); }
  // Reads pending signals; returns the last terminating one (0 if none).
  int Read(bool* child_changed) {
    int term = 0;
    signalfd_siginfo si;
    while (read(fd_.get(), &si, sizeof(si)) == sizeof(si)) {
      if (si.ssi_signo == SIGCHLD) {
        *child_changed = true;
      } else {
        term = static_cast<int>(si.ssi_signo);
      }
    }
    return term;
  }

 private:
  sigset_t set_, old_;
  UniqueFd fd_;
};

std::string SignalName(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return absl::StrFormat("signal %d", sig);
  }
}

absl::StatusOr<std::string> BuildDevFilter(const std::vector<std::string>& devs) {
  std::vector<std::string> terms;
  for (const std::string& d : devs) {
    auto dev = ParseDevSpec(d);
    if (!dev.ok()) return dev.status();
    // The dev field holds the kernel encoding (MAJOR << 20 | MINOR), not glibc's makedev.
    terms.push_back(absl::StrFormat("dev == %u", *dev));
  }
  return absl::StrJoin(terms, " || ");
}

// Process names for every running process, so that perf script and iotrace report can name
// the pids seen in samples (exec'd later ones come from the kernel's COMM records).
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

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  void Update(double seconds, uint64_t events, uint64_t bytes, uint64_t lost, uint64_t silent) {
    if (!enabled_) return;
    double dt = seconds - last_s_;
    if (dt < 1.0 && last_s_ > 0) return;
    double rate = dt > 0 ? (events - last_events_) / dt : 0;
    last_s_ = seconds;
    last_events_ = events;
    std::fprintf(stderr, "\r\033[K[%6.1fs] %9.0f events/s  %8s written  lost %llu (ring %llu, silent %llu)",
                 seconds, rate, HumanBytes(bytes).c_str(),
                 static_cast<unsigned long long>(lost + silent),
                 static_cast<unsigned long long>(lost), static_cast<unsigned long long>(silent));
    shown_ = true;
  }
  void Clear() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
  double last_s_ = 0;
  uint64_t last_events_ = 0;
};

struct PerfRunState {
  std::vector<uint64_t> silent_reported;  // [event * ncpu + cpu]: LOST_SAMPLES written so far
};

// Writes LOST_SAMPLES records for silent drops found since the last call. The estimate taken
// mid-run (counts read before the drain) never exceeds the truth, so reporting only increases
// keeps the file's total equal to the exact figure computed after the final drain.
absl::Status WriteSilentDrops(PerfCapture& cap, PerfDataWriter& writer, PerfRunState& st,
                              uint64_t now_ns) {
  const size_t ncpu = cap.cpus().size();
  for (size_t e = 0; e < cap.events().size(); ++e) {
    for (size_t c = 0; c < ncpu; ++c) {
      uint64_t silent = cap.counts(e, c).Silent();
      uint64_t& reported = st.silent_reported[e * ncpu + c];
      if (silent > reported) {
        perf::SampleId id;
        id.pid = id.tid = static_cast<uint32_t>(-1);
        id.time = now_ns;
        id.id = cap.events()[e].ids[c];
        id.cpu = static_cast<uint32_t>(cap.cpus()[c]);
        IOTRACE_RETURN_IF_ERROR(writer.AppendLostSamples(e, silent - reported, id));
        reported = silent;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

absl::StatusOr<int> RecordWithPerf(const RecordOptions& opt, const std::string& tracefs,
                                   std::vector<TraceEventInfo> events, const std::string& filter,
                                   RecordSummary* summary) {
  PerfCaptureOptions copt;
  copt.events = events;
  copt.mmap_pages = opt.mmap_pages;
  copt.dev_filter = filter;
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<PerfCapture> cap, PerfCapture::Open(copt));
  IOTRACE_ASSIGN_OR_RETURN(TracingMetadata meta, CollectTracingMetadata(tracefs, events));

  std::optional<GatedChild> child;
  if (!opt.command.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(GatedChild c, GatedChild::Start(opt.command));
    child.emplace(std::move(c));
  }

  std::vector<PerfEventSpec> specs;
  for (const CapturedEvent& ce : cap->events()) {
    PerfEventSpec spec;
    spec.attr = ce.attr;
    spec.name = ce.name;
    spec.ids = ce.ids;
    specs.push_back(std::move(spec));
  }
  HostInfo host = HostInfo::FromThisMachine(opt.argv);
  host.nr_cpus_online = static_cast<uint32_t>(cap->cpus().size());
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<PerfDataWriter> writer,
                           PerfDataWriter::Create(summary->output, specs, meta, host));
  IOTRACE_RETURN_IF_ERROR(WriteExistingComms(writer.get(), cap->events()[0], cap->cpus()[0]));

  SignalGuard signals;
  IOTRACE_RETURN_IF_ERROR(cap->WatchFd(signals.fd()));
  PerfRunState st;
  st.silent_reported.assign(cap->events().size() * cap->cpus().size(), 0);
  ProgressLine progress(opt.progress < 0 ? isatty(STDERR_FILENO) : opt.progress > 0);

  IOTRACE_RETURN_IF_ERROR(cap->Enable());
  const uint64_t start_ns = NowNs(CLOCK_MONOTONIC);
  if (child) {
    absl::Status s = child->Release();
    if (!s.ok()) {
      (void)cap->Disable();
      (void)writer->Finish();
      return WithHint(s, "check the command after --");
    }
  }

  auto drain = [&]() -> absl::Status {
    IOTRACE_RETURN_IF_ERROR(
        cap->DrainAll([&](int, ByteView a, ByteView b) { return writer->AppendData(a, b); }));
    return writer->AppendFinishedRound();
  };

  absl::Status failure;
  uint64_t last_check_ns = start_ns;
  for (;;) {
    uint64_t now = NowNs(CLOCK_MONOTONIC);
    double elapsed = (now - start_ns) / 1e9;
    if (opt.duration_s > 0 && elapsed >= opt.duration_s) {
      summary->stop_reason = "duration";
      break;
    }
    int timeout_ms = 250;
    if (opt.duration_s > 0) {
      double left_ms = (opt.duration_s - elapsed) * 1000.0;
      timeout_ms = static_cast<int>(std::clamp(left_ms, 0.0, 250.0)) + 1;
    }
    auto woke = cap->Wait(timeout_ms);
    if (!woke.ok()) {
      failure = woke.status();
      break;
    }
    bool child_changed = false;
    int sig = *woke ? signals.Read(&child_changed) : 0;
    if (sig != 0) {
      summary->stop_reason = SignalName(sig);
      // A terminal's Ctrl-C reached the command already; a SIGTERM sent to us alone is passed on.
      if (child && sig != SIGINT) child->Signal(sig);
      break;
    }
    if (child && (child_changed || !*woke) && child->Poll()) {
      summary->stop_reason = "command exit";
      break;
    }
    // Silent-drop check about once a second: counts first, then the drain (see WriteSilentDrops).
    now = NowNs(CLOCK_MONOTONIC);
    bool check = now - last_check_ns >= 1000000000ull;
    if (check) {
      failure = cap->ReadCounts();
      if (!failure.ok()) break;
    }
    failure = drain();
    if (!failure.ok()) break;
    if (check) {
      last_check_ns = now;
      failure = WriteSilentDrops(*cap, *writer, st, NowNs(CLOCK_MONOTONIC));
      if (!failure.ok()) break;
      uint64_t events = 0, lost = 0, silent = 0;
      for (size_t e = 0; e < cap->events().size(); ++e) {
        for (size_t c = 0; c < cap->cpus().size(); ++c) {
          events += cap->counts(e, c).samples;
          lost += cap->counts(e, c).ring_lost;
          silent += cap->counts(e, c).Silent();
        }
      }
      progress.Update((now - start_ns) / 1e9, events, writer->data_size(), lost, silent);
    }
  }
  progress.Clear();

  // Stop the kernel first, then take the final counts, then empty the rings: after this the
  // books are exact.
  absl::Status s = cap->Disable();
  if (failure.ok()) failure = s;
  const uint64_t end_ns = NowNs(CLOCK_MONOTONIC);
  s = cap->ReadCounts();
  if (failure.ok()) failure = s;
  if (!writer->disk_full()) {
    s = drain();
    if (failure.ok()) failure = s;
    if (!writer->disk_full()) {
      s = WriteSilentDrops(*cap, *writer, st, end_ns);
      if (failure.ok()) failure = s;
    }
  }
  s = writer->Finish();
  if (failure.ok()) failure = s;

  summary->seconds = (end_ns - start_ns) / 1e9;
  struct stat out_stat;
  summary->output_bytes =
      ::stat(summary->output.c_str(), &out_stat) == 0 ? uint64_t(out_stat.st_size) : 0;
  summary->disk_full = writer->disk_full();
  for (size_t e = 0; e < cap->events().size(); ++e) {
    EventSummary row;
    row.name = cap->events()[e].name;
    for (size_t c = 0; c < cap->cpus().size(); ++c) {
      const EventCpuCounts& k = cap->counts(e, c);
      row.recorded += k.samples;
      row.kernel_count += k.kernel_count;
      row.ring_lost += k.ring_lost;
      // What the file says was dropped silently; once the disk is full the rest of the
      // difference was counted by the kernel but never written.
      uint64_t silent_in_file = st.silent_reported[e * cap->cpus().size() + c];
      row.silent += silent_in_file;
      row.unwritten += k.Silent() - std::min(k.Silent(), silent_in_file);
    }
    summary->events.push_back(row);
  }
  if (child) {
    child->Wait();
  }
  if (summary->disk_full) {
    return WithHint(
        absl::ResourceExhaustedError(absl::StrFormat(
            "disk full while writing %s: recording stopped after %.1f s; the file is valid and "
            "holds the %s written before",
            summary->output, summary->seconds, HumanBytes(summary->output_bytes))),
        "free space or record to another filesystem with -o");
  }
  if (!failure.ok()) return failure;
  return child ? child->exit_code() : 0;
}

}  // namespace

absl::StatusOr<int> RunRecord(const RecordOptions& opt, RecordSummary* summary) {
  IOTRACE_RETURN_IF_ERROR(CheckRecordPrivileges());
  IOTRACE_ASSIGN_OR_RETURN(std::string filter, BuildDevFilter(opt.devs));
  if (!opt.command.empty()) {
    // Before anything is created: a command that cannot run is a plain error.
    auto exe = FindExecutable(opt.command[0]);
    if (!exe.ok()) return AsUsageError(WithHint(exe.status(), "check the command after --"));
  }
  IOTRACE_ASSIGN_OR_RETURN(std::string tracefs, FindTracefs(opt.tracefs_dir));
  auto resolved = ResolveEvents(tracefs, opt.events);
  if (!resolved.ok()) {
    // An event that does not exist is a mistake in the command line.
    return resolved.status().code() == absl::StatusCode::kNotFound
               ? AsUsageError(resolved.status())
               : resolved.status();
  }
  std::vector<TraceEventInfo> events = std::move(*resolved);

  Backend backend = opt.backend;
  summary->backend_reason = "chosen with --backend";
  if (backend == Backend::kAuto) {
    backend = Backend::kPerf;
    summary->backend_reason = "the only backend built so far";
  }
  summary->backend = backend;
  summary->output = opt.output.empty()
                        ? (backend == Backend::kFtrace ? "iotrace.dat" : "iotrace.data")
                        : opt.output;
  if (backend == Backend::kFtrace) {
    return absl::UnimplementedError("the ftrace backend is not built yet");
  }
  return RecordWithPerf(opt, tracefs, std::move(events), filter, summary);
}

}  // namespace iotrace
