// A sliding window onto a stretch of a file, read with pread() into a ring of memory followed by
// a mirror of its first `max_span` bytes, so that any record up to max_span bytes is contiguous
// wherever it wraps. The readers walk their data through it instead of through a mapping of
// the file. A ring of 2 MiB or more lies in transparent huge pages (MapHugeAnonymous): its
// first pass costs ~0.6 ms of page faults per 8 MiB on this VM instead of ~20 ms (a memfd
// mapped twice in a row, the ring before, cannot have huge pages here).
//
// Why not the mapping: every page of a file mapping is a fresh page-table entry, and touching
// one for the first time costs a page fault or, filled ahead with MADV_POPULATE_READ, a
// hypervisor trip on a VM with shadow page tables (measured here: ~2 us per 4 KiB page, more
// than the rest of the report's work on those bytes). The ring's few pages are set up once
// and reused; the kernel copies the file's bytes into them as fast as `cat` reads them, and
// they arrive in the cache just before they are parsed.
//
// Offsets are file offsets. The bytes between the released and the filled offsets (see Fill and
// Release) are readable at At(offset), and stay where they are until Release() moves past
// them: a pointer into the ring stays valid until then. When the live stretch outgrows the ring, a
// ring twice the size takes over; the old one stays mapped (with its bytes) until the FileRing
// goes, so pointers into it stay valid.
//
// StartReadAhead() moves the reads to a thread of their own, which keeps the ring as full as
// Release() allows: on a second CPU the kernel's copy then overlaps the caller's parsing. The
// caller's side stays the same; anything out of the way (a skip, a ring that must grow, a
// read error) stops the thread and the ring goes on reading in the caller's thread. The thread
// hears of released room half a ring at a time and reads it in quarters: each wake-up moves
// megabytes (a wake-up costs both CPUs of this VM microseconds; telling it of every 32 KiB
// released made ~1,500 of them for a 379 MB file). So a ring that reads ahead wants to be a
// few times larger than what its caller keeps live.
#ifndef IOTRACE_BASE_FILE_RING_H_
#define IOTRACE_BASE_FILE_RING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/base/batch_read.h"
#include "iotrace/base/fd.h"

namespace iotrace {

class FileRingGroup;

class FileRing {
 public:
  // A window onto [begin, end) of `fd` (not owned; it must stay open while the ring is used),
  // starting with at least `capacity` bytes of ring (rounded up to a power of two), read in
  // steps of `step` bytes.
  // `max_span`: the longest stretch a caller asks Fill for (contiguous at At()), at most the
  // capacity.
  // `memory`: where the ring lies, MemoryFor(capacity, max_span) bytes that the caller owns and
  // keeps while the ring is used (many small rings in one mapping of huge pages: trace.dat at
  // 256 CPUs made a mapping, its page faults and its unmapping per ring); nullptr: a mapping of
  // the ring's own. A ring that grows moves to a mapping of its own either way.
  static absl::StatusOr<FileRing> Create(int fd, uint64_t begin, uint64_t end,
                                         size_t capacity = size_t{8} << 20,
                                         size_t step = size_t{1} << 20,
                                         size_t max_span = size_t{64} << 10,
                                         uint8_t* memory = nullptr);
  // The bytes Create's ring (with the mirror after it) takes for `capacity` and `max_span`.
  static size_t MemoryFor(size_t capacity, size_t max_span);
  // The ring size Create makes for `capacity`: a power of two, at least a page. (Small rings are
  // for readers of many streams at once: trace.dat at 256 CPUs reads through 16 KiB a CPU.)
  static size_t CapacityFor(size_t capacity);

  FileRing();
  FileRing(FileRing&& other) noexcept;
  FileRing& operator=(FileRing&& other) noexcept;
  ~FileRing();

  // Reads ahead on a thread of its own from now on (see above). False when no thread could be
  // started (the ring then reads in the caller's thread, as before).
  bool StartReadAhead();
  bool reading_ahead() const { return async_ != nullptr; }

  const uint8_t* At(uint64_t offset) const { return base_ + (offset & mask_); }
  // Bytes from here on (up to what was filled) are readable at At().
  uint64_t released() const { return released_; }
  size_t capacity() const { return static_cast<size_t>(mask_ + 1); }

