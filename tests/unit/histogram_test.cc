#include "iotrace/analysis/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

TEST(HistogramTest, EveryValueFallsInsideItsBucket) {
  std::mt19937_64 rng(1);
  std::vector<uint64_t> values = {0, 1, 2, 63, 64, 65, 127, 128, 129, 255, 256, 1000,
                                  999'999, 1'000'000, Histogram::kMaxTrackable};
  for (int i = 0; i < 200000; ++i) values.push_back(rng() >> (rng() % 64));
  for (uint64_t v : values) {
    if (v > Histogram::kMaxTrackable) continue;
    size_t i = Histogram::BucketIndex(v);
    ASSERT_LT(i, Histogram::kBucketCount) << v;
    EXPECT_LE(Histogram::BucketLow(i), v) << v;
    EXPECT_LT(v, Histogram::BucketHigh(i)) << v;
    // Log-linear: a bucket is at most 1/64 of its values wide (width 1 below 128).
    EXPECT_LE(Histogram::BucketWidth(i), std::max<uint64_t>(1, v / 64)) << v;
  }
}

TEST(HistogramTest, BucketsTileTheRangeWithoutGapsOrOverlap) {
  EXPECT_EQ(Histogram::BucketLow(0), 0u);
  for (size_t i = 0; i + 1 < Histogram::kBucketCount; ++i) {
    ASSERT_EQ(Histogram::BucketHigh(i), Histogram::BucketLow(i + 1)) << i;
    ASSERT_EQ(Histogram::BucketIndex(Histogram::BucketLow(i)), i) << i;
    ASSERT_EQ(Histogram::BucketIndex(Histogram::BucketHigh(i) - 1), i) << i;
  }
  EXPECT_EQ(Histogram::BucketHigh(Histogram::kBucketCount - 1) - 1, Histogram::kMaxTrackable);
  // At least 32 sub-buckets per power of two, and the range reaches past 2^42 ns.
  EXPECT_GE(Histogram::kSubBuckets, 32u);
  EXPECT_GE(Histogram::kMaxTrackable, uint64_t{1} << 42);
}

TEST(HistogramTest, SmallValuesAreExact) {
  for (uint64_t v = 0; v < 128; ++v) {
    EXPECT_EQ(Histogram::BucketIndex(v), v);
    EXPECT_EQ(Histogram::BucketWidth(v), 1u);
  }
}

TEST(HistogramTest, CountMinMaxSumAndMeanAreExact) {
  Histogram h;
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.ValueAtPercentile(50), 0u);
  const std::vector<uint64_t> values = {1234567, 5, 999'999'999, 42, 1'000'000};
  uint64_t sum = 0;
  for (uint64_t v : values) {
    h.Record(v);
    sum += v;
  }
  EXPECT_EQ(h.count(), values.size());
  EXPECT_EQ(h.min(), 5u);
  EXPECT_EQ(h.max(), 999'999'999u);
  EXPECT_EQ(h.sum(), sum);
  EXPECT_DOUBLE_EQ(h.mean(), static_cast<double>(sum) / values.size());
  EXPECT_EQ(h.ValueAtPercentile(0), 5u);
  EXPECT_EQ(h.ValueAtPercentile(100), 999'999'999u);
}

