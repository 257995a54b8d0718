#include <string>

#include "gtest/gtest.h"
#include "iotrace/capture/record.h"

namespace iotrace {
namespace {

TEST(RecordSummaryTest, TableHasEveryEventAndTotalsAndWarnsOnSilentDrops) {
  RecordSummary s;
  s.backend = Backend::kPerf;
  s.output = "out.data";
  s.seconds = 5;
  s.output_bytes = 3 << 20;
  s.events = {{"block:block_rq_issue", 1000, 1000, 0, 0},
              {"block:block_rq_complete", 14, 3001, 0, 2987}};
  std::string text = FormatRecordSummary(s);
  EXPECT_NE(text.find("block:block_rq_issue"), std::string::npos);
  EXPECT_NE(text.find("2987"), std::string::npos);
  EXPECT_NE(text.find("4001"), std::string::npos);  // kernel count total
  EXPECT_NE(text.find("1014"), std::string::npos);  // recorded total
  EXPECT_NE(text.find("dropped 2987 samples silently"), std::string::npos);
  EXPECT_NE(text.find("--backend ftrace"), std::string::npos);
  EXPECT_NE(text.find("3.0 MiB"), std::string::npos);
  EXPECT_EQ(text.find("buffer was full"), std::string::npos);
}

TEST(RecordSummaryTest, RingLossAndDiskFullAreSaid) {
  RecordSummary s;
  s.events = {{"block:block_rq_issue", 90, 100, 10, 0}};
  s.disk_full = true;
  std::string text = FormatRecordSummary(s);
  EXPECT_NE(text.find("buffer was full"), std::string::npos);
  EXPECT_NE(text.find("disk filled up"), std::string::npos);
  EXPECT_EQ(text.find("silently"), std::string::npos);
}

TEST(RecordSummaryTest, TimeWithTheEventsOffIsSaid) {
  RecordSummary s;
  s.seconds = 4;
  s.stop_reason = "--control stop";
  EXPECT_EQ(FormatRecordSummary(s).find("events off"), std::string::npos);
  s.disabled_s = 2.5;
  EXPECT_NE(FormatRecordSummary(s).find("stopped by --control stop; events off for 2.50 s of it"),
            std::string::npos)
      << FormatRecordSummary(s);
}

TEST(RecordSummaryTest, OwnCpuIsSaidWithItsCostPerEventRecorded) {
  RecordSummary s;
  s.events = {{"block:block_rq_issue", 600000, 600000, 0, 0},
              {"block:block_rq_complete", 400000, 400000, 0, 0}};
  EXPECT_EQ(FormatRecordSummary(s).find("own CPU"), std::string::npos);  // not measured
  s.own_cpu = {0.30, 0.11};
  // 0.41 s over the 1,000,000 events of the total row.
  EXPECT_NE(FormatRecordSummary(s).find(
                "\n  own CPU 0.41 s (user 0.30 s, system 0.11 s), 410 ns per event recorded\n"),
            std::string::npos)
      << FormatRecordSummary(s);
  s.events.clear();
  EXPECT_NE(FormatRecordSummary(s).find("  own CPU 0.41 s (user 0.30 s, system 0.11 s)\n"),
            std::string::npos)
      << FormatRecordSummary(s);
}

TEST(RecordSummaryTest, AutoSaysWhetherItsCheckRanOrAKeptVerdictWasUsed) {
  RecordSummary s;
  EXPECT_EQ(FormatRecordSummary(s).find("--backend auto"), std::string::npos);
  s.backend_check = "the backend check ran at start (0.12 s CPU)";
  EXPECT_NE(FormatRecordSummary(s).find(
                "\n  --backend auto: the backend check ran at start (0.12 s CPU)\n"),
            std::string::npos)
      << FormatRecordSummary(s);
}

}  // namespace
}  // namespace iotrace
