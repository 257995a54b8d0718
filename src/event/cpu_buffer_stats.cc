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

std::string CpuBufferStatsSince(const CpuBufferStats& now, const CpuBufferStats& base) {
  std::string out;
  for (std::string_view line : SplitText(now.text, '\n')) {
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    const std::string_view key =
        colon == std::string_view::npos ? std::string_view() : TrimText(line.substr(0, colon));
    const uint64_t* now_v = key == "overrun"          ? &now.overrun
                            : key == "commit overrun" ? &now.commit_overrun
                            : key == "dropped events" ? &now.dropped_events
                            : key == "read events"    ? &now.read_events
                                                      : nullptr;
    if (now_v == nullptr) {
      out.append(line).append("\n");
      continue;
    }
    const uint64_t base_v = key == "overrun"          ? base.overrun
                            : key == "commit overrun" ? base.commit_overrun
                            : key == "dropped events" ? base.dropped_events
                                                      : base.read_events;
    out.append(key).append(": ");
    out += std::to_string(*now_v >= base_v ? *now_v - base_v : 0) + "\n";
  }
  return out;
}

}  // namespace iotrace