// The exact percentile as the histogram defines it: the sample of rank ceil(p/100 * n).
uint64_t ExactPercentile(std::vector<uint64_t> sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

struct Distribution {
  std::string name;
  std::function<uint64_t(std::mt19937_64&)> draw;
};

class HistogramAccuracyTest : public ::testing::TestWithParam<int> {};

TEST_P(HistogramAccuracyTest, PercentilesAreWithinTheBucketBoundOfExactValues) {
  const std::vector<Distribution> distributions = {
      {"uniform 0-10ms",
       [](std::mt19937_64& r) {
         return std::uniform_int_distribution<uint64_t>(0, 10'000'000)(r);
       }},
      {"exponential mean 200us",
       [](std::mt19937_64& r) {
         return static_cast<uint64_t>(std::exponential_distribution<double>(1 / 200e3)(r));
       }},
      {"lognormal (disk-like, long tail)",
       [](std::mt19937_64& r) {
         return static_cast<uint64_t>(std::lognormal_distribution<double>(11, 1.5)(r));
       }},
      {"bimodal cache hit / miss",
       [](std::mt19937_64& r) {
         return std::bernoulli_distribution(0.9)(r)
                    ? std::uniform_int_distribution<uint64_t>(20'000, 40'000)(r)
                    : std::uniform_int_distribution<uint64_t>(5'000'000, 9'000'000)(r);
       }},
      {"tiny values 0-300ns",
       [](std::mt19937_64& r) { return std::uniform_int_distribution<uint64_t>(0, 300)(r); }},
      {"huge values up to 2^44",
       [](std::mt19937_64& r) { return r() >> 20; }},
  };
  const size_t sizes[] = {1, 7, 100, 1000, 100000};
  std::mt19937_64 rng(GetParam());
  for (const Distribution& d : distributions) {
    for (size_t n : sizes) {
      Histogram h;
      std::vector<uint64_t> values;
      for (size_t i = 0; i < n; ++i) {
        uint64_t v = d.draw(rng);
        values.push_back(v);
        h.Record(v);
      }
      std::sort(values.begin(), values.end());
      for (double p : {1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99}) {
        uint64_t exact = ExactPercentile(values, p);
        uint64_t estimate = h.ValueAtPercentile(p);
        uint64_t bound = Histogram::BucketWidth(Histogram::BucketIndex(exact));
        uint64_t error = estimate > exact ? estimate - exact : exact - estimate;
        EXPECT_LT(error, bound) << d.name << " n=" << n << " p" << p << " exact=" << exact
                                << " estimate=" << estimate;
        // Relative: within 1/64 (about 1.6%, well inside the 3% the report promises).
        EXPECT_LE(static_cast<double>(error), static_cast<double>(exact) / 64.0 + 0.5)
            << d.name << " n=" << n << " p" << p;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, HistogramAccuracyTest, ::testing::Values(1, 2, 3));

TEST(HistogramTest, ValuesBeyondTheRangeAreClampedButMaxAndSumStayExact) {
  Histogram h;
  const uint64_t huge = uint64_t{1} << 50;
  h.Record(10);
  h.Record(huge);
  EXPECT_EQ(h.clamped(), 1u);
  EXPECT_EQ(h.max(), huge);
  EXPECT_EQ(h.sum(), huge + 10);
  EXPECT_EQ(h.ValueAtPercentile(100), huge);
  uint64_t last_hi = 0, total = 0;
  h.ForEachBucket([&](uint64_t lo, uint64_t hi, uint64_t count) {
    last_hi = hi;
    total += count;
  });
  EXPECT_EQ(total, 2u);
  EXPECT_EQ(last_hi, Histogram::kMaxTrackable + 1);
}

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(7);
  Histogram a, b, both;
  for (int i = 0; i < 5000; ++i) {
    uint64_t v = rng() >> 40;
    (i % 3 == 0 ? a : b).Record(v);
    both.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), both.count());
  EXPECT_EQ(a.sum(), both.sum());
  EXPECT_EQ(a.min(), both.min());
  EXPECT_EQ(a.max(), both.max());
  for (size_t i = 0; i < Histogram::kBucketCount; ++i) ASSERT_EQ(a.CountAt(i), both.CountAt(i));
  for (double p : {50.0, 99.0, 99.9}) EXPECT_EQ(a.ValueAtPercentile(p), both.ValueAtPercentile(p));
  Histogram empty;
  a.Merge(empty);
  EXPECT_EQ(a.count(), both.count());
}

// Merge adds whole lines of byte counts at once when no count of either passes a byte: two
// counts that each fit but whose sum does not still carry (200 + 100 = 300), beside buckets
// that fit (3 + 4).
TEST(HistogramTest, MergeOfCountsThatEachFitButNotTheirSumCarries) {
  Histogram a, b;
  a.RecordN(5000, 200);
  b.RecordN(5000, 100);
  a.RecordN(9000, 3);
  b.RecordN(9000, 4);
  b.Record(1);
  a.Merge(b);
  EXPECT_EQ(a.CountAt(Histogram::BucketIndex(5000)), 300u);
  EXPECT_EQ(a.CountAt(Histogram::BucketIndex(9000)), 7u);
  EXPECT_EQ(a.CountAt(Histogram::BucketIndex(1)), 1u);
  EXPECT_EQ(a.count(), 308u);
  EXPECT_EQ(a.ValueAtPercentile(100), 9000u);
  // And when they fit: each bucket the sum of both.
  Histogram c, d;
  c.RecordN(5000, 100);
  d.RecordN(5000, 155);
  d.RecordN(70, 9);
  c.Merge(d);
  EXPECT_EQ(c.CountAt(Histogram::BucketIndex(5000)), 255u);
  EXPECT_EQ(c.CountAt(Histogram::BucketIndex(70)), 9u);
  EXPECT_EQ(c.count(), 264u);
}

TEST(HistogramTest, ForEachBucketVisitsNonEmptyBucketsInOrder) {
  Histogram h;
  h.RecordN(5, 3);
  h.Record(1000);
  h.Record(1001);
  h.Record(1'000'000);
  std::vector<std::vector<uint64_t>> seen;
  h.ForEachBucket([&](uint64_t lo, uint64_t hi, uint64_t count) { seen.push_back({lo, hi, count}); });
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(h.NonEmptyBuckets(), 3u);
  EXPECT_EQ(seen[0], (std::vector<uint64_t>{5, 6, 3}));
  // Between 512 and 1024 buckets are 512/64 = 8 wide: 1000 and 1001 share [1000, 1008).
  EXPECT_EQ(seen[1][0], 1000u);
  EXPECT_EQ(seen[1][1], 1008u);
  EXPECT_LE(seen[1][0], 1000u);
  EXPECT_GT(seen[1][1], 1001u);
  EXPECT_EQ(seen[1][2], 2u);
  EXPECT_LE(seen[2][0], 1'000'000u);
  EXPECT_GT(seen[2][1], 1'000'000u);
  EXPECT_EQ(seen[2][2], 1u);
  h.Reset();
  EXPECT_TRUE(h.empty());
  int calls = 0;
  h.ForEachBucket([&](uint64_t, uint64_t, uint64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(h.NonEmptyBuckets(), 0u);
}

// NonEmptyBuckets counts what ForEachBucket visits, with buckets whose count is a multiple of
// 256 (a zero low byte, the count in the carries) among them, and empty buckets in between.
TEST(HistogramTest, NonEmptyBucketsCountsWhatForEachBucketVisitsCarriesIncluded) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    Histogram h;
    const int values = 1 + static_cast<int>(rng() % 40);
    for (int v = 0; v < values; ++v) {
      const uint64_t ns = rng() % (uint64_t{1} << (4 + rng() % 30));
      const uint64_t n = round % 3 == 0 ? 256 * (1 + rng() % 3) : 1 + rng() % 300;
      h.RecordN(ns, n);
    }
    size_t visited = 0;
    h.ForEachBucket([&](uint64_t, uint64_t, uint64_t) { ++visited; });
    EXPECT_EQ(h.NonEmptyBuckets(), visited) << "round " << round;
  }
}

// Only the buckets between the lowest and highest values seen are in use: histograms that
// start far apart, grow down and up, are copied, merged both ways and reset count as if every
// bucket had been there from the start (buckets outside are never read as garbage).
TEST(HistogramTest, BucketsInUseGrowMergeCopyAndResetLikeFullOnes) {
  auto check = [](const Histogram& h, const std::map<size_t, uint64_t>& want) {
    for (size_t i = 0; i < Histogram::kBucketCount; ++i) {
      auto it = want.find(i);
      ASSERT_EQ(h.CountAt(i), it == want.end() ? 0u : it->second) << i;
    }
  };
  std::map<size_t, uint64_t> want_low, want_high;
  Histogram low, high;
  for (uint64_t v : {5'000'000ull, 900ull, 3ull, 70'000'000'000ull}) {  // grows down, then up
    low.Record(v);
    ++want_low[Histogram::BucketIndex(v)];
  }
  for (uint64_t v : {1ull << 40, (1ull << 40) + 12345, 200ull}) {
    high.Record(v);
    ++want_high[Histogram::BucketIndex(v)];
  }
  check(low, want_low);
  check(high, want_high);
  Histogram copy = low;
  copy.Merge(high);
  std::map<size_t, uint64_t> want_both = want_low;
  for (const auto& [i, n] : want_high) want_both[i] += n;
  check(copy, want_both);
  check(low, want_low);  // the copy's buckets are its own
  high.Merge(low);
  check(high, want_both);
  EXPECT_EQ(high.ValueAtPercentile(50), copy.ValueAtPercentile(50));
  copy.Reset();
  check(copy, {});
  copy.Record(42);
  check(copy, {{Histogram::BucketIndex(42), 1}});
  Histogram assigned;
  assigned.Record(7);
  assigned = copy;
  check(assigned, {{Histogram::BucketIndex(42), 1}});
  EXPECT_EQ(assigned.count(), 1u);
}

}  // namespace
}  // namespace iotrace

namespace iotrace {
namespace {

// Counts are bytes with the excess carried: buckets far past 255 samples (by Record, RecordN
// and Merge), next to buckets of one, count exactly through copies, merges, resets and the
// percentiles, against a plain count per bucket.
TEST(HistogramTest, CountsPastAByteCarryExactly) {
  std::mt19937_64 rng(7);
  std::map<size_t, uint64_t> want;
  Histogram a, b;
  auto record = [&](Histogram& h, uint64_t v, uint64_t n) {
    if (n == 1) {
      h.Record(v);
    } else {
      h.RecordN(v, n);
    }
    want[Histogram::BucketIndex(std::min(v, Histogram::kMaxTrackable))] += n;
  };
  for (int i = 0; i < 3000; ++i) record(a, 40'000 + rng() % 64, 1);  // a few buckets, ~1000 each
  for (int i = 0; i < 200; ++i) record(b, rng() >> (rng() % 64), 1);  // spread, incl. extremes
  record(b, 0, 1);
  record(b, ~uint64_t{0}, 300);
  record(b, 40'010, 70'000);
  record(a, 40'020, 255);
  Histogram merged = a;
  merged.Merge(b);
  for (size_t i = 0; i < Histogram::kBucketCount; ++i) {
    auto it = want.find(i);
    ASSERT_EQ(merged.CountAt(i), it == want.end() ? 0u : it->second) << i;
  }
  uint64_t total = 0;
  for (const auto& [i, n] : want) total += n;
  EXPECT_EQ(merged.count(), total);
  // Percentiles from one walk equal those one at a time, and those of the plain counts.
  const std::vector<double> ps = {0, 1, 25, 50, 90, 99, 99.9, 99.99, 100};
  std::vector<uint64_t> at(ps.size());
  merged.ValuesAtPercentiles(ps, at);
  for (size_t k = 0; k < ps.size(); ++k) {
    EXPECT_EQ(at[k], merged.ValueAtPercentile(ps[k])) << ps[k];
    if (ps[k] <= 0 || ps[k] >= 100) continue;
    const uint64_t rank = std::clamp<uint64_t>(
        static_cast<uint64_t>(std::ceil(ps[k] / 100.0 * static_cast<double>(total))), 1, total);
    uint64_t seen = 0;
    for (const auto& [i, n] : want) {
      seen += n;
      if (seen < rank) continue;
      const uint64_t mid = Histogram::BucketLow(i) + (Histogram::BucketWidth(i) - 1) / 2;
      EXPECT_EQ(at[k], std::clamp(mid, merged.min(), merged.max())) << ps[k];
      break;
    }
  }
  // Out of order: each found on its own.
  const std::vector<double> down = {99, 50, 99.9, 1};
  std::vector<uint64_t> down_at(down.size());
  merged.ValuesAtPercentiles(down, down_at);
  for (size_t k = 0; k < down.size(); ++k) {
    EXPECT_EQ(down_at[k], merged.ValueAtPercentile(down[k])) << down[k];
  }
  Histogram copy;
  copy.Record(5);
  copy = merged;
  uint64_t visited = 0;
  copy.ForEachBucket([&](uint64_t lo, uint64_t, uint64_t n) {
    EXPECT_EQ(n, want[Histogram::BucketIndex(lo)]) << lo;
    visited += n;
  });
  EXPECT_EQ(visited, total);
  merged.Reset();
  EXPECT_EQ(merged.CountAt(Histogram::BucketIndex(40'010)), 0u);
  merged.Record(40'010);
  EXPECT_EQ(merged.CountAt(Histogram::BucketIndex(40'010)), 1u);
  EXPECT_EQ(merged.ValueAtPercentile(50), 40'010u);
}

}  // namespace
}  // namespace iotrace

namespace iotrace {
namespace {

// Histograms whose counts live in an arena (past its first chunk, in the next ones) count as
// standalone ones do, side by side without touching each other's buckets, and their copies
// keep their counts once the arena is gone.
TEST(HistogramTest, HistogramsInAnArenaCountAsStandaloneOnes) {
  std::mt19937_64 rng(11);
  std::vector<Histogram> copies;
  std::vector<Histogram> plain(200);
  {
    HistogramArena arena;
    std::vector<std::unique_ptr<Histogram>> in_arena;
    for (int h = 0; h < 200; ++h) in_arena.push_back(std::make_unique<Histogram>(arena));
    for (int i = 0; i < 100000; ++i) {
      const size_t h = rng() % 200;
      // A few histograms get most samples (their buckets carry), the others a handful.
      const uint64_t v = h < 3 ? 1024 + rng() % 16 : rng() >> (rng() % 64);
      in_arena[h]->Record(v);
      plain[h].Record(v);
    }
    in_arena[7]->Merge(*in_arena[0]);
    plain[7].Merge(plain[0]);
    in_arena[9]->Reset();
    plain[9].Reset();
    for (const auto& h : in_arena) copies.push_back(*h);
    for (size_t h = 0; h < 200; ++h) {
      for (size_t i = 0; i < Histogram::kBucketCount; ++i) {
        ASSERT_EQ(in_arena[h]->CountAt(i), plain[h].CountAt(i)) << h << " " << i;
      }
      ASSERT_EQ(in_arena[h]->count(), plain[h].count()) << h;
      ASSERT_EQ(in_arena[h]->ValueAtPercentile(99), plain[h].ValueAtPercentile(99)) << h;
    }
  }
  EXPECT_GT(plain[0].CountAt(Histogram::BucketIndex(1024)), 255u);  // carried
  for (size_t h = 0; h < 200; ++h) {
    for (size_t i = 0; i < Histogram::kBucketCount; ++i) {
      ASSERT_EQ(copies[h].CountAt(i), plain[h].CountAt(i)) << h << " " << i;
    }
  }
}

// The counts of histograms in an arena are windows of the lines in use and some room: a
// histogram whose values lie in one or two lines takes two lines, not the kBucketCount bytes of one
// of its own; one whose values move out of its window, down or up, takes a window twice as large
// and keeps every count (the carried ones too), as a histogram of its own counts them.
TEST(HistogramTest, HistogramsInAnArenaHoldWindowsThatGrowWithTheirValues) {
  HistogramArena arena;
  std::vector<std::unique_ptr<Histogram>> narrow;
  for (int h = 0; h < 1000; ++h) {
    narrow.push_back(std::make_unique<Histogram>(arena));
    for (uint64_t v = 40'000; v < 40'000 + 64 * 512; v += 512) narrow.back()->Record(v + h);
  }
  EXPECT_EQ(arena.window_bytes(), 1000u * 128);
  EXPECT_EQ(narrow[5]->window_capacity(), 128u);
  EXPECT_EQ(narrow[5]->count(), 64u);
  EXPECT_EQ(narrow[5]->CountAt(Histogram::BucketIndex(40'005)), 1u);

  Histogram& h = *narrow[0];
  Histogram plain;
  for (uint64_t v = 40'000; v < 40'000 + 64 * 512; v += 512) plain.Record(v);
  auto both = [&](uint64_t v, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      h.Record(v);
      plain.Record(v);
    }
  };
  both(40'000, 700);  // carries, in the first window: lines [640, 768)
  const size_t before = arena.window_bytes();
  // Far below (bucket 203, line 192): more than twice the window is needed, a window of just
  // that, [192, 768).
  both(300, 3);
  EXPECT_EQ(arena.window_bytes(), before + 576);
  EXPECT_EQ(h.window_capacity(), 576u);
  both(5'000'000'000, 2);  // far above: [192, 1792) needed, 1,600 bytes
  EXPECT_EQ(h.window_capacity(), 1600u);
  h.RecordN(7, 300);  // below again, carried at once
  plain.RecordN(7, 300);
  both(41'000, 1);  // inside: no new window
  const size_t settled = arena.window_bytes();
  both(1'000'000, 1);
  EXPECT_EQ(arena.window_bytes(), settled);
  for (size_t i = 0; i < Histogram::kBucketCount; ++i) {
    ASSERT_EQ(h.CountAt(i), plain.CountAt(i)) << i;
  }
  EXPECT_GT(h.CountAt(Histogram::BucketIndex(40'000)), 255u);
  EXPECT_EQ(h.CountAt(Histogram::BucketIndex(7)), 300u);
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9}) {
    EXPECT_EQ(h.ValueAtPercentile(p), plain.ValueAtPercentile(p)) << p;
  }
  EXPECT_EQ(h.NonEmptyBuckets(), plain.NonEmptyBuckets());

  // Merged into, and assigned to, an arena histogram's window grows as the other's span needs.
  Histogram& m = *narrow[1];
  Histogram plain_m;
  for (uint64_t v = 40'000; v < 40'000 + 64 * 512; v += 512) plain_m.Record(v + 1);
  m.Merge(plain);
  plain_m.Merge(plain);
  for (size_t i = 0; i < Histogram::kBucketCount; ++i) {
    ASSERT_EQ(m.CountAt(i), plain_m.CountAt(i)) << i;
  }
  Histogram& a = *narrow[2];
  a = plain;
  for (size_t i = 0; i < Histogram::kBucketCount; ++i) ASSERT_EQ(a.CountAt(i), plain.CountAt(i));
  Histogram one;
  one.Record(123);
  a = one;  // narrower again: in the window it has
  EXPECT_EQ(a.count(), 1u);
  EXPECT_EQ(a.CountAt(Histogram::BucketIndex(40'000)), 0u);
  EXPECT_EQ(a.CountAt(Histogram::BucketIndex(123)), 1u);
  a.Reset();
  a.Record(40'000);
  EXPECT_EQ(a.CountAt(Histogram::BucketIndex(40'000)), 1u);
  EXPECT_EQ(a.CountAt(Histogram::BucketIndex(123)), 0u);

  // A value a line below a two-line window: twice the window, the room on the side the value
  // went out at ([512, 768)), so that the next line down needs no other.
  Histogram& g = *narrow[3];
  ASSERT_EQ(g.window_capacity(), 128u);
  const size_t at_start = arena.window_bytes();
  g.Record(Histogram::BucketLow(600));  // line 576
  EXPECT_EQ(g.window_capacity(), 256u);
  EXPECT_EQ(arena.window_bytes(), at_start + 256);
  g.Record(Histogram::BucketLow(520));  // line 512: in the window
  EXPECT_EQ(arena.window_bytes(), at_start + 256);
  EXPECT_EQ(g.CountAt(600), 1u);
  EXPECT_EQ(g.CountAt(520), 1u);
  EXPECT_EQ(g.count(), 66u);
  EXPECT_EQ(g.CountAt(Histogram::BucketIndex(40'003)), 1u);
}

}  // namespace
}  // namespace iotrace