  // Makes [offset, offset + want) readable (contiguous for want <= max_span), reading ahead by
  // at least a step when it reads.
  // Returns how many bytes from `offset` are readable: less than `want` only at the end of the
  // stretch or after a read error (error() says which). An offset past what was filled skips
  // the bytes in between when nothing before it is live (all released); else they are read and
  // kept until released like any others. Never below the released offset.
  uint64_t Fill(uint64_t offset, uint64_t want) {
    if (offset + want <= filled_) return filled_ - offset;
    return async_ != nullptr ? FillAhead(offset, want) : FillSlow(offset, want);
  }

  // Nothing below `offset` will be looked at again: its room may be reused.
  void Release(uint64_t offset) {
    if (offset > released_) {
      released_ = offset < filled_ ? offset : filled_;
      release_asked_ = offset;
      // The reading thread hears of it in halves of the ring (and before the caller waits).
      if (async_ != nullptr && released_ - published_ >= publish_step_) PublishRelease();
    }
  }

  // Empty unless a read failed or the file ended before `end`: what happened.
  const std::string& error() const { return error_; }

 private:
  friend class FileRingGroup;
  struct Async;
  uint64_t FillSlow(uint64_t offset, uint64_t want);
  uint64_t FillAhead(uint64_t offset, uint64_t want);
  void PublishRelease();
  void StopReadAhead();
  static void ReadAheadLoop(Async* a);
  // A ring of at least `size` bytes (power of two) with the live bytes copied over.
  bool Grow(uint64_t size);
  // `size` bytes of ring and `mirror` after it.
  static absl::StatusOr<UniqueMapping> MapRing(size_t size, size_t mirror);
  // One pread of up to `want` bytes of the file at `off` into the ring at base (capacity mask +
  // 1, its first `mirror` bytes repeated after it), stopping at the ring's end; the part that
  // lands in the first `mirror` bytes is copied after the ring. pread's result.
  static ssize_t ReadInto(int fd, uint8_t* base, uint64_t mask, uint64_t mirror, uint64_t off,
                          uint64_t want);

  int fd_ = -1;
  uint64_t end_ = 0;
  uint64_t step_ = 0;
  UniqueMapping ring_;                  // the ring, then its mirror
  std::vector<UniqueMapping> retired_;  // rings outgrown while pointers into them may live
  const uint8_t* base_ = nullptr;
  uint64_t mask_ = 0;
  uint64_t mirror_ = 0;  // bytes after the ring that repeat its first ones
  uint64_t released_ = 0;
  uint64_t release_asked_ = 0;  // the last Release's offset, past filled_ before a skip
  uint64_t filled_ = 0;
  uint64_t published_ = 0;     // the released_ the reading thread was told of
  uint64_t publish_step_ = 0;  // while reading ahead: tell it of room in steps this large
  std::string error_;
  std::unique_ptr<Async> async_;  // while a thread reads ahead
  FileRingGroup* group_ = nullptr;  // see FileRingGroup (by address: not moved with the ring)
};

// Rings read together: when one of them must read, every other ring of the group with a step
// or more of room is topped up in the same system call (BatchReader). A reader of many streams
// in one thread (trace.dat at 256 CPUs) then makes a call per ~100 refills instead of one each.
// Rings that read ahead on a thread of their own are left alone, and so are rings released past
// what they hold (a skip may follow: it stays a skip). A ring joins once, by its address:
// it must neither move nor go while the group may read for it (a ring moved into keeps its own
// membership; a ring moved from leaves nothing behind in the group, but its address stays
// listed). The group must outlive its rings' reads.
class FileRingGroup {
 public:
  // `batch`: how the reads are made; null (io_uring not to be had): each ring reads alone.
  explicit FileRingGroup(std::unique_ptr<BatchReader> batch) : batch_(std::move(batch)) {}
  void Add(FileRing* ring);  // again: nothing
  // Whether the group reads together (it has a batch that has not broken).
  bool batching() const { return batch_ != nullptr && !batch_->broken(); }
  // Reads that went through the batch, and the system calls they took.
  uint64_t batched_reads() const { return batched_reads_; }
  uint64_t calls() const { return batch_ != nullptr ? batch_->calls() : 0; }

 private:
  friend class FileRing;
  // Reads `ring` from its filled offset towards `target` (what the reads give; the ring reads
  // the rest itself), with the other rings' top-ups.
  void FillWith(FileRing* ring, uint64_t target);

  std::unique_ptr<BatchReader> batch_;
  std::vector<FileRing*> rings_;
  std::vector<BatchReader::Read> reads_;  // reused
  std::vector<FileRing*> readers_;        // reads_[i] is for readers_[i]
  uint64_t batched_reads_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_BASE_FILE_RING_H_
