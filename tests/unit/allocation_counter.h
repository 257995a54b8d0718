// Counts heap allocations made through operator new, so that hot-path tests can prove they
// allocate nothing after warm-up. The replacement operators are weak: any number of test files
// may include this header and the linker keeps one copy. If some other file replaces operator
// new with a strong definition, counting stops; AllocationCounterWorks() tells tests to skip.
// Under AddressSanitizer nothing is replaced (ASan owns the allocator), so such tests skip.
#ifndef IOTRACE_TESTS_UNIT_ALLOCATION_COUNTER_H_
#define IOTRACE_TESTS_UNIT_ALLOCATION_COUNTER_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

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

}  // namespace iotrace::test

#if !defined(__SANITIZE_ADDRESS__)
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
[[gnu::weak]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::weak]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::weak]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::weak]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif

#endif  // IOTRACE_TESTS_UNIT_ALLOCATION_COUNTER_H_
