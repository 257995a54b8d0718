// Rotation of long recordings (issue 25): `iotrace record --switch-output 2s` over 10 s of fio
// on a loop device, for each backend.
//   - Every file the run made (none removed): the block_rq_complete events in them add up to
//     the kernel's count of the run (a counting perf event of the test's own, with the device
//     filter), and their insert/issue/complete counts to those of one plain recording made at
//     the same time: no event is lost at a switch, none is stored twice.
//   - With --switch-max-files 3: exactly 3 files left, the rest removed and said so; each is a
//     complete file that iotrace report, and perf script / trace-cmd report, read with the same
//     count.
//   - The bare --switch-output switches on SIGUSR2.
//   - --max-size stops the recording cleanly (the command gets SIGTERM, iotrace exits 0, every
//     file complete) with the run's files on disk near the bound.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "live_util.h"

namespace iotrace::live {
namespace {

// What `iotrace report --format json` finds of `device` in a file.
struct FileCounts {
  int64_t insert = -1, issue = -1, complete = -1;
  uint64_t complete_lost = 0;  // losses stated for block_rq_complete (perf)
  uint64_t other_lost = 0;     // losses of other or unknown events (ftrace's are per CPU)
};

FileCounts CountsInFile(const std::string& path, const std::string& device) {
  CommandResult r = Sh(
      Binary() + " report -i " + path +
      " --format json 2>/dev/null | python3 -c 'import json,sys\n"
      "d=json.load(sys.stdin)[\"completeness\"]\n"
      "ev=lambda k: sum(x[\"events\"].get(k,0) for x in d[\"devices\"]\n"
      "  if x[\"device\"]==sys.argv[1])\n"
      "cl=sum(l[\"count\"] for l in d[\"losses\"] if \"block_rq_complete\" in l[\"event\"])\n"
      "ol=sum(l[\"count\"] for l in d[\"losses\"])-cl\n"
      "print(ev(\"block_rq_insert\"), ev(\"block_rq_issue\"), ev(\"block_rq_complete\"),"
      " cl, ol)' " +
      device);
  FileCounts c;
  if (r.exit_code != 0) return c;
  std::istringstream in(r.out);
  in >> c.insert >> c.issue >> c.complete >> c.complete_lost >> c.other_lost;
  return c;
}

// What a report says of `device` that two recordings of the same requests must agree on: per
// latency group its requests (and whether it is complete), and the pairing books, as JSON
// text. Not the latencies themselves: each recording takes its own timestamp of an event (an
// ftrace instance, a perf event each), a few hundred ns apart; their means are printed.
std::string ReportFigures(const std::string& inputs, const std::string& device) {
  CommandResult r = Sh(
      Binary() + " report " + inputs +
      " --format json 2>/dev/null | python3 -c 'import json,sys\n"
      "d=json.load(sys.stdin)\n"
      "c=d[\"completeness\"]\n"
      "keep=[\"events\",\"paired\",\"issues_without_insert\",\"completes_without_issue\","
      "\"in_flight_at_end\",\"across_gap\",\"expired\",\"evicted\",\"losses\"]\n"
      "g=[{k:x[k] for k in (\"dev\",\"op\",\"phase\",\"count\",\"incomplete\","
      "\"partial\",\"outside_coverage\")} for x in d[\"groups\"]]\n"
      "sys.stderr.write(\"means: %s\\n\" % [(x[\"phase\"], x[\"mean_ns\"]) "
      "for x in d[\"groups\"]])\n"
      "print(json.dumps({\"groups\":g,\"books\":{k:c[k] for k in keep},"
      "\"device\":[x for x in c[\"devices\"] if x[\"device\"]==sys.argv[1]]},"
      "sort_keys=True))' " +
      device);
  std::printf("%s: %s", inputs.c_str(), r.err.c_str());
  return r.exit_code == 0 ? r.out : "";
}

// The files of a rotating recording OUTPUT: OUTPUT.<16 digits>, sorted (by time).
std::vector<std::string> RotatedFiles(const std::string& output) {
  std::vector<std::string> files;
  const std::filesystem::path out(output);
  const std::string prefix = out.filename().string() + ".";
  for (const auto& e : std::filesystem::directory_iterator(out.parent_path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string stamp = name.substr(prefix.size());
    if (stamp.size() == 16 && stamp.find_first_not_of("0123456789") == std::string::npos) {
      files.push_back(e.path().string());
    } else {
      ADD_FAILURE() << "a file beside the rotated ones: " << name;
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> Fio(const std::string& device, int seconds, const std::string& json) {
  // A steady load that the peers' readers get through in a few seconds per file.
  return {"/usr/bin/fio", "--name=rot", "--filename=" + device, "--rw=randread", "--bs=4k",
          "--direct=1", "--iodepth=16", "--ioengine=libaio", "--rate_iops=30000",
          "--time_based=1", "--runtime=" + std::to_string(seconds), "--output-format=json",
          "--output=" + json};
}

class RecordRotateLiveTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    backend_ = GetParam();
    ext_ = backend_ == "perf" ? ".data" : ".dat";
  }
  std::string backend_, ext_;
};

TEST_P(RecordRotateLiveTest, EveryEventIsInExactlyOneFileAndTheNewestAreKept) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  ScratchLoop loop("none");
  ASSERT_TRUE(loop.ok()) << loop.error();
  CompletionCounter counter(loop.major(), loop.minor());
  ASSERT_TRUE(counter.ok()) << "perf_event_open of block:block_rq_complete failed";
  TempDir dir;
  const auto before = TracefsSnapshot();
  ASSERT_EQ(Sh("mkdir " + dir.File("all") + " " + dir.File("kept")).exit_code, 0);

  // One plain recording around the whole rotating one, for the same counts in one file.
  const std::string one = dir.File("one" + ext_);
  pid_t plain = SpawnQuiet({Binary(), "record", "-b", backend_, "--no-progress", "--dev",
                            loop.device(), "-o", one},
                           dir.File("one.err"));
  ASSERT_GT(plain, 0);
  for (int i = 0; i < 500 && Slurp(dir.File("one.err")).find("recording with") ==
                                 std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // its events turned on

  // Every file kept: the run's completions are all in them, once.
  const uint64_t k0 = counter.Read();
  std::vector<std::string> cmd = {Binary(), "record",  "-b", backend_, "--no-progress",
                                  "--dev",  loop.device(), "-o", dir.File("all/r" + ext_),
                                  "--switch-output", "2s", "--"};
  for (const std::string& a : Fio(loop.device(), 10, dir.File("fio.json"))) cmd.push_back(a);
  const CommandResult all = RunCmd(cmd);
  const uint64_t kernel = counter.Read() - k0;
  kill(plain, SIGINT);
  int status = 0;
  waitpid(plain, &status, 0);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << Slurp(dir.File("one.err"));

  const std::vector<std::string> made = RotatedFiles(dir.File("all/r" + ext_));
  // 10 s in 2 s files: 5 or 6 (fio's start and end fall where they do).
  EXPECT_GE(made.size(), 5u) << all.err;
  EXPECT_LE(made.size(), 7u) << all.err;
  EXPECT_EQ(CountLines(all.err, "iotrace: switching output to "), made.size() - 1) << all.err;
  FileCounts sum{0, 0, 0, 0, 0};
  for (const std::string& f : made) {
    const FileCounts c = CountsInFile(f, loop.name());
    ASSERT_GE(c.complete, 0) << f << ": " << Sh(Binary() + " report -i " + f + " 2>&1").out;
    std::printf("%s %s: insert %lld issue %lld complete %lld, lost %llu (complete) %llu (other)\n",
                backend_.c_str(), f.c_str(), static_cast<long long>(c.insert),
                static_cast<long long>(c.issue), static_cast<long long>(c.complete),
                static_cast<unsigned long long>(c.complete_lost),
                static_cast<unsigned long long>(c.other_lost));
    sum.insert += c.insert;
    sum.issue += c.issue;
    sum.complete += c.complete;
    sum.complete_lost += c.complete_lost;
    sum.other_lost += c.other_lost;
  }
  const FileCounts ref = CountsInFile(one, loop.name());
  const uint64_t fio_ios = FioIos(dir.File("fio.json"), "read");
  std::printf("%s: kernel counted %llu completions during the run, fio %llu reads; %zu files "
              "hold %lld (+%llu lost), one plain recording of the same time %lld\n",
              backend_.c_str(), static_cast<unsigned long long>(kernel),
              static_cast<unsigned long long>(fio_ios), made.size(),
              static_cast<long long>(sum.complete),
              static_cast<unsigned long long>(sum.complete_lost),
              static_cast<long long>(ref.complete));
  EXPECT_GT(kernel, 100000u);  // fio ran at its rate
  EXPECT_EQ(sum.other_lost, 0u);
  // Each completion of the run is in one file, or stated lost there (perf's silent drops).
  EXPECT_EQ(static_cast<uint64_t>(sum.complete) + sum.complete_lost, kernel);
  // The plain recording spans the rotating one: the same events, nothing lost at a switch.
  ASSERT_GE(ref.complete, 0);
  // Read together, the files are the plain recording: requests that cross a switch are paired
  // across the files, none is left unpaired at a boundary. (When perf dropped a sample in
  // either, the two hold different requests.)
  if (sum.complete_lost == 0 && ref.complete_lost == 0) {
    EXPECT_EQ(sum.complete, ref.complete);
    EXPECT_EQ(sum.issue, ref.issue);
    EXPECT_EQ(sum.insert, ref.insert);
    const std::string together =
        ReportFigures("-i '" + dir.File("all/r" + ext_) + ".*'", loop.name());
    ASSERT_FALSE(together.empty());
    EXPECT_EQ(together, ReportFigures("-i " + one, loop.name()));
  } else {
    std::printf("perf dropped samples silently: the reports are not compared\n");
  }

  // The newest 3 kept: the others removed as the run went, each said on stderr.
  cmd = {Binary(), "record", "-b", backend_, "--no-progress", "--dev", loop.device(),
         "-o", dir.File("kept/r" + ext_), "--switch-output", "2s", "--switch-max-files", "3",
         "--"};
  for (const std::string& a : Fio(loop.device(), 10, dir.File("fio2.json"))) cmd.push_back(a);
  const CommandResult kept_run = RunCmd(cmd);
  ASSERT_EQ(kept_run.exit_code, 0) << kept_run.err;
  const std::vector<std::string> kept = RotatedFiles(dir.File("kept/r" + ext_));
  ASSERT_EQ(kept.size(), 3u) << kept_run.err;
  const size_t switches = CountLines(kept_run.err, "iotrace: switching output to ");
  EXPECT_GE(switches, 4u) << kept_run.err;
  EXPECT_EQ(CountLines(kept_run.err, "(--switch-max-files 3)"), switches + 1 - 3)
      << kept_run.err;
  EXPECT_NE(kept_run.err.find(kept.back()), std::string::npos) << kept_run.err;
  const std::string peer_tool = backend_ == "perf" ? "perf" : "trace-cmd";
  const bool have_peer = HaveTool(peer_tool);
  for (const std::string& f : kept) {
    const CommandResult rep = RunCmd({Binary(), "report", "-i", f});
    EXPECT_EQ(rep.exit_code, 0) << f << ": " << rep.err;
    EXPECT_EQ(rep.out.find("file_not_finished"), std::string::npos) << f << ": " << rep.out;
    const FileCounts c = CountsInFile(f, loop.name());
    // The last file may have begun as fio ended.
    EXPECT_GE(c.complete, f == kept.back() ? 0 : 1) << f;
    if (have_peer) {
      EXPECT_EQ(PeerCompletes(backend_, f), c.complete) << peer_tool << " on " << f;
    }
  }
  if (!have_peer) std::printf("%s is not installed: the peer's reader was not tried\n",
                              peer_tool.c_str());
  EXPECT_EQ(TracefsSnapshot(), before) << "tracefs state changed";
}

TEST_P(RecordRotateLiveTest, MaxSizeStopsCleanlyNearTheBound) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  ScratchLoop loop("none");
  ASSERT_TRUE(loop.ok()) << loop.error();
  TempDir dir;
  const auto before = TracefsSnapshot();
  std::vector<std::string> cmd = {Binary(), "record", "-b", backend_, "--no-progress", "--dev",
                                  loop.device(), "-o", dir.File("m" + ext_),
                                  "--switch-output=4M", "--max-size", "12M", "--"};
  // Far longer than the bound lets the recording last.
  for (const std::string& a : Fio(loop.device(), 120, dir.File("fio.json"))) cmd.push_back(a);
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult r = RunCmd(cmd);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(took, 100.0) << "the recording did not stop at --max-size";
  EXPECT_NE(r.err.find("iotrace: --max-size 12.0 MiB reached"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stopped by --max-size"), std::string::npos) << r.err;
  const std::vector<std::string> files = RotatedFiles(dir.File("m" + ext_));
  ASSERT_GE(files.size(), 3u) << r.err;
  uint64_t bytes = 0;
  for (const std::string& f : files) {
    struct stat st{};
    ASSERT_EQ(stat(f.c_str(), &st), 0) << f;
    bytes += static_cast<uint64_t>(st.st_size);
    const CommandResult rep = RunCmd({Binary(), "report", "-i", f});
    EXPECT_EQ(rep.exit_code, 0) << f << ": " << rep.err;
    EXPECT_EQ(rep.out.find("file_not_finished"), std::string::npos) << f;
  }
  std::printf("%s: --max-size 12M: %zu files, %llu bytes on disk after %.1f s\n",
              backend_.c_str(), files.size(), static_cast<unsigned long long>(bytes), took);
  // Reached, and passed by no more than what one drain brings at this rate (well under 4 MiB).
  EXPECT_GE(bytes, 12ull << 20);
  EXPECT_LT(bytes, 16ull << 20);
  EXPECT_EQ(TracefsSnapshot(), before) << "tracefs state changed";
}

TEST_P(RecordRotateLiveTest, Sigusr2SwitchesWithTheBareOption) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  ScratchLoop loop("none");
  ASSERT_TRUE(loop.ok()) << loop.error();
  TempDir dir;
  const std::string out = dir.File("s" + ext_);
  std::vector<std::string> cmd = {Binary(), "record", "-b", backend_, "--no-progress", "--dev",
                                  loop.device(), "-o", out, "--switch-output", "--"};
  for (const std::string& a : Fio(loop.device(), 3600, dir.File("fio.json"))) cmd.push_back(a);
  const std::string err = dir.File("s.err");
  pid_t rec = SpawnQuiet(cmd, err);
  ASSERT_GT(rec, 0);
  for (int i = 0; i < 500 && Slurp(err).find("recording with") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Two switches, then the end: three files, each with its share.
  for (int i = 0; i < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    kill(rec, SIGUSR2);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  // SIGTERM, not SIGINT: record passes it on to fio (a terminal's Ctrl-C would reach fio by
  // itself; SIGINT sent to record alone leaves fio running and record waiting for it).
  kill(rec, SIGTERM);
  int status = 0;
  waitpid(rec, &status, 0);
  EXPECT_TRUE(WIFEXITED(status)) << Slurp(err);  // SIGUSR2 did not kill it
  const std::vector<std::string> files = RotatedFiles(out);
  ASSERT_EQ(files.size(), 3u) << Slurp(err);
  EXPECT_EQ(CountLines(Slurp(err), "iotrace: switching output to "), 2u) << Slurp(err);
  for (const std::string& f : files) {
    EXPECT_GT(CountsInFile(f, loop.name()).complete, 0) << f;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, RecordRotateLiveTest, ::testing::Values("ftrace", "perf"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace iotrace::live
