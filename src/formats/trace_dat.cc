#include "trace_dat.h"

namespace iotrace {

absl::StatusOr<FtraceCpuStats> ParseFtraceCpuStats(std::string_view text) {
  CpuBufferStats stats = ParseCpuBufferStats(text);
  if (stats.known_counters == 0) {
    return absl::InvalidArgumentError(
        "parse per-CPU ring buffer stats: no known counter in the text");
  }
  return stats;
}

}  // namespace iotrace
