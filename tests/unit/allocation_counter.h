// Counts heap allocations made through operator new, so that hot-path tests can prove they
// allocate nothing after warm-up. This header is the only place in the test binary that replaces
// operator new/delete; the definitions are weak so that every test file may include it and the
// linker keeps one copy. AllocationCounterWorks() (and AllocationCounterTest) make a clash
// visible instead of silently turning the checks into no-ops.
// Under AddressSanitizer nothing is replaced (ASan owns the allocator), so such tests skip.
#ifndef IOTRACE_TESTS_UNIT_ALLOCATION_COUNTER_H_
#define IOTRACE_TESTS_UNIT_ALLOCATION_COUNTER_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "iotrace/base/sanitizers.h"

namespace iotrace::test {

inline std::atomic<uint64_t> g_allocations{0};

inline uint64_t Allocations() { return g_allocations.load(std::memory_order_relaxed); }

// True when operator new in this binary is the counting one.
inline bool AllocationCounterWorks() {
  uint64_t before = Allocations();
  int* volatile p = new int(7);
  bool works = Allocations() != before;
  delete p;
  return works;
}

// Allocations made while it lives (all threads).
class ScopedAllocationCount {
 public:
  ScopedAllocationCount() : start_(Allocations()) {}
  uint64_t count() const { return Allocations() - start_; }

 private:
  uint64_t start_;
};

}  // namespace iotrace::test

// At the top of a test that counts allocations: skips under AddressSanitizer (it owns the
// allocator, nothing is counted in that build); elsewhere fails when counting does not work.
#if IOTRACE_ASAN
#define IOTRACE_REQUIRE_ALLOCATION_COUNTER() \
  GTEST_SKIP() << "AddressSanitizer owns operator new: allocations are not counted in this build"
#else
#define IOTRACE_REQUIRE_ALLOCATION_COUNTER()                   \
  ASSERT_TRUE(::iotrace::test::AllocationCounterWorks())       \
      << "operator new is not the counting one: another file of the binary replaces it"
#endif

#if !IOTRACE_ASAN
[[gnu::weak]] void* operator new(std::size_t size) {
  iotrace::test::g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::weak]] void* operator new[](std::size_t size) {
  iotrace::test::g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::weak]] void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  iotrace::test::g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
[[gnu::weak]] void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  iotrace::test::g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
[[gnu::weak]] void* operator new(std::size_t size, std::align_val_t align) {
  iotrace::test::g_allocations.fetch_add(1, std::memory_order_relaxed);
  std::size_t a = static_cast<std::size_t>(align);
  void* p = nullptr;
  if (posix_memalign(&p, a < sizeof(void*) ? sizeof(void*) : a, size == 0 ? 1 : size) != 0) {
    throw std::bad_alloc();
  }
  return p;
}
[[gnu::weak]] void* operator new[](std::size_t size, std::align_val_t align) {
  return operator new(size, align);
}
[[gnu::weak]] void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::weak]] void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::weak]] void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
[[gnu::weak]] void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
[[gnu::weak]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::weak]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::weak]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::weak]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif

#endif  // IOTRACE_TESTS_UNIT_ALLOCATION_COUNTER_H_
