// Live tests of coverage on real recordings: fio on a scratch loop device recorded by each
// backend of iotrace, by perf record and by trace-cmd; each file cut at 10%, 50%, 90% of its
// size, at a page boundary and in the middle of a record reports exactly the intact file's
// samples inside the window it covers. A recording that lost events in its perf rings leaves
// out the samples across each loss, and what it keeps is what a lossless recording of the same
// run holds.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../unit/coverage_check.h"
#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "live_util.h"

namespace iotrace::live {
namespace {

std::vector<std::string> Fio(const ScratchLoop& loop, const std::string& seconds) {
  return {"fio", "--name=t", "--filename=" + loop.device(), "--rw=randrw", "--bs=4k",
          "--iodepth=16", "--ioengine=libaio", "--direct=1", "--time_based=1",
          "--runtime=" + seconds, "--output=/dev/null"};
}

const std::vector<std::string> kBlockEvents = {
    "block:block_rq_insert", "block:block_rq_issue", "block:block_rq_complete",
    "block:block_rq_requeue", "block:block_rq_merge"};

class CutRecordingLiveTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    IOTRACE_REQUIRE_LIVE();
    IOTRACE_REQUIRE_TOOL("fio");
    if (GetParam() == "perf-record") IOTRACE_REQUIRE_TOOL("perf");
    if (GetParam() == "trace-cmd") IOTRACE_REQUIRE_TOOL("trace-cmd");
  }
  TempDir dir_;
};

// Records 2 s of fio with the recorder of the parameter, and checks every cut of the file.
TEST_P(CutRecordingLiveTest, EveryCutReportsExactlyWhatItCovers) {
  ScratchLoop loop("mq-deadline", 512);
  ASSERT_TRUE(loop.ok()) << loop.error();
  const std::string& who = GetParam();
  const std::string file = dir_.File(who == "perf" || who == "perf-record" ? "run.data" : "run.dat");
  std::vector<std::string> argv;
  std::string instance;
  if (who == "ftrace" || who == "perf") {
    argv = {Binary(), "record", "-b", who, "--no-progress", "--dev", loop.device(), "-o", file,
            "--"};
  } else if (who == "perf-record") {
    argv = {"perf", "record", "-a", "-o", file};
    for (const std::string& e : kBlockEvents) {
      argv.push_back("-e");
      argv.push_back(e);
    }
    argv.push_back("--");
  } else {
    // trace-cmd 3.1.6 needs -d --no-filter here (docs/kernel-notes.md). v6: its v7 files keep
    // the table of their CPU data at the end, so a cut one cannot be read at all.
    instance = "iotrace_live_cov_" + std::to_string(getpid());
    argv = {"trace-cmd", "record", "-d", "--no-filter", "-B", instance, "-C", "mono",
            "--file-version", "6", "-o", file};
    for (const std::string& e : kBlockEvents) {
      argv.push_back("-e");
      argv.push_back(e);
    }
    argv.push_back("--");
  }
  for (const std::string& a : Fio(loop, "2")) argv.push_back(a);
  CommandResult rec = RunCmd(argv);
  if (!instance.empty()) Sh("rmdir /sys/kernel/tracing/instances/" + instance + " 2>/dev/null");
  // (trace-cmd 3.1.6 may exit 1 after writing a complete file; perf record exits with fio's
  // status. The report of the intact file is the check that the file is whole.)
  if (who == "ftrace" || who == "perf") ASSERT_EQ(rec.exit_code, 0) << rec.err;
  ReportOptions only_loop;
  only_loop.devices = {loop.majmin()};
  std::optional<LatencyReport> intact = testing::Report(file, only_loop);
  ASSERT_TRUE(intact.has_value()) << rec.err;
  ASSERT_FALSE(intact->groups.empty()) << rec.err;
  const testing::CutsChecked checked = testing::CheckCuts(file, only_loop);
  // Every cut is read but one in a trace.dat's metadata (trace-cmd's kallsyms and formats come
  // before its data: on a loaded machine fio's 2 s may write little enough data that the 10%
  // cut lands there). The cuts at half the file and beyond always lie in the data.
  EXPECT_EQ(checked.read + checked.before_data, 5) << "every cut inside the data can be read";
  EXPECT_GE(checked.read, 3);
  // A cut leaves samples out, counted; but one inside the first CPU's data of a trace.dat (its
  // CPUs' data lie one after the other) may leave no request of the device paired at all,
  // when the other CPU took the completions: nothing to leave out.
  EXPECT_GE(checked.left_out, 2) << "a cut leaves samples out, counted";
  std::printf("%s: %d cuts read, %d left samples out\n", who.c_str(), checked.read,
              checked.left_out);
}

