#include "iotrace/capture/record.h"

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
#include "iotrace/base/clock.h"
#include "iotrace/base/gated_child.h"
#include "iotrace/base/status.h"
#include "iotrace/capture/backend_check.h"
#include "iotrace/capture/ftrace_capture.h"
#include "iotrace/capture/perf_capture.h"
#include "iotrace/capture/record_control.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/formats/perf_data_writer.h"
#include "iotrace/sys/host_info.h"
#include "iotrace/sys/probe.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {
namespace {


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

// What the progress line and the loop need to know about a running capture.
struct CaptureProgress {
  uint64_t events = 0;       // events so far (0 when the backend does not know: ftrace)
  bool events_known = true;
  uint64_t bytes = 0;        // bytes written to the output
  uint64_t ring_lost = 0;    // reported lost so far
  uint64_t silent = 0;       // silently dropped so far (perf)
};

// The two backends as the run loop sees them.
class RunningCapture {
 public:
  virtual ~RunningCapture() = default;
  virtual absl::Status WatchFd(int fd) = 0;
  virtual absl::Status UnwatchFd(int fd) = 0;
  // Turns the events on or off in the kernel (--delay, --control); the output stays open.
  virtual absl::Status SetEnabled(bool on) = 0;
  // Waits for data, a watched fd (true), or the timeout.
  virtual absl::StatusOr<bool> Wait(int timeout_ms) = 0;
  // Moves what is there to the output; `check` (about once a second) also refreshes the
  // loss books (and writes what they found into the output).
  virtual absl::Status Drain(bool check) = 0;
  virtual CaptureProgress Progress() const = 0;
  virtual bool disk_full() const = 0;
};

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  void Update(double seconds, const CaptureProgress& p) {
    if (!enabled_) return;
    double dt = seconds - last_s_;
    if (dt < 1.0) return;
    std::string rate = p.events_known
                           ? absl::StrFormat("%9.0f events/s", (p.events - last_events_) / dt)
                           : absl::StrFormat("%9s/s", HumanBytes((p.bytes - last_bytes_) / dt));
    last_s_ = seconds;
    last_events_ = p.events;
    last_bytes_ = p.bytes;
    std::fprintf(stderr, "\r\033[K[%6.1fs] %s  %9s written  lost %llu (ring %llu, silent %llu)",
                 seconds, rate.c_str(), HumanBytes(p.bytes).c_str(),
                 static_cast<unsigned long long>(p.ring_lost + p.silent),
                 static_cast<unsigned long long>(p.ring_lost),
                 static_cast<unsigned long long>(p.silent));
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
  uint64_t last_bytes_ = 0;
};

// Runs until the duration passes, the command exits or a signal arrives; the capture is enabled
// and the command released by the caller. Returns the first failure (disk full included).
// Events on or off (--delay, --control), and how long they were off.
class EventSwitch {
 public:
  EventSwitch(RunningCapture& cap, bool on, uint64_t now_ns)
      : cap_(cap), on_(on), off_since_ns_(now_ns) {}
  bool on() const { return on_; }
  absl::Status Set(bool on, uint64_t now_ns) {
    if (on == on_) return absl::OkStatus();
    IOTRACE_RETURN_IF_ERROR(cap_.SetEnabled(on));
    on_ = on;
    if (on) {
      off_ns_ += now_ns - off_since_ns_;
    } else {
      off_since_ns_ = now_ns;
    }
    return absl::OkStatus();
  }
  double OffSeconds(uint64_t now_ns) const {
    return (off_ns_ + (on_ ? 0 : now_ns - off_since_ns_)) / 1e9;
  }

