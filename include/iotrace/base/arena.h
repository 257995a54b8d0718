// Memory for many small allocations made at once and freed together, faulted in by the kernel
// in one call instead of a page at a time.
//
// On this VM the first touch of a fresh 4 KiB page costs ~12 us (shadow page tables), while
// MADV_POPULATE_WRITE brings the same page in for ~1 us, and a huge page for far less a byte. A
// report of 1024 devices makes 6,144 rows whose buckets (0.84 M, 20 MB) were each a vector of
// its own in fresh heap pages: ~4,400 first touches, ~50 ms of CPU (bench/README.md).
//
// PopulatedArena hands out what it was made with, in order, and never reuses it: it is freed
// whole when the last ArenaAllocator that points at it goes (containers keep their allocator,
// so a vector whose elements live in the arena keeps the arena alive). Past its size, and where
// no memory could be mapped, the allocator takes from the heap as std::allocator does. Under
// AddressSanitizer (sanitizers.h) nothing is taken from an arena, so that every allocation
// keeps its redzones.
#ifndef IOTRACE_BASE_ARENA_H_
#define IOTRACE_BASE_ARENA_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "iotrace/base/fd.h"
#include "iotrace/base/sanitizers.h"

namespace iotrace {

class PopulatedArena {
 public:
  // An arena of `bytes` (rounded up to whole pages), its pages faulted in now when `populate`
  // (huge pages where the kernel gives them), else as they are first touched. An arena that
  // holds nothing (every allocation from the heap) when none could be mapped, and under
  // AddressSanitizer.
  static std::shared_ptr<PopulatedArena> Create(size_t bytes, bool populate = true);

  PopulatedArena(const PopulatedArena&) = delete;
  PopulatedArena& operator=(const PopulatedArena&) = delete;

  // `bytes` (at least 1) aligned to `align` (a power of two), or nullptr when they do not fit.
  // One thread at a time.
  void* Take(size_t bytes, size_t align) {
    const uintptr_t at = (next_ + align - 1) & ~(uintptr_t{align} - 1);
    if (bytes == 0 || at < next_ || at > end_ || bytes > end_ - at) return nullptr;
    next_ = at + bytes;
    return reinterpret_cast<void*>(at);
  }
  bool Owns(const void* p) const {
    const auto at = reinterpret_cast<uintptr_t>(p);
    return at >= begin_ && at < end_;
  }
  size_t capacity() const { return end_ - begin_; }
  size_t used() const { return next_ - begin_; }
  // Whether the pages were faulted in at Create (false: they fault in as they are touched).
  bool populated() const { return populated_; }

 private:
  PopulatedArena() = default;
  UniqueMapping memory_;
  uintptr_t begin_ = 0;
  uintptr_t next_ = 0;
  uintptr_t end_ = 0;
  bool populated_ = false;
};

// An allocator for standard containers: from `arena` while it has room, else from the heap.
// A copy-constructed container does not use the arena (select_on_container_copy_construction);
// moves and swaps take the allocator along, and a container copy-assigned to keeps its own. A
// moved allocator is copied (the one moved from still holds the arena, as C++20 asks).
template <typename T>
class ArenaAllocator {
 public:
  using value_type = T;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using propagate_on_container_copy_assignment = std::false_type;
  using is_always_equal = std::false_type;

  ArenaAllocator() noexcept = default;
  explicit ArenaAllocator(std::shared_ptr<PopulatedArena> arena) noexcept
      : arena_(std::move(arena)) {}
  ArenaAllocator(const ArenaAllocator&) noexcept = default;
  ArenaAllocator& operator=(const ArenaAllocator&) noexcept = default;
  template <typename U>
  ArenaAllocator(const ArenaAllocator<U>& other) noexcept : arena_(other.arena()) {}

