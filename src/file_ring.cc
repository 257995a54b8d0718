#include "iotrace/file_ring.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "iotrace/status.h"

namespace iotrace {

absl::StatusOr<UniqueMapping> FileRing::MapRing(size_t size) {
  UniqueFd mem(::memfd_create("iotrace-read-ring", MFD_CLOEXEC));
  if (!mem.valid()) return ErrnoError(errno, "memfd_create", "the read buffer");
  if (::ftruncate(mem.get(), static_cast<off_t>(size)) != 0) {
    return ErrnoError(errno, "size", "the read buffer");
  }
  // Reserve twice the size, then put the same pages in both halves.
  void* area = ::mmap(nullptr, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) return ErrnoError(errno, "reserve", "the read buffer");
  UniqueMapping ring(area, 2 * size);
  for (int half = 0; half < 2; ++half) {
    void* at = static_cast<uint8_t*>(area) + half * size;
    if (::mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mem.get(), 0) ==
        MAP_FAILED) {
      return ErrnoError(errno, "map", "the read buffer");
    }
  }
  return ring;
}

absl::StatusOr<FileRing> FileRing::Create(int fd, uint64_t begin, uint64_t end, size_t capacity,
                                          size_t step) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t size = std::bit_ceil(std::max({capacity, page, size_t{64} << 10}));
  FileRing r;
  IOTRACE_ASSIGN_OR_RETURN(r.ring_, MapRing(size));
  r.fd_ = fd;
  r.end_ = std::max(begin, end);
  r.step_ = std::max<size_t>(step, 1);
  r.base_ = static_cast<const uint8_t*>(r.ring_.addr());
  r.mask_ = size - 1;
  r.released_ = r.filled_ = begin;
  return r;
}

uint64_t FileRing::FillSlow(uint64_t offset, uint64_t want) {
  if (offset > filled_) {
    // Bytes the caller skips (an AUX payload) are never read. They still take room in the
    // ring while something before them is live (the ring maps offsets to places by their value).
    filled_ = std::min(offset, end_);
  }
  const uint64_t need = std::min(end_, offset + std::min(want, end_ - std::min(offset, end_)));
  if (need > filled_ && error_.empty()) {
    uint64_t target = std::min(end_, std::max(need, filled_ + step_));
    if (need - released_ > capacity()) Grow(need - released_ + step_);
    target = std::min(target, released_ + capacity());
    while (filled_ < target) {
      // Contiguous in the doubled mapping: at most a ring's size from a position inside it.
      const ssize_t n = ::pread(fd_, const_cast<uint8_t*>(At(filled_)), target - filled_,
                                static_cast<off_t>(filled_));
      if (n > 0) {
        filled_ += static_cast<uint64_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      error_ = n < 0 ? absl::StrFormat("read failed at offset %d: %s", filled_, std::strerror(errno))
                     : absl::StrFormat("the file ends at offset %d, before %d", filled_, end_);
      break;
    }
  }
  return filled_ > offset ? filled_ - offset : 0;
}

bool FileRing::Grow(uint64_t size) {
  const uint64_t bigger = std::bit_ceil(std::max(size, 2 * capacity()));
  absl::StatusOr<UniqueMapping> ring = MapRing(static_cast<size_t>(bigger));
  if (!ring.ok()) return false;  // the reads stay within the old ring; the caller sees less
  uint8_t* base = static_cast<uint8_t*>(ring->addr());
  const uint64_t mask = bigger - 1;
  if (filled_ > released_) {
    std::memcpy(base + (released_ & mask), At(released_), filled_ - released_);
  }
  retired_.push_back(std::move(ring_));
  ring_ = std::move(*ring);
  base_ = base;
  mask_ = mask;
  return true;
}

}  // namespace iotrace
