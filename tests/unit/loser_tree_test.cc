#include "iotrace/base/loser_tree.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

struct Record {
  uint64_t ts;
  uint32_t stream;
};

// Merges `streams` (each in time order) through the tree; streams that start empty are never
// Set. Also checks, after a step, that ForEachStream names exactly the streams not ended.
std::vector<Record> Merge(const std::vector<std::vector<uint64_t>>& streams) {
  LoserTree tree;
  tree.Reset(streams.size());
  std::vector<size_t> next(streams.size(), 0);
  for (uint32_t s = 0; s < streams.size(); ++s) {
    if (!streams[s].empty()) tree.Set(s, streams[s][next[s]++]);
  }
  tree.Build();
  // Set and not yet ended: what ForEachStream must name.
  std::set<uint32_t> live;
  for (uint32_t s = 0; s < streams.size(); ++s) {
    if (!streams[s].empty()) live.insert(s);
  }
  std::vector<Record> out;
  while (!tree.empty()) {
    const uint32_t s = tree.top();
    EXPECT_EQ(tree.top_ts(), streams[s][next[s] - 1]);
    out.push_back({tree.top_ts(), s});
    if (next[s] < streams[s].size()) {
      tree.ReplaceTop(streams[s][next[s]++]);
    } else {
      tree.PopTop();
      live.erase(s);
    }
    if (streams.size() > 17 && out.size() % 64 != 0) continue;  // (kept fast at 256 streams)
    std::set<uint32_t> listed;
    tree.ForEachStream([&](uint32_t i) { EXPECT_TRUE(listed.insert(i).second) << i; });
    EXPECT_EQ(listed, live);
  }
  EXPECT_TRUE(live.empty());
  return out;
}

// What the merge must give: every record, by time, equal times in stream order.
std::vector<Record> Reference(const std::vector<std::vector<uint64_t>>& streams) {
  std::vector<Record> all;
  for (uint32_t s = 0; s < streams.size(); ++s) {
    for (uint64_t ts : streams[s]) all.push_back({ts, s});
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Record& a, const Record& b) { return a.ts < b.ts; });
  return all;
}

void ExpectSame(const std::vector<Record>& got, const std::vector<Record>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].ts, want[i].ts) << "record " << i;
    ASSERT_EQ(got[i].stream, want[i].stream) << "record " << i;
  }
}

TEST(LoserTreeTest, MergesRandomStreamsAsAStableSortWould) {
  std::mt19937_64 rng(26);
  for (size_t n : {1, 2, 3, 5, 8, 17, 64, 255, 256}) {
    for (int round = 0; round < 3; ++round) {
      // Few distinct times (many equal across streams), lengths from 0 up, so that streams end
      // at different times and some never start.
      std::vector<std::vector<uint64_t>> streams(n);
      const uint64_t span = round == 0 ? 4 : 1000;
      for (auto& s : streams) {
        const size_t len = rng() % 40;
        uint64_t t = rng() % span;
        for (size_t i = 0; i < len; ++i) {
          s.push_back(t);
          t += rng() % 3 == 0 ? 0 : rng() % span;
        }
      }
      SCOPED_TRACE(testing::Message() << n << " streams, round " << round);
      ExpectSame(Merge(streams), Reference(streams));
    }
  }
}

TEST(LoserTreeTest, EqualTimesGoToTheLowerStreamFirst) {
  // Every stream at the same times: the merge takes the streams in order at each time.
  std::vector<std::vector<uint64_t>> streams(7, std::vector<uint64_t>{5, 5, 9});
  const std::vector<Record> got = Merge(streams);
  ASSERT_EQ(got.size(), 21u);
  for (size_t i = 0; i < 14; ++i) {
    EXPECT_EQ(got[i].ts, 5u);
    EXPECT_EQ(got[i].stream, i / 2) << i;
  }
  ExpectSame(got, Reference(streams));
}

TEST(LoserTreeTest, TheLargestTimeStillComesBeforeTheEnd) {
  // A record at ~0 (a crafted file can hold one) is not taken for an ended stream.
  std::vector<std::vector<uint64_t>> streams = {{~uint64_t{0}}, {3, ~uint64_t{0}}, {}};
  ExpectSame(Merge(streams), Reference(streams));
}

