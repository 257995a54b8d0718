#include "iotrace/analysis/latency_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "synthetic_trace.h"

namespace iotrace {
namespace {

using synthetic::LoadFormats;
using synthetic::SyntheticTrace;
using synthetic::ThisKernelFormats;

constexpr uint32_t kLoop0 = 7u << 20;
constexpr uint32_t kVda = 254u << 20;
constexpr uint32_t kUnnamed = (8u << 20) | 5;  // no name in the fixture tree
constexpr uint64_t kMs = 1'000'000;

ReportOptions TestOptions() {
  ReportOptions o;
  o.input = "synthetic.data";
  o.sysfs_root = std::string(IOTRACE_FIXTURES) + "/devices/sys";
  o.procfs_root = std::string(IOTRACE_FIXTURES) + "/devices/proc";
  return o;
}

LatencyReport Build(const SyntheticTrace& trace, const ReportOptions& options = TestOptions()) {
  auto reader = trace.Reader();
  auto report = BuildLatencyReport(*reader, options);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : LatencyReport();
}

const LatencyGroup* FindGroup(const std::vector<LatencyGroup>& groups, uint32_t dev, BlockOp op,
                              Phase phase) {
  for (const LatencyGroup& g : groups) {
    if (g.dev == dev && g.op == op && g.phase == phase) return &g;
  }
  return nullptr;
}

// One full insert -> issue -> complete request.
void Request(SyntheticTrace& t, uint64_t insert_ts, uint64_t queue_ns, uint64_t device_ns,
             uint64_t sector, const std::string& rwbs = "W", uint32_t dev = kLoop0) {
  t.Insert(insert_ts, sector, 8, rwbs, dev);
  t.Issue(insert_ts + queue_ns, sector, 8, rwbs, dev);
  t.Complete(insert_ts + queue_ns + device_ns, sector, 8, rwbs, dev);
}

TEST(LatencyReportTest, GroupsByDeviceOpAndPhaseWithExactStatistics) {
  SyntheticTrace t;
  Request(t, 0, 1000, 50'000, 8, "R");
  Request(t, 200'000, 3000, 70'000, 16, "R");
  Request(t, 400'000, 2000, 90'000, 24, "WS");
  Request(t, 600'000, 500, 20'000, 8, "W", kVda);
  Request(t, 800'000, 700, 30'000, 8, "R", kUnnamed);
  LatencyReport r = Build(t);
  ASSERT_EQ(r.groups.size(), 12u);  // 4 (dev, op) pairs x 3 phases
  // Sorted by dev, op, phase.
  EXPECT_EQ(r.groups[0].dev, kLoop0);
  EXPECT_EQ(r.groups[0].op, BlockOp::kRead);
  EXPECT_EQ(r.groups[0].phase, Phase::kI2D);
  EXPECT_EQ(r.groups.back().dev, kVda);
  const LatencyGroup* d2c = FindGroup(r.groups, kLoop0, BlockOp::kRead, Phase::kD2C);
  ASSERT_NE(d2c, nullptr);
  EXPECT_EQ(d2c->device, "loop0");  // DEVNAME from sys/dev/block/7:0/uevent
  EXPECT_EQ(d2c->summary.count, 2u);
  EXPECT_EQ(d2c->summary.min_ns, 50'000u);
  EXPECT_EQ(d2c->summary.max_ns, 70'000u);
  EXPECT_EQ(d2c->summary.sum_ns, 120'000u);
  EXPECT_DOUBLE_EQ(d2c->summary.mean_ns, 60'000.0);
  EXPECT_FALSE(d2c->incomplete);
  uint64_t bucket_total = 0;
  for (const LatencyBucket& b : d2c->buckets) bucket_total += b.count;
  EXPECT_EQ(bucket_total, 2u);
  const LatencyGroup* i2c = FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kI2C);
  ASSERT_NE(i2c, nullptr);
  EXPECT_EQ(i2c->summary.min_ns, 92'000u);
  const LatencyGroup* vda = FindGroup(r.groups, kVda, BlockOp::kWrite, Phase::kI2D);
  ASSERT_NE(vda, nullptr);
  EXPECT_EQ(vda->device, "vda");  // from proc/partitions: its uevent has no DEVNAME
  const LatencyGroup* unnamed = FindGroup(r.groups, kUnnamed, BlockOp::kRead, Phase::kD2C);
  ASSERT_NE(unnamed, nullptr);
  EXPECT_EQ(unnamed->device, "8:5");
  EXPECT_TRUE(r.warnings.empty());
  const Completeness& c = r.completeness;
  EXPECT_EQ(c.events[static_cast<int>(BlockEventKind::kInsert)], 5u);
  EXPECT_EQ(c.events[static_cast<int>(BlockEventKind::kComplete)], 5u);
  EXPECT_EQ(c.match.paired[static_cast<int>(Phase::kD2C)], 5u);
  EXPECT_EQ(c.reader_events, 15u);
  EXPECT_EQ(r.first_ts_ns, 0u);
  EXPECT_EQ(r.last_ts_ns, 830'700u);
  EXPECT_EQ(r.file_format, "synthetic");
}

TEST(LatencyReportTest, DeviceFilterTakesNamesAndNumbers) {
  SyntheticTrace t;
  Request(t, 0, 1000, 5000, 8, "R", kLoop0);
  Request(t, 10, 1000, 5000, 8, "R", kVda);
  for (const std::string& spec : {"loop0", "/dev/loop0", "7:0"}) {
    ReportOptions o = TestOptions();
    o.devices = {spec};
    LatencyReport r = Build(t, o);
    ASSERT_EQ(r.groups.size(), 3u) << spec;
    for (const LatencyGroup& g : r.groups) EXPECT_EQ(g.dev, kLoop0) << spec;
    EXPECT_EQ(r.completeness.samples_filtered, 2u) << spec;  // vda's issue and completion
  }
  ReportOptions o = TestOptions();
  o.devices = {"loop0", "254:0"};
  EXPECT_EQ(Build(t, o).groups.size(), 6u);
  o.devices = {"sdz"};
  EXPECT_TRUE(Build(t, o).groups.empty());
}

TEST(LatencyReportTest, OpFilterKeepsOnlyTheGivenOperations) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8, "R");
  Request(t, 1, 10, 100, 16, "WS");
  Request(t, 2, 10, 100, 24, "D");
  ReportOptions o = TestOptions();
  o.ops = {BlockOp::kWrite, BlockOp::kDiscard};
  LatencyReport r = Build(t, o);
  ASSERT_EQ(r.groups.size(), 6u);
  for (const LatencyGroup& g : r.groups) EXPECT_NE(g.op, BlockOp::kRead);
}

TEST(LatencyReportTest, CommAndPidMatchTheInsertingOrTheIssuingProcess) {
  SyntheticTrace t;
  // Inserted by postgres (321), issued by a kworker (77).
  t.Add("block_rq_insert", {0, kLoop0, 8, 8, "W", 321, "postgres", 0});
  t.Add("block_rq_issue", {10, kLoop0, 8, 8, "W", 77, "kworker/1:1H", 1});
  t.Complete(100, 8);
  // Inserted and issued by fio (100).
  Request(t, 200, 10, 100, 64);
  auto count_d2c = [&t](ReportOptions o) {
    LatencyReport r = Build(t, o);
    const LatencyGroup* g = FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kD2C);
    return g == nullptr ? uint64_t{0} : g->summary.count;
  };
  ReportOptions o = TestOptions();
  o.comms = {"postgres"};
  EXPECT_EQ(count_d2c(o), 1u);
  o.comms = {"kworker/1:1H"};
  EXPECT_EQ(count_d2c(o), 1u);
  o.comms = {"fio", "postgres"};
  EXPECT_EQ(count_d2c(o), 2u);
  o.comms = {"nobody"};
  EXPECT_EQ(count_d2c(o), 0u);
  o = TestOptions();
  o.pids = {77};
  EXPECT_EQ(count_d2c(o), 1u);
  o.pids = {321};
  EXPECT_EQ(count_d2c(o), 1u);
  o.pids = {100};
  EXPECT_EQ(count_d2c(o), 1u);
  o.pids = {5};
  EXPECT_EQ(count_d2c(o), 0u);
}

// Per filter, the requests it removed (counted at their completion, under the first filter of
// dev, op, comm, pid that removes them), and the phase samples --since and --until removed.
TEST(LatencyReportTest, EachFilterCountsWhatItRemoved) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8, "R");            // loop0 read, fio
  Request(t, 1000, 10, 100, 16, "W");        // loop0 write, fio
  Request(t, 2000, 10, 100, 24, "W", kVda);  // vda write, fio
  ReportOptions o = TestOptions();
  o.devices = {"loop0"};
  o.ops = {BlockOp::kRead};
  o.comms = {"nobody"};
  LatencyReport r = Build(t, o);
  EXPECT_TRUE(r.groups.empty());
  const FilterCounts& f = r.completeness.filtered;
  EXPECT_EQ(f.dev, 1u);   // vda's write, also not a read and not by nobody
  EXPECT_EQ(f.op, 1u);    // loop0's write
  EXPECT_EQ(f.comm, 1u);  // loop0's read
  EXPECT_EQ(f.pid, 0u);
  EXPECT_EQ(r.completeness.samples_filtered, 6u);  // each request's issue and completion

  o = TestOptions();
  o.pids = {100, 5};
  r = Build(t, o);
  EXPECT_EQ(r.groups.size(), 9u);
  EXPECT_EQ(r.completeness.filtered.pid, 0u);

  o = TestOptions();
  o.since_s = 0.000000500;  // after the read's phases ended (110 ns)
  o.until_s = 0.000002050;  // after vda's I2D ended (2010 ns), before its D2C and I2C (2110 ns)
  r = Build(t, o);
  EXPECT_EQ(r.completeness.filtered.since, 3u);  // the read's I2D, D2C, I2C
  EXPECT_EQ(r.completeness.filtered.until, 2u);  // vda's D2C and I2C (its I2D ends at 2010 ns)
  EXPECT_EQ(r.completeness.phases_outside_window, 5u);
}

TEST(LatencyReportTest, FilterValuesThatMatchNothingAreNamedWithWhatTheFileHolds) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8, "R");
  Request(t, 1000, 10, 100, 16, "W");
  Request(t, 2000, 10, 100, 24, "W");
  Request(t, 3000, 10, 100, 8, "W", kVda);
  ReportOptions o = TestOptions();
  o.devices = {"sdz", "loop0", "9:9"};
  o.ops = {BlockOp::kWrite, BlockOp::kDiscard};
  o.comms = {"fio", "nobody"};
  o.pids = {100, 4242};
  LatencyReport r = Build(t, o);
  EXPECT_EQ(r.devices_unmatched, (std::vector<std::string>{"sdz", "9:9"}));
  EXPECT_EQ(r.filter_warnings,
            (std::vector<std::string>{
                "--dev sdz, --dev 9:9 match no device in synthetic.data; it holds loop0 (7:0), "
                "vda (254:0)",
                "--op discard matches no request in synthetic.data (it holds read 1, write 3)",
                "--comm nobody matches no request in synthetic.data (no request was inserted or "
                "issued by a process of that name)",
                "--pid 4242 matches no request in synthetic.data (no request was inserted or "
                "issued by that process)"}));
  // In the notes too, first.
  ASSERT_GE(r.notes.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r.notes[i], r.filter_warnings[i]);
  const LatencyGroup* g = FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kD2C);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->summary.count, 2u);
  EXPECT_EQ(r.empty_reason, "");

  // Values that all match: nothing said.
  o.devices = {"loop0"};
  o.ops = {BlockOp::kWrite};
  o.comms = {"fio"};
  o.pids = {100};
  r = Build(t, o);
  EXPECT_TRUE(r.filter_warnings.empty()) << ::testing::PrintToString(r.filter_warnings);
  EXPECT_TRUE(r.devices_unmatched.empty());

  // A file with no block device at all.
  SyntheticTrace none;
  none.AddRaw(9999, 0, 0, 1, {});  // a record of another event
  o = TestOptions();
  o.devices = {"loop0"};
  r = Build(none, o);
  ASSERT_EQ(r.filter_warnings.size(), 1u);
  EXPECT_EQ(r.filter_warnings[0],
            "--dev loop0 matches no device in synthetic.data; it holds no block device events");
}

