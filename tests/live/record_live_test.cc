// Live tests of `iotrace record` (perf backend): real tracepoints on a scratch loop device.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "live_util.h"

namespace iotrace::live {
namespace {

// Parses one row of the summary table: "  block:block_rq_issue   3000  3000  0  0".
struct Row {
  uint64_t recorded = 0, kernel = 0, ring_lost = 0, silent = 0;
  bool found = false;
};
Row SummaryRow(const std::string& err, const std::string& event) {
  std::regex re("\\s+" + event + "\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)");
  std::smatch m;
  Row r;
  if (std::regex_search(err, m, re)) {
    r.found = true;
    r.recorded = std::stoull(m[1]);
    r.kernel = std::stoull(m[2]);
    r.ring_lost = std::stoull(m[3]);
    r.silent = std::stoull(m[4]);
  }
  return r;
}

std::string DdRead(const ScratchLoop& loop, int count, int skip = 0) {
  return "dd if=" + loop.device() + " of=/dev/null bs=4k iflag=direct count=" +
         std::to_string(count) + " skip=" + std::to_string(skip) + " status=none";
}

class RecordLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    IOTRACE_REQUIRE_LIVE();
    IOTRACE_REQUIRE_TOOL("perf");
    before_ = TracefsSnapshot();
  }
  void TearDown() override {
    if (!IsSkipped()) EXPECT_EQ(TracefsSnapshot(), before_) << "tracefs state changed";
  }
  std::map<std::string, std::string> before_;
  TempDir dir_;
};

