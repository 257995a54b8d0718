// What a killed iotrace leaves in tracefs is removed by the next record, and nothing else is:
// an instance (and a kprobe group, where kprobes work) named after a process that exited goes,
// one named after a pid that now runs `sleep` goes, while one named after this test binary (an
// iotrace) and one named other_x stay. Everything the test made is removed on every path.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "live_util.h"

namespace iotrace {
namespace {

using live::Binary;
using live::CommandResult;
using live::RunCmd;

constexpr char kTracing[] = "/sys/kernel/tracing";

// A pid that ran a process and no longer does (reaped).
pid_t ExitedPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// What the test made in tracefs and the process it started, undone at the end whatever happens.
struct Made {
  std::vector<std::string> instances;
  std::string probe;  // "group/event" of a kprobe, "" when none was made
  pid_t sleeper = -1;
  ~Made() {
    if (!probe.empty()) {
      std::ofstream(std::string(kTracing) + "/kprobe_events", std::ios::app)
          << "-:" << probe << "\n";
    }
    for (const std::string& i : instances) {
      rmdir((std::string(kTracing) + "/instances/" + i).c_str());
    }
    if (sleeper > 0) {
      kill(sleeper, SIGKILL);
      waitpid(sleeper, nullptr, 0);
    }
  }
  bool Instance(const std::string& name) {
    if (mkdir((std::string(kTracing) + "/instances/" + name).c_str(), 0755) != 0) return false;
    instances.push_back(name);
    return true;
  }
};

bool Exists(const std::string& instance) {
  struct stat st;
  return stat((std::string(kTracing) + "/instances/" + instance).c_str(), &st) == 0;
}

TEST(StaleTracefsLiveTest, RecordRemovesWhatAGoneProcessLeftAndKeepsTheRest) {
  IOTRACE_REQUIRE_LIVE();
  Made made;
  const pid_t dead = ExitedPid();
  ASSERT_NE(kill(dead, 0), 0);
  made.sleeper = fork();
  if (made.sleeper == 0) {
    execlp("sleep", "sleep", "60", nullptr);
    _exit(127);
  }
  ASSERT_GT(made.sleeper, 0);
  usleep(100 * 1000);  // until it is sleep (comm set by exec)
  const std::string gone = "iotrace_" + std::to_string(dead);
  const std::string reused = "iotrace_" + std::to_string(made.sleeper);
  const std::string mine = "iotrace_" + std::to_string(getpid());  // comm iotrace_live_te
  for (const std::string& name : {gone, reused, mine, std::string("other_x")}) {
    ASSERT_TRUE(made.Instance(name)) << name << ": " << strerror(errno);
  }
  // A kprobe in the gone process's group, where the kernel has kprobes.
  const std::string group_event = gone + "/iotrace_stale_probe";
  {
    std::ofstream kp(std::string(kTracing) + "/kprobe_events", std::ios::app);
    kp << "p:" << group_event << " vfs_read\n";
    kp.flush();
    if (kp.good()) made.probe = group_event;
  }
  if (made.probe.empty()) {
    std::printf("note: no kprobe could be made here (kprobe_events): probe groups not checked\n");
  }

  live::TempDir dir;
  CommandResult r = RunCmd({Binary(), "record", "-d", "1", "-o", dir.File("r.dat")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(live::CountLines(r.err, "iotrace: removed stale tracefs instance " + gone +
                                        " (its process is gone)"),
            1u)
      << r.err;
  EXPECT_EQ(live::CountLines(r.err, "iotrace: removed stale tracefs instance " + reused +
                                        " (pid " + std::to_string(made.sleeper) +
                                        " is now sleep, not an iotrace)"),
            1u)
      << r.err;
  if (!made.probe.empty()) {
    EXPECT_EQ(live::CountLines(r.err, "iotrace: removed stale probe event " + gone +
                                          ":iotrace_stale_probe (its process is gone)"),
              1u)
        << r.err;
    const std::string events = live::Slurp(std::string(kTracing) + "/kprobe_events");
    EXPECT_EQ(events.find(gone), std::string::npos) << events;
    made.probe.clear();
  }
  EXPECT_EQ(r.err.find(mine), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("other_x"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(gone));
  EXPECT_FALSE(Exists(reused));
  EXPECT_TRUE(Exists(mine));
  EXPECT_TRUE(Exists("other_x"));

  // Nothing stale left: the next run says nothing of it.
  CommandResult again = RunCmd({Binary(), "record", "-d", "1", "-o", dir.File("r2.dat")});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find("stale"), std::string::npos) << again.err;
}

}  // namespace
}  // namespace iotrace