TEST(LoserTreeTest, NoStreamsOrOnlyEmptyOnesIsEmptyAtOnce) {
  LoserTree tree;
  tree.Reset(0);
  tree.Build();
  EXPECT_TRUE(tree.empty());
  tree.Reset(5);
  tree.Build();
  EXPECT_TRUE(tree.empty());
  int listed = 0;
  tree.ForEachStream([&](uint32_t) { ++listed; });
  EXPECT_EQ(listed, 0);
}

TEST(LoserTreeTest, CanBeBuiltAgainWithOtherStreams) {
  // Reset forgets the previous merge's streams and keys.
  LoserTree tree;
  tree.Reset(4);
  tree.Set(3, 10);
  tree.Set(1, 10);
  tree.Build();
  EXPECT_EQ(tree.top(), 1u);
  tree.Reset(4);
  tree.Set(2, 7);
  tree.Build();
  EXPECT_EQ(tree.top(), 2u);
  EXPECT_EQ(tree.top_ts(), 7u);
  tree.PopTop();
  EXPECT_TRUE(tree.empty());
}

// A key holds a time relative to the base in the bits the stream leaves (56 at 256 streams, 55
// at 300): times further apart than that, up to the whole 64-bit range, still merge in order.
TEST(LoserTreeTest, TimesFurtherApartThanAKeyHoldsStillMergeInOrder) {
  std::mt19937_64 rng(34);
  for (size_t n : {1, 2, 3, 256, 300}) {
    for (int round = 0; round < 3; ++round) {
      // Round 0: steps of up to 2^60 from anywhere; 1: every time anywhere in 64 bits, sorted
      // per stream; 2: most times close together, a few jumps past what a key holds.
      std::vector<std::vector<uint64_t>> streams(n);
      for (auto& s : streams) {
        const size_t len = rng() % 12;
        uint64_t t = round == 2 ? rng() % 1000 : rng() >> (rng() % 64);
        for (size_t i = 0; i < len; ++i) {
          s.push_back(t);
          const uint64_t step = round == 0   ? rng() >> 4
                                : round == 2 ? (rng() % 8 == 0 ? uint64_t{1} << 57 : rng() % 50)
                                             : rng();
          if (round == 1) {
            t = std::max(t, step);
          } else {
            t = t + step < t ? ~uint64_t{0} : t + step;  // (no wrap: each stream in order)
          }
        }
      }
      SCOPED_TRACE(testing::Message() << n << " streams, round " << round);
      ExpectSame(Merge(streams), Reference(streams));
    }
  }
}

// A stream moved to a time before the one the keys are relative to (a caller that broke the
// order) is still merged by its time.
TEST(LoserTreeTest, ATimeBeforeTheBaseIsStillTakenFirst) {
  LoserTree tree;
  tree.Reset(3);
  tree.Set(0, 1000);
  tree.Set(1, 2000);
  tree.Set(2, 3000);
  tree.Build();
  ASSERT_EQ(tree.top(), 0u);
  tree.ReplaceTop(10);
  EXPECT_EQ(tree.top(), 0u);
  EXPECT_EQ(tree.top_ts(), 10u);
  tree.ReplaceTop(2500);
  EXPECT_EQ(tree.top(), 1u);
  EXPECT_EQ(tree.top_ts(), 2000u);
  tree.PopTop();
  EXPECT_EQ(tree.top(), 0u);
  EXPECT_EQ(tree.top_ts(), 2500u);
}

// A time before the base by more than 2^64 minus what a key holds wraps, as time - base, to a
// small value: ReplaceTop's fast path takes it for a time just after the base.
TEST(LoserTreeTest, ATimeFarBeforeAHighBaseIsStillTakenFirst) {
  LoserTree tree;
  tree.Reset(2);
  tree.Set(0, ~uint64_t{0} - 10);
  tree.Set(1, ~uint64_t{0} - 5);
  tree.Build();
  ASSERT_EQ(tree.top(), 0u);
  tree.ReplaceTop(5);
  EXPECT_EQ(tree.top(), 0u);
  EXPECT_EQ(tree.top_ts(), 5u);
}

}  // namespace
}  // namespace iotrace