TEST(LatencyReportTest, AReportLeftEmptyByTheFiltersSaysWhichFilterRemovedWhat) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8, "R");
  Request(t, 1000, 10, 100, 16, "W");
  Request(t, 2000, 10, 100, 24, "W");
  Request(t, 3000, 10, 100, 8, "W", kVda);
  ReportOptions o = TestOptions();
  o.ops = {BlockOp::kDiscard};
  LatencyReport r = Build(t, o);
  EXPECT_TRUE(r.groups.empty());
  EXPECT_EQ(r.empty_reason, "--op discard removed all 4 requests (the file holds read 1, write 3)");
  EXPECT_NE(
      std::find(r.notes.begin(), r.notes.end(), "no request latencies to show: " + r.empty_reason),
      r.notes.end())
      << ::testing::PrintToString(r.notes);

  o = TestOptions();
  o.devices = {"vda"};
  o.ops = {BlockOp::kRead};
  r = Build(t, o);
  EXPECT_EQ(r.empty_reason,
            "--dev vda removed 3 requests (the file holds loop0 (7:0) 3, vda (254:0) 1), --op read "
            "removed 1 request (the file holds read 1, write 3)");

  o = TestOptions();
  o.comms = {"postgres"};
  r = Build(t, o);
  EXPECT_EQ(r.empty_reason, "--comm postgres removed all 4 requests");

  o = TestOptions();
  o.since_s = 1;
  r = Build(t, o);
  EXPECT_EQ(r.empty_reason, "--since 1 removed all 12 phase samples (the trace spans 0.000 s)");

  // Groups left: no reason, whatever the filters removed.
  o = TestOptions();
  o.ops = {BlockOp::kRead};
  r = Build(t, o);
  EXPECT_FALSE(r.groups.empty());
  EXPECT_EQ(r.empty_reason, "");
  // Nothing in the file and no filter: nothing to explain.
  SyntheticTrace none;
  none.AddRaw(9999, 0, 0, 1, {});
  r = Build(none);
  EXPECT_TRUE(r.groups.empty());
  EXPECT_EQ(r.empty_reason, "");
}

