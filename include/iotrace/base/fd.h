// Move-only owners of file descriptors and memory mappings, closed/unmapped on every path.
#ifndef IOTRACE_BASE_FD_H_
#define IOTRACE_BASE_FD_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"

namespace iotrace {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

class UniqueMapping {
 public:
  UniqueMapping() = default;
  UniqueMapping(void* addr, size_t size) : addr_(addr), size_(size) {}
  UniqueMapping(UniqueMapping&& other) noexcept
      : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  UniqueMapping& operator=(UniqueMapping&& other) noexcept {
    if (this != &other) {
      Reset();
      addr_ = std::exchange(other.addr_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  UniqueMapping(const UniqueMapping&) = delete;
  UniqueMapping& operator=(const UniqueMapping&) = delete;
  ~UniqueMapping() { Reset(); }

  void* addr() const { return addr_; }
  size_t size() const { return size_; }
  bool valid() const { return addr_ != nullptr; }
  void Reset() {
    if (addr_ != nullptr) ::munmap(addr_, size_);
    addr_ = nullptr;
    size_ = 0;
  }

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

// Zeroed anonymous memory of `size` bytes (rounded up to whole pages); from 2 MiB on 2 MiB-aligned,
// its whole 2 MiB stretches asked for transparent huge pages (MADV_HUGEPAGE; ignored where THP
// is off), and page-aligned plain pages below that.
// On this VM (shadow page tables) the first touch of each 4 KiB page costs ~10 us: 8 MiB took
// 20 ms in 4 KiB pages, 0.6 ms in huge pages.
absl::StatusOr<UniqueMapping> MapHugeAnonymous(size_t size);

// Reads a whole (small) file such as a tracefs or procfs file.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Reads `n` bytes of `fd` at `offset` into `buf`, again after a short read or EINTR: fewer only
// at the end of the file or on an error. Returns how many were read.
size_t PreadUpTo(int fd, void* buf, size_t n, uint64_t offset);

// Writes `contents` to an existing file (tracefs control files), one write() call.
absl::Status WriteStringToFile(const std::string& path, std::string_view contents);

// Scratch space for data the readers cannot map where it is (an inflated trace.dat, standard
// input): an unlinked read-write file in $TMPDIR, else /tmp. `*where` names the directory for
// messages.
absl::StatusOr<UniqueFd> OpenScratchFile(std::string* where);
// A named scratch file (for writers that take a path), created empty with mode 0600 in $TMPDIR,
// else /tmp, named after `stem`; the caller unlinks it.
absl::StatusOr<std::string> CreateScratchPath(std::string_view stem);
// Appends `bytes` to a scratch file; a full disk says where to go.
absl::Status WriteToScratchFile(int fd, ByteView bytes);

}  // namespace iotrace

#endif  // IOTRACE_BASE_FD_H_
