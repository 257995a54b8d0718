// `iotrace record` from the command line: options that would do something else than they say
// are refused before anything is recorded, with the exact message and a hint (exit 2).
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

struct Result {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

Result Record(const std::string& args) {
  Result r;
  const std::string cmd = std::string(IOTRACE_BINARY) + " record " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(RecordCommandTest, DurationZeroIsRefusedInsteadOfRecordingUntilCtrlC) {
  Result r = Record("-d 0 -o /nonexistent/x.data");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out,
            "iotrace: error: --duration 0: a recording of 0 s holds nothing\n"
            "hint: omit -d to record until Ctrl-C or until the command after -- ends\n");
  Result neg = Record("-d -1");
  EXPECT_EQ(neg.exit_code, 2);
  EXPECT_NE(neg.out.find("iotrace: error: --duration: '-1' is not a number of seconds"),
            std::string::npos)
      << neg.out;
}

// -o - streams perf's pipe mode (tests/live/record_live_test.cc); the ftrace backend cannot.
TEST(RecordCommandTest, OutputToStandardOutputWithFtraceIsRefusedWithAHint) {
  Result r = Record("-b ftrace -o - -d 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out,
            "iotrace: error: -o - with the ftrace backend: a trace.dat cannot be streamed (its "
            "per-CPU table comes before the data)\n"
            "hint: use --backend perf (or auto) for a stream in perf's pipe mode, or write a "
            "file with -o FILE\n");
}

}  // namespace
}  // namespace iotrace
