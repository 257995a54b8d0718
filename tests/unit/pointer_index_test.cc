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

// The first key's major keeps its minors below 4096 in an array; keys of other majors, higher
// minors, keys below the first one's major and keys with a class above bit 32 go to the hash.
// Every one finds its own object, whatever the order they came in, and no key finds another's.
TEST(PointerIndexTest, FindsKeysInTheArrayAndInTheHashAlike) {
  PointerIndex<Item> index;
  std::vector<std::unique_ptr<Item>> items;
  std::vector<uint64_t> keys = {Dev(259, 5),
                                Dev(259, 0),
                                Dev(259, 63),
                                Dev(259, 64),
                                Dev(259, 4095),
                                Dev(259, 4096),
                                Dev(259, 9000),
                                Dev(258, 4095),
                                Dev(7, 0),
                                Dev(260, 0),
                                Dev(259, 1) | uint64_t{3} << 32,
                                0};
  for (uint32_t minor = 100; minor < 1100; minor += 7) keys.push_back(Dev(259, minor));
  for (uint32_t minor = 0; minor < 300; minor += 16) keys.push_back(Dev(8, minor));
  for (uint64_t key : keys) {
    items.push_back(std::make_unique<Item>(Item{key}));
    index.Insert(key, items.back().get());
    for (const auto& item : items) ASSERT_EQ(index.Find(item->key), item.get()) << item->key;
  }
  EXPECT_EQ(index.size(), keys.size());
  for (uint64_t absent : {Dev(259, 2), Dev(259, 4094), Dev(259, 4097), Dev(258, 0), Dev(8, 1),
                          Dev(259, 1), Dev(259, 5) | uint64_t{1} << 32, uint64_t{1}}) {
    EXPECT_EQ(index.Find(absent), nullptr) << absent;
  }
}

}  // namespace
}  // namespace iotrace
