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

TEST(RecordCommandTest, OutputToStandardOutputIsRefusedWithAHint) {
  Result r = Record("-o - -d 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out,
            "iotrace: error: -o -: streaming the recording to standard output is not supported "
            "yet\n"
            "hint: write a file (-o FILE) and read it from there; iotrace report -i - reads "
            "perf's own stream (perf record -o -)\n");
}

}  // namespace
}  // namespace iotrace
