#include "iotrace/base/gated_child.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

TEST(FindExecutableTest, SearchesPathAndChecksExplicitPaths) {
  auto sh = FindExecutable("sh");
  ASSERT_TRUE(sh.ok()) << sh.status();
  EXPECT_EQ(sh->back(), 'h');
  EXPECT_TRUE(FindExecutable("/bin/sh").ok());
  auto missing = FindExecutable("iotrace-no-such-command");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("command not found: iotrace-no-such-command"),
            std::string::npos);
  EXPECT_FALSE(FindExecutable("/etc/passwd").ok());  // not executable
  EXPECT_FALSE(FindExecutable("/tmp").ok());         // a directory
}

TEST(GatedChildTest, DoesNotRunBeforeReleaseAndReportsItsExitStatus) {
  std::string marker = ::testing::TempDir() + "/gated_marker";
  unlink(marker.c_str());
  auto child = GatedChild::Start({"sh", "-c", "touch " + marker + "; exit 3"});
  ASSERT_TRUE(child.ok()) << child.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  struct stat st;
  EXPECT_NE(stat(marker.c_str(), &st), 0) << "the command ran before Release()";
  EXPECT_FALSE(child->Poll());
  ASSERT_TRUE(child->Release().ok());
  child->Wait();
  EXPECT_TRUE(child->exited());
  EXPECT_EQ(child->exit_code(), 3);
  EXPECT_EQ(stat(marker.c_str(), &st), 0);
  unlink(marker.c_str());
}

TEST(GatedChildTest, SignalledChildGivesOneHundredTwentyEightPlusSignal) {
  auto child = GatedChild::Start({"sleep", "10"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Release().ok());
  child->Signal(SIGTERM);
  child->Wait();
  EXPECT_EQ(child->exit_code(), 128 + SIGTERM);
}

TEST(GatedChildTest, ExecFailureIsReportedByRelease) {
  // Executable by mode but not a valid program: found on the path, exec fails with ENOEXEC.
  std::string bad = ::testing::TempDir() + "/iotrace_not_a_program";
  { std::ofstream(bad) << "\x7f" "ELF garbage"; }
  chmod(bad.c_str(), 0755);
  auto child = GatedChild::Start({bad});
  ASSERT_TRUE(child.ok()) << child.status();
  absl::Status s = child->Release();
  std::remove(bad.c_str());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("run traced command"), std::string::npos) << s;
}

TEST(GatedChildTest, DroppingAnUnreleasedChildLeavesNoProcess) {
  pid_t pid;
  {
    auto child = GatedChild::Start({"sleep", "10"});
    ASSERT_TRUE(child.ok());
    pid = child->pid();
  }
  // Reaped by the destructor: no such process any more.
  EXPECT_NE(kill(pid, 0), 0);
}

TEST(GatedChildTest, UnknownCommandFailsAtStart) {
  auto child = GatedChild::Start({"iotrace-no-such-command"});
  EXPECT_FALSE(child.ok());
}

}  // namespace
}  // namespace iotrace
