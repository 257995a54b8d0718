// bench/scale's generator: a small synthetic recording of each format, read by the real
// readers and reported, counts exactly what the generator says it holds.
#include "synth_recording.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/analysis/report.h"
#include "iotrace/base/sanitizers.h"
#include "iotrace/event/block_event.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "iotrace/sys/cpus.h"
#include "test_files.h"

namespace iotrace {
namespace {

using bench::SynthDev;
using bench::SynthExpected;
using bench::SynthOptions;

class SynthRecordingTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = test::MakeTempDir("iotrace_synth_test.");
    ASSERT_FALSE(dir_.empty()) << "mkdtemp in " << test::TestTmpDir();
  }
  void TearDown() override { test::RemoveTree(dir_); }

  SynthOptions Options() const {
    SynthOptions o;
    o.trace_dat = GetParam();
    o.formats_dir = std::string(IOTRACE_FIXTURES) + "/formats/6.18";
    return o;
  }
  // Options() of a recording's shape: CPUs, devices, requests in flight, events, and the time
  // between two events (ns).
  SynthOptions Shaped(uint32_t cpus, uint32_t devices, uint64_t in_flight, uint64_t events,
                      uint64_t step_ns) const {
    SynthOptions o = Options();
    std::tie(o.cpus, o.devices, o.in_flight, o.events, o.step_ns) =
        std::make_tuple(cpus, devices, in_flight, events, step_ns);
    return o;
  }

  // Writes the recording, reports it with one thread and with the default (auto) threads,
  // and checks both against the generator's counts.
  // `plan` (if given): how the default threads read it; `last` (if given): that report.
  void CheckReport(const SynthOptions& o, SynthExpected* expected, std::string* plan = nullptr,
                   LatencyReport* last = nullptr) {
    const std::string path = dir_ + (o.trace_dat ? "/s.dat" : "/s.data");
    const absl::Status written = WriteSynthRecording(path, o, expected);
    ASSERT_TRUE(written.ok()) << written;
    for (int threads : {1, 0}) {
      auto reader = OpenTraceReader(path);
      ASSERT_TRUE(reader.ok()) << reader.status();
      ReportOptions ro;
      ro.input = path;
      ro.threads = threads;
      ro.split_min_bytes = 1 << 16;  // small enough that auto reads it as two time ranges
      ro.split_on_one_cpu = true;
      ro.max_inflight = std::max<size_t>(16, 2 * o.in_flight);
      ro.sysfs_root = std::string(IOTRACE_FIXTURES) + "/devices/sys";
      ro.procfs_root = std::string(IOTRACE_FIXTURES) + "/devices/proc";
      auto report = BuildLatencyReport(**reader, ro);
      ASSERT_TRUE(report.ok()) << report.status();
      SCOPED_TRACE(threads);
      if (plan != nullptr) *plan = report->read_plan;
      const Completeness& c = report->completeness;
      EXPECT_EQ(c.events[static_cast<int>(BlockEventKind::kInsert)], expected->kinds[0]);
      EXPECT_EQ(c.events[static_cast<int>(BlockEventKind::kIssue)], expected->kinds[1]);
      EXPECT_EQ(c.events[static_cast<int>(BlockEventKind::kComplete)], expected->kinds[2]);
      EXPECT_EQ(c.reader_events, expected->events);
      EXPECT_EQ(report->first_ts_ns, expected->first_ts);
      EXPECT_EQ(report->last_ts_ns, expected->last_ts);
      std::map<std::tuple<uint32_t, BlockOp, Phase>, uint64_t> got, want;
      for (const LatencyGroup& g : report->groups) got[{g.dev, g.op, g.phase}] = g.summary.count;
      for (uint32_t d = 0; d < o.devices; ++d) {
        for (int w = 0; w < 2; ++w) {
          if (expected->requests[d][w] == 0) continue;
          for (Phase p : {Phase::kI2D, Phase::kD2C, Phase::kI2C}) {
            want[{SynthDev(d), w ? BlockOp::kWrite : BlockOp::kRead, p}] =
                expected->requests[d][w];
          }
        }
      }
      EXPECT_EQ(got, want);
      EXPECT_EQ(c.match.completes_without_issue, 0u);
      EXPECT_EQ(c.match.negative_latency, 0u);
      if (last != nullptr) *last = *std::move(report);
    }
  }

