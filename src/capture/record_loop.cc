#include "record_loop.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "iotrace/base/clock.h"
#include "iotrace/base/status.h"
#include "record_summary.h"

namespace iotrace {
namespace {

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

}  // namespace

absl::StatusOr<uint64_t> StartRecording(const RecordOptions& opt, RunningCapture& cap,
                                        SignalGuard& signals, GatedChild* child,
                                        ControlChannel* control, const RecordSummary& summary) {
  IOTRACE_RETURN_IF_ERROR(cap.WatchFd(signals.fd()));
  if (control != nullptr) IOTRACE_RETURN_IF_ERROR(cap.WatchFd(control->fd()));
  AnnounceBackend(summary);
  if (opt.delay_ms == 0) IOTRACE_RETURN_IF_ERROR(cap.SetEnabled(true));
  const uint64_t start_ns = MonotonicNs();
  if (child != nullptr) {
    absl::Status s = child->Release();
    if (!s.ok()) {
      cap.Abandon();
      return AsUsageError(WithHint(s, "check the command after --"));
    }
  }
  return start_ns;
}

std::unique_ptr<OutputRotation> MakeRotation(const RecordOptions& opt, const std::string& output,
                                             std::string* first_path) {
  *first_path = output;
  if (!opt.switch_output.on() && opt.max_size == 0) return nullptr;
  auto rotation = std::make_unique<OutputRotation>(output, opt.switch_output,
                                                   opt.switch_max_files, opt.max_size);
  if (opt.switch_output.on()) *first_path = rotation->Open(RealtimeNs(), MonotonicNs());
  return rotation;
}

void RemoveRotatedFiles(const std::vector<std::string>& paths, int max_files) {
  for (const std::string& path : paths) {
    if (::unlink(path.c_str()) == 0) {
      std::fprintf(stderr, "iotrace: removed %s (--switch-max-files %d)\n", path.c_str(),
                   max_files);
    } else {
      std::fprintf(stderr, "iotrace: warning: could not remove %s (--switch-max-files): %s\n",
                   path.c_str(), std::strerror(errno));
    }
  }
}

void SummarizeRotation(const OutputRotation& rotation, RecordSummary* summary) {
  summary->output_bytes = rotation.DiskBytes(0);
  summary->bytes_written = rotation.bytes_written();
  if (!rotation.mode().on()) return;
  summary->rotated = true;
  summary->files_made = rotation.files_made();
  summary->files_on_disk = rotation.files_on_disk();
  summary->first_output = rotation.first_name();
  summary->output = rotation.last_name();
}

absl::Status RunLoop(const RecordOptions& opt, RunningCapture& cap, SignalGuard& signals,
                     GatedChild* child, ControlChannel* control, uint64_t start_ns,
                     OutputRotation* rotation, RecordSummary* summary) {
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
    if (opt.flush_interval_ms > 0) wait_ms = std::min(wait_ms, double(opt.flush_interval_ms));
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
    bool sigusr2 = false;
    int sig = *woke ? signals.Read(&child_changed, &sigusr2) : 0;
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
    if (rotation != nullptr) {
      // A full disk stores nothing more: a new file would hold nothing either.
      if (!cap.disk_full() && rotation->Due(now, cap.CurrentBytes(), sigusr2)) {
        progress.Clear();
        const std::string next = rotation->Open(RealtimeNs(), now);
        std::fprintf(stderr, "iotrace: switching output to %s\n", next.c_str());
        failure = cap.SwitchOutput(next);
        if (!failure.ok()) break;
      }
      if (rotation->OverMaxSize(cap.OpenBytes())) {
        progress.Clear();
        std::fprintf(stderr,
                     "iotrace: --max-size %s reached: the run's files hold %s; recording "
                     "stopped\n",
                     HumanBytes(rotation->max_size()).c_str(),
                     HumanBytes(rotation->DiskBytes(cap.OpenBytes())).c_str());
        summary->stop_reason = "--max-size";
        break;
      }
    }
    if (check) {
      CaptureProgress p = cap.Progress();
      if (rotation != nullptr) {
        p.files = rotation->files_on_disk();
        p.disk_bytes = rotation->DiskBytes(cap.OpenBytes());
      }
      progress.Update((now - start_ns) / 1e9, p);
    }
  }
  progress.Clear();
  summary->disabled_s = events.OffSeconds(MonotonicNs());
  return failure;
}

int EndCommand(GatedChild& child, const RecordSummary& s) {
  if (s.stop_signal != 0 || child.Poll()) {
    child.Wait();
    return child.exit_code();
  }
  child.Signal(SIGTERM);
  child.Wait();
  return 0;
}

}  // namespace iotrace
