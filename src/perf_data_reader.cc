#include "iotrace/perf_data_reader.h"

namespace iotrace {

// Placeholder until the perf.data reader lands.
absl::StatusOr<std::unique_ptr<TraceReader>> OpenPerfData(const std::string& path) {
  return absl::UnimplementedError("reading perf.data is not built yet");
}

}  // namespace iotrace
