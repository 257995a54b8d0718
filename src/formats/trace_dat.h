// trace-cmd's trace.dat container: the constants of its v6/v7 layouts (trace-cmd.dat.v6(5),
// trace-cmd.dat.v7(5), lib/trace-cmd/include/private/trace-cmd-private.h) and the parser of the
// per-CPU stats text it stores in CPUSTAT options (the kernel's per_cpu/cpuN/stats file).
#ifndef IOTRACE_FORMATS_TRACE_DAT_H_
#define IOTRACE_FORMATS_TRACE_DAT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "iotrace/event/cpu_buffer_stats.h"

namespace iotrace {

// The section labels of a v6 file: 10 bytes each, NUL included.
inline constexpr char kTraceDatOptionsLabel[] = "options  ";    // + NUL = 10 bytes
inline constexpr char kTraceDatFlyrecordLabel[] = "flyrecord";  // + NUL = 10 bytes
inline constexpr char kTraceDatLatencyLabel[] = "latency  ";    // + NUL = 10 bytes
inline constexpr size_t kTraceDatLabelSize = 10;

// The CPUSTAT text of every CPU of a recording that `iotrace recover` finished: the kernel's
// counters were never read, so its losses are unknown. The reader marks such a file unfinished.
inline constexpr char kTraceDatRecoveredNote[] =
    "iotrace: the recording did not finish (killed); its pages were recovered from its spool "
    "files by iotrace recover, and what the kernel lost is not known\n";

// Option ids (enum tracecmd_option_id). In v6 an option is {u16 id, u32 size, data} and the list
// ends with a bare u16 0; in v7 kOptionDone carries the u64 offset of the next options section.
enum TraceDatOption : uint16_t {
  kOptionDone = 0,
  kOptionDate = 1,        // ASCII: offset of the timestamps from gettimeofday, in microseconds
  kOptionCpuStat = 2,     // ASCII: one CPU's per_cpu/cpuN/stats text (or a "Buffer: NAME" marker)
  kOptionBuffer = 3,      // a buffer instance's flyrecord: v6 {u64 offset, name}; v7 adds more
  kOptionTraceClock = 4,  // ASCII: the trace_clock file; in v6 it also means that a clock
                          // {u64 size, text} follows the flyrecord CPU table
  kOptionUname = 5,
  kOptionHook = 6,
  kOptionOffset = 7,    // ASCII: nanoseconds added to every timestamp
  kOptionCpuCount = 8,  // u32
  kOptionVersion = 9,   // ASCII: the recording tool's version
  kOptionProcMaps = 10,
  kOptionTraceId = 11,
  kOptionTimeShift = 12,
  kOptionGuest = 13,
  kOptionTsc2Nsec = 14,
  kOptionStrings = 15,
  kOptionHeaderInfo = 16,  // v7: u64 offsets of the metadata sections
  kOptionFtraceEvents = 17,
  kOptionEventFormats = 18,
  kOptionKallsyms = 19,
  kOptionPrintk = 20,
  kOptionCmdlines = 21,
  kOptionBufferText = 22,
};

// v7 section header: {u16 id, u16 flags, u32 description string id, u64 size}.
inline constexpr size_t kTraceDatSectionHeaderSize = 16;
inline constexpr uint16_t kTraceDatSectionCompressed = 1;

// One CPU's ring-buffer statistics as the kernel prints them in per_cpu/cpuN/stats
// (kernel/trace/trace.c, tracing_stats_read): "entries: N", "overrun: N", ... Lines iotrace's
// writer adds are parsed too ("iotrace pages not written: N").
// A CPUSTAT option's text is the instance's per_cpu/cpuN/stats file (event/cpu_buffer_stats.h).
using FtraceCpuStats = CpuBufferStats;

// ParseCpuBufferStats, and an error when the text has none of the known counters.
absl::StatusOr<FtraceCpuStats> ParseFtraceCpuStats(std::string_view text);

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_TRACE_DAT_H_
