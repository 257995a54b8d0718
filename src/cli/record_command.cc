#include <cstdio>
#include <string>
#include <vector>

#include "iotrace/cli.h"

namespace iotrace {

int RecordCommand(const std::vector<std::string>& args) {
  std::fprintf(stderr, "iotrace: error: record is not built yet\n");
  return kExitRuntime;
}

}  // namespace iotrace
