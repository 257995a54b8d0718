// Reader of perf.data files (PERFILE2): tracepoint samples in timestamp order, read in place
// from a mapping of the file.
#ifndef IOTRACE_PERF_DATA_READER_H_
#define IOTRACE_PERF_DATA_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "iotrace/trace_reader.h"

namespace iotrace {

absl::StatusOr<std::unique_ptr<TraceReader>> OpenPerfData(const std::string& path);

}  // namespace iotrace

#endif  // IOTRACE_PERF_DATA_READER_H_
