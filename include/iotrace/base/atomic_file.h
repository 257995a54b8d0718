// A file replaced whole: readers see the old contents or the new, never a part (node_exporter's
// textfile collector reads `--textfile` while live rewrites it every interval).
#ifndef IOTRACE_BASE_ATOMIC_FILE_H_
#define IOTRACE_BASE_ATOMIC_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace iotrace {

// Writes `contents` to a temporary file beside `path` (same directory, so the rename cannot
// cross file systems; a dot name without `path`'s extension, so the collector, which reads
// *.prom, skips it), fsyncs it, renames it over `path` and fsyncs the directory. The file is
// readable by all (0644): the collector usually runs as another user. On any error the
// temporary file is removed and the message names `path`.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace iotrace

#endif  // IOTRACE_BASE_ATOMIC_FILE_H_