 private:
  RunningCapture& cap_;
  bool on_;
  uint64_t off_since_ns_;
  uint64_t off_ns_ = 0;
};

// Carries out what the --control client sent. True when it asked to stop.
absl::StatusOr<bool> ServeControl(ControlChannel*& control, RunningCapture& cap,
                                  EventSwitch& events) {
  std::vector<std::string> lines;
  auto open = control->Read(&lines);
  if (!open.ok()) return open.status();
  bool stop = false;
  for (const std::string& line : lines) {
    switch (ParseControlCommand(line)) {
      case ControlCommand::kEnable:
        IOTRACE_RETURN_IF_ERROR(events.Set(true, MonotonicNs()));
        break;
      case ControlCommand::kDisable:
        IOTRACE_RETURN_IF_ERROR(events.Set(false, MonotonicNs()));
        break;
      case ControlCommand::kStop:
        stop = true;
        break;
      case ControlCommand::kPing:
        break;
      case ControlCommand::kUnknown:
        // Not answered, as perf does not answer what it does not know.
        std::fprintf(stderr,
                     "iotrace: warning: --control: unknown command '%s' (enable, disable, stop, "
                     "ping)\n",
                     line.c_str());
        continue;
    }
    control->Ack();
  }
  if (!*open) {
    // The client closed the channel: recording goes on as it is.
    IOTRACE_RETURN_IF_ERROR(cap.UnwatchFd(control->fd()));
    control = nullptr;
  }
  return stop;
}

// Runs until the duration passes, the command exits, a signal arrives or the --control client
// says stop. The caller released the command and enabled the events unless --delay holds them.
absl::Status RunLoop(const RecordOptions& opt, RunningCapture& cap, SignalGuard& signals,
                     GatedChild* child, ControlChannel* control, uint64_t start_ns,
                     RecordSummary* summary) {
  ProgressLine progress(opt.progress < 0 ? isatty(STDERR_FILENO) : opt.progress > 0);
  uint64_t last_check_ns = start_ns;
  EventSwitch events(cap, opt.delay_ms == 0, start_ns);
  bool delay_pending = opt.delay_ms > 0;
  absl::Status failure;
  for (;;) {
    uint64_t now = MonotonicNs();
    double elapsed = (now - start_ns) / 1e9;
    if (opt.duration_s > 0 && elapsed >= opt.duration_s) {
      summary->stop_reason = "duration";
      break;
    }
    double wait_ms = 250;
    if (opt.duration_s > 0) wait_ms = std::min(wait_ms, (opt.duration_s - elapsed) * 1000.0);
    if (delay_pending) {
      double left_ms = opt.delay_ms - elapsed * 1000.0;
      if (left_ms <= 0) {
        failure = events.Set(true, now);
        if (!failure.ok()) break;
        delay_pending = false;
      } else {
        wait_ms = std::min(wait_ms, left_ms);
      }
    }
    auto woke = cap.Wait(static_cast<int>(std::max(wait_ms, 0.0)) + 1);
    if (!woke.ok()) {
      failure = woke.status();
      break;
    }
    bool child_changed = false;
    int sig = *woke ? signals.Read(&child_changed) : 0;
    if (sig != 0) {
      summary->stop_reason = SignalName(sig);
      summary->stop_signal = sig;
      // A terminal's Ctrl-C reached the command already; a SIGTERM sent to us alone is passed on.
      if (child != nullptr && sig != SIGINT) child->Signal(sig);
      break;
    }
    if (control != nullptr && *woke) {
      auto stop = ServeControl(control, cap, events);
      if (!stop.ok()) {
        failure = stop.status();
        break;
      }
      if (*stop) {
        summary->stop_reason = "--control stop";
        break;
      }
    }
    if (child != nullptr && (child_changed || !*woke) && child->Poll()) {
      summary->stop_reason = "command exit";
      break;
    }
    now = MonotonicNs();
    bool check = now - last_check_ns >= 1000000000ull;
    if (check) last_check_ns = now;
    failure = cap.Drain(check);
    if (!failure.ok()) break;
    if (check) progress.Update((now - start_ns) / 1e9, cap.Progress());
  }
  progress.Clear();
  summary->disabled_s = events.OffSeconds(MonotonicNs());
  return failure;
}

// After the recording: a command still running when the recording stopped for a reason of its
// own (duration, --control stop, an error) is ended with SIGTERM, as perf record does, instead of
// being waited for. Returns what iotrace exits with: the command's status, or 0 when iotrace
// ended it. After a signal (passed on to the command) the command is waited for.
int EndCommand(GatedChild& child, const RecordSummary& s) {
  if (s.stop_signal != 0 || child.Poll()) {
    child.Wait();
    return child.exit_code();
  }
  child.Signal(SIGTERM);
  child.Wait();
  return 0;
}

absl::Status DiskFullError(const RecordSummary& s) {
  return WithHint(absl::ResourceExhaustedError(absl::StrFormat(
                      "disk full while writing %s: recording stopped after %.1f s; the file is "
                      "valid and holds the %s written before",
                      s.output, s.seconds, HumanBytes(s.output_bytes))),
                  "free space or record to another filesystem with -o");
}

// Said once everything is set up, right before the events are enabled.
void AnnounceBackend(const RecordSummary& s) {
  std::fprintf(stderr, "iotrace: recording with the %s backend (%s) into %s\n",
               BackendName(s.backend), s.backend_reason.c_str(),
               s.output == "-" ? "standard output (perf's pipe mode)" : s.output.c_str());
  const std::string name = OutputNameWarning(s.output, s.backend);
  if (!name.empty()) std::fprintf(stderr, "iotrace: warning: %s\n", name.c_str());
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

// ---- perf backend ----

class PerfRun : public RunningCapture {
 public:
  PerfRun(PerfCapture& cap, PerfDataWriter& writer)
      : cap_(cap), writer_(writer), silent_reported_(cap.events().size() * cap.cpus().size()) {}

  absl::Status WatchFd(int fd) override { return cap_.WatchFd(fd); }
  absl::Status UnwatchFd(int fd) override { return cap_.UnwatchFd(fd); }
  absl::Status SetEnabled(bool on) override { return on ? cap_.Enable() : cap_.Disable(); }
  absl::StatusOr<bool> Wait(int timeout_ms) override { return cap_.Wait(timeout_ms); }

  // With `check`: counts first, then the drain (see WriteSilentDrops).
  absl::Status Drain(bool check) override {
    if (check) IOTRACE_RETURN_IF_ERROR(cap_.ReadCounts());
    IOTRACE_RETURN_IF_ERROR(
        cap_.DrainAll([&](int, ByteView a, ByteView b) { return writer_.AppendData(a, b); }));
    IOTRACE_RETURN_IF_ERROR(writer_.AppendFinishedRound());
    if (check) IOTRACE_RETURN_IF_ERROR(WriteSilentDrops(MonotonicNs()));
    return absl::OkStatus();
  }

  CaptureProgress Progress() const override {
    CaptureProgress p;
    for (size_t e = 0; e < cap_.events().size(); ++e) {
      for (size_t c = 0; c < cap_.cpus().size(); ++c) {
        p.events += cap_.counts(e, c).samples;
        p.ring_lost += cap_.counts(e, c).ring_lost;
        p.silent += cap_.counts(e, c).Silent();
      }
    }
    p.bytes = writer_.data_size();
    return p;
  }
  bool disk_full() const override { return writer_.disk_full(); }

  // Stops the kernel, takes the final counts, empties the rings: the books are exact after it.
  absl::Status Stop() {
    absl::Status failure = cap_.Disable();
    absl::Status s = cap_.ReadCounts();
    if (failure.ok()) failure = s;
    if (!writer_.disk_full()) {
      s = cap_.DrainAll([&](int, ByteView a, ByteView b) { return writer_.AppendData(a, b); });
      if (failure.ok()) failure = s;
      if (!writer_.disk_full()) {
        s = WriteSilentDrops(MonotonicNs());
        if (failure.ok()) failure = s;
      }
    }
    return failure;
  }

  void Summarize(RecordSummary* summary) const {
    const size_t ncpu = cap_.cpus().size();
    for (size_t e = 0; e < cap_.events().size(); ++e) {
      EventSummary row;
      row.name = cap_.events()[e].name;
      for (size_t c = 0; c < ncpu; ++c) {
        const EventCpuCounts& k = cap_.counts(e, c);
        row.recorded += k.samples;
        row.kernel_count += k.kernel_count;
        row.ring_lost += k.ring_lost;
        // What the file says was dropped silently; once the disk is full the rest of the
        // difference was counted by the kernel but never written.
        uint64_t silent_in_file = silent_reported_[e * ncpu + c];
        row.silent += silent_in_file;
        row.unwritten += k.Silent() - std::min(k.Silent(), silent_in_file);
      }
      summary->events.push_back(row);
    }
  }

 private:
  // Writes LOST_SAMPLES records for silent drops found since the last call. The estimate taken
  // mid-run (counts read before the drain) never exceeds the truth, so reporting only increases
  // keeps the file's total equal to the exact figure computed after the final drain.
  absl::Status WriteSilentDrops(uint64_t now_ns) {
    const size_t ncpu = cap_.cpus().size();
    for (size_t e = 0; e < cap_.events().size(); ++e) {
      for (size_t c = 0; c < ncpu; ++c) {
        uint64_t silent = cap_.counts(e, c).Silent();
        uint64_t& reported = silent_reported_[e * ncpu + c];
        if (silent > reported) {
          perf::SampleId id;
          id.pid = id.tid = static_cast<uint32_t>(-1);
          id.time = now_ns;
          id.id = cap_.events()[e].ids[c];
          id.cpu = static_cast<uint32_t>(cap_.cpus()[c]);
          IOTRACE_RETURN_IF_ERROR(writer_.AppendLostSamples(e, silent - reported, id));
          reported = silent;
        }
      }
    }
    return absl::OkStatus();
  }

  PerfCapture& cap_;
  PerfDataWriter& writer_;
  std::vector<uint64_t> silent_reported_;  // [event * ncpu + cpu]: LOST_SAMPLES written so far
};

absl::StatusOr<int> RecordWithPerf(const RecordOptions& opt, const std::string& tracefs,
                                   const std::vector<TraceEventInfo>& events,
                                   const std::string& filter, SignalGuard& signals,
                                   ControlChannel* control, RecordSummary* summary) {
  PerfCaptureOptions copt;
  copt.events = events;
  copt.mmap_pages = opt.mmap_pages;
  copt.dev_filter = filter;
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<PerfCapture> cap, PerfCapture::Open(copt));
  IOTRACE_ASSIGN_OR_RETURN(TracingMetadata meta, CollectTracingMetadata(tracefs, events));

  std::optional<GatedChild> child;
  if (!opt.command.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(GatedChild c, GatedChild::Start(opt.command, opt.output == "-"));
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
  HostInfo host = ThisMachine(opt.argv);
  host.nr_cpus_online = static_cast<uint32_t>(cap->cpus().size());
  PerfWriterOptions wopt;
  if (summary->output == "-") wopt.stream_fd = STDOUT_FILENO;  // perf's pipe mode
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<PerfDataWriter> writer,
                           PerfDataWriter::Create(wopt.stream_fd >= 0 ? "standard output"
                                                                      : summary->output,
                                                  specs, meta, host, wopt));
  IOTRACE_RETURN_IF_ERROR(WriteExistingComms(writer.get(), cap->events()[0], cap->cpus()[0]));

  PerfRun run(*cap, *writer);
  IOTRACE_RETURN_IF_ERROR(run.WatchFd(signals.fd()));
  if (control != nullptr) IOTRACE_RETURN_IF_ERROR(run.WatchFd(control->fd()));
  AnnounceBackend(*summary);
  if (opt.delay_ms == 0) IOTRACE_RETURN_IF_ERROR(cap->Enable());
  const uint64_t start_ns = MonotonicNs();
  if (child) {
    absl::Status s = child->Release();
    if (!s.ok()) {
      (void)cap->Disable();
      (void)writer->Finish();
      return AsUsageError(WithHint(s, "check the command after --"));
    }
  }
  absl::Status failure =
      RunLoop(opt, run, signals, child ? &*child : nullptr, control, start_ns, summary);
  absl::Status s = run.Stop();
  if (failure.ok()) failure = s;
  const uint64_t end_ns = MonotonicNs();
  s = writer->Finish();
  if (failure.ok()) failure = s;

  summary->seconds = (end_ns - start_ns) / 1e9;
  summary->output_bytes = writer->stream() ? writer->data_offset() + writer->data_size()
                                           : FileSize(summary->output);
  summary->disk_full = writer->disk_full();
  run.Summarize(summary);
  const int command_status = child ? EndCommand(*child, *summary) : 0;
  if (summary->disk_full) return DiskFullError(*summary);
  if (!failure.ok()) return failure;
  return command_status;
}

// ---- ftrace backend ----

class FtraceRun : public RunningCapture {
 public:
  explicit FtraceRun(FtraceCapture& cap) : cap_(cap) {}
  absl::Status WatchFd(int fd) override {
    cap_.WatchFd(fd);
    return absl::OkStatus();
  }
  absl::Status UnwatchFd(int fd) override {
    cap_.UnwatchFd(fd);
    return absl::OkStatus();
  }
  absl::Status SetEnabled(bool on) override { return on ? cap_.Start() : cap_.Pause(); }
  absl::StatusOr<bool> Wait(int timeout_ms) override { return cap_.Wait(timeout_ms); }
  absl::Status Drain(bool check) override {
    IOTRACE_ASSIGN_OR_RETURN(uint64_t moved, cap_.DrainOnce());
    (void)moved;
    if (check) {
      lost_ = 0;
      for (size_t i = 0; i < cap_.cpus().size(); ++i) {
        auto st = cap_.ReadCpuStats(i);
        if (st.ok()) lost_ += st->overrun + st->dropped_events;
      }
    }
    return absl::OkStatus();
  }
  CaptureProgress Progress() const override {
    CaptureProgress p;
    p.events_known = false;
    p.bytes = cap_.bytes_moved();
    p.ring_lost = lost_;
    return p;
  }
  bool disk_full() const override { return cap_.disk_full(); }