TEST(LatencyReportTest, SinceAndUntilKeepPhasesEndingInTheWindow) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);               // ends at 0.000000110 s
  Request(t, 2 * 1000 * kMs, 10, 100, 16);  // ends just after 2 s
  Request(t, 5 * 1000 * kMs, 10, 100, 24);  // ends just after 5 s
  ReportOptions o = TestOptions();
  o.since_s = 1;
  o.until_s = 3;
  LatencyReport r = Build(t, o);
  const LatencyGroup* g = FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kD2C);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->summary.count, 1u);
  EXPECT_EQ(r.completeness.phases_outside_window, 6u);
  ASSERT_EQ(r.filters.size(), 2u);
  EXPECT_EQ(r.filters[0].first, "since");
  // The window is relative to the first event, not to the trace clock's zero.
  SyntheticTrace shifted;
  Request(shifted, 1000 * 1000 * kMs, 10, 100, 8);
  Request(shifted, 1002 * 1000 * kMs, 10, 100, 16);
  const LatencyReport shifted_report = Build(shifted, o);  // g points into its groups
  g = FindGroup(shifted_report.groups, kLoop0, BlockOp::kWrite, Phase::kD2C);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->summary.count, 1u);
}

TEST(LatencyReportTest, IntervalsSplitSamplesByTheirEndTime) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);            // interval 0
  Request(t, 100 * kMs, 10, 200, 16);   // interval 0
  Request(t, 1500 * kMs, 10, 300, 24);  // interval 1
  Request(t, 3200 * kMs, 10, 400, 32);  // interval 3 (2 is empty)
  ReportOptions o = TestOptions();
  o.interval_s = 1;
  LatencyReport r = Build(t, o);
  EXPECT_EQ(r.interval_s, 1);
  ASSERT_EQ(r.intervals.size(), 3u);
  EXPECT_EQ(r.intervals[0].index, 0u);
  EXPECT_EQ(r.intervals[1].index, 1u);
  EXPECT_EQ(r.intervals[2].index, 3u);
  EXPECT_DOUBLE_EQ(r.intervals[2].start_s, 3.0);
  const LatencyGroup* g0 = FindGroup(r.intervals[0].groups, kLoop0, BlockOp::kWrite, Phase::kD2C);
  ASSERT_NE(g0, nullptr);
  EXPECT_EQ(g0->summary.count, 2u);
  EXPECT_EQ(g0->summary.max_ns, 200u);
  EXPECT_EQ(g0->device, "loop0");
  const LatencyGroup* g3 = FindGroup(r.intervals[2].groups, kLoop0, BlockOp::kWrite, Phase::kD2C);
  ASSERT_NE(g3, nullptr);
  EXPECT_EQ(g3->summary.count, 1u);
  EXPECT_EQ(g3->summary.min_ns, 400u);
  // The totals still hold everything.
  EXPECT_EQ(FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kD2C)->summary.count, 4u);
}

