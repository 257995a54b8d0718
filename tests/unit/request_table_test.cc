#include "iotrace/analysis/request_table.h"

#include <map>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

TEST(RequestTableTest, AddFindRemove) {
  RequestTable t(8);
  EXPECT_EQ(t.Find(1, 100), nullptr);
  RequestEntry* e = t.Add(1, 100, 5);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dev, 1u);
  EXPECT_EQ(e->sector, 100u);
  EXPECT_EQ(e->last_ts, 5u);
  EXPECT_EQ(e->has, 0);
  EXPECT_EQ(t.Find(1, 100), e);
  EXPECT_EQ(t.Find(2, 100), nullptr);  // same sector, other device
  EXPECT_EQ(t.size(), 1u);
  t.Remove(e);
  EXPECT_EQ(t.Find(1, 100), nullptr);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.Oldest(), nullptr);
}

TEST(RequestTableTest, RefusesToGrowPastItsCapacity) {
  RequestTable t(4);
  for (uint64_t i = 0; i < 4; ++i) ASSERT_NE(t.Add(7, i * 8, i), nullptr);
  EXPECT_TRUE(t.full());
  EXPECT_EQ(t.Add(7, 999, 9), nullptr);
  t.Remove(t.Oldest());
  EXPECT_NE(t.Add(7, 999, 9), nullptr);
}

TEST(RequestTableTest, OldestFollowsLastActivity) {
  RequestTable t(8);
  RequestEntry* a = t.Add(1, 0, 10);
  RequestEntry* b = t.Add(1, 8, 20);
  RequestEntry* c = t.Add(1, 16, 30);
  EXPECT_EQ(t.Oldest(), a);
  t.Touch(a, 40);
  EXPECT_EQ(t.Oldest(), b);
  t.Remove(b);
  EXPECT_EQ(t.Oldest(), c);
  std::vector<uint64_t> order;
  t.ForEach([&order](const RequestEntry& e) { order.push_back(e.sector); });
  EXPECT_EQ(order, (std::vector<uint64_t>{16, 0}));
}

TEST(RequestTableTest, ExpiresAfterFollowsTheOldestEntry) {
  constexpr uint64_t kNever = ~uint64_t{0};
  RequestTable t(8, 100);
  EXPECT_EQ(t.expires_after(), kNever);  // empty
  RequestEntry* a = t.Add(1, 0, 10);
  EXPECT_EQ(t.expires_after(), 110u);
  t.Touch(a, 15);  // the only entry: oldest and newest at once
  EXPECT_EQ(t.expires_after(), 115u);
  RequestEntry* b = t.Add(1, 8, 20);
  EXPECT_EQ(t.expires_after(), 115u);
  t.Touch(b, 25);  // the newest: the oldest stays
  EXPECT_EQ(t.expires_after(), 115u);
  t.Touch(a, 30);  // the oldest becomes the newest
  EXPECT_EQ(t.expires_after(), 125u);
  t.Remove(b);
  EXPECT_EQ(t.expires_after(), 130u);
  t.Remove(a);
  EXPECT_EQ(t.expires_after(), kNever);
  // Past the end of time: never.
  RequestEntry* c = t.Add(1, 16, kNever - 50);
  EXPECT_EQ(t.expires_after(), kNever);
  t.Touch(c, kNever - 100);
  EXPECT_EQ(t.expires_after(), kNever);
  t.Touch(c, kNever - 101);
  EXPECT_EQ(t.expires_after(), kNever - 1);
  // Without an expiry (the default), entries never expire.
  RequestTable forever(4);
  forever.Add(1, 0, 0);
  EXPECT_EQ(forever.expires_after(), kNever);
}

TEST(RequestTableTest, RekeyMovesAnEntryUnlessTheKeyIsTaken) {
  RequestTable t(8);
  RequestEntry* a = t.Add(1, 100, 0);
  RequestEntry* b = t.Add(1, 200, 0);
  EXPECT_FALSE(t.Rekey(a, 200));
  EXPECT_EQ(t.Find(1, 100), a);
  EXPECT_TRUE(t.Rekey(a, 108));
  EXPECT_EQ(t.Find(1, 100), nullptr);
  EXPECT_EQ(t.Find(1, 108), a);
  EXPECT_EQ(t.Find(1, 200), b);
  EXPECT_EQ(a->sector, 108u);
}

