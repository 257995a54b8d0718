// A sliding window onto a stretch of a file, read with pread() into a ring of memory that is
// mapped twice in a row, so that any record up to the ring's size is contiguous wherever it
// wraps. The readers walk their data through it instead of through a mapping of the file.
//
// Why not the mapping: every page of a file mapping is a fresh page-table entry, and touching
// one for the first time costs a page fault or, filled ahead with MADV_POPULATE_READ, a
// hypervisor trip on a VM with shadow page tables (measured here: ~2 us per 4 KiB page, more
// than the rest of the report's work on those bytes). The ring's few pages are set up once
// and reused; the kernel copies the file's bytes into them as fast as `cat` reads them, and
// they arrive in the cache just before they are parsed.
//
// Offsets are file offsets. The bytes of [released(), filled()) are readable at At(offset),
// and stay where they are until Release() moves past them: a pointer into the ring stays valid
// until then. When the live stretch outgrows the ring, a ring twice the size takes over; the
// old one stays mapped (with its bytes) until the FileRing goes, so pointers into it stay valid.
#ifndef IOTRACE_FILE_RING_H_
#define IOTRACE_FILE_RING_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/fd.h"

namespace iotrace {

class FileRing {
 public:
  // A window onto [begin, end) of `fd` (not owned; it must stay open while the ring is used),
  // starting with at least `capacity` bytes of ring (rounded up to a power of two), read in
  // steps of `step` bytes.
  static absl::StatusOr<FileRing> Create(int fd, uint64_t begin, uint64_t end,
                                         size_t capacity = size_t{8} << 20,
                                         size_t step = size_t{1} << 20);
  FileRing() = default;
  FileRing(FileRing&&) = default;
  FileRing& operator=(FileRing&&) = default;

  const uint8_t* At(uint64_t offset) const { return base_ + (offset & mask_); }
  uint64_t filled() const { return filled_; }
  uint64_t released() const { return released_; }
  size_t capacity() const { return static_cast<size_t>(mask_ + 1); }

  // Makes [offset, offset + want) readable, reading ahead by at least a step when it reads.
  // Returns how many bytes from `offset` are readable: less than `want` only at the end of the
  // stretch or after a read error (error() says which). An offset past filled() skips the bytes
  // in between: they are never read, but take room until released. Never below released().
  uint64_t Fill(uint64_t offset, uint64_t want) {
    if (offset + want <= filled_) return filled_ - offset;
    return FillSlow(offset, want);
  }

  // Nothing below `offset` will be looked at again: its room may be reused.
  void Release(uint64_t offset) {
    if (offset > released_) released_ = offset < filled_ ? offset : filled_;
  }

  // Empty unless a read failed or the file ended before `end`: what happened.
  const std::string& error() const { return error_; }

 private:
  uint64_t FillSlow(uint64_t offset, uint64_t want);
  // A ring of at least `size` bytes (power of two) with the live bytes copied over.
  bool Grow(uint64_t size);
  static absl::StatusOr<UniqueMapping> MapRing(size_t size);

  int fd_ = -1;
  uint64_t end_ = 0;
  uint64_t step_ = 0;
  UniqueMapping ring_;                 // 2 x size: the same pages twice
  std::vector<UniqueMapping> retired_;  // rings outgrown while pointers into them may live
  const uint8_t* base_ = nullptr;
  uint64_t mask_ = 0;
  uint64_t released_ = 0;
  uint64_t filled_ = 0;
  std::string error_;
};

}  // namespace iotrace

#endif  // IOTRACE_FILE_RING_H_
