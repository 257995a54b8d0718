#include "record_backends.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

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
  FtraceRun(FtraceCapture& cap, RecordTap* tap, int64_t flush_interval_ms,
            OutputRotation* rotation)
      : cap_(cap),
        tap_(tap),
        flush_ns_(static_cast<uint64_t>(flush_interval_ms) * 1000000),
        rotation_(rotation),
        path_(cap.output()) {
    fed_.assign(cap.cpus().size(), 0);
    recorded_.assign(cap.events().size(), 0);
    unwritten_.assign(cap.events().size(), 0);
    last_flush_ns_ = MonotonicNs();
  }
  ~FtraceRun() override { (void)JoinFinisher(); }
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
    if (tap_ != nullptr) Feed(CurrentFds());
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

  // The file being written goes to a thread of its own to be assembled (a copy of its spools,
  // during which the kernel's buffers fill): the drain goes on meanwhile. One file is finished
  // at a time; the one before is waited for first.
  absl::Status SwitchOutput(const std::string& path) override {
    IOTRACE_RETURN_IF_ERROR(JoinFinisher());
    IOTRACE_ASSIGN_OR_RETURN(FtraceOutputPart part, cap_.SwitchOutput(path));
    if (tap_ != nullptr) {
      // The pages stored into the old file since the last drain, the page being filled too.
      std::vector<int> fds;
      for (int cpu : cap_.cpus()) fds.push_back(part.writer->CpuFd(cpu));
      Feed(fds);
      std::fill(fed_.begin(), fed_.end(), 0);
    }
    in_flight_bytes_ = part.writer->data_start();
    for (int cpu : cap_.cpus()) in_flight_bytes_ += FdBytes(part.writer->CpuFd(cpu));
    in_flight_path_ = std::exchange(path_, path);
    finisher_ = std::thread([this, p = std::move(part)]() mutable {
      finished_ = FinishFtraceOutput(std::move(p));
    });
    return absl::OkStatus();
  }
  uint64_t CurrentBytes() const override { return cap_.OutputBytes(); }
  uint64_t OpenBytes() const override { return cap_.OutputBytes() + in_flight_bytes_; }

  // Waits for the file being finished, if one is, and takes its books.
  absl::Status JoinFinisher() {
    if (!finisher_.joinable()) return absl::OkStatus();
    finisher_.join();
    in_flight_bytes_ = 0;
    absl::StatusOr<FtraceCaptureResult> r = std::move(finished_);
    finished_ = absl::UnknownError("no file finished");
    if (!r.ok()) return Annotate(r.status(), "finish " + in_flight_path_);
    AddFile(*r, in_flight_path_);
    return absl::OkStatus();
  }
  // The books of one finished file (the last one's too, from FtraceCapture::Finish).
  void AddFile(const FtraceCaptureResult& r, const std::string& path) {
    for (size_t e = 0; e < r.events.size() && e < recorded_.size(); ++e) {
      for (uint64_t n : r.events[e].recorded) recorded_[e] += n;
      for (uint64_t n : r.events[e].unwritten) unwritten_[e] += n;
    }
    unwritten_pages_unknown_ += r.unwritten_pages_unknown;
    disk_full_seen_ = disk_full_seen_ || r.disk_full;
    output_bytes_ = r.output_bytes;
    if (rotation_ != nullptr) {
      RemoveRotatedFiles(rotation_->Finished(path, r.output_bytes), rotation_->max_files());
    }
  }
  const std::string& path() const { return path_; }
  uint64_t recorded(size_t e) const { return recorded_[e]; }
  uint64_t unwritten(size_t e) const { return unwritten_[e]; }
  uint64_t unwritten_pages_unknown() const { return unwritten_pages_unknown_; }
  bool disk_full_seen() const { return disk_full_seen_; }
  uint64_t output_bytes() const { return output_bytes_; }

 private:
  static uint64_t FdBytes(int fd) {
    const off_t end = ::lseek(fd, 0, SEEK_CUR);
    return end < 0 ? 0 : static_cast<uint64_t>(end);
  }
  std::vector<int> CurrentFds() const {
    std::vector<int> fds;
    for (size_t i = 0; i < fed_.size(); ++i) fds.push_back(cap_.StoredFd(i));
    return fds;
  }
  // Hands the tap what each CPU stored since the last drain, read back from `fds` (each CPU's
  // spool, by index).
  void Feed(const std::vector<int>& fds) {
    const uint32_t page = cap_.layout().page_size;
    for (size_t i = 0; i < fed_.size(); ++i) {
      const uint64_t stored = FdBytes(fds[i]) / page * page;
      while (fed_[i] < stored) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(stored - fed_[i], kFeedBytes));
        buf_.resize(kFeedBytes);
        const ssize_t n = ::pread(fds[i], buf_.data(), want, static_cast<off_t>(fed_[i]));
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
  OutputRotation* rotation_;  // null without --switch-output / --max-size
  uint64_t last_flush_ns_ = 0;
  std::vector<uint64_t> fed_;
  std::string buf_;
  uint64_t lost_ = 0;
  std::string path_;  // the file being written
  // The file being finished on finisher_, and its result.
  std::thread finisher_;
  absl::StatusOr<FtraceCaptureResult> finished_ = absl::UnknownError("no file finished");
  std::string in_flight_path_;
  uint64_t in_flight_bytes_ = 0;
  // The books of the files finished so far.
  std::vector<uint64_t> recorded_, unwritten_;  // per event
  uint64_t unwritten_pages_unknown_ = 0;
  bool disk_full_seen_ = false;
  uint64_t output_bytes_ = 0;  // the last file finished
};

}  // namespace

