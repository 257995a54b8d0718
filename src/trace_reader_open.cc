// TraceReader::Open: sniff the file's magic and hand it to the matching reader.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "iotrace/fd.h"
#include "iotrace/perf_data_reader.h"
#include "iotrace/status.h"
#include "iotrace/trace_dat_reader.h"
#include "iotrace/trace_reader.h"
#include "iotrace/tracing_data.h"

namespace iotrace {

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    absl::Status s = ErrnoError(errno, "open", path);
    if (errno == ENOENT) {
      return WithHint(s, "record one first: iotrace record -d 10 -o " + path);
    }
    return s;
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError(errno, "stat", path);
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat("read %s: is a directory", path));
  }
  char magic[kTracingMagicSize] = {};
  ssize_t n = ::pread(fd.get(), magic, sizeof(magic), 0);
  if (n < 0) return ErrnoError(errno, "read", path);
  if (n >= 8 && std::memcmp(magic, "PERFILE2", 8) == 0) return OpenPerfData(path);
  if (n == static_cast<ssize_t>(kTracingMagicSize) &&
      std::memcmp(magic, kTracingMagic, kTracingMagicSize) == 0) {
    return OpenTraceDat(path);
  }
  if (n >= 8 && std::memcmp(magic, "PERFFILE", 8) == 0) {
    return WithHint(absl::InvalidArgumentError(absl::StrFormat(
                        "read %s: perf.data version 1 (PERFFILE) is not supported", path)),
                    "re-record with a perf from the last ten years");
  }
  return WithHint(
      absl::InvalidArgumentError(absl::StrFormat(
          "read %s: not a perf.data or trace.dat file (%s)", path,
          n == 0 ? "the file is empty" : "unknown magic bytes")),
      "iotrace report reads files written by iotrace record, perf record or trace-cmd record");
}

}  // namespace iotrace
