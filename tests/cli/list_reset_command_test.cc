// `iotrace list` and `iotrace reset` run as the built binary against a fake tracefs tree (no
// root needed): formats come from tests/fixtures/formats/6.18, exports from tests/fixtures/symvers.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../unit/test_files.h"
#include "fixtures.h"
#include "gtest/gtest.h"

namespace iotrace {
namespace {

namespace fs = std::filesystem;

using test::ReadFixture;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

Result RunIotrace(const std::string& args) {
  Result r;
  std::string cmd = std::string(IOTRACE_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class FakeTracefsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::MakeTempDir("iotrace_probes_cli_");
    ASSERT_FALSE(root_.empty()) << "mkdtemp in " << test::TestTmpDir();
    std::string available;
    for (const char* ev : {"block_rq_issue", "block_rq_insert", "block_rq_complete"}) {
      std::string format = test::ReadBlockFormat(ev);
      std::string id = format.substr(format.find("ID: ") + 4);
      id = id.substr(0, id.find('\n'));
      Write("events/block/" + std::string(ev) + "/format", format);
      Write("events/block/" + std::string(ev) + "/id", id + "\n");
      available += std::string("block:") + ev + "\n";
    }
    Write("available_events", available);
    fs::create_directories(root_ + "/instances/iotrace_4194304");  // pid_max is 4194304
    fs::create_directories(root_ + "/instances/someone_else");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories(fs::path(root_ + "/" + rel).parent_path());
    std::ofstream(root_ + "/" + rel) << text;
  }
  std::string root_;
};

TEST_F(FakeTracefsCli, ListBlockShowsWhichTracepointsAModuleCouldHook) {
  Result r = RunIotrace("list block --tracefs " + root_ + " --symvers " +
                        std::string(IOTRACE_FIXTURES) + "/symvers/Module.symvers");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("block:block_rq_insert"), std::string::npos) << r.out;
  std::istringstream lines(r.out);
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("block:block_rq_insert ", 0) == 0) {
      ++rows;
      EXPECT_NE(line.find(" 2105  tracepoint  exported"), std::string::npos) << line;
    }
    if (line.rfind("block:block_rq_issue ", 0) == 0) {
      ++rows;
      EXPECT_NE(line.find("tracepoint  not exported"), std::string::npos) << line;
    }
    if (line.rfind("block:block_rq_complete ", 0) == 0) {
      ++rows;
      EXPECT_NE(line.find("not exported"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(rows, 3) << r.out;
  EXPECT_NE(r.out.find("3 events"), std::string::npos);
}

TEST_F(FakeTracefsCli, ListVerboseShowsFieldsAndUnknownWithoutSymvers) {
  Result r = RunIotrace("list 'block:*issue' -v --tracefs " + root_ + " --symvers ''");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("block:block_rq_issue  (id 2104, tracepoint, module hook: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    ioprio                   unsigned short                 32     2"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    cmd                      __data_loc char[]              60     4"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("common_pid"), std::string::npos);
  EXPECT_EQ(r.out.find("block_rq_insert"), std::string::npos);
}

TEST_F(FakeTracefsCli, ListUnknownPatternSuggestsAndFails) {
  Result r = RunIotrace("list blok --tracefs " + root_);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("no event matches 'blok'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did you mean block?"), std::string::npos) << r.out;
}

TEST_F(FakeTracefsCli, ResetRemovesOnlyIotraceLeftovers) {
  Result dry = RunIotrace("reset --dry-run --tracefs " + root_);
  ASSERT_EQ(dry.exit_code, 0) << dry.out;
  EXPECT_NE(dry.out.find("would remove instance iotrace_4194304"), std::string::npos) << dry.out;
  EXPECT_TRUE(fs::exists(root_ + "/instances/iotrace_4194304"));

  Result r = RunIotrace("reset --tracefs " + root_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("removed   instance iotrace_4194304"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(root_ + "/instances/iotrace_4194304"));
  EXPECT_TRUE(fs::exists(root_ + "/instances/someone_else"));
  EXPECT_EQ(r.out.find("someone_else"), std::string::npos);

  Result again = RunIotrace("reset --tracefs " + root_);
  EXPECT_NE(again.out.find("nothing to remove"), std::string::npos) << again.out;
}

TEST_F(FakeTracefsCli, ResetKeepsWhatARunningProcessOwnsUnlessForced) {
  const std::string mine = "iotrace_" + std::to_string(getpid());
  fs::create_directories(root_ + "/instances/" + mine);
  Result r = RunIotrace("reset --tracefs " + root_);
  EXPECT_NE(r.out.find("kept      instance " + mine), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(root_ + "/instances/" + mine));
  Result forced = RunIotrace("reset --force " + mine + " --tracefs " + root_);
  EXPECT_NE(forced.out.find("removed   instance " + mine), std::string::npos) << forced.out;
  EXPECT_FALSE(fs::exists(root_ + "/instances/" + mine));
}

// doctor (as record and live) removes, before anything else, the instances of iotraces that
// are gone, one stderr line each, and keeps the rest: another name, a running iotrace's (this
// test binary's: comm iotrace_unit_te).
TEST_F(FakeTracefsCli, DoctorRemovesStaleInstancesFirst) {
  const std::string mine = "iotrace_" + std::to_string(getpid());
  fs::create_directories(root_ + "/instances/" + mine);
  Result r = RunIotrace("doctor --no-check --tracefs " + root_);
  EXPECT_NE(r.out.find("iotrace: removed stale tracefs instance iotrace_4194304 (its process is "
                       "gone)\n"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(root_ + "/instances/iotrace_4194304"));
  EXPECT_TRUE(fs::exists(root_ + "/instances/" + mine));
  EXPECT_TRUE(fs::exists(root_ + "/instances/someone_else"));
  EXPECT_EQ(r.out.find("stale tracefs instance " + mine), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("someone_else"), std::string::npos) << r.out;
}

TEST(ResetCliTest, RefusesNamesOutsideIotrace) {
  Result r = RunIotrace("reset 'my_*'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("only names starting with iotrace_"), std::string::npos) << r.out;
}

// Every command's --help, and iotrace's own, fits a terminal's 80 columns (FitHelp) and names
// its options.
TEST(HelpCliTest, EveryCommandsHelpFitsEightyColumns) {
  for (const std::string command :
       {"", "record", "report", "live", "list", "doctor", "reset", "diff", "recover"}) {
    SCOPED_TRACE(command);
    const Result r = RunIotrace(command + " --help");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("usage: iotrace"), std::string::npos) << r.out;
    if (!command.empty()) EXPECT_NE(r.out.find("-h, --help"), std::string::npos) << r.out;
    std::istringstream in(r.out);
    int lines = 0;
    for (std::string line; std::getline(in, line); ++lines) {
      EXPECT_LE(line.size(), 80u) << line;
    }
    EXPECT_GT(lines, 5);
  }
}

}  // namespace
}  // namespace iotrace
