// The CPUs of the running machine: the online ones, and the kernel's CPU-list syntax.
#ifndef IOTRACE_SYS_CPUS_H_
#define IOTRACE_SYS_CPUS_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace iotrace {

// The online CPUs (/sys/devices/system/cpu/online).
absl::StatusOr<std::vector<int>> OnlineCpus();
// The CPUs this process may run on (its affinity mask; 1 when it cannot be read).
int UsableCpus();
// Parses a kernel CPU list ("0-3,5").
absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text);

}  // namespace iotrace

#endif  // IOTRACE_SYS_CPUS_H_
