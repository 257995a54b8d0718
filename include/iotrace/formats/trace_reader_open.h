// The reader factory: sniffs a file's magic and opens the TraceReader that reads it (perf.data,
// pipe-mode perf.data, trace.dat). The one module that knows every concrete reader, so that the
// interface (trace_reader.h) knows none.
#ifndef IOTRACE_FORMATS_TRACE_READER_OPEN_H_
#define IOTRACE_FORMATS_TRACE_READER_OPEN_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {

// Opens `path` ("-": standard input), sniffing its magic: perf.data ("PERFILE2", or a pipe-mode
// stream) or trace.dat ("\x17\x08\x44tracing"). `formats_fallback` (may be null) is tried when
// the file's event formats are lost.
absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceReader(
    const std::string& path, const FormatsFallback* formats_fallback = nullptr);

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_TRACE_READER_OPEN_H_
