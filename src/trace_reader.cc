#include "iotrace/trace_reader.h"

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

}  // namespace iotrace
