// Live tests of `iotrace record` (perf backend): real tracepoints on a scratch loop device.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <sstream>
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

class RecordLiveTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    IOTRACE_REQUIRE_LIVE();
    if (Ftrace()) {
      IOTRACE_REQUIRE_TOOL("trace-cmd");
    } else {
      IOTRACE_REQUIRE_TOOL("perf");
    }
    before_ = TracefsSnapshot();
  }
  bool Ftrace() const { return GetParam() == "ftrace"; }
  std::string Out(const std::string& name) const {
    return dir_.File(name + (Ftrace() ? ".dat" : ".data"));
  }
  // iotrace record -b BACKEND ARGS...
  std::vector<std::string> Record(std::vector<std::string> args) const {
    std::vector<std::string> argv = {Binary(), "record", "-b", GetParam()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  // The referee's decoding of a file: "event: fields" lines (perf script / trace-cmd report).
  CommandResult Decode(const std::string& file) const {
    if (Ftrace()) return RunCmd({"trace-cmd", "report", "-i", file});
    return RunCmd({"perf", "script", "-i", file, "-F", "event,trace"});
  }
  static std::string Event(const std::string& name) {
    return name;  // both referees print "block_rq_issue:"; perf adds the "block:" prefix
  }
  void TearDown() override {
    if (!IsSkipped()) EXPECT_EQ(TracefsSnapshot(), before_) << "tracefs state changed";
  }
  std::map<std::string, std::string> before_;
  TempDir dir_;
};

TEST_P(RecordLiveTest, TheRefereeDecodesEveryEventAndBooksBalance) {
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  const int kReads = 3000;
  std::string out = Out("dd");
  CommandResult r =
      RunCmd(Record({"--dev", loop.device(), "-o", out, "--", "sh", "-c", DdRead(loop, kReads)}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Direct 4k sequential reads with dd are one request each: the kernel produces exactly kReads
  // of each. perf counts them per event; ftrace's books are per CPU (the total row).
  for (const char* ev : {"block:block_rq_insert", "block:block_rq_issue", "block:block_rq_complete"}) {
    if (Ftrace()) {
      std::regex re(std::string("\\s+") + ev + "\\s+(\\d+)\\s+-");
      std::smatch m;
      ASSERT_TRUE(std::regex_search(r.err, m, re)) << ev << "\n" << r.err;
      EXPECT_EQ(std::stoull(m[1]), static_cast<uint64_t>(kReads)) << ev << "\n" << r.err;
      continue;
    }
    Row row = SummaryRow(r.err, ev);
    ASSERT_TRUE(row.found) << ev << "\n" << r.err;
    EXPECT_EQ(row.kernel, static_cast<uint64_t>(kReads)) << ev << "\n" << r.err;
    EXPECT_EQ(row.recorded + row.ring_lost + row.silent, row.kernel) << ev;
  }
  Row total = SummaryRow(r.err, "total");
  ASSERT_TRUE(total.found) << r.err;
  EXPECT_EQ(total.recorded + total.ring_lost + total.silent, total.kernel) << r.err;
  if (Ftrace()) EXPECT_EQ(total.recorded, 3u * kReads) << "ftrace loses nothing here";
  // The referee (perf script / trace-cmd report) reads the file and decodes every event's fields.
  CommandResult ps = Decode(out);
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  std::string dev = std::to_string(loop.major()) + "," + std::to_string(loop.minor());
  for (const char* ev : {"block_rq_insert", "block_rq_issue", "block_rq_complete"}) {
    std::regex re(std::string(ev) + ":\\s+" + dev + " R");
    size_t n = 0;
    std::istringstream in(ps.out);
    std::string line;
    while (std::getline(in, line)) n += std::regex_search(line, re);
    uint64_t recorded = Ftrace() ? static_cast<uint64_t>(kReads)
                                 : SummaryRow(r.err, std::string("block:") + ev).recorded;
    EXPECT_EQ(n, recorded) << ev;
  }
  EXPECT_EQ(ps.err.find("Error"), std::string::npos) << ps.err;
}

TEST_P(RecordLiveTest, DevFilterKeepsOtherDisksOut) {
  ScratchLoop a("mq-deadline"), b("mq-deadline");
  ASSERT_TRUE(a.ok() && b.ok()) << a.error() << b.error();
  std::string out = Out("filtered");
  CommandResult r = RunCmd(Record({"--dev", a.majmin(), "-o", out, "--", "sh", "-c",
                                   DdRead(a, 500) + " && " + DdRead(b, 700)}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult ps = Decode(out);
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  std::string dev_a = " " + std::to_string(a.major()) + "," + std::to_string(a.minor()) + " ";
  std::string dev_b = " " + std::to_string(b.major()) + "," + std::to_string(b.minor()) + " ";
  size_t issues_a = 0;
  std::istringstream in(ps.out);
  std::string line;
  while (std::getline(in, line)) {
    issues_a += line.find("block_rq_issue:") != std::string::npos &&
                line.find(dev_a) != std::string::npos;
  }
  EXPECT_EQ(issues_a, 500u);
  EXPECT_EQ(CountLines(ps.out, dev_b), 0u) << "events of the other disk were recorded";
  // Nothing but disk a at all: the filter ran in the kernel, not in the report.
  EXPECT_EQ(CountLines(ps.out, "block_rq_"), CountLines(ps.out, dev_a));
}

TEST_P(RecordLiveTest, SigintMidRunLeavesAValidFile) {
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string out = Out("sigint");
  std::string err_file = dir_.File("err.txt");
  pid_t pid = fork();
  if (pid == 0) {
    freopen(err_file.c_str(), "w", stderr);
    execl(Binary().c_str(), "iotrace", "record", "-b", GetParam().c_str(), "--dev",
          loop.device().c_str(), "-o", out.c_str(), static_cast<char*>(nullptr));
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
  CommandResult ps = Decode(out);
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_EQ(CountLines(ps.out, "block_rq_issue:"), 400u);
  std::string err = Sh("cat " + err_file).out;
  EXPECT_NE(err.find("stopped by SIGINT"), std::string::npos) << err;
}

// A signal that arrives while iotrace is still setting up (instance, rings, file) ends the
// recording through the same cleanup: a valid file, nothing left in tracefs (TearDown checks).
TEST_P(RecordLiveTest, SignalDuringSetupStillCleansUp) {
  for (int delay_ms : {1, 20, 60}) {
    std::string out = Out("early" + std::to_string(delay_ms));
    pid_t pid = fork();
    if (pid == 0) {
      freopen("/dev/null", "w", stderr);
      execl(Binary().c_str(), "iotrace", "record", "-b", GetParam().c_str(), "-o", out.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    // Killed outright is fine before iotrace touches anything; after that it must exit on
    // its own, with a valid file.
    EXPECT_EQ(TracefsSnapshot(), before_) << "after a signal at " << delay_ms << " ms";
    if (WIFEXITED(status)) {
      EXPECT_EQ(WEXITSTATUS(status), 0) << delay_ms << " ms";
      EXPECT_EQ(Decode(out).exit_code, 0) << delay_ms << " ms";
    } else {
      EXPECT_NE(access(out.c_str(), F_OK), 0) << "a file was created before signals were taken";
    }
  }
}

TEST_P(RecordLiveTest, CommandExitStatusBecomesOurs) {
  std::string out = Out("exit");
  CommandResult r = RunCmd(Record({"-o", out, "--", "sh", "-c", "exit 7"}));
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_EQ(Decode(out).exit_code, 0);
}

TEST_P(RecordLiveTest, DurationStopsTheRecording) {
  std::string out = Out("duration");
  auto t0 = std::chrono::steady_clock::now();
  CommandResult r = RunCmd(Record({"-d", "0.5", "-o", out}));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(s, 0.5);
  EXPECT_NE(r.err.find("stopped by duration"), std::string::npos) << r.err;
}

// A command still running when --duration ends the recording gets SIGTERM (as perf record's
// workload does) instead of being waited for; iotrace then exits 0, not with its status.
TEST_P(RecordLiveTest, DurationEndsTheCommandWithSigterm) {
  std::string out = Out("duration_cmd"), mark = dir_.File("term");
  CommandResult r = RunCmd(Record(
      {"-d", "0.3", "-o", out, "--", "bash", "-c",
       "trap 'echo term >" + mark + "; kill $!; exit 3' TERM; sleep 1000 & wait"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stopped by duration"), std::string::npos) << r.err;
  EXPECT_EQ(Sh("cat " + mark).out, "term\n") << "the command was not sent SIGTERM";
  EXPECT_EQ(Decode(out).exit_code, 0);
}

TEST_P(RecordLiveTest, BadInputGivesOneLineErrorsAndTouchesNothing) {
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
      {{"--delay", "-1", "-d", "0.1"}, 2, "nothing could ever turn the events on", "--control"},
      {{"--control", "fifo:/nonexistent/ctl", "-d", "0.1"}, 2, "/nonexistent/ctl", ""},
      {{"--control", "/tmp/ctl", "-d", "0.1"}, 2, "expected fifo: or fd:", "fifo:CTL"},
  };
  for (const Case& c : cases) {
    CommandResult r = RunCmd(Record(c.args));
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_EQ(r.err.rfind("iotrace: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    if (!c.hint.empty()) EXPECT_NE(r.err.find("hint: "), std::string::npos) << r.err;
    if (!c.hint.empty()) EXPECT_NE(r.err.find(c.hint), std::string::npos) << r.err;
    EXPECT_EQ(TracefsSnapshot(), before_) << "after: " << c.args[0];
  }
}

TEST_P(RecordLiveTest, NotRootIsRefusedWithAHint) {
  IOTRACE_REQUIRE_TOOL("setpriv");
  CommandResult r = RunCmd({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                         "--inh-caps=-all", Binary(), "record", "-b", GetParam(), "-d", "0.1",
                         "-o", "/tmp/iotrace_nobody.data"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("needs root or CAP_PERFMON"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hint: "), std::string::npos) << r.err;
}

TEST_P(RecordLiveTest, DiskFullStopsAndKeepsAValidFile) {
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string mnt = dir_.File("small");
  ASSERT_EQ(Sh("mkdir -p " + mnt + " && mount -t tmpfs -o size=2m iotrace_full " + mnt).exit_code, 0);
  std::string out = mnt + (Ftrace() ? "/full.dat" : "/full.data");
  // Far more events than 2 MiB can hold.
  CommandResult r = RunCmd(
      Record({"--dev", loop.device(), "-o", out, "--", "sh", "-c", DdRead(loop, 40000)}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("disk full"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the file is valid"), std::string::npos) << r.err;
  CommandResult ps = Decode(out);
  EXPECT_EQ(ps.exit_code, 0) << ps.err;
  // The file holds what fit: over a thousand events, however they fell between the CPUs (a
  // trace.dat's CPUs' data lie one after the other, and which CPU issued and which completed
  // the reads is the scheduler's choice: a file can hold 140 issues and 16,000 completions).
  const size_t issues = CountLines(ps.out, "block_rq_issue:");
  EXPECT_GT(issues + CountLines(ps.out, "block_rq_complete:") +
                CountLines(ps.out, "block_rq_insert:"),
            1000u);
  std::regex re("block:block_rq_issue\\s+(\\d+)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, re)) << r.err;
  EXPECT_EQ(std::stoull(m[1]), issues) << "the summary's recorded column must match the file";
  Sh("umount " + mnt);
}

// --delay -1 with --control, as perf record takes them: only the I/O between "enable" and
// "disable" is recorded, every command is answered, and "stop" ends the recording.
TEST_P(RecordLiveTest, ControlRecordsOnlyTheEnabledStretch) {
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string out = Out("control");
  std::string ctl = dir_.File("ctl"), ack = dir_.File("ack"), err = dir_.File("err");
  std::string record;
  for (const std::string& a : Record({"-D", "-1", "--control", "fifo:" + ctl + "," + ack,
                                      "--dev", loop.device(), "--no-progress", "-o", out, "--",
                                      "sleep", "1000"})) {
    record += "'" + a + "' ";
  }
  // Each command waits for its "ack" (at most 30 s): the first ping tells that iotrace is
  // recording (with the events off), and the I/O after "disable" can no longer be recorded.
  std::string say = "say() { echo \"$1\" >&7 && read -t 30 -u 8 a && echo \"$1: $a\"; }; ";
  // A failing step ends the script, and the trap ends iotrace (it would hold the output pipe).
  CommandResult r = RunCmd({"bash", "-c",
                       "set -e; mkfifo " + ctl + " " + ack + "; " + say + record + ">/dev/null 2>" +
                       err + " & p=$!; trap 'kill $p 2>/dev/null || true' EXIT; exec 7>" + ctl +
                       " 8<" + ack + "; say ping; " +
                       DdRead(loop, 100) + "; say enable; " + DdRead(loop, 200, 1000) +
                       "; say disable; " + DdRead(loop, 300, 3000) +
                       "; echo nonsense >&7; say stop; wait $p; echo rc=$?"});
  CommandResult summary = Sh("cat " + err);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << summary.out;
  for (const char* cmd : {"ping: ack", "enable: ack", "disable: ack", "stop: ack", "rc=0"}) {
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd << "\n" << r.out;
  }
  EXPECT_NE(summary.out.find("unknown command 'nonsense'"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("stopped by --control stop; events off for"), std::string::npos)
      << summary.out;
  const uint64_t kEnabled = 200;
  for (const char* ev :
       {"block:block_rq_insert", "block:block_rq_issue", "block:block_rq_complete"}) {
    if (Ftrace()) {
      std::regex re(std::string("\\s+") + ev + "\\s+(\\d+)\\s+-");
      std::smatch m;
      ASSERT_TRUE(std::regex_search(summary.out, m, re)) << ev << "\n" << summary.out;
      EXPECT_EQ(std::stoull(m[1]), kEnabled) << ev << "\n" << summary.out;
      continue;
    }
    Row row = SummaryRow(summary.out, ev);
    ASSERT_TRUE(row.found) << ev << "\n" << summary.out;
    EXPECT_EQ(row.kernel, kEnabled) << ev << "\n" << summary.out;
    EXPECT_EQ(row.recorded + row.ring_lost + row.silent, row.kernel) << ev;
  }
  // The referee finds the enabled stretch's requests, and only those (sectors 8000-9599).
  CommandResult ps = Decode(out);
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  std::regex sector("block_rq_complete:.* R[A-Z]* \\(\\) (\\d+) \\+ 8");
  std::smatch m;
  size_t completes = 0;
  std::istringstream in(ps.out);
  std::string line;
  while (std::getline(in, line)) {
    if (!std::regex_search(line, m, sector)) continue;
    ++completes;
    uint64_t s = std::stoull(m[1]);
    EXPECT_TRUE(s >= 8000 && s < 9600) << line;
  }
  EXPECT_EQ(completes, Ftrace() ? kEnabled
                               : SummaryRow(summary.out, "block:block_rq_complete").recorded);
}

// --delay N: the command starts at once, the events are turned on N ms later.
TEST_P(RecordLiveTest, DelayHoldsTheEventsBack) {
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string out = Out("delay");
  // 100 reads well inside the first 1.5 s, 200 well after it.
  CommandResult r = RunCmd(Record({"--delay", "1500", "--dev", loop.device(), "-o", out, "--",
                                   "sh", "-c",
                                   DdRead(loop, 100) + "; sleep 3; " + DdRead(loop, 200, 1000)}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("events off for 1."), std::string::npos) << r.err;
  Row total = SummaryRow(r.err, "total");
  ASSERT_TRUE(total.found) << r.err;
  EXPECT_EQ(total.kernel, 3u * 200) << r.err;
}

// The acceptance run of the perf backend: fio 4k randread iodepth 16 on a loop device, 5 s,
// default buffer sizes: zero ring losses (silent drops are the kernel's, counted apart).
TEST_P(RecordLiveTest, FastestLoopWorkloadLosesNothingInTheRings) {
  IOTRACE_REQUIRE_TOOL("fio");
  ScratchLoop loop("mq-deadline", 512);
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string out = Out("fio");
  CommandResult r = RunCmd(Record(
      {"-d", "5", "--dev", loop.device(), "-o", out, "--", "fio", "--name=t",
       "--filename=" + loop.device(), "--rw=randread", "--bs=4k", "--iodepth=16",
       "--ioengine=libaio", "--direct=1", "--runtime=5", "--time_based", "--output=/dev/null"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Row total = SummaryRow(r.err, "total");
  ASSERT_TRUE(total.found) << r.err;
  EXPECT_GT(total.recorded, 100000u) << r.err;  // tens of thousands of IOPS
  EXPECT_EQ(total.ring_lost, 0u) << r.err;
  EXPECT_EQ(r.err.find("buffer was full"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Backends, RecordLiveTest, ::testing::Values("perf", "ftrace"),
                         [](const auto& info) { return info.param; });

// record -o - streams perf's pipe mode to standard output (auto picks perf for it): perf
// script and iotrace report read the stream as it comes; the command's own output goes to
// stderr, so it does not mix into the stream; the summary's books balance against the reads.
TEST(RecordStreamLiveTest, OutputDashStreamsPerfsPipeModeThatPerfScriptAndReportRead) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("perf");
  TempDir dir;
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  const std::string saved = dir.File("stream.data"), err = dir.File("record.err");
  // The command prints to its standard output: that must not land in the stream.
  const std::string record = Binary() + " record -o - --no-progress --dev " + loop.device() +
                             " -- sh -c 'echo hello from the command; " + DdRead(loop, 300) +
                             "' 2>" + err;
  CommandResult script = Sh(record + " | tee " + saved + " | perf script -i - -F event,trace");
  ASSERT_EQ(script.exit_code, 0) << script.err << Sh("cat " + err).out;
  const std::string rec_err = Sh("cat " + err).out;
  EXPECT_NE(rec_err.find("recording with the perf backend (auto: -o - streams perf's pipe-mode "
                         "format) into standard output (perf's pipe mode)"),
            std::string::npos)
      << rec_err;
  EXPECT_NE(rec_err.find("hello from the command"), std::string::npos) << rec_err;
  EXPECT_NE(rec_err.find("into standard output ("), std::string::npos) << rec_err;
  const Row issue = SummaryRow(rec_err, "block:block_rq_issue");
  ASSERT_TRUE(issue.found) << rec_err;
  EXPECT_EQ(issue.recorded + issue.ring_lost + issue.silent, issue.kernel);
  EXPECT_GE(issue.kernel, 300u);
  EXPECT_EQ(CountLines(script.out, "block_rq_issue:"), issue.recorded) << script.err;
  // iotrace report reads the same stream from standard input.
  CommandResult report = Sh("cat " + saved + " | " + Binary() + " report -i - --dev " +
                            loop.majmin() + " --format csv --summary-csv " + dir.File("s.csv"));
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string csv = Sh("cat " + dir.File("s.csv")).out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(csv, m, std::regex(",read,D2C,(\\d+),"))) << csv;
  EXPECT_GE(std::stoull(m[1]) + issue.ring_lost + issue.silent, 300u);
  EXPECT_LE(std::stoull(m[1]), issue.recorded);
}

}  // namespace
}  // namespace iotrace::live
