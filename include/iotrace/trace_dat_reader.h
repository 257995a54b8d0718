// Reader of trace-cmd trace.dat files: ftrace ring-buffer pages walked in place, the per-CPU
// streams merged in timestamp order.
#ifndef IOTRACE_TRACE_DAT_READER_H_
#define IOTRACE_TRACE_DAT_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "iotrace/trace_reader.h"

namespace iotrace {

absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceDat(const std::string& path);

}  // namespace iotrace

#endif  // IOTRACE_TRACE_DAT_READER_H_
