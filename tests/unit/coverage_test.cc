// Coverage: the gaps the readers find in damaged or lossy data, the filter that keeps a sample
// only clear of them, and reports on such files. A file cut short reports, for the window every
// CPU's data covers, exactly the intact file's samples that lie wholly in it; events lost in
// the middle of one CPU's data leave out exactly the samples across that stretch; every paired
// sample is either in a histogram or counted as outside coverage.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "block_trace_dat.h"
#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/coverage.h"
#include "iotrace/latency_report.h"
#include "iotrace/trace_reader.h"

namespace iotrace {
namespace {

TEST(CoverageFilterTest, ASampleCrossesAGapWhenEventsMayBeMissingInsideIt) {
  // CPU 0 lost events after its record at 100 and before its record at 200.
  CoverageFilter f({DataGap{0, 100, 200, GapCause::kRingLost, 7}});
  EXPECT_FALSE(f.Crosses(50, 100).has_value());   // ends at the last record before the gap
  EXPECT_EQ(f.Crosses(50, 101), GapCause::kRingLost);
  EXPECT_EQ(f.Crosses(100, 150), GapCause::kRingLost);  // starts at it, ends inside
  EXPECT_EQ(f.Crosses(120, 150), GapCause::kRingLost);  // wholly inside
  EXPECT_EQ(f.Crosses(199, 300), GapCause::kRingLost);
  EXPECT_EQ(f.Crosses(10, 1000), GapCause::kRingLost);  // around it
  EXPECT_FALSE(f.Crosses(200, 300).has_value());        // starts at the first record after it
  EXPECT_FALSE(f.Crosses(300, 400).has_value());
}

TEST(CoverageFilterTest, OpenEndsAndMissingCpusAndNestedGaps) {
  CoverageFilter ends({DataGap{1, 500, DataGap::kOpenEnd, GapCause::kCut, 0}});
  EXPECT_FALSE(ends.Crosses(400, 500).has_value());
  EXPECT_EQ(ends.Crosses(400, 501), GapCause::kCut);
  EXPECT_EQ(ends.Crosses(600, 700), GapCause::kCut);
  // A CPU with no data at all: nothing is covered.
  CoverageFilter none({DataGap{1, 0, DataGap::kOpenEnd, GapCause::kCut, 0}});
  EXPECT_EQ(none.Crosses(1, 2), GapCause::kCut);
  // A long gap that begins first, a short one inside it: the long one still counts after the
  // short one ended.
  CoverageFilter nested({DataGap{0, 10, 1000, GapCause::kFtraceOverrun, 0},
                         DataGap{1, 20, 30, GapCause::kDamaged, 0}});
  EXPECT_EQ(nested.Crosses(500, 600), GapCause::kFtraceOverrun);
  EXPECT_EQ(nested.Crosses(25, 26), GapCause::kDamaged);
  EXPECT_FALSE(nested.Crosses(1000, 2000).has_value());
  EXPECT_FALSE(nested.Crosses(1, 10).has_value());
}

TEST(CoverageTest, EndAllEndsEveryCpuAtItsLastRecordOnce) {
  Coverage c;
  c.AddSpan(CpuSpan{0, 10, 90, 5});
  c.AddSpan(CpuSpan{2, 20, 70, 3});
  c.gaps.push_back(DataGap{2, 50, DataGap::kOpenEnd, GapCause::kDamaged, 0});
  c.EndAll(3, GapCause::kCut);
  ASSERT_EQ(c.gaps.size(), 3u);
  EXPECT_EQ(std::tie(c.gaps[1].cpu, c.gaps[1].after_ts), std::make_tuple(0, uint64_t{90}));
  EXPECT_EQ(std::tie(c.gaps[2].cpu, c.gaps[2].after_ts), std::make_tuple(1, uint64_t{0}));
  EXPECT_EQ(c.gaps[2].cause, GapCause::kCut);
}

// The histograms of a report, by device x op x phase.
using Buckets = std::map<std::tuple<uint32_t, BlockOp, Phase>, std::vector<LatencyBucket>>;

Buckets BucketsOf(const LatencyReport& r) {
  Buckets out;
  for (const LatencyGroup& g : r.groups) out[{g.dev, g.op, g.phase}] = g.buckets;
  return out;
}

bool SameBuckets(const Buckets& a, const Buckets& b, std::string* why) {
  std::ostringstream w;
  for (const auto& [key, buckets] : a) {
    auto it = b.find(key);
    const size_t other = it == b.end() ? 0 : it->second.size();
    bool same = it != b.end() && buckets.size() == other;
    for (size_t i = 0; same && i < buckets.size(); ++i) {
      same = buckets[i].lo_ns == it->second[i].lo_ns && buckets[i].count == it->second[i].count;
    }
    if (!same) {
      uint64_t n = 0, m = 0;
      for (const LatencyBucket& x : buckets) n += x.count;
      if (it != b.end()) {
        for (const LatencyBucket& x : it->second) m += x.count;
      }
      w << PhaseName(std::get<2>(key)) << " " << BlockOpName(std::get<1>(key)) << " dev "
        << std::get<0>(key) << ": " << n << " against " << m << " samples; ";
    }
  }
  for (const auto& [key, buckets] : b) {
    if (!a.count(key)) w << "only in the second: " << PhaseName(std::get<2>(key)) << "; ";
  }
  *why = w.str();
  return why->empty();
}

std::optional<LatencyReport> Report(const std::string& path, ReportOptions o = {}) {
  o.input = path;
  o.sysfs_root = o.procfs_root = "/nonexistent";
  o.threads = 1;
  auto reader = TraceReader::Open(path);
  if (!reader.ok()) return std::nullopt;
  auto report = BuildLatencyReport(**reader, o);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return std::nullopt;
  return *std::move(report);
}

// Every request sample the matcher paired is in a histogram, or counted as outside coverage.
void ExpectEverySampleAccountedFor(const LatencyReport& r, const std::string& what) {
  std::array<uint64_t, kPhaseCount> kept{};
  for (const LatencyGroup& g : r.groups) kept[static_cast<int>(g.phase)] += g.summary.count;
  for (int p = 0; p < kPhaseCount; ++p) {
    uint64_t outside = 0;
    for (uint64_t n : r.coverage.outside[p]) outside += n;
    EXPECT_EQ(r.completeness.match.paired[p], kept[p] + outside)
        << what << " " << PhaseName(static_cast<Phase>(p));
  }
}

// Cuts `intact_path` at 10%, 50% and 90% of its size, at a page boundary and in the middle of
// a record: every cut that can still be read reports, for the window every CPU's data covers,
// the intact file's samples whose end lies in it (they start in it too: the window starts with
// the recording), bucket for bucket; no sample is larger than the intact file's largest of its
// group; every paired sample is drawn or counted as outside coverage. Returns how many cuts
// could be read, and how many left samples out. (A cut into the metadata cannot be read: the
// readers' tests check that message.)
struct CutsChecked {
  int read = 0;
  int left_out = 0;
};
CutsChecked CheckCuts(const std::string& intact_path) {
  std::optional<LatencyReport> intact = Report(intact_path);
  EXPECT_TRUE(intact.has_value());
  if (!intact.has_value()) return {};
  EXPECT_TRUE(intact->coverage.complete);
  std::map<std::tuple<uint32_t, BlockOp, Phase>, uint64_t> intact_max;
  for (const LatencyGroup& g : intact->groups) intact_max[{g.dev, g.op, g.phase}] = g.summary.max_ns;
  std::ifstream in(intact_path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t half = bytes.size() / 2;
  const std::vector<size_t> cuts = {bytes.size() / 10, half, bytes.size() * 9 / 10,
                                    half / 4096 * 4096, half / 4096 * 4096 + 1234};
  const std::string path = "/tmp/iotrace_coverage_test_" + std::to_string(getpid()) + ".cut";
  int read = 0, left_out = 0;
  for (size_t cut : cuts) {
    SCOPED_TRACE(intact_path + " cut at " + std::to_string(cut) + " of " +
                 std::to_string(bytes.size()));
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(cut));
    std::optional<LatencyReport> r = Report(path);
    if (!r.has_value()) continue;
    ++read;
    EXPECT_FALSE(r->coverage.complete);
    ExpectEverySampleAccountedFor(*r, intact_path);
    for (const LatencyGroup& g : r->groups) {
      EXPECT_TRUE(g.partial);
      if (g.summary.count != 0) {
        EXPECT_LE(g.summary.max_ns, (intact_max[{g.dev, g.op, g.phase}])) << PhaseName(g.phase);
      }
    }
    left_out += r->coverage.outside_total() != 0;
    if (!r->coverage.has_window) {
      EXPECT_TRUE(r->groups.empty());
      continue;
    }
    EXPECT_TRUE(r->coverage.gaps.empty());  // a cut only ends data
    EXPECT_EQ(r->first_ts_ns, intact->first_ts_ns);
    ReportOptions until;
    until.until_s = static_cast<double>(r->coverage.window_end_ns - intact->first_ts_ns) / 1e9;
    std::optional<LatencyReport> reference = Report(intact_path, until);
    EXPECT_TRUE(reference.has_value());
    if (!reference.has_value()) continue;
    std::string why;
    EXPECT_TRUE(SameBuckets(BucketsOf(*r), BucketsOf(*reference), &why)) << why;
  }
  ::unlink(path.c_str());
  return {read, left_out};
}

// trace-cmd's own v6 files (tests/fixtures/tracedat/README): small, most of a cut lands in the
// metadata. (Its v7 files keep the table of the CPU data at their end: a cut one cannot be
// read at all; the trace.dat reader's tests check that message.)
TEST(CoverageTest, CutTraceCmdFilesReportExactlyWhatTheyCover) {
  const CutsChecked v6 = CheckCuts(std::string(IOTRACE_FIXTURES) + "/tracedat/dd_v6.dat");
  EXPECT_GE(v6.read, 2);
  EXPECT_GE(v6.left_out, 1);
  EXPECT_GE(CheckCuts(std::string(IOTRACE_FIXTURES) + "/tracedat/dd_buffered_v6.dat").read, 1);
}

// A trace.dat as iotrace's ftrace backend writes it (TraceDatWriter), two seconds of requests.
TEST(CoverageTest, CutTraceDatOfOursReportsExactlyWhatItCovers) {
  testing::BlockTraceDat f;
  const CutsChecked ours = CheckCuts(f.Write(testing::Workload(2000, 22)));
  EXPECT_EQ(ours.read, 5);
  EXPECT_EQ(ours.left_out, 5);
}

// Events of one CPU lost for 5 ms in the middle (an ftrace overrun: the next page says so):
// the report leaves out exactly the samples across that stretch, and keeps every other one as
// the intact recording has it; the loss is placed, so the phases are partial, not incomplete.
TEST(CoverageTest, EventsLostInTheMiddleLeaveOutOnlyTheSamplesAcrossThem) {
  testing::BlockTraceDat f;
  const std::vector<testing::RqEvent> events = testing::Workload(2000, 21);
  const std::string full = f.Write(events);
  const std::string lossy =
      f.Write(events, -1, -1, testing::Loss{0, 800 * testing::kMs, 805 * testing::kMs, 40});
  std::optional<LatencyReport> r = Report(lossy);
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->coverage.complete);
  ASSERT_EQ(r->coverage.gaps.size(), 1u);
  const DataGap gap = r->coverage.gaps[0];
  EXPECT_EQ(gap.cpu, 0);
  EXPECT_EQ(gap.cause, GapCause::kFtraceOverrun);
  EXPECT_EQ(gap.events, 40u);
  EXPECT_LT(gap.after_ts, 800 * testing::kMs);
  EXPECT_GE(gap.before_ts, 805 * testing::kMs);
  EXPECT_TRUE(r->coverage.has_window);
  EXPECT_GT(r->coverage.outside_total(), 0u);
  ExpectEverySampleAccountedFor(*r, "lossy");
  for (const LatencyGroup& g : r->groups) {
    EXPECT_TRUE(g.partial);
    EXPECT_FALSE(g.incomplete) << PhaseName(g.phase) << ": a placed loss makes a phase partial";
  }
  ASSERT_EQ(r->completeness.losses.size(), 1u);
  EXPECT_EQ(r->completeness.losses[0].placed, 40u);