// Each event that found nothing to pair with is counted in the interval of its time: in the
// interval itself when it holds samples, else among the idle ones; together they are every
// unpaired event the matcher counted.
TEST(LatencyReportTest, UnpairedEventsAreCountedInTheIntervalOfTheirTime) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);             // interval 0
  t.Issue(2500 * kMs, 100);              // interval 2: an issue without an insert,
  t.Complete(2700 * kMs, 100);           // then paired with its completion
  t.Complete(5500 * kMs, 500);           // interval 5, no samples: never issued
  t.Complete(7200 * kMs, 900);           // interval 7, no samples
  t.Complete(7300 * kMs, 908);
  Request(t, 9000 * kMs, 10, 100, 16);   // interval 9
  ReportOptions o = TestOptions();
  o.interval_s = 1;
  LatencyReport r = Build(t, o);
  ASSERT_EQ(r.intervals.size(), 3u);
  EXPECT_EQ(r.intervals[0].unpaired, 0u);
  EXPECT_EQ(r.intervals[1].index, 2u);
  EXPECT_EQ(r.intervals[1].unpaired, 1u);
  EXPECT_EQ(r.intervals[2].unpaired, 0u);
  const std::vector<std::pair<uint64_t, uint64_t>> idle = {{5, 1}, {7, 2}};
  EXPECT_EQ(r.unpaired_idle, idle);
  const MatchStats& m = r.completeness.match;
  uint64_t total = m.completes_without_issue + m.requeues_unmatched;
  for (uint64_t n : m.issues_without_insert) total += n;
  EXPECT_EQ(total, 4u);
  uint64_t per_interval = 0;
  for (const LatencyInterval& iv : r.intervals) per_interval += iv.unpaired;
  for (const auto& [index, n] : r.unpaired_idle) per_interval += n;
  EXPECT_EQ(per_interval, total);

  // Without intervals there is nothing to place them in.
  LatencyReport whole = Build(t);
  EXPECT_TRUE(whole.unpaired_idle.empty());
}

TEST(LatencyReportTest, SilentDropsOfCompletionsMakeD2CAndI2CIncompleteButNotI2D) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);
  t.Insert(1000, 16).Issue(1010, 16);  // its completion was dropped by perf
  const int complete_id = t.Format("block_rq_complete")->id;
  t.Loss(LossRecord::Kind::kSilentDrop, 1, complete_id, 1);
  LatencyReport r = Build(t);
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_EQ(r.warnings[0].phase, Phase::kD2C);
  EXPECT_EQ(r.warnings[1].phase, Phase::kI2C);
  EXPECT_NE(r.warnings[0].message.find("1 block_rq_complete event lost (silent_drop 1)"),
            std::string::npos)
      << r.warnings[0].message;
  EXPECT_TRUE(FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kD2C)->incomplete);
  EXPECT_TRUE(FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kI2C)->incomplete);
  EXPECT_FALSE(FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kI2D)->incomplete);
  const Completeness& c = r.completeness;
  ASSERT_EQ(c.losses.size(), 1u);
  EXPECT_EQ(c.losses[0].event, "block:block_rq_complete");
  EXPECT_EQ(c.losses[0].cpu, 1);
  EXPECT_EQ(c.lost[static_cast<int>(BlockEventKind::kComplete)], 1u);
  EXPECT_EQ(c.match.in_flight_at_end[static_cast<int>(RequestState::kIssued)], 1u);
}

// Every completion lost: D2C and I2C have no histogram at all, and the report must still say
// they are incomplete rather than show I2D alone as if nothing were missing.
TEST(LatencyReportTest, PhasesWithEveryEndLostAreReportedIncompleteWithoutHistograms) {
  SyntheticTrace t;
  t.Insert(0, 8).Issue(10, 8).Insert(1000, 16).Issue(1010, 16);
  const int complete_id = t.Format("block_rq_complete")->id;
  t.Loss(LossRecord::Kind::kSilentDrop, 1, complete_id, 2);
  LatencyReport r = Build(t);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].phase, Phase::kI2D);
  EXPECT_FALSE(r.groups[0].incomplete);
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_EQ(r.warnings[0].phase, Phase::kD2C);
  EXPECT_EQ(r.warnings[1].phase, Phase::kI2C);
  for (const PhaseWarning& w : r.warnings) {
    EXPECT_NE(w.message.find("2 block_rq_complete events lost (silent_drop 2)"), std::string::npos)
        << w.message;
    EXPECT_NE(w.message.find("no request of it could be measured"), std::string::npos)
        << w.message;
  }
}

TEST(LatencyReportTest, RingLossesOfUnknownEventsMakeEveryPhaseIncomplete) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);
  t.Loss(LossRecord::Kind::kRingLost, 0, -1, 12);
  t.Loss(LossRecord::Kind::kRingLost, 0, -1, 3);  // aggregated with the first
  LatencyReport r = Build(t);
  EXPECT_EQ(r.warnings.size(), 3u);
  for (const LatencyGroup& g : r.groups) EXPECT_TRUE(g.incomplete);
  ASSERT_EQ(r.completeness.losses.size(), 1u);
  EXPECT_EQ(r.completeness.losses[0].count, 15u);
  EXPECT_EQ(r.completeness.losses[0].event, "unknown");
  EXPECT_EQ(r.completeness.lost_unknown, 15u);
}

// A crafted file with loss records for a million CPUs: the rows stay bounded and no loss goes
// uncounted.
TEST(LatencyReportTest, LossRowsAreBoundedAndEveryLossStillCounted) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);
  const int complete_id = t.Format("block_rq_complete")->id;
  constexpr int kCpus = 100000;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    t.Loss(LossRecord::Kind::kRingLost, cpu, complete_id, 2);
    t.Loss(LossRecord::Kind::kRingLost, cpu, 70000 + cpu, 1);  // ids the file has no format for
  }
  LatencyReport r = Build(t);
  const Completeness& c = r.completeness;
  EXPECT_LE(c.losses.size(), 4096u + 2);
  uint64_t total = 0, complete = 0;
  for (const LossSummary& l : c.losses) {
    total += l.count;
    if (l.event == "block:block_rq_complete") complete += l.count;
  }
  EXPECT_EQ(total, 3u * kCpus);
  EXPECT_EQ(complete, 2u * kCpus);
  EXPECT_EQ(c.lost[static_cast<int>(BlockEventKind::kComplete)], 2u * kCpus);
}

