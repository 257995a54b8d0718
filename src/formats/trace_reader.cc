#include "iotrace/formats/trace_reader.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace iotrace {

RecordingHost RecordingHostOf(std::string_view file_format,
                              const std::vector<std::pair<std::string, std::string>>& info) {
  RecordingHost h;
  std::string version;
  for (const auto& [key, value] : info) {
    if (key == "hostname") h.host = value;
    if (key == "os_release") h.kernel = value;
    if (key == "arch") h.arch = value;
    if (key == "perf_version" || key == "recorded by") version = value;
    if (key == "uname") {
      // "sysname nodename release machine", as uname -snrm prints it.
      const std::vector<std::string> words = absl::StrSplit(value, ' ', absl::SkipEmpty());
      if (words.size() >= 2 && h.host.empty()) h.host = words[1];
      if (words.size() >= 3 && h.kernel.empty()) h.kernel = words[2];
      if (words.size() >= 4 && h.arch.empty()) h.arch = words[3];
    }
  }
  if (!version.empty() && absl::ascii_isdigit(static_cast<unsigned char>(version[0]))) {
    // A version without a name: the tool that writes its files so. (Several files' format is
    // their kinds joined by '+', the first file's first, whose header `info` is.)
    const std::string_view first = file_format.substr(0, file_format.find('+'));
    if (first == "perf.data") version = "perf " + version;
    if (first == "trace.dat") version = "trace-cmd " + version;
  }
  h.recorder = version;
  return h;
}

void ReadStats::AddProblem(const std::string& name, uint64_t count) {
  if (count == 0) return;
  for (auto& [n, c] : problems) {
    if (n == name) {
      c += count;
      return;
    }
  }
  problems.emplace_back(name, count);
}

uint64_t ReadStats::Problem(const std::string& name) const {
  for (const auto& [n, c] : problems) {
    if (n == name) return c;
  }
  return 0;
}

std::string TraceReader::RangesUnfit(const TimeRange& range, const RangeReadResult& earlier,
                                     const RangeReadResult& later) const {
  if (earlier.problems + later.problems != 0) return "problems in the data";
  if (earlier.losses_placed + later.losses_placed != 0) return "losses placed in the data";
  if (earlier.out_of_order + later.out_of_order != 0) return "records out of time order";
  if (earlier.stopped_at != later.first_counted) return "the ranges do not meet at the cut";
  return "";
}

}  // namespace iotrace
