#include "iotrace/base/pointer_index.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

struct Item {
  uint64_t key;
};

// dev_t as the kernel builds it (MAJOR << 20 | MINOR), as the matcher and the builder use it.
uint64_t Dev(uint32_t major, uint32_t minor) { return uint64_t{major} << 20 | minor; }

TEST(PointerIndexTest, FindsNothingWhenEmpty) {
  PointerIndex<Item> index;
  EXPECT_EQ(index.Find(0), nullptr);
  EXPECT_EQ(index.Find(Dev(259, 0)), nullptr);
  EXPECT_EQ(index.size(), 0u);
}

// 1024 devices: the index grows through several doublings, and every key still finds its own
// object, keys never inserted find none, and key 0 is a key like any other.
TEST(PointerIndexTest, FindsEveryKeyAcrossGrowth) {
  PointerIndex<Item> index;
  std::vector<std::unique_ptr<Item>> items;
  items.push_back(std::make_unique<Item>(Item{0}));
  index.Insert(0, items.back().get());
  for (uint32_t minor = 0; minor < 1024; ++minor) {
    items.push_back(std::make_unique<Item>(Item{Dev(259, minor)}));
    index.Insert(items.back()->key, items.back().get());
    // The ones before are still found after each insertion (and its growth, if any).
    if ((minor & (minor + 1)) == 0) {
      for (const auto& item : items) ASSERT_EQ(index.Find(item->key), item.get());
    }
  }
  EXPECT_EQ(index.size(), items.size());
  for (const auto& item : items) EXPECT_EQ(index.Find(item->key), item.get()) << item->key;
  for (uint32_t minor = 1024; minor < 2048; ++minor) {
    EXPECT_EQ(index.Find(Dev(259, minor)), nullptr);
  }
  EXPECT_EQ(index.Find(Dev(8, 0)), nullptr);
}

// Keys that differ only above bit 32 (the builder's device x class: dev | class << 32) are
// told apart.
TEST(PointerIndexTest, TellsApartKeysThatDifferInTheHighHalf) {
  PointerIndex<Item> index;
  std::vector<std::unique_ptr<Item>> items;
  for (uint64_t klass = 0; klass < 100; ++klass) {
    items.push_back(std::make_unique<Item>(Item{Dev(8, 0) | klass << 32}));
    index.Insert(items.back()->key, items.back().get());
  }
  for (const auto& item : items) EXPECT_EQ(index.Find(item->key), item.get());
  EXPECT_EQ(index.Find(Dev(8, 0) | uint64_t{100} << 32), nullptr);
}

}  // namespace
}  // namespace iotrace
