#include "iotrace/base/file_ring.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/futex.h"
#include "iotrace/base/status.h"

namespace iotrace {

namespace {

// A value one thread publishes and the other may sleep on: a sequence word (futex.h) moves on
// with every publication. Each Signal has one publishing thread.
struct Signal {
  std::atomic<uint64_t> value{0};
  std::atomic<uint32_t> seq{0};
  std::atomic<bool> waiting{false};

  void Publish(uint64_t v) {
    value.store(v, std::memory_order_seq_cst);
    Kick();
  }
  void Kick() { FutexPublish(seq, seq.load(std::memory_order_relaxed) + 1, waiting); }
  // Sleeps until `done()` holds; `done` is re-checked after every wake-up.
  template <typename Done>
  void WaitUntil(Done done) {
    for (;;) {
      const uint32_t s = seq.load(std::memory_order_seq_cst);
      if (done()) return;
      FutexSleep(seq, s, waiting);
    }
  }
};

}  // namespace

struct FileRing::Async {
  // Fixed while the thread runs (the ring neither grows nor skips then).
  int fd = -1;
  uint8_t* base = nullptr;
  uint64_t mask = 0;
  uint64_t mirror = 0;
  uint64_t end = 0;
  uint64_t step = 0;
  alignas(64) Signal filled;    // thread -> caller
  alignas(64) Signal released;  // caller -> thread
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};  // the thread has ended: end of stretch, error or stop
  std::string error;              // read by the caller once done
  std::thread thread;
};

FileRing::FileRing() = default;
FileRing::FileRing(FileRing&& other) noexcept { *this = std::move(other); }
FileRing::~FileRing() { StopReadAhead(); }

FileRing& FileRing::operator=(FileRing&& other) noexcept {
  if (this != &other) {
    StopReadAhead();
    fd_ = other.fd_;
    end_ = other.end_;
    step_ = other.step_;
    ring_ = std::move(other.ring_);
    retired_ = std::move(other.retired_);
    base_ = std::exchange(other.base_, nullptr);
    mask_ = std::exchange(other.mask_, 0);
    mirror_ = std::exchange(other.mirror_, 0);
    released_ = other.released_;
    release_asked_ = other.release_asked_;
    filled_ = other.filled_;
    published_ = other.published_;
    publish_step_ = other.publish_step_;
    error_ = std::move(other.error_);
    async_ = std::move(other.async_);  // its thread knows only the (unmoved) ring memory
  }
  return *this;
}

bool FileRing::StartReadAhead() {
  if (async_ != nullptr || base_ == nullptr || !error_.empty()) return async_ != nullptr;
  auto a = std::make_unique<Async>();
  a->fd = fd_;
  a->base = const_cast<uint8_t*>(base_);
  a->mask = mask_;
  a->mirror = mirror_;
  a->end = end_;
  a->step = std::max<uint64_t>(step_, capacity() / 4);
  a->filled.value.store(filled_);
  a->released.value.store(released_);
  published_ = released_;
  publish_step_ = capacity() / 2;
  try {
    a->thread = std::thread(ReadAheadLoop, a.get());
  } catch (const std::system_error&) {
    return false;
  }
  async_ = std::move(a);
  return true;
}

