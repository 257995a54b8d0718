#include <string>

#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "iotrace/capture/record.h"

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
  const std::string sys = std::string(IOTRACE_FIXTURES) + "/devices/sys";
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
  const std::string sys = std::string(IOTRACE_FIXTURES) + "/devices/sys-nomedium";
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

TEST(RecordPrivilegesTest, RootOrPerfmonOrSysAdmin) {
  EXPECT_TRUE(CheckRecordPrivileges(0, 0).ok());
  EXPECT_TRUE(CheckRecordPrivileges(1000, uint64_t{1} << 38).ok());  // CAP_PERFMON
  EXPECT_TRUE(CheckRecordPrivileges(1000, uint64_t{1} << 21).ok());  // CAP_SYS_ADMIN
  absl::Status s = CheckRecordPrivileges(1000, uint64_t{1} << 12);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("root"), std::string::npos);
  EXPECT_NE(HintOf(s).find("sudo"), std::string::npos);
}

}  // namespace
}  // namespace iotrace
