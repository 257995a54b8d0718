#include "iotrace/event/cpu_buffer_stats.h"

#include "absl/strings/numbers.h"
#include "iotrace/base/text.h"

namespace iotrace {

CpuBufferStats ParseCpuBufferStats(std::string_view text) {
  CpuBufferStats s;
  s.text = std::string(text);
  for (std::string_view line : SplitText(text, '\n')) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string key = std::string(TrimText(line.substr(0, colon)));
    std::string value = std::string(TrimText(line.substr(colon + 1)));
    if (key == "CPU") {
      int cpu = -1;
      if (absl::SimpleAtoi(value, &cpu) && cpu >= 0) s.cpu = cpu;
      continue;
    }
    uint64_t* field = key == "entries"                     ? &s.entries
                      : key == "overrun"                   ? &s.overrun
                      : key == "commit overrun"            ? &s.commit_overrun
                      : key == "bytes"                     ? &s.bytes
                      : key == "dropped events"            ? &s.dropped_events
                      : key == "read events"               ? &s.read_events
                      : key == "iotrace pages not written" ? &s.pages_not_written
                                                           : nullptr;
    if (field != nullptr && absl::SimpleAtoi(value, field)) ++s.known_counters;
  }
  return s;
}

}  // namespace iotrace