void FileRing::ReadAheadLoop(Async* a) {
  const uint64_t capacity = a->mask + 1;
  uint64_t f = a->filled.value.load();
  while (f < a->end && !a->stop.load(std::memory_order_relaxed)) {
    // Room up to a ring's size past what the caller still looks at; whatever there is of it
    // (the caller may be waiting for the very bytes that fit).
    const uint64_t room = a->released.value.load(std::memory_order_seq_cst) + capacity - f;
    if (room == 0) {
      a->released.WaitUntil(
          [&] { return a->stop.load() || a->released.value.load() + capacity > f; });
      continue;
    }
    const uint64_t want = std::min({a->step, a->end - f, room});
    const ssize_t n = ReadInto(a->fd, a->base, a->mask, a->mirror, f, want);
    if (n > 0) {
      f += static_cast<uint64_t>(n);
      a->filled.Publish(f);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    a->error = n < 0 ? absl::StrFormat("read failed at offset %d: %s", f, std::strerror(errno))
                     : absl::StrFormat("the file ends at offset %d, before %d", f, a->end);
    break;
  }
  a->done.store(true, std::memory_order_seq_cst);
  a->filled.Kick();
}

void FileRing::PublishRelease() {
  published_ = released_;
  async_->released.Publish(released_);
}

void FileRing::StopReadAhead() {
  if (async_ == nullptr) return;
  async_->stop.store(true, std::memory_order_seq_cst);
  async_->released.Kick();
  async_->thread.join();
  filled_ = async_->filled.value.load();
  if (error_.empty()) error_ = async_->error;
  async_.reset();
}

uint64_t FileRing::FillAhead(uint64_t offset, uint64_t want) {
  Async* a = async_.get();
  const uint64_t need = std::min(end_, offset + std::min(want, end_ - std::min(offset, end_)));
  if (offset <= filled_ && need - released_ <= capacity()) {
    if (published_ != released_) PublishRelease();  // the thread may be waiting for that room
    a->filled.WaitUntil([&] { return a->filled.value.load() >= need || a->done.load(); });
    filled_ = a->filled.value.load();
    if (filled_ >= need) return filled_ - offset;
  }
  // A skip, a ring too small, or the thread ended short of `need`: on in this thread.
  StopReadAhead();
  return FillSlow(offset, want);
}

absl::StatusOr<UniqueMapping> FileRing::MapRing(size_t size, size_t mirror) {
  // Huge pages for the ring's whole 2 MiB stretches; a smaller ring stays in plain pages.
  IOTRACE_ASSIGN_OR_RETURN(UniqueMapping ring, MapHugeAnonymous(size + mirror));
  // Named in /proc/PID/smaps ("[anon:iotrace-read-ring]") where the kernel can name anonymous
  // memory (CONFIG_ANON_VMA_NAME): a hint for whoever looks at the process's memory.
#ifdef PR_SET_VMA_ANON_NAME
  // Asked until the kernel refuses once (without CONFIG_ANON_VMA_NAME it always does: 512
  // refused calls for trace.dat's rings at 256 CPUs).
  static std::atomic<bool> naming{true};
  if (naming.load(std::memory_order_relaxed) &&
      ::prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, ring.addr(), ring.size(), "iotrace-read-ring") !=
          0) {
    naming.store(false, std::memory_order_relaxed);
  }
#endif
  return ring;
}

namespace {

// The ring's bytes [p, p + n) (not past its end) were just written: the part of them among its
// first `mirror` bytes goes to the mirror after the ring too.
void Mirror(uint8_t* base, uint64_t mask, uint64_t mirror, uint64_t p, uint64_t n) {
  if (p < mirror) std::memcpy(base + mask + 1 + p, base + p, std::min(p + n, mirror) - p);
}

}  // namespace

ssize_t FileRing::ReadInto(int fd, uint8_t* base, uint64_t mask, uint64_t mirror, uint64_t off,
                           uint64_t want) {
  const uint64_t p = off & mask;
  const uint64_t len = std::min(want, mask + 1 - p);
  const ssize_t n = ::pread(fd, base + p, len, static_cast<off_t>(off));
  if (n > 0) Mirror(base, mask, mirror, p, static_cast<uint64_t>(n));
  return n;
}

size_t FileRing::CapacityFor(size_t capacity) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return std::bit_ceil(std::max(capacity, page));
}

namespace {

// The mirror after a ring of `size` bytes for stretches of up to `max_span`: whole pages.
size_t MirrorFor(size_t size, size_t max_span) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return std::min(size, (std::max<size_t>(max_span, 1) + page - 1) & ~(page - 1));
}

}  // namespace

size_t FileRing::MemoryFor(size_t capacity, size_t max_span) {
  const size_t size = CapacityFor(capacity);
  return size + MirrorFor(size, max_span);
}

absl::StatusOr<FileRing> FileRing::Create(int fd, uint64_t begin, uint64_t end, size_t capacity,
                                          size_t step, size_t max_span, uint8_t* memory) {
  const size_t size = CapacityFor(capacity);
  const size_t mirror = MirrorFor(size, max_span);
  FileRing r;
  if (memory == nullptr) {
    IOTRACE_ASSIGN_OR_RETURN(r.ring_, MapRing(size, mirror));
    memory = static_cast<uint8_t*>(r.ring_.addr());
  }
  r.mirror_ = mirror;
  r.fd_ = fd;
  r.end_ = std::max(begin, end);
  r.step_ = std::max<size_t>(step, 1);
  r.base_ = memory;
  r.mask_ = size - 1;
  r.released_ = r.filled_ = r.release_asked_ = begin;
  return r;
}

