#include <string>

#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "iotrace/capture/record.h"
#include "iotrace/event/block_dev.h"

namespace iotrace {
namespace {

TEST(RecordOptionsTest, DefaultsAreValidAndCarryTheFiveBlockEvents) {
  RecordOptions opt;
  EXPECT_TRUE(ValidateRecordOptions(opt).ok());
  ASSERT_EQ(opt.events.size(), 5u);
  EXPECT_EQ(opt.events[0], "block:block_rq_insert");
  EXPECT_EQ(opt.events[4], "block:block_rq_merge");
  EXPECT_EQ(opt.mmap_pages, 1024u);
}

TEST(RecordOptionsTest, RejectsRingSizesThatAreNotPowersOfTwo) {
  RecordOptions opt;
  for (uint32_t bad : {0u, 3u, 1000u}) {
    opt.mmap_pages = bad;
    absl::Status s = ValidateRecordOptions(opt);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_FALSE(HintOf(s).empty());
  }
  opt.mmap_pages = 64;
  EXPECT_TRUE(ValidateRecordOptions(opt).ok());
}

TEST(RecordOptionsTest, BadDevIsAUsageErrorWithAHint) {
  RecordOptions opt;
  for (const char* bad : {"/dev/null", "/nonexistent/disk", "7:", "x:y", "4096:0", ""}) {
    opt.devs = {bad};
    absl::Status s = ValidateRecordOptions(opt);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("--dev"), std::string::npos) << bad;
  }
  opt.devs = {"7:0", "254:16"};
  EXPECT_TRUE(ValidateRecordOptions(opt).ok());
}

TEST(RecordOptionsTest, ADevNumberNoDeviceHasIsWarnedAbout) {
  RecordOptions opt;
  const std::string sys = std::string(IOTRACE_FIXTURES) + "/report/sys";
  opt.devs = {"7:0", "254:0"};
  EXPECT_TRUE(RecordOptionWarnings(opt, sys).empty());
  opt.devs = {"7:0", "999:999"};
  std::vector<std::string> w = RecordOptionWarnings(opt, sys);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("--dev 999:999: no block device has the number 999:999"), std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("lsblk"), std::string::npos) << w[0];
}

TEST(RecordOptionsTest, ADeviceWithNoMediumIsWarnedAbout) {
  RecordOptions opt;
  const std::string sys = std::string(IOTRACE_FIXTURES) + "/report/sys-nomedium";
  opt.devs = {"7:0"};
  EXPECT_TRUE(RecordOptionWarnings(opt, sys).empty());
  opt.devs = {"7:0", "7:7"};
  std::vector<std::string> w = RecordOptionWarnings(opt, sys);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "--dev 7:7: the device has no medium (size 0: a loop device with no backing "
                  "file?): it can do no I/O, so nothing of it will be recorded");
}

TEST(RecordOptionsTest, AnOutputNamedForTheOtherFormatIsWarnedAbout) {
  EXPECT_EQ(OutputNameWarning("run.data", Backend::kFtrace),
            "run.data will be a trace.dat (ftrace backend), though .data names a perf.data: read "
            "it with iotrace report or trace-cmd report, not perf script (-b perf writes a "
            "perf.data)");
  EXPECT_EQ(OutputNameWarning("run.dat", Backend::kPerf),
            "run.dat will be a perf.data (perf backend), though .dat names a trace.dat: read it "
            "with iotrace report or perf script, not trace-cmd report (-b ftrace writes a "
            "trace.dat)");
  EXPECT_EQ(OutputNameWarning("run.data", Backend::kPerf), "");
  EXPECT_EQ(OutputNameWarning("run.dat", Backend::kFtrace), "");
  EXPECT_EQ(OutputNameWarning("run.trace", Backend::kFtrace), "");
}

TEST(RecordOptionsTest, NoEventsAtAllIsAUsageError) {
  RecordOptions opt;
  opt.events.clear();
  EXPECT_EQ(ValidateRecordOptions(opt).code(), absl::StatusCode::kInvalidArgument);
  opt.probes = {"p:x /bin/true:main"};
  EXPECT_TRUE(ValidateRecordOptions(opt).ok());
}

TEST(RecordOptionsTest, DelayAndControlAreChecked) {
  RecordOptions opt;
  opt.delay_ms = -1;
  absl::Status s = ValidateRecordOptions(opt);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("nothing could ever turn the events on"), std::string::npos);
  EXPECT_NE(HintOf(s).find("--control"), std::string::npos);
  opt.control = "fifo:/run/ctl";
  EXPECT_TRUE(ValidateRecordOptions(opt).ok());
  opt.delay_ms = -2;
  EXPECT_EQ(ValidateRecordOptions(opt).code(), absl::StatusCode::kInvalidArgument);
  opt.delay_ms = 500;
  EXPECT_TRUE(ValidateRecordOptions(opt).ok());
  opt.control = "pipe:/run/ctl";
  s = ValidateRecordOptions(opt);
  EXPECT_NE(s.message().find("expected fifo: or fd:"), std::string::npos) << s;
}

TEST(BlockDevTest, KernelEncodingIsMajorShiftedByTwenty) {
  EXPECT_EQ(KernelDev(7, 0), 7u << 20);
  EXPECT_EQ(KernelDev(254, 16), (254u << 20) | 16u);
  EXPECT_EQ(KernelDevMajor(KernelDev(259, 3)), 259u);
  EXPECT_EQ(KernelDevMinor(KernelDev(259, 3)), 3u);
  EXPECT_EQ(DevNumbers(KernelDev(8, 17)), "8:17");
  auto d = ParseDevSpec("8:17");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, KernelDev(8, 17));
  // Not glibc's makedev encoding: major 7 minor 0 is 0x700000 here, not 0x700.
  EXPECT_EQ(*ParseDevSpec("7:0"), 0x700000u);
}

TEST(BlockDevTest, CharacterDeviceIsNotABlockDevice) {
  auto d = ParseDevSpec("/dev/null");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("not a block device"), std::string::npos);
}

TEST(RecordPrivilegesTest, RootOrPerfmonOrSysAdmin) {
  EXPECT_TRUE(CheckRecordPrivileges(0, 0).ok());
  EXPECT_TRUE(CheckRecordPrivileges(1000, uint64_t{1} << 38).ok());  // CAP_PERFMON
  EXPECT_TRUE(CheckRecordPrivileges(1000, uint64_t{1} << 21).ok());  // CAP_SYS_ADMIN
  absl::Status s = CheckRecordPrivileges(1000, uint64_t{1} << 12);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("root"), std::string::npos);
  EXPECT_NE(HintOf(s).find("sudo"), std::string::npos);
}

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

}  // namespace
}  // namespace iotrace
