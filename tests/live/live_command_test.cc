// Live tests of `iotrace live`: fio on scratch loop devices while live reads the kernel's buffers.
// Live's cumulative report against `iotrace report` on the recording it wrote beside (-o), the
// I/Os it counts against fio's own count, and every way a run ends (-- command, --count,
// --duration, SIGINT, SIGTERM) leaving tracefs as it was.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "live_util.h"

namespace iotrace::live {
namespace {

// A count of the cumulative JSON report: the group's count, or 0.
uint64_t GroupCount(const std::string& report_json, const std::string& device,
                    const std::string& op, const std::string& phase) {
  CommandResult r = Sh(
      "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
      "print(sum(g[\"count\"] for g in d[\"groups\"] if g[\"device\"]==sys.argv[2] and "
      "g[\"op\"]==sys.argv[3] and g[\"phase\"]==sys.argv[4]))' " +
      report_json + " " + device + " " + op + " " + phase);
  return r.exit_code == 0 ? std::stoull(r.out) : ~uint64_t{0};
}

// A free port on 127.0.0.1 (bound, read and closed: free until someone else takes it).
int FreeLoopbackPort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(s);
  return ok ? ntohs(addr.sin_port) : -1;
}

// GET `path` from 127.0.0.1:`port` over HTTP/1.0: the whole response, "" when nothing answers.
std::string HttpGet(int port, const std::string& path) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string out;
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(s, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      ssize_t n;
      while ((n = read(s, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    }
  }
  close(s);
  return out;
}

// Starts argv with its standard output and error into files; returns the pid.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (o < 0 || e < 0) _exit(126);
  dup2(o, 1);
  dup2(e, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

// Turns request merging off on `loop` (queue/nomerges 2): two adjacent I/Os of fio would else
// become one request now and then, and a count of requests would not equal fio's count of I/Os.
void NoMerges(const ScratchLoop& loop) {
  std::ofstream("/sys/block/" + loop.name() + "/queue/nomerges") << "2";
}

std::string Join(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

class LiveCommandTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    IOTRACE_REQUIRE_LIVE();
    IOTRACE_REQUIRE_TOOL("fio");
    IOTRACE_REQUIRE_TOOL("python3");
    before_ = TracefsSnapshot();
  }
  void TearDown() override {
    if (!IsSkipped()) EXPECT_EQ(TracefsSnapshot(), before_) << "tracefs state changed";
  }
  // `iotrace live` with -o and --report, JSON lines on stdout; then `iotrace report` on the
  // file and the comparison of the two (compare_live.py): nothing may differ.
  // `by`: --by's dimension, given to both.
  void ExpectLiveEqualsOffline(const std::vector<std::string>& live_args,
                               const std::string& what, const std::string& by = "") {
    const std::string by_flag = by.empty() ? "" : " --by " + by;
    const std::string rec = dir_.File("rec" + std::string(GetParam() == "ftrace" ? ".dat" : ".data"));
    const std::string live_report = dir_.File("live.json");
    const std::string lines = dir_.File("lines.jsonl");
    const std::string offline = dir_.File("offline.json");
    CommandResult r = Sh(Binary() + " live --backend " + GetParam() + " -I 0.5 --format json -o " +
                         rec + " --report " + live_report + by_flag + " " + Join(live_args) + " > " +
                         lines);
    ASSERT_EQ(r.exit_code, 0) << what << "\n" << r.err;
    ASSERT_EQ(Sh(Binary() + " report -i " + rec + by_flag + " --format json > " + offline).exit_code,
              0);
    CommandResult cmp = Sh("python3 " + std::string(IOTRACE_SOURCE_DIR) +
                           "/tests/live/compare_live.py " + live_report + " " + offline + " " +
                           lines);
    EXPECT_EQ(cmp.exit_code, 0) << what << "\n" << cmp.out << cmp.err;
    EXPECT_NE(cmp.out.find(" 0 differences"), std::string::npos) << cmp.out;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex("(\\d+) lost, (\\d+) late"))) << r.err;
    EXPECT_EQ(m[2], "0") << "records arrived late:\n" << r.err;
    // Nothing lost, but for the completions perf drops without a trace when they come in the
    // idle task (docs/kernel-notes.md, "perf drops samples silently here"): the perf backend
    // counts them (silent_drop), and nothing else may be missing. The ftrace backend loses none.
    drops_ = Losses(live_report, "silent_drop", "block:block_rq_complete");
    const uint64_t all = Losses(live_report, "", "");
    EXPECT_EQ(m[1].str(), std::to_string(all)) << r.err;
    EXPECT_EQ(all, drops_) << "events lost other than perf's silent drops:\n" << r.err;
    if (GetParam() == "ftrace") EXPECT_EQ(drops_, 0u) << r.err;
  }
  // Losses in a report's JSON of `kind` and `event` ("": any), summed.
  uint64_t Losses(const std::string& report_json, const std::string& kind,
                  const std::string& event) {
    CommandResult r =
        Sh("python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
           "print(sum(l[\"count\"] for l in d[\"completeness\"][\"losses\"] "
           "if sys.argv[2] in (\"\", l[\"kind\"]) and sys.argv[3] in (\"\", l[\"event\"])))' " +
           report_json + " \"" + kind + "\" \"" + event + "\"");
    return r.exit_code == 0 ? std::stoull(r.out) : ~uint64_t{0};
  }
  // A row's D2C requests against fio's count of them: equal, or short by completions perf
  // dropped (ExpectLiveEqualsOffline's drops_). What each is short adds up in short_.
  void ExpectD2C(const std::string& device, const std::string& op, uint64_t fio) {
    const uint64_t seen = GroupCount(dir_.File("live.json"), device, op, "D2C");
    EXPECT_LE(seen, fio) << device << " " << op;
    if (GetParam() == "ftrace") EXPECT_EQ(seen, fio) << device << " " << op;
    short_ += fio - std::min(seen, fio);
  }
  // The rows checked fall short of fio's counts by the drops exactly (`every`: the drops can
  // only be theirs), or by at most the drops (other rows, flushes, may have lost some).
  void ExpectShortByTheDrops(bool every) {
    if (every) {
      EXPECT_EQ(short_, drops_) << "requests missing against fio's count";
    } else {
      EXPECT_LE(short_, drops_) << "requests missing against fio's count";
    }
  }
  uint64_t drops_ = 0;
  uint64_t short_ = 0;
  TempDir dir_;
  std::map<std::string, std::string> before_;
};