  std::string dir_;
};

TEST_P(SynthRecordingTest, ReportCountsWhatTheGeneratorWrote) {
  SynthOptions o = Options();
  o.cpus = 8;
  o.devices = 5;
  o.in_flight = 300;
  o.events = 60'000;
  o.wake_bytes = 64 << 10;  // many rounds of drains and pages in a short recording
  o.flush_interval_ns = 100'000;
  SynthExpected e;
  CheckReport(o, &e);
  EXPECT_EQ(e.events, 60'000u);
  EXPECT_EQ(e.max_in_flight, 300u);
  EXPECT_GT(e.remote_completes, 0u);  // some completions on another CPU than their issue
  uint64_t requests = 0;
  for (const auto& r : e.requests) requests += r[0] + r[1];
  EXPECT_EQ(requests, 20'000u);
}

TEST_P(SynthRecordingTest, OneCpuOneRequestAtATime) {
  SynthOptions o = Options();
  o.cpus = 1;
  o.devices = 1;
  o.in_flight = 1;
  o.events = 3'000;
  SynthExpected e;
  CheckReport(o, &e);
  EXPECT_EQ(e.max_in_flight, 1u);
  EXPECT_EQ(e.remote_completes, 0u);
}

TEST_P(SynthRecordingTest, ManyCpusWithSkewedClocks) {
  SynthOptions o = Options();
  o.cpus = 64;
  o.devices = 40;
  o.in_flight = 2'000;
  o.events = 30'000;
  o.skew_ns = 400;  // more than the time between events: CPUs' streams disagree on order
  o.wake_bytes = 16 << 10;
  o.flush_interval_ns = 50'000;
  SynthExpected e;
  CheckReport(o, &e);
  EXPECT_GT(e.remote_completes, 0u);
}

// perf.data is cut for two time ranges where a round of drains begins, the cut far enough
// past it for a round's time: with short rounds, two ranges; with one round as large as the
// whole file, of 4 CPUs' drains, one pass from the start, not two ranges read and then found
// unfit. Of 64 CPUs' drains (a busy many-CPU machine's round), two ranges both read from the
// start of the data, the later one passing over what lies before its time; as the file has one
// round mark, nothing is final before its end, and the two share one walk of the data.
TEST_P(SynthRecordingTest, PerfDataIsCutWhereARoundBegins) {
  SynthOptions o = Shaped(4, 2, 64, 60'000, 40'000);  // 2.4 s of trace time
  o.wake_bytes = 16 << 10;
  SynthExpected e;
  std::string short_rounds, one_round;
  CheckReport(o, &e, &short_rounds);
  EXPECT_EQ(short_rounds.rfind("two ranges", 0), 0u) << short_rounds;  // (maybe read on)
  o.wake_bytes = uint64_t{1} << 30;
  o.flush_interval_ns = uint64_t{1} << 40;
  CheckReport(o, &e, &one_round);
  if (o.trace_dat) {
    EXPECT_EQ(one_round, "two ranges");  // (trace.dat has no rounds)
  } else {
    EXPECT_EQ(one_round, "one pass: the reader cannot read time ranges");
  }
  SynthOptions many = Shaped(64, 16, 64, 300'000, 10'000);  // ~32 MB of perf.data
  many.wake_bytes = uint64_t{1} << 30;
  many.flush_interval_ns = uint64_t{1} << 40;
  std::string many_plan;
  CheckReport(many, &e, &many_plan);
  EXPECT_EQ(many_plan, o.trace_dat ? "two ranges" : "two ranges, one walk of the data shared");
}

// A reader's split looked for from a share of the data other than the middle (a plan moves
// perf.data's earlier, so that the two ranges read as much): a round mark and its times from
// there, earlier than the middle's; trace.dat, whose ranges start anywhere, has none. The report
// still reads the file as two ranges, exactly.
TEST_P(SynthRecordingTest, TheSplitIsFoundFromEarlierInTheDataWhenAsked) {
  SynthOptions o = Shaped(16, 4, 256, 300'000, 10'000);  // 3 s of trace time
  o.wake_bytes = 256 << 10;  // rounds of ~4 MiB: late_ns, and so the priming, a good share
  SynthExpected e;
  std::string plan;
  CheckReport(o, &e, &plan);
  EXPECT_EQ(plan.rfind("two ranges", 0), 0u) << plan;
  auto reader = OpenTraceReader(dir_ + (o.trace_dat ? "/s.dat" : "/s.data"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  const std::optional<TraceTimeSpan> middle = (*reader)->TimeSpan();
  ASSERT_TRUE(middle.has_value());
  const std::optional<TraceTimeSpan> earlier = (*reader)->TimeSpanFrom(0.3);
  if (o.trace_dat) {
    EXPECT_FALSE(earlier.has_value());
    return;
  }
  ASSERT_TRUE(earlier.has_value());
  EXPECT_EQ(earlier->first_ts, middle->first_ts);
  EXPECT_EQ(earlier->last_ts, middle->last_ts);
  EXPECT_LT(earlier->split_position, middle->split_position);
  EXPECT_LT(earlier->middle_ts, middle->middle_ts);
  EXPECT_GT(earlier->middle_ts, earlier->first_ts);
  const double at =
      static_cast<double>(earlier->split_position) / static_cast<double>(middle->split_position);
  EXPECT_GT(at, 0.4);  // a round (~4 MiB of ~30) past 30% of the data, against past 50%
  EXPECT_LT(at, 0.9);
  EXPECT_FALSE((*reader)->TimeSpanFrom(0.0).has_value());
  EXPECT_FALSE((*reader)->TimeSpanFrom(1.0).has_value());
  // The reader keeps the ends its first look found: a reader asked from 30% first (its ends
  // looked at then) finds what this one, asked from the middle first, found from 30%.
  auto fresh = OpenTraceReader(dir_ + "/s.data");
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const std::optional<TraceTimeSpan> first_asked = (*fresh)->TimeSpanFrom(0.3);
  ASSERT_TRUE(first_asked.has_value());
  auto fields = [](const TraceTimeSpan& s) {
    return std::tuple(s.first_ts, s.last_ts, s.middle_ts, s.split_position, s.late_ns);
  };
  EXPECT_EQ(fields(*first_asked), fields(*earlier));
  // A read lets go of the looks' buffer (kept from look to look until then); a look after it
  // maps one again and finds the same. (That the buffer is kept between looks does not show
  // from outside the reader: its cost was measured, not tested.)
  class Count : public EventSink {
   public:
    void OnEvent(const RawEvent&) override { ++events; }
    uint64_t events = 0;
  } count;
  ASSERT_TRUE((*fresh)->ReadAll(&count).ok());
  EXPECT_EQ(count.events, e.events);
  const std::optional<TraceTimeSpan> after_read = (*fresh)->TimeSpanFrom(0.3);
  ASSERT_TRUE(after_read.has_value());
  EXPECT_EQ(fields(*after_read), fields(*earlier));
}

// A many-CPU file whose looks from the start see rounds of twice the bytes the walk for round
// marks reads: the walk, which would find none, is skipped, and the plan is the one it would have
// led to. With short rounds the looks see many round boundaries, and the walk finds its marks as
// before. (The walk's reach is shrunk here so that a file of a test's size is "long rounds".)
// (perf.data only: trace.dat has no rounds.)
class SynthPerfDataTest : public SynthRecordingTest {};
TEST_P(SynthPerfDataTest, TheLooksSkipAWalkForMarksThatWouldFindNone) {
  auto fields = [](const TraceTimeSpan& s) {
    return std::tuple(s.first_ts, s.middle_ts, s.last_ts, s.split_position, s.late_ns,
                      s.starts_anywhere);
  };
  SynthOptions one_round = Shaped(64, 16, 64, 300'000, 10'000);  // ~32 MB, one round
  one_round.wake_bytes = uint64_t{1} << 30;
  one_round.flush_interval_ns = uint64_t{1} << 40;
  SynthOptions short_rounds = one_round;
  short_rounds.wake_bytes = 16 << 10;  // rounds of ~1 MiB
  for (const auto& [o, long_rounds] :
       {std::pair{one_round, true}, std::pair{short_rounds, false}}) {
    SynthExpected e;
    const std::string path = dir_ + "/looks.data";
    ASSERT_TRUE(WriteSynthRecording(path, o, &e).ok());
    PerfReadOptions walk;
    PerfReadOptions skip;
    skip.marks_look_bytes = 4 << 20;  // the file's 32 MB: rounds of twice that and longer
    auto walked = OpenPerfData(path, walk);
    auto skipped = OpenPerfData(path, skip);
    ASSERT_TRUE(walked.ok() && skipped.ok());
    const std::optional<TraceTimeSpan> a = (*walked)->TimeSpan();
    const std::optional<TraceTimeSpan> b = (*skipped)->TimeSpan();
    ASSERT_TRUE(a.has_value() && b.has_value());
    EXPECT_EQ(a->starts_anywhere, long_rounds);
    EXPECT_EQ(fields(*a), fields(*b));
  }
}

// A report of many devices keeps its rows' buckets as views of their histograms' counts, in one
// block of memory for each thread that makes rows; each row's buckets add up to its count, in
// increasing order, and a copy of the report and a row moved out of it outlive the report.
TEST_P(SynthRecordingTest, ManyDevicesRowsAreViewsOfCountsInOneBlockAThread) {
  SynthOptions o = Options();
  o.cpus = 4;
  o.devices = 128;  // x 2 ops x 3 phases: 768 rows, two threads' worth
  o.in_flight = 256;
  o.events = 60'000;
  SynthExpected e;
  LatencyReport r;
  CheckReport(o, &e, nullptr, &r);
  ASSERT_GE(r.groups.size(), 600u);
  std::set<const void*> blocks;
  for (const LatencyGroup& g : r.groups) {
    ASSERT_TRUE(g.buckets.is_view()) << g.dev;
    blocks.insert(g.buckets.memory());
    uint64_t n = 0;
    size_t seen = 0;
    std::optional<LatencyBucket> last;
    for (const LatencyBucket& b : g.buckets) {
      n += b.count;
      ++seen;
      EXPECT_GT(b.count, 0u);
      EXPECT_LT(b.lo_ns, b.hi_ns);
      if (last.has_value()) EXPECT_LE(last->hi_ns, b.lo_ns);
      last = b;
    }
    EXPECT_EQ(n, g.summary.count);
    EXPECT_EQ(seen, g.buckets.size());
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ(g.buckets.back().lo_ns, last->lo_ns);
    EXPECT_EQ(g.buckets.ToVector().size(), seen);
  }
  EXPECT_EQ(blocks.size(), UsableCpus() >= 2 ? 2u : 1u);  // the rows made on two threads
  // A copy's rows and a row moved out keep their counts after the report is gone.
  const LatencyReport copy = r;
  LatencyGroup kept = std::move(r.groups.back());
  r = LatencyReport();
  const LatencyGroup& same = copy.groups.back();
  ASSERT_EQ(kept.buckets.size(), same.buckets.size());
  const std::vector<LatencyBucket> a = kept.buckets.ToVector();
  const std::vector<LatencyBucket> b = same.buckets.ToVector();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].lo_ns, b[i].lo_ns);
    EXPECT_EQ(a[i].count, b[i].count);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, SynthRecordingTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "TraceDat" : "PerfData"; });
INSTANTIATE_TEST_SUITE_P(Formats, SynthPerfDataTest, ::testing::Values(false),
                         [](const auto&) { return "PerfData"; });

}  // namespace
}  // namespace iotrace
