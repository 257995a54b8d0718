#include "iotrace/trace_dat_reader.h"

namespace iotrace {

// Placeholder until the trace.dat reader lands.
absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceDat(const std::string& path) {
  return absl::UnimplementedError("reading trace.dat is not built yet");
}

}  // namespace iotrace