INSTANTIATE_TEST_SUITE_P(Recorders, CutRecordingLiveTest,
                         ::testing::Values("ftrace", "perf", "perf-record", "trace-cmd"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n) c = std::isalnum(c) ? c : '_';
                           return n;
                         });

// One phase of one request: its op, and the stamps it runs between.
struct Stamped {
  uint32_t dev;
  uint32_t nr_sector;
  int32_t insert_pid;
  BlockOp op;
  Phase phase;
  uint64_t start;
  uint64_t end;
};

// The samples of `path` on every device, as its report records them (`coverage`: the gaps a
// sample must not cross, as BuildLatencyReport's second pass leaves them out).
std::vector<Stamped> Samples(const std::string& path, const Coverage& coverage) {
  struct Tap : SampleTap {
    std::vector<Stamped> out;
    void OnSample(const RequestSample& s, unsigned phases) override {
      for (int p = 0; p < kPhaseCount; ++p) {
        const Phase phase = static_cast<Phase>(p);
        if ((phases & PhaseBit(phase)) == 0) continue;
        out.push_back(
            {s.dev, s.nr_sector, s.insert_pid, s.op, phase, s.Start(phase), s.End(phase)});
      }
    }
  } tap;
  auto reader = OpenTraceReader(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  ReportOptions o;
  o.threads = 1;
  auto builder = LatencyReportBuilder::Create((*reader)->formats(), o);
  EXPECT_TRUE(builder.ok()) << builder.status();
  if (!builder.ok()) return {};
  (*builder)->set_coverage(coverage);
  (*builder)->add_sample_tap(&tap);
  EXPECT_TRUE((*builder)->ReadAll(**reader).ok());
  (*builder)->Finish((*reader)->stats());
  return tap.out;
}

// One event's stamps by the two tracers: apart by what an interrupt or a preempted vCPU takes
// between their probes, milliseconds at most.
bool Near(uint64_t a, uint64_t b) { return (a > b ? a - b : b - a) <= 2'000'000; }

// perf rings of 2 pages under fio at full speed lose events (PERF_RECORD_LOST, with a time and
// a CPU); an ftrace recording of the same run loses none. The lossy file's report leaves out
// the samples across each loss and counts them; each group it keeps has no more samples than
// the lossless file holds wholly inside the lossy one's coverage, no sample far larger than the
// lossless file's largest, and the same median. (The two tracers stamp each event apart, by
// under a microsecond and more when an interrupt lands between them, so the comparison allows
// for that instead of bucket for bucket; the exact version of this check on one tracer's stamps
// is CoverageTest.EventsLostInTheMiddleLeaveOutOnlyTheSamplesAcrossThem.)
TEST(RingLossLiveTest, EventsLostInThePerfRingsLeaveOutOnlyTheSamplesAcrossTheLosses) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  TempDir dir;
  ScratchLoop loop("mq-deadline", 512);
  ASSERT_TRUE(loop.ok()) << loop.error();
  const std::string ref = dir.File("ref.dat"), lossy = dir.File("lossy.data");
  pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stderr);
    execl(Binary().c_str(), "iotrace", "record", "-b", "ftrace", "--no-progress", "--dev",
          loop.device().c_str(), "-o", ref.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // the ftrace instance is on
  std::vector<std::string> argv = {Binary(), "record", "-b", "perf", "-m", "2", "--no-progress",
                                   "--dev", loop.device(), "-o", lossy, "--"};
  for (const std::string& a : Fio(loop, "2")) argv.push_back(a);
  CommandResult rec = RunCmd(argv);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  std::optional<LatencyReport> r = testing::Report(lossy);
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->coverage.complete) << "2-page perf rings lost nothing: " << rec.err;
  ASSERT_TRUE(r->coverage.has_window);
  EXPECT_GT(r->coverage.gap_count, 0u);
  uint64_t ring_lost_outside = 0;
  for (const auto& by_cause : r->coverage.outside) {
    ring_lost_outside += by_cause[static_cast<int>(GapCause::kRingLost)];
  }
  EXPECT_GT(ring_lost_outside, 0u);
  testing::ExpectEverySampleAccountedFor(*r, "lossy");
  for (const DataGap& g : r->coverage.gaps) {
    EXPECT_EQ(g.cause, GapCause::kRingLost);
    EXPECT_GT(g.events, 0u);
    EXPECT_LT(g.after_ts, g.before_ts);
  }

  // The lossless file, with all of the lossy one's gaps (the reader's, not only those the
  // report lists) and its span: what both cover.
  auto lossy_reader = OpenTraceReader(lossy);
  ASSERT_TRUE(lossy_reader.ok()) << lossy_reader.status();
  struct Nothing : EventSink {
    void OnEvent(const RawEvent&) override {}
  } nothing;
  ASSERT_TRUE((*lossy_reader)->ReadAll(&nothing).ok());
  ReportOptions only_loop;
  only_loop.devices = {loop.majmin()};
  ReportOptions same = only_loop;
  same.assume_gaps = (*lossy_reader)->stats().coverage.gaps;
  EXPECT_EQ(same.assume_gaps.size(), r->coverage.gap_count);
  same.assume_gaps.push_back(DataGap{0, 0, r->first_ts_ns, GapCause::kCut, 0});
  same.assume_gaps.push_back(DataGap{0, r->last_ts_ns, DataGap::kOpenEnd, GapCause::kCut, 0});
  std::optional<LatencyReport> reference = testing::Report(ref, same);
  ASSERT_TRUE(reference.has_value());
  std::optional<LatencyReport> all = testing::Report(ref, only_loop);
  ASSERT_TRUE(all.has_value());
  // Each file's samples one by one, as its report keeps them: the lossy file's without those
  // across its gaps, all of the lossless file's.
  const std::vector<Stamped> lossy_samples = Samples(lossy, (*lossy_reader)->stats().coverage);
  const std::vector<Stamped> ref_samples = Samples(ref, Coverage());
  ASSERT_FALSE(lossy_samples.empty());
  std::map<std::tuple<BlockOp, Phase>, const LatencyGroup*> ref_groups, all_groups;
  for (const LatencyGroup& g : reference->groups) ref_groups[{g.op, g.phase}] = &g;
  for (const LatencyGroup& g : all->groups) all_groups[{g.op, g.phase}] = &g;
  ASSERT_FALSE(r->groups.empty());
  for (const LatencyGroup& g : r->groups) {
    SCOPED_TRACE(std::string(BlockOpName(g.op)) + " " + std::string(PhaseName(g.phase)));
    const LatencyGroup* ref_g = ref_groups[{g.op, g.phase}];
    const LatencyGroup* all_g = all_groups[{g.op, g.phase}];
    ASSERT_NE(ref_g, nullptr);
    ASSERT_NE(all_g, nullptr);
    // Samples at a gap's edge may fall on either side with the other tracer's stamps: a few
    // per gap.
    const double slack = 4.0 * r->coverage.gap_count + 10;
    EXPECT_LE(g.summary.count, ref_g->summary.count + slack);
    // Every sample far larger than the lossless file's largest is a request the lossless file
    // holds too, of the same device, size and process (below): the two tracers' stamps of one
    // event differ by the time an interrupt or a preempted vCPU takes between their two probes
    // (I2D 105 us in the perf file, 101 us in the ftrace one; CI runs saw 102 us against
    // 51 us, and 793 us against 152 us), while a false pair across a lost event would join two
    // requests at one sector, most often a second or more apart with random I/O over 512 MiB.
    const uint64_t far = 2 * all_g->summary.max_ns + 100'000;
    for (const Stamped& x : lossy_samples) {
      if (x.op != g.op || x.phase != g.phase || x.end - x.start <= far) continue;
      // And never much larger than the largest real one.
      EXPECT_LE(x.end - x.start, all_g->summary.max_ns + 10'000'000) << "from " << x.start;
      bool seen = false;
      for (const Stamped& y : ref_samples) {
        seen |= y.dev == x.dev && y.nr_sector == x.nr_sector && y.insert_pid == x.insert_pid &&
                y.op == x.op && y.phase == x.phase && Near(y.start, x.start) && Near(y.end, x.end);
      }
      EXPECT_TRUE(seen) << "a sample of " << x.end - x.start << " ns from " << x.start
                        << " (the lossless file's largest: " << all_g->summary.max_ns
                        << " ns) is no request of the lossless file";
    }
    const double a = g.summary.p50_ns, b = ref_g->summary.p50_ns;
    EXPECT_LE(std::fabs(a - b), std::max(a, b) / 16 + 2000) << a << " against " << b;
  }
  std::printf("perf -m 2: %llu gaps, %llu samples left out\n",
              static_cast<unsigned long long>(r->coverage.gap_count),
              static_cast<unsigned long long>(r->coverage.outside_total()));
}

}  // namespace
}  // namespace iotrace::live