absl::StatusOr<int> RecordWithFtrace(const RecordOptions& opt, const std::string& tracefs,
                                     const std::vector<TraceEventInfo>& events,
                                     const std::string& filter, SignalGuard& signals,
                                     ControlChannel* control, RecordSummary* summary) {
  std::string first_path;
  std::unique_ptr<OutputRotation> rotation = MakeRotation(opt, summary->output, &first_path);
  if (rotation != nullptr && rotation->mode().on()) summary->output = first_path;
  FtraceCaptureOptions fopt;
  fopt.tracefs = tracefs;
  fopt.events = events;
  fopt.output = first_path;
  fopt.flush_interval_ms = static_cast<uint32_t>(opt.flush_interval_ms);
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
  FtraceRun run(*cap, tap, opt.flush_interval_ms, rotation.get());
  IOTRACE_ASSIGN_OR_RETURN(
      const uint64_t start_ns,
      StartRecording(opt, run, signals, child ? &*child : nullptr, control, *summary));
  absl::Status failure = RunLoop(opt, run, signals, child ? &*child : nullptr, control, start_ns,
                                 rotation.get(), summary);
  absl::Status s = cap->Stop();
  if (failure.ok()) failure = s;
  const uint64_t end_ns = MonotonicNs();
  s = run.JoinFinisher();
  if (failure.ok()) failure = s;
  absl::StatusOr<FtraceCaptureResult> result = cap->Finish();
  const int command_status = child ? EndCommand(*child, *summary) : 0;
  summary->seconds = (end_ns - start_ns) / 1e9;
  if (!result.ok()) return result.status();
  run.AddFile(*result, run.path());
  summary->output_bytes = run.output_bytes();
  summary->bytes_written = run.output_bytes();
  if (rotation != nullptr) SummarizeRotation(*rotation, summary);
  summary->disk_full = run.disk_full_seen();
  // ftrace counts losses per CPU, not per event: the table's per-event columns hold what the
  // ring buffer took for each event, and the CPU-level losses are listed below it.
  summary->per_event_losses = false;
  for (size_t e = 0; e < result->events.size(); ++e) {
    EventSummary row;
    row.name = result->events[e].name;
    row.recorded = run.recorded(e);
    row.unwritten = run.unwritten(e);
    row.kernel_count = row.recorded + row.unwritten;
    summary->events.push_back(row);
  }
  for (const FtraceCpuResult& c : result->cpus) {
    summary->unattributed_lost += c.stats.overrun + c.stats.dropped_events;
  }
  summary->unattributed_lost += run.unwritten_pages_unknown();
  if (!result->cleanup_error.ok()) {
    std::fprintf(stderr, "iotrace: warning: %s\nhint: run 'iotrace reset'\n",
                 std::string(result->cleanup_error.message()).c_str());
  }
  if (summary->disk_full) return DiskFullError(*summary);
  if (!failure.ok()) return failure;
  return command_status;
}

}  // namespace iotrace
