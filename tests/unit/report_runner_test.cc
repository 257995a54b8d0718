// report_runner: the main output and the summary CSV written to their files, and the report's
// warnings on stderr where the main output does not show them.
#include "iotrace/cli/report_runner.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/output/report_format.h"
#include "synthetic_trace.h"
#include "test_files.h"

namespace iotrace {
namespace {

using test::Slurp;
class ReportRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("iotrace-runner-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ReportRunnerTest, RunnerWritesTheMainOutputAndTheSummaryCsvToFiles) {
  synthetic::SyntheticTrace t;
  t.Insert(0, 8).Issue(10, 8).Complete(110, 8);
  auto reader = t.Reader();
  ReportOptions o;
  o.sysfs_root = std::string(IOTRACE_FIXTURES) + "/devices/sys";
  o.procfs_root = std::string(IOTRACE_FIXTURES) + "/devices/proc";
  auto report = BuildLatencyReport(*reader, o);
  ASSERT_TRUE(report.ok()) << report.status();
  o.format = OutputFormat::kCsv;
  o.output = (dir_ / "buckets.csv").string();
  o.summary_csv = (dir_ / "summary.csv").string();
  std::ostringstream stdout_stream;
  ASSERT_TRUE(WriteReportOutputs(*report, o, stdout_stream).ok());
  EXPECT_EQ(stdout_stream.str(), "");
  EXPECT_EQ(Slurp(o.output),
            "dev,device,op,phase,bucket_lo_ns,bucket_hi_ns,count\n"
            "7:0,loop0,write,I2D,10,11,1\n"
            "7:0,loop0,write,D2C,100,101,1\n"
            "7:0,loop0,write,I2C,110,111,1\n");
  EXPECT_EQ(Slurp(o.summary_csv),
            std::string(kSummaryCsvHeader) + "\n" +
                "7:0,loop0,write,I2D,1,10,10,10,10,10,10,10\n"
                "7:0,loop0,write,D2C,1,100,100,100,100,100,100,100\n"
                "7:0,loop0,write,I2C,1,110,110,110,110,110,110,110\n");
  // Without -o the main output goes to the stream standing for stdout.
  o.output.clear();
  o.summary_csv.clear();
  ASSERT_TRUE(WriteReportOutputs(*report, o, stdout_stream).ok());
  EXPECT_EQ(stdout_stream.str().rfind("dev,device,op,phase,bucket_lo_ns", 0), 0u);
  // An output that cannot be created is an error naming it.
  o.output = (dir_ / "no" / "such" / "dir" / "out.csv").string();
  absl::Status s = WriteReportOutputs(*report, o, stdout_stream);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("open " + o.output), absl::string_view::npos) << s;
}

TEST_F(ReportRunnerTest, WarningsAlsoGoToStderrUnlessTheTextReportShowsThem) {
  synthetic::SyntheticTrace t;
  t.Insert(0, 8).Issue(10, 8).Complete(110, 8);
  t.Loss(LossRecord::Kind::kRingLost, 0, -1, 5);
  ReportOptions o;
  o.sysfs_root = o.procfs_root = "/nonexistent";
  for (OutputFormat format : {OutputFormat::kText, OutputFormat::kCsv, OutputFormat::kJson}) {
    o.format = format;
    auto reader = t.Reader();
    std::ostringstream out, err;
    ASSERT_TRUE(RunReportOn(*reader, o, out, err).ok());
    if (format == OutputFormat::kText) {
      EXPECT_EQ(err.str(), "");
      EXPECT_NE(out.str().find("WARNING: I2D is incomplete"), std::string::npos);
    } else {
      EXPECT_NE(err.str().find("iotrace: warning: I2D is incomplete: 5 events of unknown type "
                               "lost (ring_lost 5)"),
                std::string::npos)
          << err.str();
      EXPECT_NE(err.str().find("iotrace: warning: D2C is incomplete"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace iotrace
