#include "record_backends.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#include <memory>
#include <optional>

#include "iotrace/base/clock.h"
#include "iotrace/base/gated_child.h"
#include "iotrace/base/status.h"
#include "iotrace/capture/ftrace_capture.h"
#include "record_loop.h"
#include "record_summary.h"

namespace iotrace {
namespace {

class FtraceRun : public RunningCapture {
 public:
  FtraceRun(FtraceCapture& cap, RecordTap* tap, int64_t flush_interval_ms)
      : cap_(cap), tap_(tap), flush_ns_(static_cast<uint64_t>(flush_interval_ms) * 1000000) {
    fed_.assign(cap.cpus().size(), 0);
    last_flush_ns_ = MonotonicNs();
  }
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
    if (flush_ns_ != 0) {
      const uint64_t now = MonotonicNs();
      if (now - last_flush_ns_ >= flush_ns_) {
        last_flush_ns_ = now;
        IOTRACE_RETURN_IF_ERROR(cap_.FlushIdle());
      }
    }
    if (tap_ != nullptr) Feed();
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
    if (tap_ != nullptr) p.latency = tap_->Progress(MonotonicNs());
    return p;
  }
  bool disk_full() const override { return cap_.disk_full(); }
  void Abandon() override { (void)cap_.Finish(); }

 private:
  // Hands the tap what each CPU stored since the last drain, read back from the output.
  void Feed() {
    const uint32_t page = cap_.layout().page_size;
    for (size_t i = 0; i < fed_.size(); ++i) {
      const uint64_t stored = cap_.StoredBytes(i) / page * page;
      while (fed_[i] < stored) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(stored - fed_[i], kFeedBytes));
        buf_.resize(kFeedBytes);
        const ssize_t n = ::pread(cap_.StoredFd(i), buf_.data(), want, static_cast<off_t>(fed_[i]));
        if (n <= 0) break;
        const size_t whole = static_cast<size_t>(n) / page * page;
        if (whole == 0) break;
        tap_->OnPages(i, ByteView(buf_.data(), whole));
        fed_[i] += whole;
      }
    }
  }
  static constexpr size_t kFeedBytes = 256 << 10;

  FtraceCapture& cap_;
  RecordTap* tap_;
  const uint64_t flush_ns_;  // --flush-interval; 0: full pages only
  uint64_t last_flush_ns_ = 0;
  std::vector<uint64_t> fed_;
  std::string buf_;
  uint64_t lost_ = 0;
};

}  // namespace

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
  RecordTap* tap = opt.tap;
  if (tap != nullptr) {
    absl::Status began = tap->Begin(cap->events(), cap->layout(), cap->cpus());
    if (!began.ok()) {
      std::fprintf(stderr, "iotrace: warning: no latency on the progress line: %s\n",
                   std::string(began.message()).c_str());
      tap = nullptr;
    }
  }
  FtraceRun run(*cap, tap, opt.flush_interval_ms);
  IOTRACE_ASSIGN_OR_RETURN(
      const uint64_t start_ns,
      StartRecording(opt, run, signals, child ? &*child : nullptr, control, *summary));
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

}  // namespace iotrace
