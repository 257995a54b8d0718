// The statistics of `iotrace diff` against values computed independently (by hand, or by the
// Python of docs/diff.md's "checking the numbers": KS on the raw samples, Kolmogorov's series,
// exact permutation p-values by enumerating every relabelling), and the verdicts on synthetic
// reports: identical, shifted either way, drifting, a small change, one within a bucket.
#include "iotrace/analysis/latency_diff.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/analysis/histogram.h"
#include "iotrace/base/status.h"
#include "iotrace/event/block_dev.h"

namespace iotrace {
namespace {

std::vector<LatencyBucket> BucketsOf(const std::vector<uint64_t>& values) {
  Histogram h;
  for (uint64_t v : values) h.Record(v);
  std::vector<LatencyBucket> out;
  h.ForEachBucket([&](uint64_t lo, uint64_t hi, uint64_t n) { out.push_back({lo, hi, n}); });
  return out;
}

LatencyGroup GroupOf(const std::vector<uint64_t>& values, uint32_t dev, BlockOp op, Phase phase) {
  Histogram h;
  for (uint64_t v : values) h.Record(v);
  LatencyGroup g;
  g.dev = dev;
  g.device =
      KernelDevMajor(dev) == 7 ? "loop" + std::to_string(KernelDevMinor(dev)) : DevString(dev);
  g.op = op;
  g.phase = phase;
  g.summary = {h.count(), h.min(), h.max(), h.sum(), h.mean(), h.ValueAtPercentile(50),
               h.ValueAtPercentile(90), h.ValueAtPercentile(99), h.ValueAtPercentile(99.9)};
  h.ForEachBucket([&](uint64_t lo, uint64_t hi, uint64_t n) { g.buckets.push_back({lo, hi, n}); });
  return g;
}

struct RowSpec {
  uint32_t dev = KernelDev(7, 0);
  BlockOp op = BlockOp::kRead;
  Phase phase = Phase::kD2C;
  std::vector<std::vector<uint64_t>> blocks;  // the samples of each interval
};

// A report as BuildLatencyReport makes it with --interval 1: the totals and one interval each.
LatencyReport ReportOf(const std::vector<RowSpec>& rows) {
  LatencyReport r;
  r.input = "synthetic";
  r.file_format = "perf.data";
  size_t intervals = 0;
  for (const RowSpec& row : rows) intervals = std::max(intervals, row.blocks.size());
  r.last_ts_ns = intervals * 1'000'000'000ull;
  r.interval_s = 1;
  r.intervals.resize(intervals);
  for (size_t i = 0; i < intervals; ++i) {
    r.intervals[i].index = i;
    r.intervals[i].start_s = static_cast<double>(i);
  }
  for (const RowSpec& row : rows) {
    std::vector<uint64_t> all;
    for (size_t i = 0; i < row.blocks.size(); ++i) {
      all.insert(all.end(), row.blocks[i].begin(), row.blocks[i].end());
      r.intervals[i].groups.push_back(GroupOf(row.blocks[i], row.dev, row.op, row.phase));
    }
    r.groups.push_back(GroupOf(all, row.dev, row.op, row.phase));
  }
  return r;
}

// Deterministic spread-out values: `n` per block, uniform over [lo, lo + width).
std::vector<std::vector<uint64_t>> Blocks(int blocks, int n, uint64_t lo, uint64_t width,
                                          uint64_t seed, double scale = 1) {
  std::vector<std::vector<uint64_t>> out(blocks);
  uint64_t x = seed;
  for (auto& block : out) {
    for (int i = 0; i < n; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      block.push_back(static_cast<uint64_t>(static_cast<double>(lo + (x >> 33) % width) * scale));
    }
  }
  return out;
}

LatencyDiff Diff(const LatencyReport& a, const LatencyReport& b, const DiffOptions& o = {}) {
  absl::StatusOr<LatencyDiff> d = DiffLatencyReports(a, b, 1, o);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : LatencyDiff{};
}

TEST(LatencyDiffTest, KsStatisticMatchesTheRawSamplesWhereBucketsAreOneNanosecondWide) {
  // Below 128 ns every value has its own bucket, so the bucketed CDF is the samples' own.
  // Python on the raw samples: D = 0.5, B larger; D = 23/88, A larger.
  KsResult r = KsStatistic(BucketsOf({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}),
                           BucketsOf({6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_DOUBLE_EQ(r.d, 0.5);
  EXPECT_EQ(r.direction, 1);
  r = KsStatistic(BucketsOf({3, 3, 4, 7, 9, 9, 9, 12}),
                  BucketsOf({1, 2, 3, 3, 3, 5, 6, 8, 9, 10, 11}));
  EXPECT_DOUBLE_EQ(r.d, 23.0 / 88.0);
  EXPECT_EQ(r.direction, -1);
  r = KsStatistic(BucketsOf({5, 6, 7}), BucketsOf({7, 6, 5}));
  EXPECT_EQ(r.d, 0);
  EXPECT_EQ(r.direction, 0);
}

TEST(LatencyDiffTest, IidPValueIsKolmogorovsSeriesWithStephensCorrection) {
  // Python: 2 * sum((-1)^(k-1) exp(-2 k^2 l^2)), l = (sqrt(ne) + 0.12 + 0.11 / sqrt(ne)) * D.
  EXPECT_NEAR(KsPValueIid(0.5, 10, 10), 0.11084033741322809, 1e-12);
  EXPECT_NEAR(KsPValueIid(23.0 / 88.0, 8, 11), 0.8545996797469455, 1e-12);
  EXPECT_NEAR(KsPValueIid(0.1, 1000, 1200) / 3.254917198877137e-05, 1, 1e-9);
  EXPECT_EQ(KsPValueIid(0, 1000, 1000), 1);
}

TEST(LatencyDiffTest, BlockPValueApproachesTheExactPermutationPValue) {
  // Enumerating all 70 relabellings of 4 + 4 blocks: A's blocks all below B's gives 2/70 (the
  // split and its mirror); interleaved blocks give 62/70.
  const std::vector<std::vector<uint64_t>> a = {{10, 11, 12}, {11, 12, 13}, {10, 12, 14},
                                                {12, 13, 13}};
  const std::vector<std::vector<uint64_t>> b = {{20, 21, 22}, {21, 22, 23}, {20, 22, 24},
                                                {22, 23, 23}};
  const std::vector<std::vector<uint64_t>> a2 = {{10, 11}, {30, 31, 32}, {50}, {70, 71}};
  const std::vector<std::vector<uint64_t>> b2 = {{20, 21}, {40, 41}, {60, 61, 62}, {80}};
  auto lists = [](const std::vector<std::vector<uint64_t>>& blocks) {
    std::vector<std::vector<LatencyBucket>> out;
    for (const auto& v : blocks) out.push_back(BucketsOf(v));
    return out;
  };
  // 4999 draws: the standard error is under 0.005.
  EXPECT_NEAR(KsPValueBlocks(lists(a), lists(b), 4999, 1), 2.0 / 70, 0.012);
  EXPECT_NEAR(KsPValueBlocks(lists(a2), lists(b2), 4999, 1), 62.0 / 70, 0.02);
  // The same stream every time.
  EXPECT_EQ(KsPValueBlocks(lists(a2), lists(b2), 999, 7),
            KsPValueBlocks(lists(a2), lists(b2), 999, 7));
  // Every count times 2^31: D is the same (exactly, a power of two), so the same p, though the
  // counts now pass 2^32 and the relabellings' D is worked out in 128 bits, not 64.
  auto scaled = [&](const std::vector<std::vector<uint64_t>>& blocks) {
    std::vector<std::vector<LatencyBucket>> out = lists(blocks);
    for (auto& block : out) {
      for (LatencyBucket& bucket : block) bucket.count <<= 31;
    }
    return out;
  };
  for (uint64_t seed : {1u, 7u, 12345u}) {
    EXPECT_EQ(KsPValueBlocks(scaled(a), scaled(b), 999, seed),
              KsPValueBlocks(lists(a), lists(b), 999, seed));
    EXPECT_EQ(KsPValueBlocks(scaled(a2), scaled(b2), 999, seed),
              KsPValueBlocks(lists(a2), lists(b2), 999, seed));
  }
}

TEST(LatencyDiffTest, HolmAdjustsStepDownAndKeepsTheOrder) {
  // By hand: sorted 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, max(0.04*1, 0.06) = 0.06.
  const std::vector<double> adjusted = HolmAdjust({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(adjusted.size(), 4u);
  EXPECT_DOUBLE_EQ(adjusted[0], 0.03);
  EXPECT_DOUBLE_EQ(adjusted[1], 0.06);
  EXPECT_DOUBLE_EQ(adjusted[2], 0.06);
  EXPECT_DOUBLE_EQ(adjusted[3], 0.02);
  EXPECT_DOUBLE_EQ(HolmAdjust({0.5, 0.9})[1], 1.0);
}

TEST(LatencyDiffTest, IdenticalReportsAreTheSameOnEveryRow) {
  RowSpec d2c{.blocks = Blocks(20, 200, 20'000, 80'000, 1)};
  RowSpec i2d{.phase = Phase::kI2D, .blocks = Blocks(20, 200, 1'000, 3'000, 2)};
  RowSpec write{.op = BlockOp::kWrite, .blocks = Blocks(20, 50, 30'000, 5'000, 3)};
  const LatencyReport r = ReportOf({i2d, d2c, write});
  const LatencyDiff d = Diff(r, r);
  ASSERT_EQ(d.rows.size(), 3u);
  for (const DiffRow& row : d.rows) {
    EXPECT_EQ(row.verdict, DiffVerdict::kSame);
    EXPECT_EQ(row.ks_d, 0);
    EXPECT_EQ(row.p_adjusted, 1);
    EXPECT_EQ(row.reason, "not significant");
    for (const DiffStat& s : row.stats) EXPECT_EQ(s.change_ns, 0);
  }
  EXPECT_TRUE(d.hits.empty());
}

TEST(LatencyDiffTest, AShiftedDistributionGetsTheSignOfItsShift) {
  const LatencyReport a = ReportOf({RowSpec{.blocks = Blocks(20, 200, 20'000, 80'000, 1)}});
  const LatencyReport slower =
      ReportOf({RowSpec{.blocks = Blocks(20, 200, 20'000, 80'000, 9, 1.5)}});
  const LatencyReport faster =
      ReportOf({RowSpec{.blocks = Blocks(20, 200, 20'000, 80'000, 9, 0.6)}});
  DiffOptions o;
  o.fail_on = {*ParseFailOn("d2c.p99>+10%"), *ParseFailOn("d2c.p50<-20%")};
  LatencyDiff d = Diff(a, slower, o);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].verdict, DiffVerdict::kSlower);
  EXPECT_EQ(d.rows[0].direction, 1);
  EXPECT_NEAR(d.rows[0].stats[static_cast<int>(DiffStatKind::kP50)].change_pct, 50, 3);
  ASSERT_EQ(d.hits.size(), 1u);
  EXPECT_EQ(d.hits[0].rule, "d2c.p99>+10%");
  EXPECT_NEAR(d.hits[0].change, 50, 3);

  d = Diff(a, faster, o);
  EXPECT_EQ(d.rows[0].verdict, DiffVerdict::kFaster);
  EXPECT_NEAR(d.rows[0].stats[static_cast<int>(DiffStatKind::kP99)].change_pct, -40, 3);
  ASSERT_EQ(d.hits.size(), 1u);
  EXPECT_EQ(d.hits[0].rule, "d2c.p50<-20%");
  // Swapped, the same change the other way.
  EXPECT_EQ(Diff(faster, a).rows[0].verdict, DiffVerdict::kSlower);
}

TEST(LatencyDiffTest, DriftFromIntervalToIntervalIsNotTakenForAChange) {
  // Each interval's latencies sit at their own level (a queue that fills and drains): B's
  // levels interleave with A's. As independent draws the samples differ (p_iid ~ 3e-5, D 0.1);
  // relabelling whole intervals shows that such a gap is what any split of the intervals gives.
  std::vector<std::vector<uint64_t>> blocks_a, blocks_b;
  for (int i = 0; i < 10; ++i) {
    blocks_a.push_back(std::vector<uint64_t>(100, 100 + 3 * i));
    blocks_b.push_back(std::vector<uint64_t>(120, 101 + 3 * i));
  }
  const LatencyDiff d = Diff(ReportOf({RowSpec{.blocks = blocks_a}}),
                             ReportOf({RowSpec{.blocks = blocks_b}}));
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_NEAR(d.rows[0].ks_d, 0.1, 1e-12);
  EXPECT_LT(d.rows[0].p_iid, 1e-4);
  EXPECT_GT(d.rows[0].p_blocks, 0.5);
  EXPECT_EQ(d.rows[0].verdict, DiffVerdict::kSame);
  EXPECT_EQ(d.rows[0].reason, "not significant");
}

TEST(LatencyDiffTest, ASmallRealChangeIsUnderMinChangeUntilItIsLowered) {
  const LatencyReport a = ReportOf({RowSpec{.blocks = Blocks(20, 500, 10'000, 10'000, 1)}});
  const LatencyReport b =
      ReportOf({RowSpec{.blocks = Blocks(20, 500, 10'000, 10'000, 5, 1.03)}});
  LatencyDiff d = Diff(a, b);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_LT(d.rows[0].p_adjusted, 0.01);
  EXPECT_EQ(d.rows[0].verdict, DiffVerdict::kSame);
  EXPECT_EQ(d.rows[0].reason, "under --min-change");
  DiffOptions o;
  o.min_change_pct = 1;
  EXPECT_EQ(Diff(a, b, o).rows[0].verdict, DiffVerdict::kSlower);
}

TEST(LatencyDiffTest, AChangeInsideTheBucketsIsWithinTheBucketWidth) {
  // 1000..1007 ns share one bucket ([1000, 1008)); B moves one sample of every other interval
  // to the next bucket: significant (ten B intervals have one, no A interval does), but none of
  // p50..p99.9 leaves its bucket (p99.9 is the sample of rank 19981 of 20000; 10 lie above).
  std::vector<std::vector<uint64_t>> blocks_a, blocks_b;
  for (int i = 0; i < 20; ++i) {
    std::vector<uint64_t> v;
    for (int j = 0; j < 1000; ++j) v.push_back(1000 + j % 8);
    blocks_a.push_back(v);
    if (i % 2 == 0) v[0] = 1010;
    blocks_b.push_back(v);
  }
  const LatencyDiff d = Diff(ReportOf({RowSpec{.blocks = blocks_a}}),
                             ReportOf({RowSpec{.blocks = blocks_b}}));
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_LT(d.rows[0].p_adjusted, 0.01);
  const DiffStat& p99 = d.rows[0].stats[static_cast<int>(DiffStatKind::kP99)];
  EXPECT_EQ(p99.a_lo_ns, 1000u);
  EXPECT_EQ(p99.a_hi_ns, 1007u);
  EXPECT_FALSE(p99.beyond_buckets);
  EXPECT_EQ(d.rows[0].verdict, DiffVerdict::kSame);
  EXPECT_EQ(d.rows[0].reason, "within the bucket width");
}

TEST(LatencyDiffTest, PercentilesMovingAgainstTheLargestGapAreNoVerdict) {
  // A: 30% at 1000 ns, 19% at 2950, 51% at 3000; B: 30% at 2000, 20% at 2950, 50% at 3000. The
  // CDFs differ most at 1000 ns (0.3, B slower there), but the one percentile that left its
  // bucket, p50 (3000 -> 2950), went down: neither + nor - would say what changed.
  auto block = [](uint64_t low, int at_2950) {
    std::vector<uint64_t> v(30, low);
    v.insert(v.end(), at_2950, 2950);
    v.insert(v.end(), 70 - at_2950, 3000);
    return v;
  };
  const LatencyDiff d =
      Diff(ReportOf({RowSpec{.blocks = std::vector<std::vector<uint64_t>>(20, block(1000, 19))}}),
           ReportOf({RowSpec{.blocks = std::vector<std::vector<uint64_t>>(20, block(2000, 20))}}));
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(d.rows[0].ks_d, 0.3);
  EXPECT_EQ(d.rows[0].direction, 1);
  EXPECT_LT(d.rows[0].p_adjusted, 0.01);
  const DiffStat& p50 = d.rows[0].stats[static_cast<int>(DiffStatKind::kP50)];
  EXPECT_EQ(p50.change_ns, -32);  // the buckets' middles: 2991 -> 2959
  EXPECT_TRUE(p50.beyond_buckets);
  EXPECT_EQ(d.rows[0].verdict, DiffVerdict::kSame);
  EXPECT_EQ(d.rows[0].reason, "the percentiles moved against the shift");
}

TEST(LatencyDiffTest, RowsOfOneSideAndDevicesPairedByMap) {
  const RowSpec on0{.dev = KernelDev(7, 0), .blocks = Blocks(10, 100, 20'000, 5'000, 1)};
  const RowSpec on1{.dev = KernelDev(7, 1), .blocks = Blocks(10, 100, 20'000, 5'000, 2)};
  const RowSpec flush{.dev = KernelDev(7, 1), .op = BlockOp::kFlush,
                      .blocks = Blocks(10, 3, 100'000, 5'000, 3)};
  const LatencyReport a = ReportOf({on0}), b = ReportOf({on1, flush});
  LatencyDiff d = Diff(a, b);
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(d.rows[0].verdict, DiffVerdict::kOnlyA);
  EXPECT_EQ(d.rows[0].count_b, 0u);
  EXPECT_EQ(d.rows[0].stats[static_cast<int>(DiffStatKind::kP50)].a_ns,
            a.groups[0].summary.p50_ns);
  EXPECT_EQ(d.rows[1].verdict, DiffVerdict::kOnlyB);
  EXPECT_EQ(d.rows[2].verdict, DiffVerdict::kOnlyB);

  for (const auto& map : {std::pair<std::string, std::string>{"7:0", "7:1"},
                          std::pair<std::string, std::string>{"loop0", "/dev/loop1"}}) {
    DiffOptions o;
    o.map = {map};
    d = Diff(a, b, o);
    ASSERT_EQ(d.rows.size(), 2u) << map.first;
    EXPECT_EQ(d.rows[0].dev_a, KernelDev(7, 0));
    EXPECT_EQ(d.rows[0].dev_b, KernelDev(7, 1));
    EXPECT_EQ(d.rows[0].count_a, 1000u);
    EXPECT_EQ(d.rows[0].count_b, 1000u);
    EXPECT_EQ(d.rows[0].verdict, DiffVerdict::kSame);
    EXPECT_EQ(d.rows[1].verdict, DiffVerdict::kOnlyB);
  }

  DiffOptions bad;
  bad.map = {{"7:5", "7:1"}};
  absl::StatusOr<LatencyDiff> failed = DiffLatencyReports(a, b, 1, bad);
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(IsUsageError(failed.status()));
  EXPECT_EQ(failed.status().message(), "--map 7:5=7:1: A (synthetic) has no device 7:5");
  EXPECT_EQ(HintOf(failed.status()),
            "A holds loop0 (7:0); name a device as MAJ:MIN or as the report names it");
}

TEST(LatencyDiffTest, PhasesAndDevicesSelectRows) {
  const RowSpec d2c{.blocks = Blocks(5, 10, 20'000, 5'000, 1)};
  const RowSpec i2d{.phase = Phase::kI2D, .blocks = Blocks(5, 10, 1'000, 500, 2)};
  const RowSpec other{.dev = KernelDev(8, 0), .blocks = Blocks(5, 10, 20'000, 5'000, 3)};
  const LatencyReport r = ReportOf({i2d, d2c, other});
  DiffOptions o;
  o.phases = {Phase::kD2C};
  LatencyDiff d = Diff(r, r, o);
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[0].phase, Phase::kD2C);
  EXPECT_EQ(d.rows[1].dev_a, KernelDev(8, 0));
  o.devices = {"loop0"};
  d = Diff(r, r, o);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].dev_a, KernelDev(7, 0));
  EXPECT_EQ(d.rows[0].phase, Phase::kD2C);
}

TEST(LatencyDiffTest, FailOnRulesParseAndBadOnesAreUsageErrors) {
  absl::StatusOr<FailOnRule> r = ParseFailOn("d2c.p99>+10%");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->phase, Phase::kD2C);
  EXPECT_EQ(r->stat, DiffStatKind::kP99);
  EXPECT_TRUE(r->greater);
  EXPECT_TRUE(r->percent);
  EXPECT_EQ(r->value, 10);
  r = ParseFailOn("Q2C.p50>+50us");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->phase, Phase::kQ2C);
  EXPECT_FALSE(r->percent);
  EXPECT_EQ(r->value, 50'000);
  r = ParseFailOn("i2c.p99.9<-1.5ms");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stat, DiffStatKind::kP999);
  EXPECT_FALSE(r->greater);
  EXPECT_EQ(r->value, -1.5e6);
  EXPECT_EQ(ParseFailOn("i2d.max>2s")->value, 2e9);
  EXPECT_EQ(ParseFailOn("d2c.p999>5%")->stat, DiffStatKind::kP999);
  for (const char* bad : {"d2c.p99", "d2c>10%", "x2c.p99>10%", "d2c.p42>10%", "d2c.p99>10",
                          "d2c.p99>ten%", "d2c.p99>+10parsecs"}) {
    absl::StatusOr<FailOnRule> b = ParseFailOn(bad);
    EXPECT_FALSE(b.ok()) << bad;
    EXPECT_TRUE(IsUsageError(b.status())) << bad;
    EXPECT_NE(HintOf(b.status()).find("d2c.p99>+10%"), std::string::npos) << bad;
  }
}

TEST(LatencyDiffTest, BlockLengthIsASecondOrATenthOfAShortRecording) {
  EXPECT_EQ(ChooseBlockSeconds(60, 30), 1);
  EXPECT_EQ(ChooseBlockSeconds(10, 12), 1);
  EXPECT_DOUBLE_EQ(ChooseBlockSeconds(5, 30), 0.5);
  EXPECT_DOUBLE_EQ(ChooseBlockSeconds(0.024, 0.2), 0.0024);
  EXPECT_DOUBLE_EQ(ChooseBlockSeconds(0, 1), 1e-6);
  EXPECT_EQ(ChooseBlockSeconds(100, 3600), 1);
  EXPECT_EQ(ChooseBlockSeconds(3600, 250), 3);
  EXPECT_EQ(ChooseBlockSeconds(3600, 3600), 36);
}

TEST(LatencyDiffTest, IntervalsAreMergedIntoBlocksOfTheBlockLength) {
  // Twelve 1 s intervals (a long recording read in 1 s intervals) diffed with 3 s blocks: the
  // test relabels four blocks a side.
  std::vector<std::vector<uint64_t>> levels;
  for (int i = 0; i < 12; ++i) levels.push_back(std::vector<uint64_t>(10, 100 + 10 * (i % 2)));
  const LatencyReport r = ReportOf({RowSpec{.blocks = levels}});
  absl::StatusOr<LatencyDiff> d = DiffLatencyReports(r, r, 3, DiffOptions{});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->rows.size(), 1u);
  EXPECT_EQ(d->rows[0].blocks_a, 4u);
  EXPECT_EQ(d->rows[0].blocks_b, 4u);
  EXPECT_EQ(d->a.blocks, 4u);
  d = DiffLatencyReports(r, r, 1, DiffOptions{});
  EXPECT_EQ(d->rows[0].blocks_a, 12u);
}

}  // namespace
}  // namespace iotrace