TEST_P(LiveCommandTest, MqDeadlineWithFsyncFlushesEqualsTheOfflineReportAndFiosCount) {
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  NoMerges(loop);
  const std::string fio = dir_.File("fio.json");
  ExpectLiveEqualsOffline(
      {"--dev", loop.majmin(), "--", "fio", "--name=t", "--filename=" + loop.device(),
       "--rw=randwrite", "--bs=4k", "--direct=1", "--fsync=16", "--number_ios=3000",
       "--ioengine=psync", "--output-format=json", "--output=" + fio},
      "mq-deadline with fsync");
  const uint64_t writes = FioIos(fio, "write");
  ASSERT_GT(writes, 0u);
  ExpectD2C(loop.name(), "write", writes);
  ExpectShortByTheDrops(false);  // (a flush's completion may be the one dropped)
  EXPECT_GT(GroupCount(dir_.File("live.json"), loop.name(), "flush", "D2C"), 0u)
      << "fsync on the device should have sent flushes";
}

TEST_P(LiveCommandTest, SchedulerNoneMixedReadWriteEqualsTheOfflineReportAndFiosCount) {
  ScratchLoop loop("none");
  ASSERT_TRUE(loop.ok()) << loop.error();
  const std::string fio = dir_.File("fio.json");
  ExpectLiveEqualsOffline(
      {"--dev", loop.majmin(), "--", "fio", "--name=t", "--filename=" + loop.device(),
       "--rw=randrw", "--rwmixread=60", "--bs=4k", "--direct=1", "--iodepth=16",
       "--ioengine=libaio", "--number_ios=20000", "--output-format=json", "--output=" + fio},
      "scheduler none, mixed read/write");
  const uint64_t reads = FioIos(fio, "read"), writes = FioIos(fio, "write");
  ASSERT_GT(reads, 0u);
  ASSERT_GT(writes, 0u);
  ExpectD2C(loop.name(), "read", reads);
  ExpectD2C(loop.name(), "write", writes);
  ExpectShortByTheDrops(true);
}

