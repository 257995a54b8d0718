#include "iotrace/sys/cpus.h"

#include <sched.h>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"

namespace iotrace {

absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text) {
  std::vector<int> cpus;
  for (std::string_view part : SplitText(TrimText(text), ',')) {
    size_t dash = part.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!absl::SimpleAtoi(std::string(part), &lo)) {
        return absl::InvalidArgumentError(absl::StrFormat("bad CPU list '%s'", text));
      }
      hi = lo;
    } else if (!absl::SimpleAtoi(std::string(part.substr(0, dash)), &lo) ||
               !absl::SimpleAtoi(std::string(part.substr(dash + 1)), &hi) || hi < lo ||
               hi - lo > 65535) {
      return absl::InvalidArgumentError(absl::StrFormat("bad CPU list '%s'", text));
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  if (cpus.empty()) return absl::InvalidArgumentError("empty CPU list");
  return cpus;
}

absl::StatusOr<std::vector<int>> OnlineCpus() {
  IOTRACE_ASSIGN_OR_RETURN(std::string text,
                           ReadFileToString("/sys/devices/system/cpu/online"));
  return ParseCpuList(text);
}

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return CPU_COUNT(&set);
}

}  // namespace iotrace
