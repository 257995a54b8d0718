#include "iotrace/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"

namespace iotrace {
namespace {

// The temporary file, removed unless it was renamed into place.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  void Keep() { path_.clear(); }

 private:
  std::string path_;
};

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("write ", path, ": not a file name"));
  }
  std::string temp_name = absl::StrCat(dir == "." ? "" : dir, ".", name, ".tmp.XXXXXX");
  UniqueFd fd(::mkostemp(temp_name.data(), O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "create a temporary file for", path);
  TempFile temp(temp_name);

  if (::fchmod(fd.get(), 0644) != 0) return ErrnoError(errno, "chmod", temp.path());
  for (size_t done = 0; done < contents.size();) {
    const ssize_t n = ::write(fd.get(), contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "write", temp.path());
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return ErrnoError(errno, "fsync", temp.path());
  if (::close(fd.Release()) != 0) return ErrnoError(errno, "close", temp.path());
  if (::rename(temp.path().c_str(), path.c_str()) != 0) {
    return ErrnoError(errno, absl::StrCat("rename ", temp.path(), " to"), path);
  }
  temp.Keep();
  // The rename is durable once the directory is: a crash then leaves the new file, not none.
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid() || ::fsync(dir_fd.get()) != 0) {
    return ErrnoError(errno, "fsync the directory of", path);
  }
  return absl::OkStatus();
}

}  // namespace iotrace
