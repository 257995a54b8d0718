#include "iotrace/base/arena.h"

#include <cstdint>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

using Ints = std::vector<uint64_t, ArenaAllocator<uint64_t>>;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kArenaUsed = false;  // ArenaAllocator takes every allocation from the heap
#else
constexpr bool kArenaUsed = true;
#endif

TEST(PopulatedArenaTest, HandsOutItsBytesInOrderAlignedAndThenNothing) {
  auto arena = PopulatedArena::Create(10'000);
  ASSERT_NE(arena, nullptr);
  ASSERT_GE(arena->capacity(), 10'000u);  // a page multiple
  EXPECT_TRUE(arena->populated());        // MADV_POPULATE_WRITE: Linux 5.14 and later
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
  // The rest, whole; then not a byte more, also with an alignment that would step past the end.
  const size_t rest = arena->capacity() - arena->used();
  void* last = arena->Take(rest, 1);
  ASSERT_NE(last, nullptr);
  EXPECT_TRUE(arena->Owns(static_cast<uint8_t*>(last) + rest - 1));
  EXPECT_EQ(arena->used(), arena->capacity());
  EXPECT_EQ(arena->Take(1, 1), nullptr);
  uint64_t local = 0;
  EXPECT_FALSE(arena->Owns(&local));
}

TEST(PopulatedArenaTest, AlignmentPastTheEndIsRefusedNotWrapped) {
  auto arena = PopulatedArena::Create(4096);
  ASSERT_GE(arena->capacity(), 4096u);
  ASSERT_NE(arena->Take(arena->capacity() - 1, 1), nullptr);  // one byte left, unaligned
  EXPECT_EQ(arena->Take(1, 64), nullptr);                     // its aligned start lies past the end
  EXPECT_NE(arena->Take(1, 1), nullptr);                      // the byte itself is still there
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
  const size_t fits = arena->capacity() / sizeof(uint64_t);
  Ints v{ArenaAllocator<uint64_t>(arena)};
  v.reserve(fits);
  for (uint64_t i = 0; i < fits; ++i) v.push_back(i);
  EXPECT_EQ(arena->Owns(v.data()), kArenaUsed);
  v.push_back(fits);  // grows past the arena: the heap, the elements moved there
  EXPECT_FALSE(arena->Owns(v.data()));
  for (uint64_t i = 0; i <= fits; ++i) ASSERT_EQ(v[i], i);
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
    EXPECT_EQ(copy.get_allocator().arena(), nullptr);  // copy-assigned into a heap vector
    const Ints constructed(v);
    EXPECT_EQ(constructed.get_allocator().arena(), nullptr);  // copy-constructed: no arena
    if (kArenaUsed) EXPECT_FALSE(watch.lock()->Owns(constructed.data()));
    moved = std::move(v);  // takes the allocator, and with it the arena
  }
  ASSERT_FALSE(watch.expired());  // only `moved` holds it now
  if (kArenaUsed) EXPECT_TRUE(watch.lock()->Owns(moved.data()));
  EXPECT_EQ(moved, copy);
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(moved[i], i * 3);
  moved = Ints();  // the last user: the arena goes
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(copy.size(), 1000u);
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

TEST(ArenaPoolTest, MakesAlignedObjectsSideBySideAndDestroysEachOnce) {
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
      if (i > 0 && kArenaUsed && !objects[i].get_deleter().heap) {
        // Each object its own memory (a chunk's next object lies past the one before).
        const auto* before = objects[i - 1].get();
        ASSERT_TRUE(objects[i].get() >= before + 1 || objects[i].get() + 1 <= before);
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
