#include "iotrace/live/live_engine.h"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <fstream>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/base/clock.h"
#include "iotrace/base/gated_child.h"
#include "iotrace/base/signal_guard.h"
#include "iotrace/base/status.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/capture/backend_check.h"
#include "iotrace/capture/backend_verdict.h"
#include "iotrace/live/ftrace_source.h"
#include "iotrace/live/live_merger.h"
#include "iotrace/live/perf_source.h"
#include "iotrace/sys/device_names.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {
namespace {

uint64_t ToNs(double s) { return static_cast<uint64_t>(std::llround(s * 1e9)); }

// Events that found no request to pair with (merges of requests never seen are left out: without
// block_bio_queue they are what every merge before insert looks like).
uint64_t GivenUp(const MatchStats& m) {
  uint64_t n = 0;
  for (int i = 0; i < kRequestStateCount; ++i) {
    n += m.expired[i] + m.evicted[i] + m.collided[i] + m.across_gap[i];
  }
  return n;
}

// The --dev devices, watched so that one that goes away is said to have gone (its rows stop).
class DeviceWatch {
 public:
  DeviceWatch(const std::vector<std::string>& devs, const std::string& sysfs_root) {
    for (const std::string& d : devs) {
      auto dev = ParseDevSpec(d);
      if (!dev.ok()) continue;
      Device w;
      w.spec = d;
      w.numbers = DevString(*dev);
      w.path = sysfs_root + "/dev/block/" + w.numbers;
      w.present = Exists(w.path);
      devices_.push_back(std::move(w));
    }
  }
  // Devices that went away (or came) since the last look, one line each.
  std::vector<std::string> Changes() {
    std::vector<std::string> out;
    for (Device& d : devices_) {
      const bool now = Exists(d.path);
      if (now == d.present) continue;
      d.present = now;
      out.push_back(now ? absl::StrFormat("--dev %s (%s) appeared", d.spec, d.numbers)
                        : absl::StrFormat("--dev %s (%s) went away (no device or no medium): "
                                          "its rows stop",
                                          d.spec, d.numbers));
    }
    return out;
  }

 private:
  struct Device {
    std::string spec, numbers, path;
    bool present = false;
  };
  // There, with a medium: a loop device that was detached stays, with size 0.
  static bool Exists(const std::string& path) {
    std::ifstream size(path + "/size");
    uint64_t sectors = 0;
    return static_cast<bool>(size >> sectors) && sectors > 0;
  }
  std::vector<Device> devices_;
};

// The run's counters at the start of the interval being filled.
struct Marks {
  uint64_t events = 0, lost = 0, late = 0, unpaired = 0, given_up = 0;
};

}  // namespace

std::vector<std::string> LiveEventsForPhases(unsigned phases) {
  std::vector<std::string> events = {"block:block_rq_issue", "block:block_rq_complete",
                                     "block:block_rq_requeue"};
  if ((phases & (PhaseBit(Phase::kI2D) | PhaseBit(Phase::kI2C))) != 0) {
    events.emplace_back("block:block_rq_insert");
    events.emplace_back("block:block_rq_merge");
  }
  if ((phases & (PhaseBit(Phase::kQ2D) | PhaseBit(Phase::kQ2C))) != 0) {
    events.emplace_back("block:block_bio_queue");
  }
  return events;
}

absl::Status ValidateLiveOptions(const LiveOptions& o) {
  if (!(o.interval_s >= 0.01) || o.interval_s > 86400) {
    return WithHint(absl::InvalidArgumentError(absl::StrFormat(
                        "--interval %g: an interval is 0.01 to 86400 seconds", o.interval_s)),
                    "e.g. -I 1 for one line of figures a second");
  }
  if (o.duration_s < 0) {
    return absl::InvalidArgumentError("--duration: seconds may not be negative");
  }
  if (o.output == "-") {
    return WithHint(absl::InvalidArgumentError("-o -: live writes its recording to a file"),
                    "give -o FILE (a trace.dat with the ftrace backend, a perf.data with perf)");
  }
  if (o.window.phases == 0) return absl::InvalidArgumentError("--phases: no phase given");
  RecordOptions ro;
  ro.devs = o.devs;
  ro.buffer_kb = o.buffer_kb;
  ro.mmap_pages = o.mmap_pages;
  ro.backend = o.backend;
  return ValidateRecordOptions(ro);
}

