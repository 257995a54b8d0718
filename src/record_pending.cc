// Temporary: RunRecord needs the perf.data writer, which is being written.
#include "iotrace/record.h"

namespace iotrace {
absl::StatusOr<int> RunRecord(const RecordOptions&, RecordSummary*) {
  return absl::UnimplementedError("record is not built yet");
}
}  // namespace iotrace
