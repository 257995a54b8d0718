// The report built with the file read ahead on a second thread (ReportOptions::threads = 2),
// and also with reading + decoding and pairing on two threads (3), is the one built on a single
// thread, byte for byte, on the recorded fixtures.
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "iotrace/latency_report.h"
#include "iotrace/report_format.h"
#include "iotrace/trace_reader.h"

namespace iotrace {
namespace {

std::string JsonReport(const std::string& path, ReportOptions options, int threads) {
  options.input = path;
  options.threads = threads;
  options.sysfs_root = options.procfs_root = "/nonexistent";
  auto reader = TraceReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return "";
  auto report = BuildLatencyReport(**reader, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return "";
  std::ostringstream out;
  WriteJsonReport(*report, out);
  return out.str();
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
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReportPipelineTest,
                         testing::Values("golden/iotrace_mq.data", "golden/perf_mq.data",
                                         "golden/iotrace_none.data", "tracedat/dd_v6.dat",
                                         "tracedat/dd_buffered_v6.dat"));

}  // namespace
}  // namespace iotrace
