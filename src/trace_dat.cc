#include "iotrace/trace_dat.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace iotrace {

absl::StatusOr<FtraceCpuStats> ParseFtraceCpuStats(std::string_view text) {
  FtraceCpuStats stats;
  int known = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, colon));
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    uint64_t* field = nullptr;
    if (key == "entries")
      field = &stats.entries;
    else if (key == "overrun")
      field = &stats.overrun;
    else if (key == "commit overrun")
      field = &stats.commit_overrun;
    else if (key == "bytes")
      field = &stats.bytes;
    else if (key == "dropped events")
      field = &stats.dropped_events;
    else if (key == "read events")
      field = &stats.read_events;
    else if (key == "iotrace pages not written")
      field = &stats.pages_not_written;
    if (key == "CPU") {
      int cpu = -1;
      if (absl::SimpleAtoi(value, &cpu) && cpu >= 0) stats.cpu = cpu;
      continue;
    }
    if (field == nullptr) continue;  // "oldest event ts", "now ts": not needed
    uint64_t v = 0;
    if (absl::SimpleAtoi(value, &v)) {
      *field = v;
      ++known;
    }
  }
  if (known == 0) {
    return absl::InvalidArgumentError(
        "parse per-CPU ring buffer stats: no known counter in the text");
  }
  return stats;
}

}  // namespace iotrace