TEST(LatencyReportTest, DeviceWithoutInsertsHasD2COnlyAndSaysWhy) {
  SyntheticTrace t;
  t.Issue(0, 8).Complete(100, 8).Issue(200, 16).Complete(250, 16);
  LatencyReport r = Build(t);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].phase, Phase::kD2C);
  EXPECT_EQ(r.completeness.match
                .issues_without_insert[static_cast<int>(NoInsertReason::kNoInsertOnDevice)],
            2u);
  bool said_why = false;
  for (const std::string& n : r.notes) {
    if (n.find("loop0 (7:0): no I2D/I2C") != std::string::npos &&
        n.find("scheduler none") != std::string::npos) {
      said_why = true;
    }
  }
  EXPECT_TRUE(said_why) << ::testing::PrintToString(r.notes);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(LatencyReportTest, FileWithoutBlockEventsIsAClearError) {
  auto sched = ParseEventFormat(
      "sched",
      "name: sched_switch\nID: 300\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:int prev_pid;\toffset:8;\tsize:4;\tsigned:1;\n\n"
      "print fmt: \"%d\", REC->prev_pid\n");
  ASSERT_TRUE(sched.ok()) << sched.status();
  auto b = LatencyReportBuilder::Create({*sched}, TestOptions());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("no usable block request events"), absl::string_view::npos);
  EXPECT_NE(b.status().message().find("sched:sched_switch"), absl::string_view::npos);
  EXPECT_NE(HintOf(b.status()).find("block:*"), std::string::npos);
  EXPECT_FALSE(LatencyReportBuilder::Create({}, TestOptions()).ok());
}

TEST(LatencyReportTest, ShortRecordsAreCountedAndMakeTheirPhasesIncomplete) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);
  t.AddRaw(t.Format("block_rq_complete")->id, 500, 1, 0, std::vector<uint8_t>(20, 0));
  LatencyReport r = Build(t);
  const Completeness& c = r.completeness;
  EXPECT_EQ(c.decode.problems[static_cast<int>(DecodeProblem::kShortRecord)], 1u);
  EXPECT_EQ(c.decode.rejected[static_cast<int>(BlockEventKind::kComplete)], 1u);
  ASSERT_EQ(r.warnings.size(), 2u);  // D2C and I2C
  EXPECT_NE(r.warnings[0].message.find("could not be decoded"), std::string::npos);
}

TEST(LatencyReportTest, RecordsOutOfOrderAreNotedAndWarnedOnEveryPhase) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);
  t.stats().AddProblem("out_of_order_beyond_window", 4);
  LatencyReport r = Build(t);
  ASSERT_EQ(r.completeness.reader_problems.size(), 1u);
  bool noted = false;
  for (const std::string& n : r.notes) {
    noted |= n.find("out_of_order_beyond_window 4") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  // Records delivered out of order are all there, but a request whose events they crossed may
  // be paired wrongly: every phase says so.
  ASSERT_FALSE(r.warnings.empty());
  for (const PhaseWarning& w : r.warnings) {
    EXPECT_NE(w.message.find("4 records handed on out of time order"), std::string::npos)
        << w.message;
  }
  for (const LatencyGroup& g : r.groups) EXPECT_TRUE(g.incomplete);
}

// A cut or damaged file: events were in the parts that could not be read, which ones is
// unknown, so every phase is incomplete and says why.
TEST(LatencyReportTest, UnreadablePartsOfTheFileMakeEveryPhaseIncomplete) {
  for (const char* problem : {"trace_dat_cpu_data_truncated", "ftrace_partial_page",
                              "ftrace_time_backwards", "truncated_record", "read_error",
                              "some_future_problem"}) {
    SyntheticTrace t;
    Request(t, 0, 10, 100, 8);
    t.stats().AddProblem(problem, 2);
    LatencyReport r = Build(t);
    ASSERT_EQ(r.warnings.size(), 3u) << problem;  // I2D, D2C, I2C
    for (const PhaseWarning& w : r.warnings) {
      EXPECT_NE(w.message.find(std::string("could not be read (") + problem + " 2)"),
                std::string::npos)
          << w.message;
    }
    ASSERT_FALSE(r.groups.empty());
    for (const LatencyGroup& g : r.groups) EXPECT_TRUE(g.incomplete) << problem;
  }
}

