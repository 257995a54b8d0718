// Recordings that survive SIGKILL (issue 25): fio runs at full speed on a loop device, `iotrace
// record` records it and is killed with SIGKILL at a random moment 2-10 s in, again and again.
// Each time, an independent count of the kernel's block_rq_complete events for that device (a
// counting perf event opened by the test, with the same device filter) is read 1.5 s before
// the kill and right after it; the file must hold at least the first (what the kernel recorded
// up to a flush interval, 1 s, before the kill, plus slack) and at most the second. `iotrace
// report` reads the file as it is; `iotrace recover` makes it a standard file that perf script
// / trace-cmd report read with the same count; the next `iotrace record` removes the instance
// the kill left (ftrace) and says so.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "live_util.h"

namespace iotrace::live {
namespace {

struct FileFigures {
  int64_t completes = -1;    // block_rq_complete events of the device, -1: unreadable
  int64_t unfinished = -1;   // the reader's file_not_finished problem
  bool names_recover = false;  // a warning says how to make a standard file
};

// What `iotrace report --format json` says of the file.
FileFigures ReadFigures(const std::string& path, const std::string& device) {
  CommandResult r = Sh(
      Binary() + " report -i " + path +
      " --format json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); "
      "c=sum(x[\"events\"].get(\"block_rq_complete\",0) for x in "
      "d[\"completeness\"][\"devices\"] if x[\"device\"]==sys.argv[1]); "
      "p=d[\"completeness\"][\"reader\"][\"problems\"].get(\"file_not_finished\",0); "
      "w=any(\"iotrace recover\" in json.dumps(x) for x in d[\"warnings\"]); "
      "print(c, p, int(w))' " +
      device);
  FileFigures f;
  std::smatch m;
  if (r.exit_code == 0 && std::regex_search(r.out, m, std::regex("(\\d+) (\\d+) (\\d)"))) {
    f.completes = std::stoll(m[1]);
    f.unfinished = std::stoll(m[2]);
    f.names_recover = m[3] == "1";
  }
  return f;
}

class RecordKillLiveTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RecordKillLiveTest, WhatAKilledRecordingStoredIsReadAndRecovered) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  const std::string backend = GetParam();
  if (backend == "perf") IOTRACE_REQUIRE_TOOL("perf");
  if (backend == "ftrace") IOTRACE_REQUIRE_TOOL("trace-cmd");
  const char* runs_env = std::getenv("IOTRACE_KILL_RUNS");
  const int runs = runs_env != nullptr ? std::atoi(runs_env) : 20;
  ScratchLoop loop("none");
  ASSERT_TRUE(loop.ok()) << loop.error();
  CompletionCounter counter(loop.major(), loop.minor());
  ASSERT_TRUE(counter.ok()) << "perf_event_open of block:block_rq_complete failed";
  TempDir dir;
  const auto before = TracefsSnapshot();
  pid_t fio = SpawnQuiet({"/usr/bin/fio", "--name=k", "--filename=" + loop.device(),
                          "--rw=randread", "--bs=4k", "--direct=1", "--iodepth=16",
                          "--ioengine=libaio", "--time_based=1", "--runtime=3600"},
                         dir.File("fio.err"));
  ASSERT_GT(fio, 0);
  std::mt19937 rng(static_cast<uint32_t>(getpid()));
  std::uniform_int_distribution<int> delay_ms(2000, 10000);
  int previous_pid = 0;
  for (int run = 0; run < runs; ++run) {
    const std::string out = dir.File("rec" + std::to_string(run) + (backend == "perf" ? ".data" : ".dat"));
    const std::string err = dir.File("rec" + std::to_string(run) + ".err");
    const uint64_t at_spawn = counter.Read();  // tracing is not on yet
    pid_t rec = SpawnQuiet({Binary(), "record", "-b", backend, "--no-progress", "--dev",
                            loop.device(), "-o", out},
                           err);
    ASSERT_GT(rec, 0);
    const auto spawned = std::chrono::steady_clock::now();
    for (int i = 0; i < 500 && Slurp(err).find("iotrace: recording with") == std::string::npos;
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_NE(Slurp(err).find("iotrace: recording with"), std::string::npos) << Slurp(err);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the events turned on
    const uint64_t at_start = counter.Read();  // every completion after this is recorded
    const int delay = delay_ms(rng);
    std::this_thread::sleep_until(spawned + std::chrono::milliseconds(delay - 1500));
    const uint64_t early = counter.Read();
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    kill(rec, SIGKILL);
    waitpid(rec, nullptr, 0);
    const uint64_t at_kill = counter.Read();
    const std::string log = Slurp(err);
    if (previous_pid != 0 && backend == "ftrace") {
      // The instance the last kill left is removed by this run, which says so.
      EXPECT_NE(log.find("iotrace_" + std::to_string(previous_pid)), std::string::npos)
          << "run " << run << ": " << log;
    }
    previous_pid = rec;

    const FileFigures figures = ReadFigures(out, loop.name());
    const int64_t stored = figures.completes;
    // The kernel's completions since the recording began: at least `early - at_start` of them
    // happened while it recorded, more than a flush interval (1 s) before the kill, and at most
    // `at_kill - at_spawn` can be in the file.
    const uint64_t floor = early - at_start, ceiling = at_kill - at_spawn;
    std::printf("run %2d (%s): killed at %5.2f s; kernel completions: %llu up to 1.5 s before "
                "the kill, %llu at most; the file holds %lld (%.1f%% of the most)\n",
                run, backend.c_str(), delay / 1000.0, static_cast<unsigned long long>(floor),
                static_cast<unsigned long long>(ceiling), static_cast<long long>(stored),
                ceiling != 0 ? 100.0 * stored / ceiling : 0.0);
    std::fflush(stdout);  // before the next fork copies the buffer
    ASSERT_GE(stored, 0) << Sh(Binary() + " report -i " + out + " 2>&1").out;
    EXPECT_GE(static_cast<uint64_t>(stored), floor) << "run " << run;
    EXPECT_LE(static_cast<uint64_t>(stored), ceiling) << "run " << run;
    EXPECT_EQ(figures.unfinished, 1) << "run " << run;
    EXPECT_TRUE(figures.names_recover) << "run " << run;

    const bool check_readers = run == 0;  // the peers' readers are slow: the first run
    const CommandResult rec_ok = RunCmd({Binary(), "recover", out});
    ASSERT_EQ(rec_ok.exit_code, 0) << rec_ok.err;
    const FileFigures recovered = ReadFigures(out, loop.name());
    EXPECT_EQ(recovered.completes, stored) << "run " << run;
    EXPECT_EQ(recovered.unfinished, 1) << "run " << run;
    if (check_readers) {
      EXPECT_EQ(PeerCompletes(backend, out), stored) << "run " << run;
    }
    Sh("rm -f " + out + "*");
  }
  kill(fio, SIGTERM);
  waitpid(fio, nullptr, 0);
  // The last kill's leftovers go with the next run that starts; doctor is one.
  Sh(Binary() + " doctor >/dev/null 2>&1");
  EXPECT_EQ(TracefsSnapshot(), before) << "tracefs state changed";
}

INSTANTIATE_TEST_SUITE_P(Backends, RecordKillLiveTest, ::testing::Values("ftrace", "perf"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace iotrace::live
