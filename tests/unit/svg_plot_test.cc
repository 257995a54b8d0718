// The pieces of report --format svg below the picture: heatmap rows hold whole histogram
// buckets, percentiles read from buckets as the histogram reads them, --phases, disk models.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/analysis/histogram.h"
#include "iotrace/analysis/report.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/output/svg_plot.h"
#include "iotrace/sys/device_names.h"

namespace iotrace {
namespace {

TEST(SvgPlotTest, RowsAreQuarterOctavesHoldingWholeBuckets) {
  EXPECT_EQ(SvgRowLow(SvgRowOf(0)), 0u);
  EXPECT_EQ(SvgRowLow(SvgRowOf(3)), 2u);
  EXPECT_EQ(SvgRowLow(SvgRowOf(1024)), 1024u);
  EXPECT_EQ(SvgRowLow(SvgRowOf(1279)), 1024u);
  EXPECT_EQ(SvgRowLow(SvgRowOf(1280)), 1280u);
  EXPECT_EQ(SvgRowLow(SvgRowOf(2047) + 1), 2048u);
  for (size_t i = 0; i < Histogram::kBucketCount; ++i) {
    const uint64_t lo = Histogram::BucketLow(i), hi = Histogram::BucketHigh(i);
    const int row = SvgRowOf(lo);
    ASSERT_EQ(SvgRowOf(hi - 1), row) << "bucket [" << lo << ", " << hi << ") split";
    ASSERT_LE(SvgRowLow(row), lo);
    ASSERT_GE(SvgRowLow(row + 1), hi);
  }
}

TEST(SvgPlotTest, BucketPercentileReadsAsTheHistogram) {
  std::mt19937_64 rng(7);
  Histogram h;
  for (int i = 0; i < 5000; ++i) h.Record(1000 + rng() % 200000 + (i % 97 == 0 ? 5000000 : 0));
  std::vector<LatencyBucket> buckets;
  h.ForEachBucket([&](uint64_t lo, uint64_t hi, uint64_t n) { buckets.push_back({lo, hi, n}); });
  for (double p : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    EXPECT_EQ(BucketPercentile(buckets, h.count(), h.min(), h.max(), p), h.ValueAtPercentile(p))
        << "p" << p;
  }
}

TEST(SvgPlotTest, PhaseListSelectsPhasesAndKeepPhasesDropsTheOthers) {
  unsigned mask = 0;
  ASSERT_TRUE(ParsePhaseList("d2c,I2C", &mask).ok());
  EXPECT_EQ(mask, PhaseBit(Phase::kD2C) | PhaseBit(Phase::kI2C));
  EXPECT_FALSE(ParsePhaseList("d2c,x2y", &mask).ok());
  EXPECT_FALSE(ParsePhaseList(",", &mask).ok());

  LatencyReport r;
  for (Phase p : {Phase::kI2D, Phase::kD2C, Phase::kI2C}) {
    LatencyGroup g;
    g.phase = p;
    r.groups.push_back(g);
    r.warnings.push_back({p, "w"});
  }
  r.intervals.push_back({0, 0, {r.groups[0]}});
  r.intervals.push_back({1, 1, {r.groups[0], r.groups[1]}});
  KeepPhases(PhaseBit(Phase::kD2C), &r);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].phase, Phase::kD2C);
  ASSERT_EQ(r.warnings.size(), 1u);
  ASSERT_EQ(r.intervals.size(), 1u) << "an interval left without groups goes";
  EXPECT_EQ(r.intervals[0].index, 1u);
  KeepPhases(0, &r);
  EXPECT_EQ(r.groups.size(), 1u) << "0 keeps everything";
}

TEST(SvgPlotTest, DiskModelsComeFromSysfsAndPartitionsTakeTheirDisks) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() /
                                     ("iotrace-model-test-" + std::to_string(getpid()));
  const std::filesystem::path disk = root / "devices/sda", part = disk / "sda1";
  std::filesystem::create_directories(disk / "device");
  std::filesystem::create_directories(part);
  std::filesystem::create_directories(root / "dev/block");
  std::ofstream(disk / "device/model") << "Samsung SSD 870  \n";
  std::filesystem::create_directory_symlink(disk, root / "dev/block/8:0");
  std::filesystem::create_directory_symlink(part, root / "dev/block/8:1");
  DeviceNames names(root.string(), root.string());
  EXPECT_EQ(names.ModelOf(KernelDev(8, 0)), "Samsung SSD 870");
  EXPECT_EQ(names.ModelOf(KernelDev(8, 1)), "Samsung SSD 870");
  EXPECT_EQ(names.ModelOf(KernelDev(7, 0)), "");
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace iotrace