  T* allocate(size_t n) {
    static_assert(alignof(T) <= 64);
    if (arena_ != nullptr && n <= SIZE_MAX / sizeof(T)) {
      if (void* p = arena_->Take(n * sizeof(T), alignof(T))) return static_cast<T*>(p);
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (arena_ != nullptr && arena_->Owns(p)) return;  // freed with the arena
    std::allocator<T>().deallocate(p, n);
  }
  ArenaAllocator select_on_container_copy_construction() const { return ArenaAllocator(); }

  const std::shared_ptr<PopulatedArena>& arena() const { return arena_; }

  template <typename U>
  bool operator==(const ArenaAllocator<U>& other) const noexcept {
    return arena_ == other.arena();
  }

 private:
  std::shared_ptr<PopulatedArena> arena_;
};

// Memory taken in order from PopulatedArenas made as they are needed: the chunks of a pool
// (ArenaPool), a report's histogram windows, perf.data's far blocks. Once no arena can be had
// (no memory mapped; AddressSanitizer, where arenas hold nothing), Take says so for good:
// Allocate then takes each allocation from the heap and keeps it, a pool's Make makes each
// object its own heap allocation.
class ArenaChunks {
 public:
  explicit ArenaChunks(bool populate) : populate_(populate) {}
  ArenaChunks(const ArenaChunks&) = delete;
  ArenaChunks& operator=(const ArenaChunks&) = delete;

  // `bytes` (at least 1) aligned to `align` (a power of two, at most a page) from the last
  // arena, else from a new one of next_chunk_bytes() bytes (or `bytes`, if more); nullptr when
  // none can be had. next_chunk_bytes is called only when an arena is made.
  template <typename SizeFn>
  void* Take(size_t bytes, size_t align, SizeFn next_chunk_bytes) {
    void* at = chunks_.empty() ? nullptr : chunks_.back()->Take(bytes, align);
    if (at != nullptr || heap_only_) return at;
    std::shared_ptr<PopulatedArena> chunk =
        PopulatedArena::Create(std::max<size_t>(next_chunk_bytes(), bytes), populate_);
    at = chunk->Take(bytes, align);
    if (at == nullptr) {
      heap_only_ = true;  // (not asked again for every allocation)
    } else {
      chunks_.push_back(std::move(chunk));
    }
    return at;
  }
  // Take, or where no arena can be had a heap allocation of exactly `bytes` (AddressSanitizer
  // sees a write past it) kept here: never nullptr. For memory that lives as long as this.
  template <typename SizeFn>
  void* Allocate(size_t bytes, size_t align, SizeFn next_chunk_bytes) {
    if (void* at = Take(bytes, align, next_chunk_bytes)) return at;
    heap_.emplace_back(::operator new (bytes, std::align_val_t{align}), AlignedDelete{align});
    return heap_.back().get();
  }
  // Arenas made so far.
  size_t chunks() const { return chunks_.size(); }

 private:
  struct AlignedDelete {
    size_t align;
    void operator()(void* p) const { ::operator delete (p, std::align_val_t{align}); }
  };
  std::vector<std::shared_ptr<PopulatedArena>> chunks_;
  std::vector<std::unique_ptr<void, AlignedDelete>> heap_;
  bool populate_;
  bool heap_only_ = false;
};

// Objects of one type made side by side in PopulatedArenas of growing size (kFirst objects,
// then twice as many each time, up to kMost), each handed out in a unique_ptr that destroys it.
// The memory goes with the pool, which must outlive the objects. (A report of 1024 devices
// makes 6,144 groups: in heap allocations of their own, ~1,100 first touches of fresh pages.)
// Where no arena can be had (no memory mapped; AddressSanitizer), each object is its own heap
// allocation.
template <typename T>
class ArenaPool {
 public:
  // Destroys the object; frees it only where it came from the heap.
  struct Destroy {
    bool heap = false;
    void operator()(T* p) const {
      if (heap) {
        delete p;
      } else {
        p->~T();
      }
    }
  };
  using Ptr = std::unique_ptr<T, Destroy>;

  static constexpr size_t kFirst = 8;
  static constexpr size_t kMost = 1024;

  ArenaPool() = default;
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;

  template <typename... Args>
  Ptr Make(Args&&... args) {
    void* at = chunks_.Take(sizeof(T), alignof(T), [this] {
      next_ = next_ == 0 ? kFirst : std::min(2 * next_, kMost);
      return next_ * sizeof(T);
    });
    if (at == nullptr) return Ptr(new T(std::forward<Args>(args)...), Destroy{true});
    return Ptr(new (at) T(std::forward<Args>(args)...), Destroy{false});
  }

 private:
  ArenaChunks chunks_{/*populate=*/true};
  size_t next_ = 0;  // objects in the last chunk
};

}  // namespace iotrace

#endif  // IOTRACE_BASE_ARENA_H_