TEST_F(RecordLiveTest, PerfScriptDecodesEveryEventAndBooksBalance) {
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  const int kReads = 3000;
  std::string out = dir_.File("dd.data");
  CommandResult r = RunCmd({Binary(), "record", "--dev", loop.device(), "-o", out, "--", "sh", "-c",
                         DdRead(loop, kReads)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Direct 4k sequential reads with dd are one request each: the kernel counts exactly kReads.
  for (const char* ev : {"block:block_rq_insert", "block:block_rq_issue", "block:block_rq_complete"}) {
    Row row = SummaryRow(r.err, ev);
    ASSERT_TRUE(row.found) << ev << "\n" << r.err;
    EXPECT_EQ(row.kernel, static_cast<uint64_t>(kReads)) << ev << "\n" << r.err;
    EXPECT_EQ(row.recorded + row.ring_lost + row.silent, row.kernel) << ev;
  }
  // perf itself reads the file and decodes every recorded event's fields.
  CommandResult ps = RunCmd({"perf", "script", "-i", out, "-F", "event,trace"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  std::string dev = std::to_string(loop.major()) + "," + std::to_string(loop.minor());
  for (const char* ev : {"block:block_rq_insert", "block:block_rq_issue", "block:block_rq_complete"}) {
    Row row = SummaryRow(r.err, ev);
    EXPECT_EQ(CountLines(ps.out, std::string(ev) + ": " + dev + " R"), row.recorded) << ev;
  }
  EXPECT_EQ(ps.err.find("Error"), std::string::npos) << ps.err;
}

TEST_F(RecordLiveTest, DevFilterKeepsOtherDisksOut) {
  ScratchLoop a("mq-deadline"), b("mq-deadline");
  ASSERT_TRUE(a.ok() && b.ok()) << a.error() << b.error();
  std::string out = dir_.File("filtered.data");
  CommandResult r = RunCmd({Binary(), "record", "--dev", a.majmin(), "-o", out, "--", "sh", "-c",
                         DdRead(a, 500) + " && " + DdRead(b, 700)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult ps = RunCmd({"perf", "script", "-i", out, "-F", "event,trace"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  std::string dev_a = std::to_string(a.major()) + "," + std::to_string(a.minor()) + " ";
  std::string dev_b = std::to_string(b.major()) + "," + std::to_string(b.minor()) + " ";
  EXPECT_EQ(CountLines(ps.out, "block_rq_issue: " + dev_a), 500u);
  EXPECT_EQ(CountLines(ps.out, dev_b), 0u) << "events of the other disk were recorded";
  // Nothing but disk a at all: the filter ran in the kernel, not in the report.
  EXPECT_EQ(CountLines(ps.out, "block_rq_"), CountLines(ps.out, dev_a));
}

TEST_F(RecordLiveTest, SigintMidRunLeavesAValidFile) {
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string out = dir_.File("sigint.data");
  std::string err_file = dir_.File("err.txt");
  pid_t pid = fork();
  if (pid == 0) {
    freopen(err_file.c_str(), "w", stderr);
    execl(Binary().c_str(), "iotrace", "record", "--dev", loop.device().c_str(), "-o",
          out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_EQ(Sh(DdRead(loop, 400)).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  CommandResult ps = RunCmd({"perf", "script", "-i", out, "-F", "event,trace"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_EQ(CountLines(ps.out, "block_rq_issue:"), 400u);
  std::string err = Sh("cat " + err_file).out;
  EXPECT_NE(err.find("stopped by SIGINT"), std::string::npos) << err;
}

TEST_F(RecordLiveTest, CommandExitStatusBecomesOurs) {
  std::string out = dir_.File("exit.data");
  CommandResult r = RunCmd({Binary(), "record", "-o", out, "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_EQ(RunCmd({"perf", "script", "-i", out}).exit_code, 0);
}

TEST_F(RecordLiveTest, DurationStopsTheRecording) {
  std::string out = dir_.File("duration.data");
  auto t0 = std::chrono::steady_clock::now();
  CommandResult r = RunCmd({Binary(), "record", "-d", "0.5", "-o", out});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(s, 0.5);
  EXPECT_NE(r.err.find("stopped by duration"), std::string::npos) << r.err;
}

TEST_F(RecordLiveTest, BadInputGivesOneLineErrorsAndTouchesNothing) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
    std::string hint;
  };
  std::vector<Case> cases = {
      {{"-e", "block:block_rq_isue"}, 2, "unknown event 'block:block_rq_isue'",
       "block:block_rq_issue"},
      {{"-e", "nosuch:*"}, 2, "matches no event", ""},
      {{"--dev", "/dev/null"}, 2, "not a block device", "lsblk"},
      {{"--", "/nonexistent/command"}, 2, "command not found", "after --"},
      {{"-o", "/nonexistent/dir/x.data", "-d", "0.1"}, 1, "/nonexistent/dir/x.data", ""},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {Binary(), "record"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    CommandResult r = RunCmd(argv);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_EQ(r.err.rfind("iotrace: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    if (!c.hint.empty()) EXPECT_NE(r.err.find("hint: "), std::string::npos) << r.err;
    if (!c.hint.empty()) EXPECT_NE(r.err.find(c.hint), std::string::npos) << r.err;
    EXPECT_EQ(TracefsSnapshot(), before_) << "after: " << c.args[0];
  }
}

TEST_F(RecordLiveTest, NotRootIsRefusedWithAHint) {
  IOTRACE_REQUIRE_TOOL("setpriv");
  CommandResult r = RunCmd({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                         "--inh-caps=-all", Binary(), "record", "-d", "0.1", "-o",
                         "/tmp/iotrace_nobody.data"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("needs root or CAP_PERFMON"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hint: "), std::string::npos) << r.err;
}

TEST_F(RecordLiveTest, DiskFullStopsAndKeepsAValidFile) {
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string mnt = dir_.File("small");
  ASSERT_EQ(Sh("mkdir -p " + mnt + " && mount -t tmpfs -o size=2m iotrace_full " + mnt).exit_code, 0);
  std::string out = mnt + "/full.data";
  // Far more events than 2 MiB can hold.
  CommandResult r = RunCmd({Binary(), "record", "--dev", loop.device(), "-o", out, "--", "sh", "-c",
                         DdRead(loop, 40000)});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("disk full"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the file is valid"), std::string::npos) << r.err;
  CommandResult ps = RunCmd({"perf", "script", "-i", out, "-F", "event"});
  EXPECT_EQ(ps.exit_code, 0) << ps.err;
  size_t issues = CountLines(ps.out, "block_rq_issue");
  EXPECT_GT(issues, 1000u);
  Row row = SummaryRow(r.err, "block:block_rq_issue");
  EXPECT_EQ(row.recorded, issues) << "the summary's recorded column must match the file";
  Sh("umount " + mnt);
}

}  // namespace
}  // namespace iotrace::live
