#include "iotrace/fd.h"

#include <fcntl.h>

#include <cerrno>

#include "iotrace/status.h"

namespace iotrace {

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open", path);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "read", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

absl::Status WriteStringToFile(const std::string& path, std::string_view contents) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open", path);
  ssize_t n;
  do {
    n = ::write(fd.get(), contents.data(), contents.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoError(errno, "write", path);
  if (static_cast<size_t>(n) != contents.size()) {
    return absl::InternalError("short write to " + path);
  }
  return absl::OkStatus();
}

}  // namespace iotrace