uint64_t FileRing::FillSlow(uint64_t offset, uint64_t want) {
  if (offset > filled_ && released_ >= filled_) {
    // Bytes the caller skips (an AUX payload) with nothing before them live: never read.
    // (With something live, they are read like any others: the ring holds one unbroken
    // stretch, [released_, filled_), never more than its size.)
    filled_ = released_ = std::min(offset, end_);
  }
  const uint64_t need = std::min(end_, offset + std::min(want, end_ - std::min(offset, end_)));
  if (need > filled_ && error_.empty()) {
    uint64_t target = std::min(end_, std::max(need, filled_ + step_));
    if (need - released_ > capacity()) Grow(need - released_ + step_);
    target = std::min(target, released_ + capacity());
    if (group_ != nullptr && async_ == nullptr && filled_ < target) group_->FillWith(this, target);
    while (filled_ < target) {
      const ssize_t n =
          ReadInto(fd_, const_cast<uint8_t*>(base_), mask_, mirror_, filled_, target - filled_);
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
  absl::StatusOr<UniqueMapping> ring = MapRing(static_cast<size_t>(bigger), mirror_);
  if (!ring.ok()) return false;  // the reads stay within the old ring; the caller sees less
  uint8_t* base = static_cast<uint8_t*>(ring->addr());
  const uint64_t mask = bigger - 1;
  // The live bytes, in pieces that wrap in neither ring, each mirrored where it must be.
  for (uint64_t off = released_; off < filled_;) {
    const uint64_t from = off & mask_;
    const uint64_t to = off & mask;
    const uint64_t n = std::min({filled_ - off, mask_ + 1 - from, mask + 1 - to});
    std::memcpy(base + to, base_ + from, n);
    Mirror(base, mask, mirror_, to, n);
    off += n;
  }
  retired_.push_back(std::move(ring_));
  ring_ = std::move(*ring);
  base_ = base;
  mask_ = mask;
  return true;
}

void FileRingGroup::Add(FileRing* ring) {
  // Without a batch nothing to gain: each reads alone, as without a group.
  if (batch_ == nullptr || ring->group_ == this) return;
  ring->group_ = this;
  rings_.push_back(ring);
  // A read a ring at most: no allocation while the rings read.
  reads_.reserve(rings_.size());
  readers_.reserve(rings_.size());
}

void FileRingGroup::FillWith(FileRing* ring, uint64_t target) {
  if (batch_->broken()) return;
  reads_.clear();
  readers_.clear();
  // One read a ring, up to its end (a read that would wrap stops there; the rest comes later).
  auto add = [&](FileRing* r, uint64_t upto) {
    const uint64_t p = r->filled_ & r->mask_;
    const uint64_t len =
        std::min<uint64_t>({upto - r->filled_, r->mask_ + 1 - p, uint64_t{1} << 30});
    BatchReader::Read rd;
    rd.fd = r->fd_;
    rd.buf = const_cast<uint8_t*>(r->base_) + p;
    rd.len = static_cast<uint32_t>(len);
    rd.offset = r->filled_;
    reads_.push_back(rd);
    readers_.push_back(r);
  };
  add(ring, target);
  for (FileRing* r : rings_) {
    if (r == ring || r->async_ != nullptr || !r->error_.empty() || r->base_ == nullptr ||
        r->filled_ >= r->end_ || r->filled_ < r->released_ || r->release_asked_ > r->filled_) {
      // (The last: released past what it holds, its caller may be about to skip there; filled
      // past the release, it would read the bytes skipped.)
      continue;
    }
    const uint64_t room = r->released_ + r->capacity() - r->filled_;
    if (room < r->step_) continue;  // a small read: wait until it is worth one
    add(r, std::min(r->end_, r->filled_ + room));
  }
  batch_->Run(absl::MakeSpan(reads_));
  for (size_t i = 0; i < reads_.size(); ++i) {
    // What a short read gave is kept; the rest, and a failed read, are left to the ring's own
    // pread (another ring's for its next refill), which says what went wrong.
    if (reads_[i].result <= 0) continue;
    FileRing* r = readers_[i];
    const uint64_t n = static_cast<uint64_t>(reads_[i].result);
    Mirror(const_cast<uint8_t*>(r->base_), r->mask_, r->mirror_, r->filled_ & r->mask_, n);
    r->filled_ += n;
    ++batched_reads_;
  }
}

}  // namespace iotrace
