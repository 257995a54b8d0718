// `iotrace live`: the kernel's buffers read as they fill (a LiveSource), merged across CPUs up to
// a watermark (LiveMerger), paired and counted by the report builder that `iotrace report` uses,
// with a LiveWindow on it for each interval. At the end the builder's report is the cumulative
// report of the whole run, as `iotrace report` would make it from the same events.
#ifndef IOTRACE_LIVE_LIVE_ENGINE_H_
#define IOTRACE_LIVE_LIVE_ENGINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/analysis/live_model.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/analysis/live_window.h"
#include "iotrace/analysis/match_stats.h"
#include "iotrace/analysis/report.h"
#include "iotrace/capture/ftrace_stream.h"
#include "iotrace/capture/record.h"

namespace iotrace {

// The run after a poll round, for exporters (--listen, --textfile).
struct LivePoll {
  double elapsed_s = 0;
  MatchStats match;                        // the matcher's counters so far
  std::vector<DeviceMatchStats> devices;   // per device
  size_t tracked = 0;                                    // requests tracked now
  uint64_t events = 0;                                   // records paired so far
  // The kernel's loss counters, read at most every 0.5 s (and at the run's last poll).
  uint64_t lost = 0;
  uint64_t late = 0;
  std::string backend;
  bool final = false;                                    // the run's last poll
};

// Watches a run: gives the report builder its taps before tracing starts, and sees every poll
// round on the engine's thread (it must not block: exporters publish a snapshot and return).
class LiveObserver {
 public:
  virtual ~LiveObserver() = default;
  virtual std::vector<SampleTap*> Taps() = 0;
  virtual void OnPoll(const LivePoll& poll) = 0;
};

struct LiveOptions {
  // The tracepoints to enable ("" : record's defaults, DefaultRecordEvents()); --phases asks for
  // those its phases need (LiveEventsForPhases).
  std::vector<std::string> events;
  std::vector<std::string> devs;      // --dev: filtered in the kernel, as record does
  double interval_s = 1;              // -I
  uint64_t count = 0;                 // -c: intervals; 0: no bound
  double duration_s = 0;              // -d; 0: until Ctrl-C or the command's exit
  Backend backend = Backend::kAuto;
  FtraceIngest ingest = FtraceIngest::kAuto;
  std::string output;                 // -o: the recording beside; "" for none
  std::vector<std::string> command;   // after --
  uint32_t buffer_kb = 8192;          // ftrace: per CPU
  uint32_t mmap_pages = 1024;         // perf: per CPU ring
  std::string tracefs_dir;
  LiveWindowOptions window;           // --phases, the processes' table
  // A record is paired once the clock, read before the buffers are looked at, is this far past
  // it: the time a write under way may take to show (DeliverBefore's watermark). The delay of a
  // record between its write and its pairing is at most poll_ms plus this.
  uint64_t slack_ns = 20'000'000;
  int poll_ms = 50;
  // The report builder's bounds (as report's --expiry, --max-inflight).
  double expiry_s = 30;
  size_t max_inflight = 131072;
  std::string sysfs_root = "/sys";
  std::vector<std::string> argv;      // the command line, stored in the file
  LiveObserver* observer = nullptr;   // not owned
};

// What the run shows at its end, besides the report.
struct LiveRunSummary {
  std::string backend;         // "ftrace", "perf"
  std::string backend_reason;
  std::string backend_check;   // --backend auto: whether its check ran or a kept verdict
  std::string ingest;          // "mmap", "read", "perf rings"
  std::string ingest_note;     // why not the preferred way, "" when it was used
  std::string output;          // -o, or ""
  uint64_t output_bytes = 0;
  double seconds = 0;
  uint64_t events = 0;         // records paired (every record of the run, in time order)
  uint64_t late = 0;           // records that arrived behind the watermark (not paired)
  uint64_t lost = 0;           // the kernel's loss counters at the end
  uint64_t intervals = 0;
  std::string stop_reason;     // "duration", "count", "command exit", "SIGINT", ...
  int stop_signal = 0;
  int exit_code = 0;           // the command's, when one ran
  double cpu_s = 0;            // this process's CPU time (user + system), set-up included
  std::vector<std::string> warnings;
};

class IntervalSink {
 public:
  virtual ~IntervalSink() = default;
  virtual void OnInterval(const LiveInterval& interval, const LiveRunSummary& so_far) = 0;
};

struct LiveResult {
  LatencyReport report;
  LiveRunSummary summary;
};

// The tracepoints the phases `phases` (PhaseBit()s) need, and no more: issue, complete and
// requeue always (D2C, and requeues re-issue); insert and merge for I2D and I2C; bio_queue for
// Q2D and Q2C. Fewer events cost the kernel less: `--phases d2c` traces two per request, as
// biolatency does.
std::vector<std::string> LiveEventsForPhases(unsigned phases);

// Checks the options alone (usage errors), before anything is touched.
absl::Status ValidateLiveOptions(const LiveOptions& options);

// Runs until --duration, --count, the command's exit or a signal; every interval goes to `sink`
// as it ends (the last one, maybe shorter, marked final). Without a sink the intervals are not
// kept at all (the run's report and the observer's figures are).
absl::StatusOr<LiveResult> RunLive(const LiveOptions& options, IntervalSink* sink);

}  // namespace iotrace

#endif  // IOTRACE_LIVE_LIVE_ENGINE_H_
