#include "iotrace/base/arena.h"

#include <sys/utsname.h>

#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <new>
#include <numeric>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/sanitizers.h"

namespace iotrace {
namespace {

using Ints = std::vector<uint64_t, ArenaAllocator<uint64_t>>;

// Under AddressSanitizer arenas hold nothing: every allocation is the heap's.
constexpr bool kArenaUsed = !IOTRACE_ASAN;

#define IOTRACE_REQUIRE_ARENAS() \
  if (!kArenaUsed) GTEST_SKIP() << "arenas hold nothing under AddressSanitizer"

// MADV_POPULATE_WRITE came in Linux 5.14.
bool KernelHasPopulate() {
  utsname u{};
  int major = 0, minor = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 5 || (major == 5 && minor >= 14);
}

TEST(PopulatedArenaTest, HandsOutItsBytesInOrderAlignedAndThenNothing) {
  IOTRACE_REQUIRE_ARENAS();
  auto arena = PopulatedArena::Create(10'000);
  ASSERT_NE(arena, nullptr);
  ASSERT_GE(arena->capacity(), 10'000u);  // a page multiple
  auto* a = static_cast<uint8_t*>(arena->Take(3, 1));
  auto* b = static_cast<uint8_t*>(arena->Take(8, 8));
  auto* c = static_cast<uint8_t*>(arena->Take(1, 64));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(b, a + 8);  // 3 bytes, then the next multiple of 8
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 64, 0u);
  EXPECT_GT(c, b);
  EXPECT_TRUE(arena->Owns(a));
  EXPECT_TRUE(arena->Owns(c));
  // The rest, whole; then not a byte more.
  const size_t rest = arena->capacity() - arena->used();
  void* last = arena->Take(rest, 1);
  ASSERT_NE(last, nullptr);
  EXPECT_TRUE(arena->Owns(static_cast<uint8_t*>(last) + rest - 1));
  EXPECT_FALSE(arena->Owns(static_cast<uint8_t*>(last) + rest));  // the end is not its
  EXPECT_EQ(arena->used(), arena->capacity());
  EXPECT_EQ(arena->Take(1, 1), nullptr);
  uint64_t local = 0;
  EXPECT_FALSE(arena->Owns(&local));
}

TEST(PopulatedArenaTest, PopulatesWhenAskedAndTheKernelCan) {
  IOTRACE_REQUIRE_ARENAS();
  EXPECT_FALSE(PopulatedArena::Create(10'000, /*populate=*/false)->populated());
  if (!KernelHasPopulate()) GTEST_SKIP() << "no MADV_POPULATE_WRITE before Linux 5.14";
  EXPECT_TRUE(PopulatedArena::Create(10'000)->populated());
  EXPECT_TRUE(PopulatedArena::Create(size_t{5} << 20)->populated());  // huge pages too
}

TEST(PopulatedArenaTest, ARequestThatDoesNotFitOnceAlignedIsRefused) {
  IOTRACE_REQUIRE_ARENAS();
  auto arena = PopulatedArena::Create(4096);
  ASSERT_GE(arena->capacity(), 4096u);
  ASSERT_NE(arena->Take(arena->capacity() - 100, 1), nullptr);  // 100 bytes left, unaligned
  EXPECT_EQ(arena->Take(100, 64), nullptr);                     // aligned, fewer than 100 are left
  EXPECT_NE(arena->Take(100, 1), nullptr);                      // unaligned they are still there
  EXPECT_EQ(arena->used(), arena->capacity());
}

TEST(PopulatedArenaTest, ZeroBytesAreNotHandedOut) {
  IOTRACE_REQUIRE_ARENAS();
  // (A pointer to nothing at the arena's end would not be Owned, and its free would go to the
  // heap.)
  auto arena = PopulatedArena::Create(4096);
  EXPECT_EQ(arena->Take(0, 1), nullptr);
  ASSERT_NE(arena->Take(arena->capacity(), 1), nullptr);
  EXPECT_EQ(arena->Take(0, 1), nullptr);
  EXPECT_EQ(arena->Take(0, 64), nullptr);
}

TEST(PopulatedArenaTest, AnEmptyArenaHoldsNothing) {
  auto arena = PopulatedArena::Create(0);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(arena->capacity(), 0u);
  EXPECT_EQ(arena->Take(1, 1), nullptr);
  Ints v{ArenaAllocator<uint64_t>(arena)};
  v.assign(100, 7);  // from the heap
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), uint64_t{0}), 700u);
}

TEST(ArenaAllocatorTest, AVectorLivesInTheArenaAndSpillsToTheHeapPastIt) {
  auto arena = PopulatedArena::Create(4096);
  const size_t fits = kArenaUsed ? arena->capacity() / sizeof(uint64_t) : 512;
  Ints v{ArenaAllocator<uint64_t>(arena)};
  v.reserve(fits);
  for (uint64_t i = 0; i < fits; ++i) v.push_back(i);
  EXPECT_EQ(arena->Owns(v.data()), kArenaUsed);
  v.push_back(fits);  // grows past the arena: the heap, the elements moved there
  EXPECT_FALSE(arena->Owns(v.data()));
  for (uint64_t i = 0; i <= fits; ++i) ASSERT_EQ(v[i], i);
}

TEST(ArenaAllocatorTest, TooManyElementsThrowAsTheStandardAllocatorDoes) {
  ArenaAllocator<uint64_t> alloc(PopulatedArena::Create(4096));
  EXPECT_THROW(static_cast<void>(alloc.allocate(SIZE_MAX / sizeof(uint64_t) + 1)),
               std::bad_array_new_length);
}

TEST(ArenaAllocatorTest, ACopyIsOnTheHeapAndAMoveKeepsTheArenaAlive) {
  std::weak_ptr<PopulatedArena> watch;
  Ints moved;
  Ints copy;
  {
    auto arena = PopulatedArena::Create(1 << 16);
    watch = arena;
    Ints v{ArenaAllocator<uint64_t>(std::move(arena))};
    v.reserve(1000);
    for (uint64_t i = 0; i < 1000; ++i) v.push_back(i * 3);
    copy = v;
    EXPECT_EQ(copy.get_allocator().arena(), nullptr);  // copy-assigned: keeps its own
    const Ints constructed(v);
    EXPECT_EQ(constructed.get_allocator().arena(), nullptr);  // copy-constructed: no arena
    EXPECT_FALSE(watch.lock()->Owns(constructed.data()));
    moved = std::move(v);  // takes the allocator, and with it the arena
  }
  ASSERT_FALSE(watch.expired());  // only `moved` holds it now
  EXPECT_EQ(watch.lock()->Owns(moved.data()), kArenaUsed);
  EXPECT_EQ(moved, copy);
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(moved[i], i * 3);
  moved = Ints();  // the last user: the arena goes
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(copy.size(), 1000u);
}

TEST(ArenaAllocatorTest, AMovedAllocatorStillHoldsTheArena) {
  auto arena = PopulatedArena::Create(4096);
  ArenaAllocator<uint64_t> a(arena);
  ArenaAllocator<uint64_t> b(std::move(a));
  EXPECT_EQ(a.arena(), arena);  // NOLINT(bugprone-use-after-move): what C++20 asks
  EXPECT_TRUE(a == b);
  // libstdc++'s deque move gives the one moved from a new map through the allocator moved
  // from: with the arena lost there, that map went back to the heap's free() at its end.
  std::deque<uint64_t, ArenaAllocator<uint64_t>> d{ArenaAllocator<uint64_t>(arena)};
  for (uint64_t i = 0; i < 100; ++i) d.push_back(i);
  std::deque<uint64_t, ArenaAllocator<uint64_t>> e(std::move(d));
  d.push_back(7);
  EXPECT_EQ(e.size(), 100u);
  EXPECT_EQ(d.size(), 1u);
}

TEST(ArenaAllocatorTest, SwapTakesTheAllocatorsAlong) {
  auto arena = PopulatedArena::Create(4096);
  Ints a{ArenaAllocator<uint64_t>(arena)};
  a.assign(10, 1);
  Ints b;
  b.assign(20, 2);
  a.swap(b);
  EXPECT_EQ(b.get_allocator().arena(), arena);
  EXPECT_EQ(a.get_allocator().arena(), nullptr);
  EXPECT_EQ(a.size(), 20u);
  EXPECT_EQ(b.size(), 10u);
  EXPECT_EQ(arena->Owns(b.data()), kArenaUsed);
}

// An object that counts its constructions and destructions, a cache line aligned.
struct alignas(64) Counted {
  explicit Counted(int* alive, uint64_t v) : alive(alive), value(v) { ++*alive; }
  ~Counted() { --*alive; }
  int* alive;
  uint64_t value;
  uint8_t pad[100] = {};
};

TEST(ArenaPoolTest, MakesObjectsSideBySideAndDestroysEachOnce) {
  int alive = 0;
  {
    ArenaPool<Counted> pool;
    std::vector<ArenaPool<Counted>::Ptr> objects;
    // Past several chunks (8, 16, ... 1024 objects, then 1024 a chunk).
    for (uint64_t i = 0; i < 3000; ++i) objects.push_back(pool.Make(&alive, i));
    EXPECT_EQ(alive, 3000);
    for (uint64_t i = 0; i < objects.size(); ++i) {
      ASSERT_EQ(objects[i]->value, i);
      ASSERT_EQ(reinterpret_cast<uintptr_t>(objects[i].get()) % 64, 0u);
      ASSERT_EQ(objects[i].get_deleter().heap, !kArenaUsed) << i;
    }
    // A chunk's objects follow each other (the first chunk: 8 of them).
    if (kArenaUsed) {
      for (size_t i = 1; i < ArenaPool<Counted>::kFirst; ++i) {
        EXPECT_EQ(objects[i].get(), objects[i - 1].get() + 1);
      }
    }
    objects.resize(1000);  // destroyed in the pool's lifetime
    EXPECT_EQ(alive, 1000);
    objects.clear();
    EXPECT_EQ(alive, 0);
  }
  EXPECT_EQ(alive, 0);
}

}  // namespace
}  // namespace iotrace
