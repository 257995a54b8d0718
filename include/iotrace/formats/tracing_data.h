// The "tracing data" block shared by trace.dat (its header, versions "6"/"7") and perf.data (the
// HEADER_TRACING_DATA feature, version "0.6"): magic, endianness, long and page size,
// header_page, header_event, ftrace and event format texts, kallsyms, printk formats and saved
// cmdlines. See trace-cmd.dat.v6(5) and tools/perf/util/trace-event-info.c.
#ifndef IOTRACE_FORMATS_TRACING_DATA_H_
#define IOTRACE_FORMATS_TRACING_DATA_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"
#include "iotrace/event/event_format.h"

namespace iotrace {

inline constexpr char kTracingMagic[] = "\x17\x08\x44tracing";  // 10 bytes, no NUL
inline constexpr size_t kTracingMagicSize = 10;

// Writes the block; `version` is "0.6" for perf.data and "6" for trace.dat. Event formats are
// grouped by system in first-seen order. Little endian, as the host.
std::string EncodeTracingData(const TracingMetadata& meta, std::string_view version);

struct DecodedTracingData {
  TracingMetadata meta;
  std::string version;
  size_t consumed = 0;  // bytes of `data` the block used
};

// Parses the block at the start of `data`. Every length is checked against `data`; a count or
// size that cannot fit is an error, never an allocation. For version "6"/"0.6" the block ends
// after saved cmdlines; for older perf versions ("0.5") there are no cmdlines.
// `keep_kallsyms` false leaves meta.kallsyms empty (its bytes are still checked and skipped):
// the readers do not use it, and copying a recording's ~5 MB of /proc/kallsyms cost a report
// ~9 ms on this VM, in the copy and the page faults of the fresh string.
absl::StatusOr<DecodedTracingData> DecodeTracingData(ByteView data, bool keep_kallsyms = true);

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_TRACING_DATA_H_
