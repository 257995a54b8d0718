// Stale tracefs leftovers on a fake tracefs and a fake /proc: which iotrace_* instances belong to
// a process that is gone (or whose pid now runs something else) and are removed, and which stay.
#include "iotrace/sys/stale_tracefs.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test_files.h"

namespace iotrace {
namespace {

namespace fs = std::filesystem;

TEST(PidInIotraceNameTest, TakesTheLastNumberOfAnIotraceName) {
  EXPECT_EQ(PidInIotraceName("iotrace_1234"), 1234);
  EXPECT_EQ(PidInIotraceName("iotrace_check_77"), 77);
  EXPECT_EQ(PidInIotraceName("iotrace_x"), -1);
  EXPECT_EQ(PidInIotraceName("iotrace_0"), -1);
  EXPECT_EQ(PidInIotraceName("other_1234"), -1);
}

class StaleTracefsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::MakeTempDir("iotrace_stale_");
    ASSERT_FALSE(root_.empty()) << "mkdtemp in " << test::TestTmpDir();
    tracefs_ = root_ + "/tracing";
    procfs_ = root_ + "/proc";
    for (const char* inst : {"iotrace_4194304", "iotrace_100", "iotrace_200", "iotrace_check_300",
                             "iotrace_400", "iotrace_x", "other_x", "other_4194304"}) {
      fs::create_directories(tracefs_ + "/instances/" + inst);
    }
    Process(100, "iotrace");          // a live iotrace
    Process(200, "bash");             // pid 200 reused by something else
    Process(400, "iotrace_live_te");  // a live iotrace test binary (comm cut at 15)
  }
  void TearDown() override { fs::remove_all(root_); }
  void Process(int pid, const std::string& comm) {
    fs::create_directories(procfs_ + "/" + std::to_string(pid));
    std::ofstream(procfs_ + "/" + std::to_string(pid) + "/comm") << comm << "\n";
  }
  bool Exists(const std::string& inst) { return fs::exists(tracefs_ + "/instances/" + inst); }
  std::string root_, tracefs_, procfs_;
};

TEST_F(StaleTracefsTest, FindsOnlyIotraceNamesWithTheirOwners) {
  std::vector<TracefsLeftover> found = FindTracefsLeftovers(tracefs_, procfs_);
  std::vector<std::string> described;
  for (const TracefsLeftover& l : found) {
    described.push_back(l.kind + " " + l.name + " pid " + std::to_string(l.pid) + " '" + l.comm +
                        "' " + (l.stale() ? "stale" : "kept"));
  }
  EXPECT_EQ(described, (std::vector<std::string>{
                           "instance iotrace_100 pid 100 'iotrace' kept",
                           "instance iotrace_200 pid 200 'bash' stale",
                           "instance iotrace_400 pid 400 'iotrace_live_te' kept",
                           "instance iotrace_4194304 pid 4194304 '' stale",
                           "instance iotrace_check_300 pid 300 '' stale",
                           "instance iotrace_x pid -1 '' kept",
                       }));
}

TEST_F(StaleTracefsTest, RemovesWhatBelongsToNoIotraceAndSaysSoOnceEach) {
  std::vector<std::string> lines = RemoveStaleTracefs(tracefs_, procfs_);
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "iotrace: removed stale tracefs instance iotrace_200 (pid 200 is now bash, "
                       "not an iotrace)",
                       "iotrace: removed stale tracefs instance iotrace_4194304 (its process is "
                       "gone)",
                       "iotrace: removed stale tracefs instance iotrace_check_300 (its process "
                       "is gone)",
                   }));
  EXPECT_FALSE(Exists("iotrace_200"));
  EXPECT_FALSE(Exists("iotrace_4194304"));
  EXPECT_FALSE(Exists("iotrace_check_300"));
  for (const char* kept : {"iotrace_100", "iotrace_400", "iotrace_x", "other_x", "other_4194304"}) {
    EXPECT_TRUE(Exists(kept)) << kept;
  }
  EXPECT_TRUE(RemoveStaleTracefs(tracefs_, procfs_).empty());
}

TEST_F(StaleTracefsTest, AnInstanceThatCannotBeRemovedIsAWarningLine) {
  // A file inside the directory makes rmdir fail, as a busy instance does.
  std::ofstream(tracefs_ + "/instances/iotrace_4194304/trace") << "x";
  std::vector<std::string> lines = RemoveStaleTracefs(tracefs_, procfs_);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].rfind("iotrace: warning: stale tracefs instance iotrace_4194304 (its process "
                           "is gone) not removed: ",
                           0),
            0u)
      << lines[1];
  EXPECT_TRUE(Exists("iotrace_4194304"));
}

}  // namespace
}  // namespace iotrace