 private:
  FtraceCapture& cap_;
  uint64_t lost_ = 0;
};

absl::StatusOr<int> RecordWithFtrace(const RecordOptions& opt, const std::string& tracefs,
                                     const std::vector<TraceEventInfo>& events,
                                     const std::string& filter, SignalGuard& signals,
                                     ControlChannel* control, RecordSummary* summary) {
  FtraceCaptureOptions fopt;
  fopt.tracefs = tracefs;
  fopt.events = events;
  fopt.output = summary->output;
  fopt.buffer_kb = opt.buffer_kb;
  fopt.dev_filter = filter;
  std::optional<GatedChild> child;
  if (!opt.command.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(GatedChild c, GatedChild::Start(opt.command, opt.output == "-"));
    child.emplace(std::move(c));
  }
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<FtraceCapture> cap, FtraceCapture::Create(fopt));
  FtraceRun run(*cap);
  IOTRACE_RETURN_IF_ERROR(run.WatchFd(signals.fd()));
  if (control != nullptr) IOTRACE_RETURN_IF_ERROR(run.WatchFd(control->fd()));
  AnnounceBackend(*summary);
  if (opt.delay_ms == 0) IOTRACE_RETURN_IF_ERROR(cap->Start());
  const uint64_t start_ns = MonotonicNs();
  if (child) {
    absl::Status s = child->Release();
    if (!s.ok()) {
      (void)cap->Finish();
      return AsUsageError(WithHint(s, "check the command after --"));
    }
  }
  absl::Status failure =
      RunLoop(opt, run, signals, child ? &*child : nullptr, control, start_ns, summary);
  absl::Status s = cap->Stop();
  if (failure.ok()) failure = s;
  const uint64_t end_ns = MonotonicNs();
  absl::StatusOr<FtraceCaptureResult> result = cap->Finish();
  const int command_status = child ? EndCommand(*child, *summary) : 0;
  summary->seconds = (end_ns - start_ns) / 1e9;
  if (!result.ok()) return result.status();
  summary->output_bytes = result->output_bytes;
  summary->disk_full = result->disk_full;
  // ftrace counts losses per CPU, not per event: the table's per-event columns hold what the
  // ring buffer took for each event, and the CPU-level losses are listed below it.
  summary->per_event_losses = false;
  for (const FtraceEventResult& e : result->events) {
    EventSummary row;
    row.name = e.name;
    for (uint64_t n : e.recorded) row.recorded += n;
    for (uint64_t n : e.unwritten) row.unwritten += n;
    row.kernel_count = row.recorded + row.unwritten;
    summary->events.push_back(row);
  }
  for (const FtraceCpuResult& c : result->cpus) {
    summary->unattributed_lost += c.stats.overrun + c.stats.dropped_events;
  }
  summary->unattributed_lost += result->unwritten_pages_unknown;
  if (!result->cleanup_error.ok()) {
    std::fprintf(stderr, "iotrace: warning: %s\nhint: run 'iotrace reset'\n",
                 std::string(result->cleanup_error.message()).c_str());
  }
  if (summary->disk_full) return DiskFullError(*summary);
  if (!failure.ok()) return failure;
  return command_status;
}