TEST_P(LiveCommandTest, DevFilteringShowsOnlyThatDiskAndEqualsTheOfflineReport) {
  ScratchLoop a("mq-deadline"), b("mq-deadline");
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  NoMerges(a);
  const std::string fio = dir_.File("fio.json");
  // Both disks busy at once; live watches only the first.
  ExpectLiveEqualsOffline(
      {"--dev", a.majmin(), "--", "fio", "--name=a", "--filename=" + a.device(), "--rw=randread",
       "--bs=4k", "--direct=1", "--iodepth=8", "--ioengine=libaio", "--number_ios=8000",
       "--name=b", "--filename=" + b.device(), "--rw=randread", "--bs=4k", "--direct=1",
       "--iodepth=8", "--ioengine=libaio", "--number_ios=8000", "--group_reporting=0",
       "--output-format=json", "--output=" + fio},
      "--dev filtering");
  ExpectD2C(a.name(), "read", 8000);
  ExpectShortByTheDrops(true);  // (b's events are filtered in the kernel, its drops too)
  EXPECT_EQ(GroupCount(dir_.File("live.json"), b.name(), "read", "D2C"), 0u);
}

// --by size: two block sizes at once; live's rows per size class equal the offline report's,
// and each class holds exactly what fio did at that size.
TEST_P(LiveCommandTest, BySizeSplitsTheRowsAndEqualsTheOfflineReport) {
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  NoMerges(loop);
  const std::string fio = dir_.File("fio.json");
  ExpectLiveEqualsOffline(
      {"--dev", loop.majmin(), "--", "fio", "--name=small", "--filename=" + loop.device(),
       "--rw=randread", "--bs=4k", "--direct=1", "--iodepth=4", "--ioengine=libaio",
       "--number_ios=6000", "--name=big", "--filename=" + loop.device(), "--rw=randwrite",
       "--bs=64k", "--direct=1", "--iodepth=2", "--ioengine=libaio", "--number_ios=1500",
       "--group_reporting=0", "--output-format=json", "--output=" + fio},
      "--by size", "size");
  // D2C requests per op and size class, "read 4K=6000 write 64K=1500".
  CommandResult d2c = Sh(
      "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
      "print(\" \".join(sorted(\"%s %s=%d\" % (g[\"op\"], g[\"size\"], g[\"count\"]) "
      "for g in d[\"groups\"] if g[\"phase\"]==\"D2C\")))' " +
      dir_.File("live.json"));
  ASSERT_EQ(d2c.exit_code, 0) << d2c.err;
  // Those two classes alone, each short of fio's count by nothing but the completions perf
  // dropped (none with ftrace).
  std::smatch m;
  ASSERT_TRUE(std::regex_match(d2c.out, m, std::regex("read 4K=(\\d+) write 64K=(\\d+)\n")))
      << d2c.out;
  const uint64_t small = std::stoull(m[1]), big = std::stoull(m[2]);
  EXPECT_LE(small, 6000u);
  EXPECT_LE(big, 1500u);
  EXPECT_EQ((6000 - std::min<uint64_t>(small, 6000)) + (1500 - std::min<uint64_t>(big, 1500)),
            drops_)
      << d2c.out;
}

