// Event formats from outside a recording, for a perf.data that lost its own with its end
// (TraceReader's FormatsFallback): another recording's (report --formats-from FILE), a tracefs
// tree's (--formats-from DIR), or the running kernel's.
#ifndef IOTRACE_FORMATS_EXTERNAL_FORMATS_H_
#define IOTRACE_FORMATS_EXTERNAL_FORMATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {

// The formats of the events with these ids under `root`, a tracefs mount or a copy of one
// (events/<system>/<event>/{id,format}); ids it does not have are left out. The block system is
// looked at first, the others only for ids not found there.
absl::StatusOr<std::vector<EventFormat>> FormatsFromEventsDir(const std::string& root,
                                                              const std::vector<uint32_t>& ids);

// --formats-from PATH: a perf.data or trace.dat (the formats it carries), or a directory laid
// out as tracefs. Read when the fallback is used.
FormatsFallback FormatsFromPath(const std::string& path);

// The running kernel's formats, read under `tracefs` ("": the mounted tracefs); `release` names
// the kernel in messages ("": uname -r).
FormatsFallback RunningKernelFormats(const std::string& tracefs = "",
                                     const std::string& release = "");

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_EXTERNAL_FORMATS_H_
