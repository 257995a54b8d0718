// What `iotrace live` shows of one interval, as data: the latency of each device x op x phase,
// the throughput of each device x op, the busiest processes, and what was lost or left unpaired
// in the interval. LiveWindow (live_window.h) fills it; the formatters (output/live_view.h)
// print it, knowing nothing of how it was filled.
#ifndef IOTRACE_ANALYSIS_LIVE_MODEL_H_
#define IOTRACE_ANALYSIS_LIVE_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "iotrace/analysis/report.h"

namespace iotrace {

// Requests that ended in the interval (at their final completion), per device x op (x class
// with --by).
struct LiveThroughput {
  uint32_t dev = 0;
  std::string device;
  std::string by;  // --by's class (LatencyGroup::by)
  BlockOp op = BlockOp::kOther;
  uint64_t requests = 0;
  uint64_t bytes = 0;
};

// One process's I/O in the interval, as biotop shows it: the process that inserted the request
// (or issued it, when there was no insert), per device.
struct LiveProcess {
  int32_t pid = -1;    // -1: the processes past the table's bound, added up
  std::string comm;
  uint32_t dev = 0;
  std::string device;
  uint64_t requests = 0;
  uint64_t bytes = 0;
  uint64_t i2c_p50_ns = 0;  // 0 when no request of it had an insert (I2C unknown)
  uint64_t i2c_p99_ns = 0;
  uint64_t d2c_p50_ns = 0;
  uint64_t d2c_p99_ns = 0;
};

// Counters of the interval (differences of the run's counters at its end and at its start).
struct LiveIntervalCounts {
  uint64_t events = 0;      // block events paired
  uint64_t lost = 0;        // events the kernel lost (ring overrun, dropped, perf LOST)
  uint64_t late = 0;        // events that arrived behind the watermark (not paired)
  uint64_t unpaired = 0;    // issues without an insert, completions without an issue, requeues
                            // of requests never seen issued (MatchStats)
  uint64_t expired = 0;     // requests given up: idle past --expiry, or the table full
  uint64_t inflight = 0;    // requests tracked at the end of the interval
};

struct LiveInterval {
  uint64_t index = 0;
  double start_s = 0;       // from the start of tracing
  double length_s = 0;
  std::string by;  // --by's dimension (LatencyReport::by); "" without it
  std::vector<LatencyGroup> groups;  // by dev, class, op, phase; only the phases asked for
  std::vector<LiveThroughput> throughput;  // by dev, op
  std::vector<LiveProcess> processes;      // by requests, most first; at most the bound asked
  LiveIntervalCounts counts;
  // What changed in the interval, one line each ("--dev loop3 (7:3) went away: its rows stop").
  std::vector<std::string> notes;
  bool final = false;       // the last interval of the run (it may be shorter)
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_LIVE_MODEL_H_
