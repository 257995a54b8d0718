#include "iotrace/base/fd.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "iotrace/base/status.h"

namespace iotrace {

absl::StatusOr<UniqueMapping> MapHugeAnonymous(size_t size) {
  constexpr size_t kHuge = size_t{2} << 20;
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t keep = (std::max<size_t>(size, 1) + page - 1) & ~(page - 1);
  if (keep < kHuge) {
    // No whole huge page to ask for: plain pages, one call (trace.dat at 256 CPUs maps 512
    // small rings; the 2 MiB alignment cost each two more calls here).
    void* plain = ::mmap(nullptr, keep, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (plain == MAP_FAILED) return ErrnoError(errno, "map", "anonymous memory");
    return UniqueMapping(plain, keep);
  }
  const size_t total = keep + kHuge;  // room to start on a 2 MiB boundary
  void* area = ::mmap(nullptr, total, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (area == MAP_FAILED) return ErrnoError(errno, "map", "anonymous memory");
  // Keep `keep` bytes from the first 2 MiB boundary, nothing more: with THP "always", a 2 MiB
  // stretch of the mapping past `size` would take a huge page at its first touch.
  const uintptr_t start = reinterpret_cast<uintptr_t>(area);
  const uintptr_t aligned = (start + kHuge - 1) & ~uintptr_t{kHuge - 1};
  if (aligned > start) ::munmap(area, aligned - start);
  const uintptr_t end = start + total;
  if (end > aligned + keep) ::munmap(reinterpret_cast<void*>(aligned + keep), end - aligned - keep);
  void* at = reinterpret_cast<void*>(aligned);
  // A hint (without THP, plain pages), for the whole huge pages of what is kept only: of the
  // pages `size` is rounded up to, not of `size` itself (a mapping a few hundred bytes short of
  // 2 MiB would get none).
  const size_t whole = keep & ~(kHuge - 1);
  if (whole > 0) ::madvise(at, whole, MADV_HUGEPAGE);
  return UniqueMapping(at, keep);
}

size_t PreadUpTo(int fd, void* buf, size_t n, uint64_t offset) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, static_cast<char*>(buf) + done, n - done,
                              static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

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

namespace {

std::string ScratchDir() {
  const char* env = std::getenv("TMPDIR");
  return env != nullptr && *env != '\0' ? env : "/tmp";
}

absl::Status ScratchError(int err, std::string_view action, const std::string& where) {
  return WithHint(ErrnoError(err, action, where),
                  "set TMPDIR to a writable directory with room for a copy of the trace");
}

}  // namespace

absl::StatusOr<UniqueFd> OpenScratchFile(std::string* where) {
  *where = ScratchDir();
  UniqueFd fd(::open(where->c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (fd.valid()) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    return ScratchError(errno, "create a temporary file in", *where);
  }
  // A filesystem without O_TMPFILE: a named file, unlinked at once.
  IOTRACE_ASSIGN_OR_RETURN(std::string path, CreateScratchPath("iotrace-scratch"));
  UniqueFd named(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  int err = errno;
  ::unlink(path.c_str());
  if (!named.valid()) return ScratchError(err, "open", path);
  return named;
}

absl::StatusOr<std::string> CreateScratchPath(std::string_view stem) {
  std::string path = ScratchDir() + "/" + std::string(stem) + ".XXXXXX";
  int fd = ::mkstemp(path.data());
  if (fd < 0) return ScratchError(errno, "create a temporary file in", ScratchDir());
  ::close(fd);
  return path;
}

absl::Status WriteToScratchFile(int fd, ByteView bytes) {
  const uint8_t* data = bytes.data;
  size_t size = bytes.size;
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return ScratchError(n < 0 ? errno : ENOSPC, "write the data to", "a temporary file");
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace iotrace
