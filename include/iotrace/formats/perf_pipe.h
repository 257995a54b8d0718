// perf's pipe-mode stream (`perf record -o -`, or a file saved from one), turned into a regular
// perf.data so that the in-place reader can take it.
//
// Pipe mode has a 16-byte header and no sections: the attrs arrive as PERF_RECORD_HEADER_ATTR,
// the event formats as PERF_RECORD_HEADER_TRACING_DATA (its bytes follow the record, padded to
// 8), the host facts as PERF_RECORD_HEADER_FEATURE, mixed with the kernel's records. The
// conversion copies the kernel's records (and FINISHED_ROUND marks) verbatim, in runs, into the
// data section of a new file written by PerfDataWriter; nothing is decoded per sample.
#ifndef IOTRACE_FORMATS_PERF_PIPE_H_
#define IOTRACE_FORMATS_PERF_PIPE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "iotrace/base/bytes.h"

namespace iotrace {

// True when `file` starts with perf's pipe-mode header.
bool IsPipePerfData(ByteView file);

struct PipeConversion {
  uint64_t records = 0;     // kernel records copied
  uint64_t truncated = 0;   // 1 when the stream ended inside a record (the rest is dropped)
  uint64_t late_attrs = 0;  // attrs sent after the samples began (their samples: unknown ids)
  // 1 when a compressed record (perf record -z) could not be inflated: the stream stops there,
  // as if cut short.
  uint64_t compressed_damaged = 0;
};

// Writes the regular perf.data equivalent of the pipe-mode stream `stream` to `out_path`.
// Fails (InvalidArgument) when the stream has no attrs or no tracing data: the tracepoints
// could not be decoded. A stream cut short keeps every whole record before the cut. One pass;
// `release(offset)`, when given, is called once the bytes before `offset` are no longer
// needed (the caller's mapping can drop them, which keeps memory bounded). The tracing data is
// written without the stream's kallsyms: the file is a scratch file for the report, whose
// readers do not use it.
absl::Status ConvertPipePerfData(ByteView stream, const std::string& out_path,
                                 PipeConversion* result,
                                 const std::function<void(uint64_t)>& release = {});

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_PERF_PIPE_H_
