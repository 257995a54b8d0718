// Live tests of `iotrace live` with the perf backend: RunLive reads the perf rings in place
// while fio does direct I/O on a scratch loop device (--dev), and counts exactly the I/Os fio
// says it did, with nothing late and nothing lost; with -o, the perf.data it writes reports
// what live counted.
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/formats/trace_reader_open.h"
#include "iotrace/live/live_engine.h"
#include "live_util.h"

namespace iotrace::live {
namespace {

uint64_t FioReads(const std::string& json_path) { return FioIos(json_path, "read"); }

class IntervalCounter : public IntervalSink {
 public:
  void OnInterval(const LiveInterval& interval, const LiveRunSummary&) override {
    ++intervals;
    events += interval.counts.events;
    lost += interval.counts.lost;
    late += interval.counts.late;
    if (interval.final) ++finals;
  }
  uint64_t intervals = 0, events = 0, lost = 0, late = 0, finals = 0;
};

TEST(LivePerfLiveTest, CountsEveryDirectReadFioDidOnTheFilteredDeviceOrShowsItLost) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  ScratchLoop loop("mq-deadline", 256);
  ASSERT_TRUE(loop.ok()) << loop.error();
  // No merging: two adjacent reads would else now and then be one request, one D2C sample.
  std::ofstream("/sys/block/" + loop.name() + "/queue/nomerges") << "2";
  TempDir dir;
  const std::string json = dir.File("fio.json");
  LiveOptions o;
  o.backend = Backend::kPerf;
  o.devs = {loop.device()};
  o.interval_s = 0.5;
  o.duration_s = 30;  // a bound in case fio hangs; the run ends when fio exits
  o.command = {"fio", "--name=t", "--filename=" + loop.device(), "--rw=randread", "--bs=4k",
               "--iodepth=8", "--ioengine=libaio", "--direct=1", "--time_based=1",
               "--runtime=2", "--output-format=json", "--output=" + json};
  IntervalCounter intervals;
  absl::StatusOr<LiveResult> r = RunLive(o, &intervals);
  ASSERT_TRUE(r.ok()) << r.status();
  const LiveRunSummary& sum = r->summary;
  EXPECT_EQ(sum.backend, "perf");
  EXPECT_EQ(sum.ingest, "perf rings");
  EXPECT_EQ(sum.stop_reason, "command exit");
  EXPECT_EQ(sum.exit_code, 0);
  const uint64_t fio_reads = FioReads(json);
  ASSERT_GT(fio_reads, 1000u) << "fio did too little to test anything";

