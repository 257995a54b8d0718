// Coverage: the gaps the readers find in damaged or lossy data, the filter that keeps a sample
// only clear of them, and reports on such files. A file cut short reports, for the window every
// CPU's data covers, exactly the intact file's samples that lie wholly in it; events lost in
// the middle of one CPU's data leave out exactly the samples across that stretch; every paired
// sample is either in a histogram or counted as outside coverage.
#include "iotrace/formats/coverage.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "block_trace_dat.h"
#include "coverage_check.h"
#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

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

// As many CPUs as a file may name (a fuzzed perf.data's NRCPUS, cut short): each ends once, at
// its own last record, those already ended keep their gap. (Each CPU searched the gaps and the
// spans: 2 s for that file, 0.15 s now.)
TEST(CoverageTest, EndAllOfTheMostCpusAFileMayNameEndsEachOnce) {
  Coverage c;
  for (int32_t cpu = 0; cpu < 65536; cpu += 3) c.AddSpan(CpuSpan{cpu, 1, 100 + uint64_t(cpu), 1});
  for (int32_t cpu = 0; cpu < 65536; cpu += 5) {
    c.gaps.push_back(DataGap{cpu, 7, DataGap::kOpenEnd, GapCause::kDamaged, 0});
  }
  ASSERT_EQ(c.gaps.size(), 13108u);
  c.EndAll(1 << 20, GapCause::kCut);
  std::vector<int> ends(65536, 0);
  for (const DataGap& g : c.gaps) {
    ASSERT_TRUE(g.open_end());
    ASSERT_GE(g.cpu, 0);
    ASSERT_LT(g.cpu, 65536);
    ++ends[g.cpu];
    if (g.cpu % 5 == 0) {
      EXPECT_EQ(g.cause, GapCause::kDamaged);
    } else {
      EXPECT_EQ(g.cause, GapCause::kCut);
      EXPECT_EQ(g.after_ts, g.cpu % 3 == 0 ? 100 + uint64_t(g.cpu) : 0) << g.cpu;
    }
  }
  EXPECT_EQ(c.gaps.size(), 65536u);  // one each: the 13108 kept, the others added
  EXPECT_EQ(std::count(ends.begin(), ends.end(), 1), 65536);
}

using testing::BucketsOf;
using testing::CheckCuts;
using testing::CutsChecked;
using testing::ExpectEverySampleAccountedFor;
using testing::Report;
using testing::SameBuckets;

