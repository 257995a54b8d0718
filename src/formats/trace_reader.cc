#include "iotrace/formats/trace_reader.h"

namespace iotrace {

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