  EXPECT_EQ(sum.late, 0u);
  // perf drops samples silently on this kernel (docs/kernel-notes.md), more so on a busy
  // machine: every read is then a D2C sample or counted lost, and the losses are in the report.
  EXPECT_EQ(sum.lost == 0, r->report.completeness.losses.empty()) << sum.lost;
  const uint32_t dev = (loop.major() << 20) | loop.minor();
  uint64_t d2c = 0, other_devices = 0;
  for (const LatencyGroup& g : r->report.groups) {
    if (g.dev != dev) {
      ++other_devices;
      continue;
    }
    if (g.phase == Phase::kD2C && g.op == BlockOp::kRead) d2c = g.summary.count;
  }
  const std::string figures =
      absl::StrFormat("D2C %u, fio %u, lost %u, late %u, events %u; warnings: %s", d2c, fio_reads,
                      sum.lost, sum.late, sum.events, absl::StrJoin(sum.warnings, "; "));
  EXPECT_LE(d2c, fio_reads) << figures;
  EXPECT_GE(d2c + sum.lost, fio_reads) << figures;
  if (sum.lost == 0) {
    EXPECT_EQ(d2c, fio_reads) << figures;
    EXPECT_TRUE(sum.warnings.empty()) << absl::StrJoin(sum.warnings, "\n");
  }
  EXPECT_EQ(other_devices, 0u) << "--dev let another device through";
  // The intervals add up to the run: every record in one of them, the last one marked final.
  EXPECT_GE(intervals.intervals, 4u);
  EXPECT_EQ(intervals.finals, 1u);
  EXPECT_EQ(intervals.events, sum.events);
  EXPECT_EQ(intervals.lost, sum.lost);
  EXPECT_EQ(intervals.late, 0u);
}

// Rings of 2 pages, read in place while the merge waits for its watermark: the kernel finds
// them full and says so (PERF_RECORD_LOST); live counts those losses, and every read fio did is
// a D2C sample or accounted for by them.
TEST(LivePerfLiveTest, RingLossesAreCountedAndAccountForTheMissingReads) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  ScratchLoop loop("none", 256);
  ASSERT_TRUE(loop.ok()) << loop.error();
  TempDir dir;
  const std::string json = dir.File("fio.json");
  LiveOptions o;
  o.backend = Backend::kPerf;
  o.devs = {loop.device()};
  o.mmap_pages = 2;
  o.duration_s = 30;
  o.command = {"fio", "--name=t", "--filename=" + loop.device(), "--rw=randread", "--bs=4k",
               "--iodepth=16", "--ioengine=libaio", "--direct=1", "--time_based=1",
               "--runtime=1", "--output-format=json", "--output=" + json};
  absl::StatusOr<LiveResult> r = RunLive(o, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  const uint64_t fio_reads = FioReads(json);
  ASSERT_GT(fio_reads, 1000u);
  uint64_t ring_lost = 0;
  for (const LossSummary& l : r->report.completeness.losses) {
    if (l.kind == LossRecord::Kind::kRingLost) ring_lost += l.count;
    EXPECT_EQ(l.placed, 0u);
  }
  EXPECT_GT(ring_lost, 0u) << "2-page rings under fio lost nothing: the test shows nothing";
  EXPECT_GE(r->summary.lost, ring_lost);
  uint64_t d2c = 0, all_lost = 0;
  for (const LossSummary& l : r->report.completeness.losses) all_lost += l.count;
  for (const LatencyGroup& g : r->report.groups) {
    if (g.phase == Phase::kD2C && g.op == BlockOp::kRead) d2c += g.summary.count;
  }
  EXPECT_LE(d2c, fio_reads);
  // A read is missing from D2C only when its issue or its completion was lost.
  EXPECT_GE(d2c + all_lost, fio_reads);
}

std::string Key(const LatencyGroup& g) {
  return g.device + " " + std::string(BlockOpName(g.op)) + " " + std::string(PhaseName(g.phase));
}

TEST(LivePerfLiveTest, TheRecordingBesideReportsWhatLiveCounted) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  ScratchLoop loop("mq-deadline", 256);
  ASSERT_TRUE(loop.ok()) << loop.error();
  TempDir dir;
  LiveOptions o;
  o.backend = Backend::kPerf;
  o.devs = {loop.device()};
  o.duration_s = 30;
  o.output = dir.File("live.data");
  o.command = {"fio", "--name=t", "--filename=" + loop.device(), "--rw=randrw", "--bs=4k",
               "--iodepth=8", "--ioengine=libaio", "--direct=1", "--time_based=1",
               "--runtime=2", "--output=/dev/null"};
  absl::StatusOr<LiveResult> r = RunLive(o, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->summary.warnings.empty()) << absl::StrJoin(r->summary.warnings, "\n");
  EXPECT_GT(r->summary.output_bytes, 0u);
  ASSERT_EQ(r->summary.late, 0u);

  auto reader = OpenTraceReader(o.output);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ReportOptions ro;
  ro.input = o.output;
  absl::StatusOr<LatencyReport> file = BuildLatencyReport(**reader, ro);
  ASSERT_TRUE(file.ok()) << file.status();
  // Written in rounds as record writes it: the reader finds every record in order.
  EXPECT_TRUE(file->completeness.reader_problems.empty());
  EXPECT_EQ(file->completeness.reader_events, r->summary.events);
  std::map<std::string, const LatencyGroup*> offline;
  for (const LatencyGroup& g : file->groups) offline[Key(g)] = &g;
  ASSERT_EQ(offline.size(), r->report.groups.size());
  ASSERT_FALSE(offline.empty());
  for (const LatencyGroup& g : r->report.groups) {
    ASSERT_EQ(offline.count(Key(g)), 1u) << Key(g);
    const LatencyGroup& f = *offline[Key(g)];
    EXPECT_EQ(g.summary.count, f.summary.count) << Key(g);
    EXPECT_EQ(g.summary.min_ns, f.summary.min_ns) << Key(g);
    EXPECT_EQ(g.summary.max_ns, f.summary.max_ns) << Key(g);
    EXPECT_EQ(g.summary.sum_ns, f.summary.sum_ns) << Key(g);
    ASSERT_EQ(g.buckets.size(), f.buckets.size()) << Key(g);
    const std::vector<LatencyBucket> got = g.buckets.ToVector();
    const std::vector<LatencyBucket> want = f.buckets.ToVector();
    for (size_t b = 0; b < got.size(); ++b) {
      EXPECT_EQ(got[b].lo_ns, want[b].lo_ns) << Key(g) << " bucket " << b;
      EXPECT_EQ(got[b].count, want[b].count) << Key(g) << " bucket " << b;
    }
  }
}

}  // namespace
}  // namespace iotrace::live