// trace-cmd's own v6 files (tests/fixtures/tracedat/README): small, most of a cut lands in the
// metadata. (Its v7 files keep the table of the CPU data at their end: a cut one cannot be
// read at all; the trace.dat reader's tests check that message.)
TEST(CoverageTest, CutTraceCmdFilesReportExactlyWhatTheyCover) {
  const CutsChecked v6 = CheckCuts(std::string(IOTRACE_FIXTURES) + "/tracedat/dd_v6.dat");
  EXPECT_GE(v6.read, 2);
  EXPECT_EQ(v6.read + v6.before_data, 5) << "a cut not read lies in the metadata";
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
  // As a time series: the intervals clear of the gap are whole, the one with samples left out
  // says so, and the intervals add up to the totals, kept and left out alike.
  ReportOptions series;
  series.interval_s = 0.1;
  std::optional<LatencyReport> t = Report(lossy, series);
  ASSERT_TRUE(t.has_value());
  std::map<std::tuple<uint32_t, BlockOp, Phase>, std::pair<uint64_t, uint64_t>> sums;
  int partial = 0, whole = 0;
  for (const LatencyInterval& iv : t->intervals) {
    for (const LatencyGroup& g : iv.groups) {
      auto& [kept, out] = sums[{g.dev, g.op, g.phase}];
      kept += g.summary.count;
      out += g.outside_coverage;
      EXPECT_EQ(g.partial, g.outside_coverage != 0) << iv.start_s;
      partial += g.partial;
      whole += !g.partial;
      if (iv.start_s + 0.1 < 0.799 || iv.start_s > 0.9) EXPECT_FALSE(g.partial) << iv.start_s;
    }
  }
  EXPECT_GT(partial, 0);
  EXPECT_GT(whole, partial);
  for (const LatencyGroup& g : t->groups) {
    const auto& [kept, out] = sums[{g.dev, g.op, g.phase}];
    EXPECT_EQ(kept, g.summary.count);
    EXPECT_EQ(out, g.outside_coverage);
  }

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
  const std::string path = test::TmpPath("iotrace_coverage_unfinished", ".data");
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


// Many gaps, and a CPU with no data at all (a gap open from the start): every sample crosses,
// and the cause given is that of the latest-beginning gap it crosses, however far back.
TEST(CoverageFilterTest, TheLatestBeginningGapCrossedIsFoundAmongMany) {
  std::vector<DataGap> gaps;
  gaps.push_back(DataGap{1, 0, DataGap::kOpenEnd, GapCause::kCut, 0});
  for (uint64_t i = 1; i <= 1000; ++i) {
    gaps.push_back(DataGap{0, i * 1000, i * 1000 + 10, GapCause::kRingLost, 1});
  }
  CoverageFilter f(gaps);
  EXPECT_EQ(f.Crosses(500'000, 500'005), GapCause::kRingLost);   // inside gap 500
  EXPECT_EQ(f.Crosses(500'020, 500'030), GapCause::kCut);        // between two: only CPU 1's
  EXPECT_EQ(f.Crosses(2'000'000, 2'000'050), GapCause::kCut);    // after them all
  EXPECT_EQ(f.Crosses(999'995, 1'000'003), GapCause::kRingLost);  // the last ring loss
  CoverageFilter ring_only(std::vector<DataGap>(gaps.begin() + 1, gaps.end()));
  EXPECT_FALSE(ring_only.Crosses(500'020, 500'030).has_value());
  EXPECT_EQ(ring_only.Crosses(499'990, 600'000), GapCause::kRingLost);
  EXPECT_FALSE(ring_only.Crosses(2'000'000, 2'000'050).has_value());
}

// EndAll with a bound from perf.data's round marks: nothing missing is older than it, so a CPU
// with no records is covered up to it, and one whose last record is older is too.
TEST(CoverageTest, EndAllStartsTheGapsNoEarlierThanWhatIsKnown) {
  Coverage c;
  c.AddSpan(CpuSpan{0, 10, 900, 5});
  c.AddSpan(CpuSpan{1, 20, 300, 3});
  c.EndAll(3, GapCause::kCut, 500);
  ASSERT_EQ(c.gaps.size(), 3u);
  EXPECT_EQ(std::tie(c.gaps[0].cpu, c.gaps[0].after_ts), std::make_tuple(0, uint64_t{900}));
  EXPECT_EQ(std::tie(c.gaps[1].cpu, c.gaps[1].after_ts), std::make_tuple(1, uint64_t{500}));
  EXPECT_EQ(std::tie(c.gaps[2].cpu, c.gaps[2].after_ts), std::make_tuple(2, uint64_t{500}));
}

// A trace.dat with an idle CPU (an empty stream placed after the others), cut inside the data:
// the idle CPU lost nothing, and the report keeps what the other CPUs' data covers.
TEST(CoverageTest, AnIdleCpuOfACutTraceDatIsNotMissingData) {
  testing::BlockTraceDat f;
  f.idle_cpus = 1;
  const std::string path = f.Write(testing::Workload(2000, 22));
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut_path = path + ".cut";
  std::ofstream(cut_path, std::ios::binary).write(bytes.data(), bytes.size() * 9 / 10);
  std::optional<LatencyReport> r = Report(cut_path);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->coverage.complete);
  EXPECT_TRUE(r->coverage.has_window);
  uint64_t kept = 0;
  for (const LatencyGroup& g : r->groups) kept += g.summary.count;
  EXPECT_GT(kept, 0u);
  for (const CpuCoverage& c : r->coverage.cpus) {
    EXPECT_FALSE(c.cpu == 2 && c.ends_early) << "the idle CPU";
  }
  ExpectEverySampleAccountedFor(*r, "cut with an idle CPU");
  // Cut anywhere, the report equals the intact file's up to the window.
  EXPECT_GE(CheckCuts(path).read, 3);
}

// A CPU 0 page whose header time is damaged (1000 s late): the pages after it look like going
// back in time and are skipped. No sample reaches into the damage, so none is longer than the
// intact file's longest; what is left out is counted.
TEST(CoverageTest, APageWithADamagedTimeLeavesNoFalseLatency) {
  testing::BlockTraceDat f;
  const std::vector<testing::RqEvent> events = testing::Workload(2000, 22);
  std::optional<LatencyReport> intact = Report(f.Write(events));
  f.future_page = 100;
  std::optional<LatencyReport> r = Report(f.Write(events));
  ASSERT_TRUE(r.has_value() && intact.has_value());
  EXPECT_FALSE(r->coverage.complete);
  EXPECT_TRUE(r->coverage.has_window);
  EXPECT_GT(r->coverage.outside_total(), 0u);
  EXPECT_LT(r->coverage.window_end_ns, 2000 * testing::kMs);
  std::map<std::tuple<uint32_t, BlockOp, Phase>, uint64_t> intact_max;
  for (const LatencyGroup& g : intact->groups) intact_max[{g.dev, g.op, g.phase}] = g.summary.max_ns;
  ASSERT_FALSE(r->groups.empty());
  for (const LatencyGroup& g : r->groups) {
    EXPECT_LE(g.summary.max_ns, (intact_max[{g.dev, g.op, g.phase}]))
        << PhaseName(g.phase) << " " << BlockOpName(g.op);
  }
  ExpectEverySampleAccountedFor(*r, "damaged page time");
}

// A loss long enough that every sample of some intervals is left out: those intervals still
// show their groups (no samples, the count left out), and the intervals add up to the totals.
TEST(CoverageTest, IntervalsWhoseEverySampleWasLeftOutStillAddUp) {
  testing::BlockTraceDat f;
  const std::string lossy = f.Write(testing::Workload(2000, 21), -1, -1,
                                    testing::Loss{0, 800 * testing::kMs, 1100 * testing::kMs, 400});
  ReportOptions series;
  series.interval_s = 0.1;
  std::optional<LatencyReport> t = Report(lossy, series);
  ASSERT_TRUE(t.has_value());
  std::map<std::tuple<uint32_t, BlockOp, Phase>, std::pair<uint64_t, uint64_t>> sums;
  int empty_shown = 0;
  for (const LatencyInterval& iv : t->intervals) {
    for (const LatencyGroup& g : iv.groups) {
      auto& [kept, out] = sums[{g.dev, g.op, g.phase}];
      kept += g.summary.count;
      out += g.outside_coverage;
      if (g.summary.count == 0) {
        ++empty_shown;
        EXPECT_GT(g.outside_coverage, 0u);
        EXPECT_TRUE(g.partial);
        EXPECT_TRUE(g.buckets.empty());
      }
    }
  }
  EXPECT_GT(empty_shown, 0);
  // Requests whose completion fell in the 300 ms gap meet a new request at their sector while
  // the gap lasts, or after: given up across the gap, they leave no phase incomplete.
  EXPECT_GT(t->completeness.match.across_gap[static_cast<int>(RequestState::kIssued)], 0u);
  for (const LatencyGroup& g : t->groups) {
    EXPECT_FALSE(g.incomplete) << PhaseName(g.phase) << " " << BlockOpName(g.op);
    const auto& [kept, out] = sums[{g.dev, g.op, g.phase}];
    EXPECT_EQ(kept, g.summary.count);
    EXPECT_EQ(out, g.outside_coverage) << PhaseName(g.phase) << " " << BlockOpName(g.op);
  }
}

// perf ring loss as kernels before 5.11 write it: the sample whose write found the ring free
// again is timed before the LOST record and follows it in the ring. The gap still begins at
// the CPU's last record before the loss, so a sample over the lost stretch crosses it.
TEST(CoverageTest, APerfLossTimedAfterTheSampleThatFollowsItStillCoversTheLostStretch) {
  test::BlockSetup setup = test::LoadBlockSetup();
  auto specs = test::BlockSpecs(setup, 2);
  const std::string path = test::TmpPath("iotrace_coverage_lost", ".data");
  auto w = PerfDataWriter::Create(path, specs, setup.meta, test::TestHost());
  ASSERT_TRUE(w.ok());
  const perf_event_attr attr = specs[0].attr;
  auto sample = [&](int e, uint32_t cpu, uint64_t t, uint64_t sector) {
    test::SampleFields s;
    s.id = test::SyntheticId(e, cpu, 2);
    s.pid = s.tid = 100;
    s.time = t;
    s.cpu = cpu;
    test::BlockRq rq;
    rq.sector = sector;
    s.raw = test::EncodeBlockRq(setup.formats[e], rq);
    return s;
  };
  test::PerfRecordBuilder cpu0, cpu1;
  cpu0.AddSample(attr, sample(0, 0, 1000, 8));
  cpu0.AddSample(attr, sample(0, 0, 2000, 16));
  perf::SampleId lost_id;
  lost_id.time = 10000;
  lost_id.cpu = 0;
  lost_id.id = test::SyntheticId(0, 0, 2);
  cpu0.AddLost(attr, lost_id.id, 50, lost_id);
  cpu0.AddSample(attr, sample(0, 0, 9990, 24));  // timed before the LOST record
  cpu0.AddSample(attr, sample(0, 0, 11000, 32));
  cpu1.AddSample(attr, sample(1, 1, 500, 8));
  cpu1.AddSample(attr, sample(1, 1, 5000, 16));
  cpu1.AddSample(attr, sample(1, 1, 12000, 24));
  ASSERT_TRUE((*w)->AppendData(cpu0.view()).ok());
  ASSERT_TRUE((*w)->AppendData(cpu1.view()).ok());
  ASSERT_TRUE((*w)->AppendFinishedRound().ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto reader = OpenTraceReader(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  struct Nothing : EventSink {
    void OnEvent(const RawEvent&) override {}
  } nothing;
  ASSERT_TRUE((*reader)->ReadAll(&nothing).ok());
  const Coverage& coverage = (*reader)->stats().coverage;
  ASSERT_EQ(coverage.gaps.size(), 1u);
  EXPECT_EQ(coverage.gaps[0].after_ts, 2000u) << "the events were lost after 2000";
  EXPECT_EQ(coverage.gaps[0].before_ts, 10000u);
  EXPECT_TRUE(CoverageFilter(coverage.gaps).Crosses(1500, 5000).has_value());
  ::unlink(path.c_str());
}

// A perf.data with an idle CPU (ids for three, samples on two), cut short: the round marks
// bound what is missing, so the idle CPU does not leave the report without a window.
TEST(CoverageTest, AnIdleCpuOfACutPerfDataIsCoveredUpToTheRoundMarks) {
  test::BlockSetup setup = test::LoadBlockSetup();
  auto specs = test::BlockSpecs(setup, 3);
  const std::string path = test::TmpPath("iotrace_coverage_idle", ".data");
  auto w = PerfDataWriter::Create(path, specs, setup.meta, test::TestHost());
  ASSERT_TRUE(w.ok());
  const perf_event_attr attr = specs[0].attr;
  for (int round = 0; round < 200; ++round) {
    for (uint32_t cpu = 0; cpu < 2; ++cpu) {
      test::PerfRecordBuilder b;
      for (int i = 0; i < 5; ++i) {
        const uint64_t sector = (round * 10 + i * 2 + cpu) * 8;
        for (int e = 0; e < 2; ++e) {  // insert, then issue 1 us later
          test::SampleFields s;
          s.id = test::SyntheticId(e, cpu, 3);
          s.pid = s.tid = 100;
          s.time = 1'000'000 + round * 100'000 + i * 10'000 + cpu * 3'000 + e * 1'000;
          s.cpu = cpu;
          test::BlockRq rq;
          rq.sector = sector;
          s.raw = test::EncodeBlockRq(setup.formats[e], rq);
          b.AddSample(attr, s);
        }
      }
      ASSERT_TRUE((*w)->AppendData(b.view()).ok());
    }
    ASSERT_TRUE((*w)->AppendFinishedRound().ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut_path = path + ".cut";
  std::ofstream(cut_path, std::ios::binary).write(bytes.data(), bytes.size() / 2);
  std::optional<LatencyReport> intact = Report(path);
  std::optional<LatencyReport> r = Report(cut_path);
  ASSERT_TRUE(r.has_value() && intact.has_value());
  EXPECT_FALSE(r->coverage.complete);
  ASSERT_TRUE(r->coverage.has_window);
  ExpectEverySampleAccountedFor(*r, "cut perf.data with an idle CPU");
  ReportOptions until;
  until.until_s = static_cast<double>(r->coverage.window_end_ns - intact->first_ts_ns) / 1e9;
  std::optional<LatencyReport> reference = Report(path, until);
  ASSERT_TRUE(reference.has_value());
  uint64_t kept = 0;
  for (const LatencyGroup& g : r->groups) kept += g.summary.count;
  EXPECT_GT(kept, 100u);
  std::string why;
  EXPECT_TRUE(SameBuckets(BucketsOf(*r), BucketsOf(*reference), &why)) << why;
  ::unlink(path.c_str());
  ::unlink(cut_path.c_str());
}

}  // namespace
}  // namespace iotrace