// Random adds, removes, rekeys and touches against a std::map: checks that backward-shift
// deletion never loses an entry that sits later in a probe run, including runs that wrap
// around the end of the index.
// Random adds, touches, removes and rekeys on `capacity` entries over `sectors` sectors of three
// devices, checked against a std::map after every step.
void AgreesWithAReferenceMap(size_t capacity, uint64_t sectors, int steps) {
  for (uint64_t seed : {1, 2, 3}) {
    std::mt19937_64 rng(seed);
    constexpr uint64_t kExpiry = 1000;
    RequestTable t(capacity, kExpiry);
    std::map<std::pair<uint32_t, uint64_t>, uint64_t> ref;  // key -> a tag stored in bytes
    for (int step = 0; step < steps; ++step) {
      // Few devices and a small sector space: many collisions of home positions.
      const uint32_t dev = static_cast<uint32_t>(rng() % 3);
      const uint64_t sector = (rng() % sectors) * 8;
      const auto key = std::make_pair(dev, sector);
      RequestEntry* e = t.Find(dev, sector);
      ASSERT_EQ(e != nullptr, ref.count(key) == 1) << "seed " << seed << " step " << step;
      if (e != nullptr) ASSERT_EQ(e->bytes, ref[key]);
      switch (rng() % 4) {
        case 0:
        case 1:
          if (e == nullptr) {
            if (t.full()) {
              RequestEntry* old = t.Oldest();
              ref.erase({old->dev, old->sector});
              t.Remove(old);
            }
            RequestEntry* n = t.Add(dev, sector, step);
            ASSERT_NE(n, nullptr);
            n->bytes = static_cast<uint32_t>(step);
            ref[key] = n->bytes;
          } else {
            t.Touch(e, step);
          }
          break;
        case 2:
          if (e != nullptr) {
            t.Remove(e);
            ref.erase(key);
          }
          break;
        case 3:
          if (e != nullptr) {
            const uint64_t to = (rng() % sectors) * 8;
            const bool free = ref.count({dev, to}) == 0 || to == sector;
            ASSERT_EQ(t.Rekey(e, to), free);
            if (free && to != sector) {
              ref[{dev, to}] = ref[key];
              ref.erase(key);
            }
          }
          break;
      }
      ASSERT_EQ(t.size(), ref.size());
      const RequestEntry* oldest = t.Oldest();
      ASSERT_EQ(t.expires_after(), oldest == nullptr ? ~uint64_t{0} : oldest->last_ts + kExpiry)
          << "seed " << seed << " step " << step;
    }
    size_t visited = 0;
    t.ForEach([&](const RequestEntry& e) {
      ++visited;
      EXPECT_EQ(ref.count({e.dev, e.sector}), 1u);
    });
    EXPECT_EQ(visited, ref.size());
  }
}

TEST(RequestTableTest, AgreesWithAReferenceMapUnderRandomOperations) {
  AgreesWithAReferenceMap(64, 256, 200000);
}

// Thousands of entries: the index doubles several times while entries are moved, removed and
// rekeyed around it.
TEST(RequestTableTest, AgreesWithAReferenceMapWhileTheIndexGrows) {
  AgreesWithAReferenceMap(6000, 16384, 300000);
}

TEST(RequestTableTest, IndexGrowsToTheCapacityAndKeepsEveryEntry) {
  constexpr uint64_t kEntries = 50000;
  RequestTable t(kEntries);
  // Sequential sectors of two devices (the pattern a plain modulo hash handles worst).
  for (uint64_t i = 0; i < kEntries; ++i) {
    RequestEntry* e = t.Add(static_cast<uint32_t>(i % 2 + 1), i / 2 * 8, i);
    ASSERT_NE(e, nullptr) << i;
    e->bytes = static_cast<uint32_t>(i);
  }
  EXPECT_TRUE(t.full());
  for (uint64_t i = 0; i < kEntries; ++i) {
    RequestEntry* e = t.Find(static_cast<uint32_t>(i % 2 + 1), i / 2 * 8);
    ASSERT_NE(e, nullptr) << i;
    EXPECT_EQ(e->bytes, i);
  }
  EXPECT_EQ(t.Find(3, 0), nullptr);
  // Oldest first, as added.
  for (uint64_t i = 0; i < kEntries / 2; ++i) {
    ASSERT_EQ(t.Oldest()->bytes, i);
    t.Remove(t.Oldest());
  }
  for (uint64_t i = kEntries / 2; i < kEntries; ++i) {
    ASSERT_NE(t.Find(static_cast<uint32_t>(i % 2 + 1), i / 2 * 8), nullptr) << i;
  }
}

}  // namespace
}  // namespace iotrace