// ---- backend choice ----

// auto (AutoBackend's rule): ftrace wherever it records. A clean perf check would be no
// promise for the recording after it: one passed here, and perf then dropped 36 events of a
// 10 s fio run silently.
Backend ChooseBackend(const std::string& tracefs, std::string* reason) {
  auto ftrace = CheckFtraceCompleteness(200, tracefs);
  if (ftrace.ok() && ftrace->verdict != CheckVerdict::kLossy) {
    *reason = absl::StrFormat("auto: %s in a 200 ms check; perf can drop samples silently",
                              ftrace->summary);
    return Backend::kFtrace;
  }
  auto perf = CheckPerfCompleteness(200, tracefs);
  const std::string choice =
      AutoBackend(ftrace.ok(), ftrace.ok() ? ftrace->verdict : CheckVerdict::kInconclusive,
                  perf.ok(), perf.ok() ? perf->verdict : CheckVerdict::kInconclusive);
  *reason = absl::StrFormat(
      "auto: %s; %s",
      ftrace.ok() ? ftrace->summary + " in a 200 ms check"
                  : "ftrace cannot record here: " + std::string(ftrace.status().message()),
      perf.ok() ? perf->summary : "perf check failed: " + std::string(perf.status().message()));
  // Neither works: ftrace's start says what fails.
  return choice == "perf" ? Backend::kPerf : Backend::kFtrace;
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
  std::optional<ControlChannel> control;
  if (!opt.control.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(ControlSpec spec, ParseControlSpec(opt.control));
    auto opened = ControlChannel::Open(spec);
    if (!opened.ok()) return AsUsageError(opened.status());
    control.emplace(std::move(*opened));
  }
  // From here on iotrace changes things (probes, an instance): Ctrl-C and SIGTERM are taken
  // from a signalfd, so that they end the recording through the cleanup path, even if they
  // arrive while things are being set up.
  SignalGuard signals;
  std::vector<TraceEventInfo> events;
  if (!opt.events.empty()) {
    auto resolved = ResolveEvents(tracefs, opt.events);
    if (!resolved.ok()) {
      // An event that does not exist is a mistake in the command line.
      return resolved.status().code() == absl::StatusCode::kNotFound
                 ? AsUsageError(resolved.status())
                 : resolved.status();
    }
    events = std::move(*resolved);
  }
  // Probes live longer than the capture that records them (they are removed after it closed).
  std::unique_ptr<DynamicProbes> probes;
  if (!opt.probes.empty()) {
    DynamicProbeOptions popt;
    popt.tracefs = tracefs;
    auto created = DynamicProbes::Create(opt.probes, popt);
    if (!created.ok()) {
      return created.status().code() == absl::StatusCode::kInvalidArgument
                 ? AsUsageError(created.status())
                 : created.status();
    }
    probes = std::move(*created);
    for (const TraceEventInfo& e : probes->events()) events.push_back(e);
  }

  Backend backend = opt.backend;
  summary->backend_reason = "chosen with --backend";
  if (opt.output == "-") {
    // A reader that goes away (perf script ... | head) makes writes fail with EPIPE, which
    // ends the recording through the cleanup path, rather than SIGPIPE killing iotrace.
    signal(SIGPIPE, SIG_IGN);
  }
  if (backend == Backend::kAuto && opt.output == "-") {
    // A stream needs a format that can be written in one pass: perf's pipe mode (a trace.dat
    // needs its per-CPU table before the data).
    backend = Backend::kPerf;
    summary->backend_reason = "auto: -o - streams perf's pipe-mode format";
  } else if (backend == Backend::kAuto) {
    backend = ChooseBackend(tracefs, &summary->backend_reason);
  }
  summary->backend = backend;
  summary->output = opt.output.empty()
                        ? (backend == Backend::kFtrace ? "iotrace.dat" : "iotrace.data")
                        : opt.output;
  ControlChannel* ctl = control ? &*control : nullptr;
  absl::StatusOr<int> result =
      backend == Backend::kFtrace
          ? RecordWithFtrace(opt, tracefs, events, filter, signals, ctl, summary)
          : RecordWithPerf(opt, tracefs, events, filter, signals, ctl, summary);
  if (probes) {
    absl::Status s = probes->Remove();
    if (!s.ok()) {
      std::fprintf(stderr, "iotrace: warning: %s\nhint: run 'iotrace reset'\n",
                   std::string(s.message()).c_str());
    }
  }
  return result;
}

}  // namespace iotrace