  ReportOptions same_gap;
  same_gap.assume_gaps = {gap};
  std::optional<LatencyReport> reference = Report(full, same_gap);
  ASSERT_TRUE(reference.has_value());
  std::string why;
  EXPECT_TRUE(SameBuckets(BucketsOf(*r), BucketsOf(*reference), &why)) << why;
  // The intact file has more: the samples across the stretch.
  std::optional<LatencyReport> all = Report(full);
  ASSERT_TRUE(all.has_value());
  EXPECT_FALSE(SameBuckets(BucketsOf(*r), BucketsOf(*all), &why));
}

// A perf.data whose writer was killed, and whose data is then cut anywhere: every CPU's data
// ends at its last record, and the report holds the intact file's samples up to the earliest.
TEST(CoverageTest, AnUnfinishedPerfDataEndsEveryCpuAtItsLastRecord) {
  const std::string finished = test::ReadFixture("golden/iotrace_mq.data");
  auto u64 = [&finished](size_t at) {
    uint64_t v;
    std::memcpy(&v, finished.data() + at, 8);
    return v;
  };
  const uint64_t data_offset = u64(40), data_size = u64(48);
  const std::string path = "/tmp/iotrace_coverage_unfinished_" + std::to_string(getpid()) + ".data";
  const std::string intact_path = std::string(IOTRACE_FIXTURES) + "/golden/iotrace_mq.data";
  std::optional<LatencyReport> intact = Report(intact_path);
  ASSERT_TRUE(intact.has_value());
  int windows = 0;
  for (uint64_t keep : {data_size / 3, data_size / 2 + 5, data_size * 3 / 4, data_size}) {
    SCOPED_TRACE("data kept: " + std::to_string(keep));
    // As on disk when the writer dies: no data size, no features, data up to where it got.
    std::string b = finished.substr(0, data_offset + keep);
    std::memset(b.data() + 48, 0, 8);
    std::memset(b.data() + 72, 0, 32);
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(b.data(), static_cast<std::streamsize>(b.size()));
    std::optional<LatencyReport> r = Report(path);
    ASSERT_TRUE(r.has_value());
    ASSERT_FALSE(r->coverage.complete);
    // (perf.data is not in time order: a CPU whose ring was drained late has no records in an
    // early part of the file, and then no time is covered by every CPU.)
    windows += r->coverage.has_window;
    for (const CpuCoverage& c : r->coverage.cpus) {
      EXPECT_TRUE(c.ends_early);
      EXPECT_EQ(c.end_cause, GapCause::kUnfinished);
    }
    ExpectEverySampleAccountedFor(*r, "unfinished");
    if (!r->coverage.has_window) {
      EXPECT_TRUE(r->groups.empty());
      continue;
    }
    ReportOptions until;
    until.until_s = static_cast<double>(r->coverage.window_end_ns - intact->first_ts_ns) / 1e9;
    std::optional<LatencyReport> reference = Report(intact_path, until);
    ASSERT_TRUE(reference.has_value());
    std::string why;
    EXPECT_TRUE(SameBuckets(BucketsOf(*r), BucketsOf(*reference), &why)) << why;
  }
  ::unlink(path.c_str());
  EXPECT_GE(windows, 2);
}

}  // namespace
}  // namespace iotrace