TEST_P(LiveCommandTest, CountStopsAfterThatManyIntervalsTheLastMarkedFinal) {
  CommandResult r = RunCmd({Binary(), "live", "--backend", GetParam(), "-I", "0.2", "-c", "3",
                            "--format", "json", "--report", dir_.File("r.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CountLines(r.out, "\"type\": \"interval\""), 3u) << r.out;
  EXPECT_EQ(CountLines(r.out, "\"final\": true"), 1u) << r.out;
  EXPECT_NE(r.err.find("stopped by count"), std::string::npos) << r.err;
}

TEST_P(LiveCommandTest, DurationEndsWithTheLastWholeIntervalAndCsvRowsHaveOneHeader) {
  CommandResult r = RunCmd({Binary(), "live", "--backend", GetParam(), "-I", "0.25", "-d", "1",
                            "--format", "csv", "--report", dir_.File("r.csv")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CountLines(r.out, "interval_start_s,"), 1u) << r.out;
  // Four intervals of 0.25 s: their start times.
  for (const char* start : {"\n0,", "\n0.25,", "\n0.5,", "\n0.75,"}) {
    EXPECT_NE(("\n" + r.out).find(start), std::string::npos) << start << "\n" << r.out;
  }
  EXPECT_NE(r.err.find("stopped by duration"), std::string::npos) << r.err;
}

TEST_P(LiveCommandTest, TheCommandsExitEndsTheRunWithItsStatus) {
  CommandResult r = RunCmd({Binary(), "live", "--backend", GetParam(), "--format", "json",
                            "--report", dir_.File("r.json"), "--", "sh", "-c", "sleep 0.3; exit 7"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_NE(r.err.find("stopped by command exit"), std::string::npos) << r.err;
  EXPECT_EQ(CountLines(r.out, "\"final\": true"), 1u) << r.out;
}

// Ctrl-C and SIGTERM end a run through its cleanup: the cumulative report is printed, the
// instance removed (TearDown compares tracefs).
TEST_P(LiveCommandTest, SigintAndSigtermPrintTheReportAndLeaveTracefsClean) {
  for (int sig : {SIGINT, SIGTERM}) {
    const std::string out = dir_.File("out" + std::to_string(sig));
    const std::string err = dir_.File("err" + std::to_string(sig));
    pid_t pid = Spawn({Binary(), "live", "--backend", GetParam(), "--format", "json"}, out, err);
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << sig;
    EXPECT_EQ(WEXITSTATUS(status), 0) << sig << Slurp(err);
    const std::string text = Slurp(out);
    EXPECT_NE(text.find("\"schema_version\""), std::string::npos) << "no report after " << sig;
    EXPECT_NE(Slurp(err).find(sig == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM"),
              std::string::npos)
        << Slurp(err);
  }
}

TEST_P(LiveCommandTest, ADeviceThatGoesAwayMidRunIsSaidToHaveGone) {
  auto loop = std::make_unique<ScratchLoop>("none");
  ASSERT_TRUE(loop->ok()) << loop->error();
  const std::string majmin = loop->majmin();
  const std::string err = dir_.File("err");
  pid_t pid = Spawn({Binary(), "live", "--backend", GetParam(), "-I", "0.2", "-d", "2",
                     "--format", "json", "--dev", majmin},
                    "/dev/null", err);
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  loop.reset();  // detached
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << Slurp(err);
  EXPECT_NE(Slurp(err).find("--dev " + majmin + " (" + majmin + ") went away"),
            std::string::npos)
      << Slurp(err);
}

// With --listen, a disk that goes away is said to have gone, scrapes go on being answered
// (its series keep their last counts), and SIGTERM ends the run with tracefs clean (TearDown).
TEST_P(LiveCommandTest, ADeviceThatGoesAwayWhileExportingKeepsServingAndEndsClean) {
  auto loop = std::make_unique<ScratchLoop>("none");
  ASSERT_TRUE(loop->ok()) << loop->error();
  const std::string majmin = loop->majmin();
  const std::string name = loop->name();
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);
  const std::string err = dir_.File("err");
  const std::string out = dir_.File("out.json");
  pid_t pid = Spawn({Binary(), "live", "--backend", GetParam(), "--listen", std::to_string(port),
                     "--quiet", "--format", "json", "--report", out, "--dev", majmin},
                    "/dev/null", err);
  ASSERT_GT(pid, 0);
  std::string before;
  for (int i = 0; i < 100 && before.find(" 200 ") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    before = HttpGet(port, "/metrics");
  }
  ASSERT_NE(before.find(" 200 "), std::string::npos) << Slurp(err);
  ASSERT_TRUE(Sh("dd if=" + loop->device() + " of=/dev/null bs=4k count=64 iflag=direct 2>&1")
                  .exit_code == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  loop.reset();  // detached
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const std::string after = HttpGet(port, "/metrics");
  EXPECT_NE(after.find(" 200 "), std::string::npos) << after;
  EXPECT_NE(after.find("iotrace_build_info{"), std::string::npos) << after;
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << Slurp(err);
  // The last scrape holds what the report at the end counts (nothing happened in between).
  const uint64_t reads = GroupCount(out, name, "read", "D2C");
  ASSERT_NE(reads, ~uint64_t{0}) << Slurp(out);
  ASSERT_GE(reads, 64u);
  EXPECT_NE(after.find("iotrace_block_latency_seconds_count{device=\"" + name +
                       "\",operation=\"read\",phase=\"d2c\"} " + std::to_string(reads) +
                       "\n"),
            std::string::npos)
      << after;
  EXPECT_NE(Slurp(err).find("--dev " + majmin + " (" + majmin + ") went away"),
            std::string::npos)
      << Slurp(err);
  EXPECT_NE(Slurp(err).find("stopped by SIGTERM"), std::string::npos) << Slurp(err);
  EXPECT_EQ(HttpGet(port, "/metrics"), "");  // the port is closed
}

INSTANTIATE_TEST_SUITE_P(Backends, LiveCommandTest, ::testing::Values("ftrace", "perf"),
                         [](const auto& info) { return info.param; });

TEST(LiveCommandErrorsTest, ADeviceNameThatNamesNoDiskIsAOneLineUsageError) {
  IOTRACE_REQUIRE_LIVE();
  CommandResult r = RunCmd({Binary(), "live", "--dev", "nosuchdisk0", "-d", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("nosuchdisk0"), std::string::npos) << r.err;
}

TEST(LiveCommandErrorsTest, ADeviceNumberWithNoDiskNowIsAWarningAndTheRunGoesOn) {
  IOTRACE_REQUIRE_LIVE();
  TempDir dir;
  CommandResult r = RunCmd({Binary(), "live", "--dev", "7:250", "-d", "0.5", "--format", "json",
                            "--report", dir.File("r.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: --dev 7:250: no block device has the number 7:250 now"),
            std::string::npos)
      << r.err;
}

TEST(LiveIngestLiveTest, TheReadPathGivesTheSameFiguresAsTheMappedOne) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  for (const char* ingest : {"read", "mmap"}) {
    ScratchLoop loop("none");
    ASSERT_TRUE(loop.ok()) << loop.error();
    TempDir dir;
    CommandResult r = Sh(Binary() + " live --backend ftrace --ingest " + ingest +
                         " --format json --report " + dir.File("r.json") + " --dev " +
                         loop.majmin() + " -- fio --name=t --filename=" + loop.device() +
                         " --rw=randread --bs=4k --direct=1 --number_ios=5000 "
                         "--ioengine=psync > /dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(std::string("ftrace backend, ") + ingest), std::string::npos) << r.err;
    EXPECT_EQ(GroupCount(dir.File("r.json"), loop.name(), "read", "D2C"), 5000u) << ingest;
  }
}

}  // namespace
}  // namespace iotrace::live

namespace iotrace::live {
namespace {

// record's progress line carries the device time of the busiest disks, from the live engine,
// unless --no-progress-latency.
TEST(RecordProgressLatencyLiveTest, TheProgressLineShowsD2CPerDiskAndCanBeTurnedOff) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  ScratchLoop loop("none");
  ASSERT_TRUE(loop.ok()) << loop.error();
  TempDir dir;
  const std::vector<std::string> fio = {"--", "fio", "--name=t", "--filename=" + loop.device(),
                                        "--rw=randread", "--bs=4k", "--direct=1", "--iodepth=8",
                                        "--ioengine=libaio", "--time_based=1", "--runtime=4",
                                        "--output=/dev/null"};
  std::vector<std::string> on = {Binary(), "record", "--backend", "ftrace", "--progress",
                                 "--dev", loop.device(), "-o", dir.File("a.dat")};
  on.insert(on.end(), fio.begin(), fio.end());
  CommandResult r = RunCmd(on);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.err, m, std::regex("D2C p50/p99 " + loop.name() + " ([0-9.]+)(ns|us|ms|s)/([0-9.]+)")))
      << r.err;
  std::vector<std::string> off = {Binary(), "record", "--backend", "ftrace", "--progress",
                                  "--no-progress-latency", "--dev", loop.device(), "-o",
                                  dir.File("b.dat")};
  off.insert(off.end(), fio.begin(), fio.end());
  r = RunCmd(off);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(" written "), std::string::npos) << "no progress line:\n" << r.err;
  EXPECT_EQ(r.err.find("D2C p50/p99"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace iotrace::live

namespace iotrace::live {
namespace {

// --phases d2c turns on only issue, complete and requeue: the report has D2C alone, exact.
TEST(LivePhasesLiveTest, D2COnlyTracesWhatD2CNeedsAndCountsEveryRequest) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  IOTRACE_REQUIRE_TOOL("python3");
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  NoMerges(loop);
  TempDir dir;
  CommandResult r = RunCmd({Binary(), "live", "--backend", "ftrace", "--phases", "d2c",
                            "--format", "json", "--report", dir.File("r.json"), "--dev",
                            loop.majmin(), "--", "fio", "--name=t",
                            "--filename=" + loop.device(), "--rw=randread", "--bs=4k",
                            "--direct=1", "--iodepth=8", "--ioengine=libaio",
                            "--number_ios=6000", "--output=/dev/null"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult phases = Sh(
      "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
      "print(sorted(set(g[\"phase\"] for g in d[\"groups\"])), d[\"completeness\"][\"events\"])' " +
      dir.File("r.json"));
  ASSERT_EQ(phases.exit_code, 0) << phases.err;
  EXPECT_EQ(phases.out.rfind("['D2C']", 0), 0u) << phases.out;
  EXPECT_EQ(GroupCount(dir.File("r.json"), loop.name(), "read", "D2C"), 6000u);
  // Two events a request on this disk: no insert was traced.
  EXPECT_EQ(CountLines(r.out, "\"phase\": \"I2D\""), 0u);
}

// --svg: the picture of the run, rewritten every interval; at the end it holds every interval
// (fewer than the 1000 it keeps), and its heatmap's cells add up to the run's report.
TEST(LiveSvgLiveTest, ThePictureFollowsTheRunAndItsCellsAddUpToTheReport) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  IOTRACE_REQUIRE_TOOL("python3");
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  NoMerges(loop);
  TempDir dir;
  const std::string svg = dir.File("live.svg");
  CommandResult r = RunCmd({Binary(), "live", "--backend", "ftrace", "-I", "0.25", "--svg", svg,
                            "--format", "json", "--report", dir.File("r.json"), "--dev",
                            loop.majmin(), "--", "fio", "--name=t",
                            "--filename=" + loop.device(), "--rw=randread", "--bs=4k",
                            "--direct=1", "--iodepth=4", "--ioengine=libaio", "--rate_iops=3000",
                            "--number_ios=4000", "--output=/dev/null"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t intervals = CountLines(r.out, "\"type\": \"interval\"");
  ASSERT_GE(intervals, 4u) << r.out;
  CommandResult cells = Sh(
      "python3 -c 'import re,sys; s=open(sys.argv[1]).read(); "
      "t=re.search(r\"the last (\\d+) intervals \\(the run ended\\)\", s); "
      "p=[x for x in s.split(\"<g class=\\\"panel\\\"\")[1:] "
      "if \"data-op=\\\"read\\\" data-phase=\\\"D2C\\\"\" in x][0]; "
      "h=p[p.index(\"<g class=\\\"heatmap\\\">\"):]; h=h[:h.index(\"</g>\")]; "
      "print(t.group(1), sum(int(n) for n in re.findall(r\"data-n=.(\\d+)\", h)))' " + svg);
  ASSERT_EQ(cells.exit_code, 0) << cells.err;
  EXPECT_EQ(cells.out, absl::StrFormat("%u %u\n", intervals,
                                       GroupCount(dir.File("r.json"), loop.name(), "read", "D2C")));
  EXPECT_EQ(GroupCount(dir.File("r.json"), loop.name(), "read", "D2C"), 4000u);
}

}  // namespace
}  // namespace iotrace::live

namespace iotrace::live {
namespace {

// A --listen port that is taken is a one-line error before anything is traced.
TEST(LiveListenLiveTest, APortInUseIsAOneLineErrorAndTouchesNothing) {
  IOTRACE_REQUIRE_LIVE();
  const int held = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(held, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(held, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(held, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  const auto before = TracefsSnapshot();
  CommandResult r = RunCmd({Binary(), "live", "--listen", port, "-d", "1"});
  close(held);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("iotrace: error: 127.0.0.1:" + port + " is in use"), std::string::npos)
      << r.err;
  EXPECT_EQ(TracefsSnapshot(), before);
}

}  // namespace
}  // namespace iotrace::live
