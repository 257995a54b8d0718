// The report built with the file read ahead on a second thread (ReportOptions::threads = 2),
// with reading + decoding and pairing on two threads (3), and with pairing moving between the
// two as auto decides (0), is the one built on a single thread, byte for byte, on the recorded
// fixtures.
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "iotrace/output/report_format.h"

namespace iotrace {
namespace {

std::string JsonReport(const std::string& path, ReportOptions options, int threads) {
  options.input = path;
  options.threads = threads;
  options.sysfs_root = options.procfs_root = "/nonexistent";
  auto reader = OpenTraceReader(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return "";
  auto report = BuildLatencyReport(**reader, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return "";
  std::ostringstream out;
  WriteJsonReport(*report, out);
  return out.str();
}

// How often auto moved pairing between the threads on `path` (0 if auto did not run).
uint64_t AutoSwitches(const std::string& path, ReportOptions options) {
  options.threads = 0;
  options.placement_on_one_cpu = true;
  options.sysfs_root = options.procfs_root = "/nonexistent";
  auto reader = OpenTraceReader(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return 0;
  auto builder = LatencyReportBuilder::Create((*reader)->formats(), options);
  EXPECT_TRUE(builder.ok()) << builder.status();
  if (!builder.ok()) return 0;
  EXPECT_TRUE((*builder)->ReadAll(**reader).ok());
  const PairingPlacement* p = (*builder)->placement();
  return p == nullptr ? 0 : p->switches();
}

class ReportPipelineTest : public testing::TestWithParam<std::string> {};

TEST_P(ReportPipelineTest, MoreThreadsGiveTheSingleThreadReport) {
  const std::string path = std::string(IOTRACE_FIXTURES) + "/" + GetParam();
  ReportOptions plain;
  ReportOptions filtered;
  filtered.interval_s = 0.5;
  filtered.comms = {"fio", "dd", "kworker/0:1H"};
  filtered.max_inflight = 16;
  filtered.expiry_s = 0.001;
  for (const ReportOptions& o : {plain, filtered}) {
    const std::string one = JsonReport(path, o, 1);
    EXPECT_GT(one.size(), 1000u);
    EXPECT_EQ(JsonReport(path, o, 2), one);
    EXPECT_EQ(JsonReport(path, o, 3), one);
    EXPECT_EQ(JsonReport(path, o, 0), one);
    // Auto with stretches of a few events: pairing changes threads back and forth (at least
    // once per probe and hold: a dozen times or more on the smallest fixture).
    ReportOptions often = o;
    often.placement_probe_events = 7;
    often.placement_hold_events = 29;
    often.placement_max_hold_events = 29;  // and no longer when they win again
    often.placement_on_one_cpu = true;  // auto wherever the test runs (taskset, one CPU)
    EXPECT_EQ(JsonReport(path, often, 0), one);
    EXPECT_GE(AutoSwitches(path, often), 8u);
  }
  // Auto reading two time ranges, whatever the size (the recorded fixtures are small): the
  // same report, however the split ends.
  ReportOptions split;
  split.split_min_bytes = 1;
  split.split_on_one_cpu = true;
  EXPECT_EQ(JsonReport(path, split, 0), JsonReport(path, split, 1));
  {
    ReportOptions o = split;
    o.sysfs_root = o.procfs_root = "/nonexistent";
    auto reader = OpenTraceReader(path);
    ASSERT_TRUE(reader.ok());
    auto report = BuildLatencyReport(**reader, o);
    ASSERT_TRUE(report.ok());
    // dd_v6 spans enough time to be cut; the others: too short, or perf.data too small.
    EXPECT_EQ(report->read_plan.rfind(GetParam() == "tracedat/dd_v6.dat" ? "two ranges"
                                                                          : "one pass: ", 0),
              0u)
        << report->read_plan;
  }
  ReportOptions reads = split;
  reads.ops = {BlockOp::kRead};
  EXPECT_EQ(JsonReport(path, reads, 0), JsonReport(path, reads, 1));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReportPipelineTest,
                         testing::Values("golden/iotrace_mq.data", "golden/perf_mq.data",
                                         "golden/iotrace_none.data", "tracedat/dd_v6.dat",
                                         "tracedat/dd_buffered_v6.dat"));

}  // namespace
}  // namespace iotrace
