#include <cstdio>
#include <string>
#include <vector>

#include "iotrace/cli.h"

namespace iotrace {

int ReportCommand(const std::vector<std::string>& args) {
  std::fprintf(stderr, "iotrace: error: report is not built yet\n");
  return kExitRuntime;
}

}  // namespace iotrace