// A `perf record` file carries no account of the completions perf dropped: they show as requests
// left issued at the end. Those issued far longer ago than any D2C took (16x the longest, and
// over 100 ms) are stale, and D2C and I2C lack them; recent ones, and requests a scheduler keeps
// inserted, are the normal end of a recording.
TEST(LatencyReportTest, RequestsIssuedLongBeforeTheEndWithoutCompletionMakeD2CIncomplete) {
  auto build = [](uint64_t stale_issue_ts, bool old_insert) {
    SyntheticTrace t;
    Request(t, 0, 1000, 50'000, 8);  // the longest D2C: 50 us
    if (old_insert) t.Insert(10'000, 800);  // inserted, never issued
    t.Insert(stale_issue_ts - 1000, 64).Issue(stale_issue_ts, 64);  // never completed
    Request(t, 150'000'000, 1000, 20'000, 16);
    Request(t, 300'000'000, 1000, 20'000, 24);  // the file ends at 300.021 ms
    t.Insert(300'010'000, 32).Issue(300'011'000, 32);  // in flight at the end, recent
    return Build(t);
  };
  // Issued at 100 ms: waited 200 ms, over 100 ms and 16 x 50 us.
  LatencyReport r = build(100'000'000, true);
  const MatchStats& m = r.completeness.match;
  EXPECT_EQ(m.in_flight_at_end[static_cast<int>(RequestState::kIssued)], 2u);
  EXPECT_EQ(m.stale_at_end[static_cast<int>(RequestState::kIssued)], 1u);
  EXPECT_EQ(m.in_flight_at_end[static_cast<int>(RequestState::kInserted)], 1u);
  EXPECT_EQ(m.stale_at_end[static_cast<int>(RequestState::kInserted)], 0u);
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_EQ(r.warnings[0].phase, Phase::kD2C);
  EXPECT_EQ(r.warnings[1].phase, Phase::kI2C);
  EXPECT_NE(r.warnings[0].message.find("1 request issued before the end of the file had waited "
                                       "over 16 times the longest D2C seen (and over 100 ms)"),
            std::string::npos)
      << r.warnings[0].message;
  EXPECT_TRUE(FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kD2C)->incomplete);
  EXPECT_FALSE(FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kI2D)->incomplete);
  // Issued at 250 ms: 50 ms before the end, under the 100 ms floor: not stale.
  LatencyReport recent = build(250'000'000, false);
  EXPECT_EQ(recent.completeness.match.stale_at_end[static_cast<int>(RequestState::kIssued)], 0u);
  EXPECT_TRUE(recent.warnings.empty());
}

// The yardstick is the longest D2C of the whole file: a filter that hides the slow requests
// does not turn a request that waited less than 16 times their D2C into a stale one.
TEST(LatencyReportTest, StaleRequestsAreJudgedAgainstEveryRequestWhateverTheFilters) {
  SyntheticTrace t;
  Request(t, 0, 1000, 20'000'000, 8, "R");  // a read with a 20 ms D2C
  Request(t, 30'000'000, 1000, 50'000, 16);  // writes take 50 us
  t.Insert(99'000'000, 64).Issue(100'000'000, 64);  // a write never completed, 200 ms ago
  Request(t, 300'000'000, 1000, 20'000, 24);
  ReportOptions o = TestOptions();
  o.ops = {BlockOp::kWrite};
  LatencyReport r = Build(t, o);
  // 200 ms < 16 x 20 ms: still in flight, not stale, though no read is in the histograms.
  EXPECT_EQ(r.completeness.match.in_flight_at_end[static_cast<int>(RequestState::kIssued)], 1u);
  EXPECT_EQ(r.completeness.match.stale_at_end[static_cast<int>(RequestState::kIssued)], 0u);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(FindGroup(r.groups, kLoop0, BlockOp::kRead, Phase::kD2C), nullptr);
}

TEST(LatencyReportTest, DuplicateRecordsGetTheirOwnNoteAndLeaveThePhasesComplete) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);
  t.stats().AddProblem("duplicate_record", 3);
  LatencyReport r = Build(t);
  ASSERT_EQ(r.completeness.reader_problems.size(), 1u);
  EXPECT_EQ(r.completeness.reader_problems[0].second, 3u);
  int duplicate_notes = 0;
  for (const std::string& n : r.notes) {
    duplicate_notes += n.find("3 records appear twice in the file") != std::string::npos;
    EXPECT_EQ(n.find("the reader met problems"), std::string::npos) << n;
  }
  EXPECT_EQ(duplicate_notes, 1);
  EXPECT_TRUE(r.warnings.empty());
  SyntheticTrace once;
  Request(once, 0, 10, 100, 8);
  once.stats().AddProblem("duplicate_record", 1);
  bool singular = false;
  for (const std::string& n : Build(once).notes) {
    singular |= n == "1 record appears twice in the file, byte for byte (perf record writes "
                     "some samples again in its next drain of the same CPU's ring): it was used "
                     "once";
  }
  EXPECT_TRUE(singular) << ::testing::PrintToString(Build(once).notes);

  // With another problem beside it, that one still gets the general note, alone.
  t.stats().AddProblem("truncated_record", 1);
  LatencyReport r2 = Build(t);
  bool general = false;
  for (const std::string& n : r2.notes) {
    if (n.find("the reader met problems") == std::string::npos) continue;
    general = true;
    EXPECT_NE(n.find("truncated_record 1"), std::string::npos) << n;
    EXPECT_EQ(n.find("duplicate_record"), std::string::npos) << n;
  }
  EXPECT_TRUE(general);
}

TEST(LatencyReportTest, WorksOnOlderKernelLayouts) {
  for (const char* kernel : {"6.10", "3.x"}) {
    SyntheticTrace t(
        LoadFormats(kernel, {"block_rq_insert", "block_rq_issue", "block_rq_complete"}));
    Request(t, 0, 40, 900, 8, "RA");
    Request(t, 5000, 60, 1100, 16, "RA");
    LatencyReport r = Build(t);
    const LatencyGroup* g = FindGroup(r.groups, kLoop0, BlockOp::kRead, Phase::kD2C);
    ASSERT_NE(g, nullptr) << kernel;
    EXPECT_EQ(g->summary.count, 2u) << kernel;
    EXPECT_EQ(g->summary.min_ns, 900u) << kernel;
    EXPECT_EQ(g->summary.max_ns, 1100u) << kernel;
    EXPECT_TRUE(r.completeness.format_problems.empty()) << kernel;
  }
}

TEST(LatencyReportTest, QueuePhasesOnlyWhenBioQueueWasRecorded) {
  SyntheticTrace with(ThisKernelFormats(/*with_bio_queue=*/true));
  with.Add("block_bio_queue", {0, kLoop0, 8, 8, "W", 100, "fio", 0});
  Request(with, 5, 10, 100, 8);
  LatencyReport r = Build(with);
  const LatencyGroup* q2c = FindGroup(r.groups, kLoop0, BlockOp::kWrite, Phase::kQ2C);
  ASSERT_NE(q2c, nullptr);
  EXPECT_EQ(q2c->summary.min_ns, 115u);
  for (const std::string& n : r.notes) EXPECT_EQ(n.find("block_bio_queue"), std::string::npos);

  SyntheticTrace without;
  Request(without, 5, 10, 100, 8);
  LatencyReport r2 = Build(without);
  EXPECT_EQ(FindGroup(r2.groups, kLoop0, BlockOp::kWrite, Phase::kQ2C), nullptr);
  bool noted = false;
  for (const std::string& n : r2.notes) {
    noted |= n.find("no Q2D/Q2C: block_bio_queue was not recorded") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

bool HasNote(const LatencyReport& r, const std::string& note) {
  return std::find(r.notes.begin(), r.notes.end(), note) != r.notes.end();
}

// Notes name the fix where there is one: the event to record, the ring or buffer to enlarge, the
// backend that does not drop events, the report option that keeps requests longer.
TEST(LatencyReportTest, NotesNameTheEventToRecordForQueuePhases) {
  SyntheticTrace t;
  Request(t, 5, 10, 100, 8);
  LatencyReport r = Build(t);
  EXPECT_TRUE(HasNote(r, "no Q2D/Q2C: block_bio_queue was not recorded; record with -e "
                         "block:block_bio_queue to see them"))
      << ::testing::PrintToString(r.notes);

  // Scheduler none (issues, no insert on the device): queueing shows only as Q2D.
  SyntheticTrace none;
  none.Issue(0, 8).Complete(100, 8);
  r = Build(none);
  EXPECT_TRUE(HasNote(r, "loop0 (7:0): no I2D/I2C: the device showed no block_rq_insert at all: "
                         "requests went straight to the driver (scheduler none, or a bypass); "
                         "queueing is then only visible as Q2D, through -e "
                         "block:block_bio_queue"))
      << ::testing::PrintToString(r.notes);
  SyntheticTrace none_bio(ThisKernelFormats(/*with_bio_queue=*/true));
  none_bio.Add("block_bio_queue", {0, kLoop0, 8, 8, "W", 100, "fio", 0});
  none_bio.Issue(5, 8).Complete(100, 8);
  r = Build(none_bio);
  EXPECT_TRUE(HasNote(r, "loop0 (7:0): no I2D/I2C: the device showed no block_rq_insert at all: "
                         "requests went straight to the driver (scheduler none, or a bypass); "
                         "queueing then shows only in Q2D (bio queued -> issue)"))
      << ::testing::PrintToString(r.notes);

  // A file without block_rq_insert at all.
  SyntheticTrace no_insert(LoadFormats(
      "6.18", {"block_rq_issue", "block_rq_complete", "block_rq_requeue", "block_rq_merge"}));
  no_insert.Issue(0, 8).Complete(100, 8);
  r = Build(no_insert);
  EXPECT_TRUE(HasNote(r, "loop0 (7:0): no I2D/I2C: block_rq_insert was not recorded in this file "
                         "(record with -e block:block_rq_insert, one of iotrace record's default "
                         "events)"))
      << ::testing::PrintToString(r.notes);
}

TEST(LatencyReportTest, NotesNameTheFixForLossesAndRequestsGivenUp) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);
  const int complete_id = t.Format("block_rq_complete")->id;
  t.Loss(LossRecord::Kind::kRingLost, 0, complete_id, 1);
  t.Loss(LossRecord::Kind::kSilentDrop, 1, complete_id, 2);
  t.Loss(LossRecord::Kind::kFtraceOverrun, 0, -1, 3);
  t.Loss(LossRecord::Kind::kFtraceDropped, 1, -1, 4);
  LatencyReport r = Build(t);
  EXPECT_TRUE(HasNote(r, "1 event lost because a perf ring was full (ring_lost): record with "
                         "bigger rings, iotrace record -m 4096 (pages per CPU, default 1024) or "
                         "perf record -m 4096, or with --backend ftrace"))
      << ::testing::PrintToString(r.notes);
  EXPECT_TRUE(HasNote(r, "2 events dropped by perf without a trace (silent_drop: perf drops "
                         "samples taken in the idle task on some kernels, docs/kernel-notes.md): "
                         "record with iotrace record --backend ftrace, which does not"))
      << ::testing::PrintToString(r.notes);
  EXPECT_TRUE(HasNote(r, "7 events lost because an ftrace buffer was full (ftrace_overrun, "
                         "ftrace_dropped): record with a bigger buffer, iotrace record "
                         "--buffer-kb 32768 (per CPU, default 8192) or trace-cmd record -b 32768"))
      << ::testing::PrintToString(r.notes);

  // Expired: idle past --expiry.
  SyntheticTrace idle;
  idle.Insert(0, 8).Issue(10, 8);  // never completes
  Request(idle, 40'000 * kMs, 10, 100, 16);
  r = Build(idle);
  EXPECT_TRUE(HasNote(r, "1 request expired, idle for over 30 s of trace time: if a device "
                         "really takes that long, report with a longer --expiry"))
      << ::testing::PrintToString(r.notes);

  // Evicted: more requests in flight than --max-inflight.
  SyntheticTrace many;
  for (uint64_t i = 0; i < 20; ++i) many.Insert(i, 8 * (i + 1));
  ReportOptions o = TestOptions();
  o.max_inflight = 16;
  r = Build(many, o);
  EXPECT_TRUE(HasNote(r, "4 requests evicted from the full table of requests in flight "
                         "(--max-inflight 16): report with a larger --max-inflight"))
      << ::testing::PrintToString(r.notes);

  // Stale: issued long before the end of the file, never completed (perf's uncounted drops).
  SyntheticTrace stale;
  stale.Insert(0, 8).Issue(10, 8);
  Request(stale, 200 * kMs, 10, 100, 16);
  Request(stale, 400 * kMs, 10, 100, 24);
  r = Build(stale);
  EXPECT_TRUE(HasNote(r, "1 request left issued at the end of the file most likely lost its "
                         "completion: if perf recorded the file, record with iotrace record "
                         "--backend ftrace, which does not drop events silently (iotrace's perf "
                         "backend counts perf's drops)"))
      << ::testing::PrintToString(r.notes);

  // A clean file gets none of these.
  SyntheticTrace clean;
  Request(clean, 0, 10, 100, 8);
  for (const std::string& n : Build(clean).notes) {
    EXPECT_EQ(n.find("record with bigger"), std::string::npos) << n;
    EXPECT_EQ(n.find("--expiry"), std::string::npos) << n;
    EXPECT_EQ(n.find("--max-inflight"), std::string::npos) << n;
  }
}

TEST(LatencyReportTest, ExpiredRequestsMakeTheirPhaseIncomplete) {
  SyntheticTrace t;
  t.Insert(0, 8).Issue(10, 8);  // never completes
  Request(t, 40'000 * kMs, 10, 100, 16);
  LatencyReport r = Build(t);
  EXPECT_EQ(r.completeness.match.expired[static_cast<int>(RequestState::kIssued)], 1u);
  bool d2c_warned = false;
  for (const PhaseWarning& w : r.warnings) {
    if (w.phase == Phase::kD2C) {
      d2c_warned = w.message.find("1 issued request never completed") != std::string::npos;
    }
  }
  EXPECT_TRUE(d2c_warned);
}

TEST(LatencyReportTest, ARequestGivenUpAtACollisionMakesItsPhaseIncomplete) {
  // Two inserts at one sector before either is issued: the older request is given up, so I2D
  // and I2C miss it; D2C, which it never reached, is whole.
  SyntheticTrace t;
  t.Insert(0, 8).Insert(5, 8).Issue(10, 8).Complete(50, 8);
  LatencyReport r = Build(t);
  EXPECT_EQ(r.completeness.match.collisions, 1u);
  EXPECT_EQ(r.completeness.match.collided[static_cast<int>(RequestState::kInserted)], 1u);
  bool i2d_warned = false, i2c_warned = false;
  for (const PhaseWarning& w : r.warnings) {
    EXPECT_NE(w.phase, Phase::kD2C) << w.message;
    if (w.phase == Phase::kI2D) {
      i2d_warned = w.message.find("1 inserted request never issued (expired, evicted from the "
                                  "table or given up at a collision)") != std::string::npos;
    }
    if (w.phase == Phase::kI2C) {
      i2c_warned = w.message.find("1 inserted or issued request never completed") !=
                   std::string::npos;
    }
  }
  EXPECT_TRUE(i2d_warned);
  EXPECT_TRUE(i2c_warned);
}

class CountingBlockSink : public BlockEventSink {
 public:
  void OnBlockEvent(const BlockEvent& e) override { ++count[static_cast<int>(e.kind)]; }
  std::array<int, kBlockEventKindCount> count{};
};

TEST(LatencyReportTest, BlockEventSinkSeesEveryDecodedEvent) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);
  Request(t, 1000, 10, 100, 16);
  auto reader = t.Reader();
  auto b = LatencyReportBuilder::Create(reader->formats(), TestOptions());
  ASSERT_TRUE(b.ok());
  CountingBlockSink sink;
  (*b)->set_block_event_sink(&sink);
  ASSERT_TRUE(reader->ReadAll(b->get()).ok());
  EXPECT_EQ(sink.count[static_cast<int>(BlockEventKind::kInsert)], 2);
  EXPECT_EQ(sink.count[static_cast<int>(BlockEventKind::kComplete)], 2);
}

TEST(LatencyReportTest, RejectsBadOptionsAsUsageErrors) {
  ReportOptions o = TestOptions();
  o.since_s = 5;
  o.until_s = 1;
  EXPECT_EQ(ValidateReportOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = TestOptions();
  o.expiry_s = 0;
  EXPECT_FALSE(ValidateReportOptions(o).ok());
  o = TestOptions();
  o.max_inflight = 1;
  EXPECT_FALSE(ValidateReportOptions(o).ok());
  o = TestOptions();
  o.comms = {"a-name-longer-than-15"};
  EXPECT_FALSE(ValidateReportOptions(o).ok());
  EXPECT_TRUE(ValidateReportOptions(TestOptions()).ok());
}

// The command line validates options once; a library caller of BuildLatencyReport gets the
// same error from it.
TEST(LatencyReportTest, BuildLatencyReportRefusesBadOptionsWithTheCommandLinesMessage) {
  SyntheticTrace t;
  Request(t, 0, 10, 100, 8);
  auto reader = t.Reader();
  ReportOptions o = TestOptions();
  o.since_s = 5;
  o.until_s = 1;
  absl::StatusOr<LatencyReport> report = BuildLatencyReport(*reader, o);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(report.status().message(), "--until 1 is before --since 5");
}

}  // namespace
}  // namespace iotrace

namespace iotrace {
namespace {

// A device's requests are, over its ops (and --by's classes), the largest count of its rows of
// that op; the busiest come first, ties to the lower dev, as many as keep their rows within the
// limit, and one even when its rows pass it alone.
TEST(BusiestDevicesTest, KeepsTheDevicesWithTheMostRequestsWithinTheRows) {
  LatencyReport r;
  auto row = [&r](uint32_t dev, const std::string& by, BlockOp op, Phase phase, uint64_t n) {
    LatencyGroup g;
    g.dev = dev;
    g.by = by;
    g.op = op;
    g.phase = phase;
    g.summary.count = n;
    r.groups.push_back(g);
  };
  // dev 1: reads 50 (D2C 50, I2D 40) + writes 30 = 80 requests, 3 rows.
  row(1, "", BlockOp::kRead, Phase::kI2D, 40);
  row(1, "", BlockOp::kRead, Phase::kD2C, 50);
  row(1, "", BlockOp::kWrite, Phase::kD2C, 30);
  // dev 2: two classes of reads, 45 + 45 = 90 requests, 2 rows.
  row(2, "4K", BlockOp::kRead, Phase::kD2C, 45);
  row(2, "8K", BlockOp::kRead, Phase::kD2C, 45);
  // dev 3 and dev 4: 80 requests each, 1 row each (a tie with dev 1).
  row(3, "", BlockOp::kRead, Phase::kD2C, 80);
  row(4, "", BlockOp::kRead, Phase::kD2C, 80);
  size_t rows = 0;
  EXPECT_EQ(BusiestDevices(r, 100, &rows), (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(rows, 7u);
  // 2 (90), then 1 (80, 3 rows: 5 in all), then 3 (80: 6), where 4 no longer fits.
  EXPECT_EQ(BusiestDevices(r, 6, &rows), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(rows, 6u);
  EXPECT_EQ(BusiestDevices(r, 4, &rows), (std::vector<uint32_t>{2}));
  EXPECT_EQ(rows, 2u);
  EXPECT_EQ(BusiestDevices(r, 1, &rows), (std::vector<uint32_t>{2}));  // one, past the limit
  EXPECT_EQ(rows, 2u);
  EXPECT_TRUE(BusiestDevices(LatencyReport{}, 10).empty());
}

}  // namespace
}  // namespace iotrace
