// The kernel's per-CPU ring-buffer counters (tracefs per_cpu/cpuN/stats): what a recording's
// buffers lost and kept. Read live by sys/tracefs, stored in trace.dat's CPUSTAT options.
#ifndef IOTRACE_EVENT_CPU_BUFFER_STATS_H_
#define IOTRACE_EVENT_CPU_BUFFER_STATS_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace iotrace {

// Per-CPU ring buffer statistics of an instance (per_cpu/cpuN/stats).
// The same text is stored in trace.dat's CPUSTAT option (trace-cmd adds a "CPU: N" line, and
// iotrace's writer an "iotrace pages not written: N" line), so readers parse it with this too.
struct CpuBufferStats {
  int cpu = -1;                 // from a "CPU: N" line, -1 when absent
  uint64_t entries = 0;         // events still in the ring buffer (not read)
  uint64_t overrun = 0;         // events overwritten before they were read
  uint64_t commit_overrun = 0;  // events lost to a wrapped commit (nested writers)
  uint64_t bytes = 0;
  uint64_t dropped_events = 0;  // events refused because the buffer was full (no overwrite)
  uint64_t read_events = 0;
  uint64_t pages_not_written = 0;  // iotrace's trace.dat writer: pages it could not store
  int known_counters = 0;          // how many counter lines were recognised
  std::string text;  // the file as read, for trace.dat's CPUSTAT option
};
// Unknown lines are ignored ("oldest event ts", "now ts").
CpuBufferStats ParseCpuBufferStats(std::string_view text);

// `now`'s text with the counters that only grow (overrun, commit overrun, dropped events, read
// events) made counts since `base` (an earlier reading of the same CPU); the others as `now` has
// them. A recording split into several files stores each file's share so, and files read
// together count a loss once.
std::string CpuBufferStatsSince(const CpuBufferStats& now, const CpuBufferStats& base);

}  // namespace iotrace

#endif  // IOTRACE_EVENT_CPU_BUFFER_STATS_H_
