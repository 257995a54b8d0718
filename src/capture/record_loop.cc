#include "record_loop.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
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