absl::StatusOr<LiveResult> RunLive(const LiveOptions& o, IntervalSink* sink) {
  IOTRACE_RETURN_IF_ERROR(ValidateLiveOptions(o));
  IOTRACE_RETURN_IF_ERROR(CheckRecordPrivileges());
  IOTRACE_ASSIGN_OR_RETURN(std::string filter, BuildDevFilter(o.devs));
  if (!o.command.empty()) {
    auto exe = FindExecutable(o.command[0]);
    if (!exe.ok()) return AsUsageError(WithHint(exe.status(), "check the command after --"));
  }
  IOTRACE_ASSIGN_OR_RETURN(std::string tracefs, FindTracefs(o.tracefs_dir));
  // From here on iotrace changes things: Ctrl-C and SIGTERM end the run through the cleanup.
  SignalGuard signals;
  auto events = ResolveEvents(tracefs, o.events.empty() ? DefaultRecordEvents() : o.events);
  if (!events.ok()) return events.status();

  LiveResult result;
  LiveRunSummary& sum = result.summary;
  Backend backend = o.backend;
  sum.backend_reason = "chosen with --backend";
  if (backend == Backend::kAuto) {
    const AutoChoice choice = ChooseBackend(tracefs, DefaultVerdictPath());
    backend = choice.backend;
    sum.backend_reason = choice.reason;
    sum.backend_check = DescribeAutoCheck(choice);
  }
  std::optional<GatedChild> child;
  if (!o.command.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(GatedChild c, GatedChild::Start(o.command));
    child.emplace(std::move(c));
  }
  std::unique_ptr<LiveSource> source;
  if (backend == Backend::kPerf) {
    PerfLiveOptions po;
    po.capture.events = *events;
    po.capture.mmap_pages = o.mmap_pages;
    po.capture.dev_filter = filter;
    po.capture.clockid = CLOCK_MONOTONIC;  // the watermark is MonotonicNs()
    po.output = o.output;
    po.tracefs = tracefs;
    po.argv = o.argv;
    IOTRACE_ASSIGN_OR_RETURN(source, PerfLiveSource::Create(std::move(po)));
  } else {
    FtraceStreamOptions fo;
    fo.capture.tracefs = tracefs;
    fo.capture.events = *events;
    fo.capture.output = o.output;
    fo.capture.buffer_kb = o.buffer_kb;
    fo.capture.dev_filter = filter;
    fo.ingest = o.ingest;
    IOTRACE_ASSIGN_OR_RETURN(source, FtraceLiveSource::Create(std::move(fo)));
  }
  sum.backend = source->backend();
  sum.ingest = source->ingest();
  sum.ingest_note = source->ingest_note();
  sum.output = o.output;

  ReportOptions ro;
  ro.input = "live";
  ro.threads = 1;
  ro.samples_at_each_stage = true;
  ro.expiry_s = o.expiry_s;
  ro.max_inflight = o.max_inflight;
  ro.sysfs_root = o.sysfs_root;
  ro.by = o.window.by;
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<LatencyReportBuilder> builder,
                           LatencyReportBuilder::Create(source->formats(), ro));
  DeviceNames names(o.sysfs_root);
  LiveWindowOptions wo = o.window;
  wo.ioprio_absent = builder->ioprio_absent();
  LiveWindow window(wo, &names);
  // Nobody looks at the intervals (an exporter with --quiet): the window is not filled.
  if (sink != nullptr) builder->add_sample_tap(&window);
  if (o.observer != nullptr) {
    for (SampleTap* t : o.observer->Taps()) builder->add_sample_tap(t);
  }
  // The merge feeds the builder as a reader would (it is the EventSink).
  LiveMerger merger(source.get(), builder.get());
  DeviceWatch watch(o.devs, o.sysfs_root);
  source->WatchFd(signals.fd());

  IOTRACE_RETURN_IF_ERROR(source->SetEnabled(true));
  // The instance's clock is "mono", the perf events' CLOCK_MONOTONIC: trace times are
  // CLOCK_MONOTONIC's.
  const uint64_t t0 = MonotonicNs();
  if (child) {
    absl::Status s = child->Release();
    if (!s.ok()) {
      (void)source->Finish(builder.get());
      return AsUsageError(WithHint(s, "check the command after --"));
    }
  }
  const uint64_t interval_ns = ToNs(o.interval_s);
  const uint64_t duration_ns = o.duration_s > 0 ? ToNs(o.duration_s) : 0;
  uint64_t index = 0;  // the interval being filled: [t0 + index * interval_ns, + interval_ns)
  Marks marks;

  auto emit = [&](uint64_t end_ns, bool final) {
    const MatchStats& m = builder->matcher().stats();
    LiveIntervalCounts c;
    const uint64_t lost = source->LostSoFar();
    c.events = merger.delivered() - marks.events;
    c.lost = lost - std::min(lost, marks.lost);
    c.late = merger.late() - marks.late;
    const uint64_t unpaired = builder->matcher().unpaired_events();
    c.unpaired = unpaired - marks.unpaired;
    c.expired = GivenUp(m) - marks.given_up;
    c.inflight = builder->matcher().tracked();
    marks = {merger.delivered(), std::max(lost, marks.lost), merger.late(), unpaired, GivenUp(m)};
    const uint64_t start_ns = t0 + index * interval_ns;
    LiveInterval iv = window.Take(index, (start_ns - t0) / 1e9, (end_ns - start_ns) / 1e9, c);
    iv.final = final;
    iv.notes = watch.Changes();
    for (const std::string& n : iv.notes) {
      sum.warnings.push_back(absl::StrFormat("at %.1f s: %s", iv.start_s + iv.length_s, n));
    }
    sum.events = merger.delivered();
    sum.late = merger.late();
    sum.lost = std::max(lost, marks.lost);
    sum.seconds = (end_ns - t0) / 1e9;
    sum.intervals = index + 1;
    sum.cpu_s = ProcessCpuSeconds();
    if (sink != nullptr) sink->OnInterval(iv, sum);
    ++index;
  };

  // The kernel's loss counters for the observer: with ftrace a file per CPU to read, so at most
  // twice a second (and at the end), not at every poll.
  uint64_t observed_lost = 0;
  uint64_t observed_lost_ns = 0;
  auto observe = [&](bool final) {
    if (o.observer == nullptr) return;
    const uint64_t now = MonotonicNs();
    if (final || now - observed_lost_ns >= 500'000'000) {
      observed_lost = source->LostSoFar();
      observed_lost_ns = now;
    }
    LivePoll p;
    p.elapsed_s = (now - t0) / 1e9;
    p.match = builder->matcher().stats();
    p.devices = builder->matcher().devices();
    p.tracked = builder->matcher().tracked();
    p.events = merger.delivered();
    p.lost = observed_lost;
    p.late = merger.late();
    p.backend = source->backend();
    p.final = final;
    o.observer->OnPoll(p);
  };

  absl::Status failure;
  uint64_t stop_ns = 0;
  for (;;) {
    const uint64_t now = MonotonicNs();
    if (duration_ns != 0 && now - t0 >= duration_ns) {
      sum.stop_reason = "duration";
      stop_ns = t0 + duration_ns;
      break;
    }
    int wait_ms = o.poll_ms;
    if (duration_ns != 0) {
      wait_ms = static_cast<int>(std::min<uint64_t>(wait_ms, (t0 + duration_ns - now) / 1000000));
    }
    auto woke = source->Wait(std::max(wait_ms, 0) + 1);
    if (!woke.ok()) {
      failure = woke.status();
      break;
    }
    bool child_changed = false;
    const int sig = *woke ? signals.Read(&child_changed) : 0;
    if (sig != 0) {
      sum.stop_reason = SignalName(sig);
      sum.stop_signal = sig;
      if (child && sig != SIGINT) child->Signal(sig);
      break;
    }
    if (child && (child_changed || !*woke) && child->Poll()) {
      sum.stop_reason = "command exit";
      break;
    }
    // The watermark: a time every CPU has passed, read before the buffers are looked at.
    const uint64_t seen = MonotonicNs();
    const uint64_t watermark = seen > o.slack_ns ? seen - o.slack_ns : 0;
    bool counted_out = false;
    while (t0 + (index + 1) * interval_ns <= watermark) {
      const uint64_t boundary = t0 + (index + 1) * interval_ns;
      failure = merger.DeliverBefore(boundary);
      if (!failure.ok()) break;
      if (duration_ns != 0 && boundary >= t0 + duration_ns) {
        sum.stop_reason = "duration";
        stop_ns = t0 + duration_ns;
        counted_out = true;
        break;
      }
      if (o.count != 0 && index + 1 == o.count) {
        // The last interval is handed over at the end, with what the buffers still hold.
        sum.stop_reason = "count";
        stop_ns = boundary;
        counted_out = true;
        break;
      }
      emit(boundary, false);
    }
    if (!failure.ok() || counted_out) break;
    failure = merger.DeliverBefore(watermark);
    if (!failure.ok()) break;
    observe(false);
  }
  if (stop_ns == 0) stop_ns = MonotonicNs();
  // Tracing off; what the buffers hold now is all there is. Intervals that ended before the stop
  // are handed over as usual, the rest goes into the last one.
  absl::Status off = source->SetEnabled(false);
  if (failure.ok()) failure = off;
  if (failure.ok()) {
    while (sum.stop_reason != "count" && t0 + (index + 1) * interval_ns < stop_ns) {
      const uint64_t boundary = t0 + (index + 1) * interval_ns;
      failure = merger.DeliverBefore(boundary);
      if (!failure.ok()) break;
      emit(boundary, false);
    }
  }
  if (failure.ok()) failure = merger.DeliverBefore(~uint64_t{0});
  if (failure.ok()) emit(std::max(stop_ns, t0 + index * interval_ns), true);
  if (failure.ok()) observe(true);
  auto end = source->Finish(builder.get());
  if (child) {
    if (sum.stop_signal != 0 || child->Poll()) {
      child->Wait();
      sum.exit_code = child->exit_code();
    } else {
      child->Signal(SIGTERM);
      child->Wait();
    }
  }
  if (!failure.ok()) return failure;
  if (!end.ok()) return end.status();
  sum.output_bytes = end->output_bytes;
  if (!end->cleanup_error.ok()) {
    sum.warnings.push_back(std::string(end->cleanup_error.message()) +
                           " (run 'iotrace reset')");
  }
  if (end->disk_full) {
    sum.warnings.push_back(absl::StrFormat(
        "%s: %s; the live figures are whole, the file holds less", o.output,
        std::string(end->storage_error.message())));
  }
  for (const std::string& n : end->notes) sum.warnings.push_back(n);
  if (merger.late() != 0) {
    sum.warnings.push_back(absl::StrFormat(
        "%u events arrived more than %g ms behind the clock and were not paired (they are in "
        "the -o file)",
        merger.late(), o.slack_ns / 1e6));
  }
  sum.cpu_s = ProcessCpuSeconds();
  sum.events = merger.delivered();
  sum.late = merger.late();
  ReadStats stats;
  stats.records = merger.delivered();
  stats.events = merger.delivered();
  result.report = builder->Finish(stats);
  // "live (ftrace, mmap, 2 CPUs)" where report names the file and its format.
  result.report.input = "live";
  result.report.file_format = sum.backend + ", " + sum.ingest;
  result.report.nr_cpus = source->nr_cpus();
  return result;
}

}  // namespace iotrace
