// What the tests of tests/cli share: the built binary run as a user runs it, from a folder of
// the test's own, its exit status, standard output and standard error kept apart.
#ifndef IOTRACE_TESTS_CLI_CLI_TEST_UTIL_H_
#define IOTRACE_TESTS_CLI_CLI_TEST_UTIL_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test_files.h"

namespace iotrace::test {

struct RunResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;
  std::string err;
};

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// `s` as one word of sh, whatever it holds.
inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// A test with a folder of its own under the temporary directory (iotrace-NAME-test-PID-TEST),
// removed after it, from which the binary runs.
class CliTest : public ::testing::Test {
 protected:
  explicit CliTest(std::string name) : name_(std::move(name)) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("iotrace-" + name_ + "-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `iotrace ARGS...`, each argument one word.
  RunResult RunArgs(const std::vector<std::string>& args) {
    std::string line;
    for (const std::string& a : args) {
      // Appended piece by piece: "..." + ShellQuote(...) trips GCC 12's -Wstringop-overflow (a
      // false positive) once this is inlined into enough tests.
      line += " ";
      line += ShellQuote(a);
    }
    return RunLine(line);
  }

  // `iotrace` followed by `line` as sh reads it (its quoting is the caller's).
  RunResult RunLine(const std::string& line) {
    const std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    std::string cmd = "cd ";
    cmd += ShellQuote(dir_.string());
    cmd += " && ";
    cmd += ShellQuote(IOTRACE_BINARY);
    cmd += " ";
    cmd += line;
    cmd += " >";
    cmd += ShellQuote(out);
    cmd += " 2>";
    cmd += ShellQuote(err);
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }

  std::filesystem::path dir_;

 private:
  std::string name_;
};

}  // namespace iotrace::test

#endif  // IOTRACE_TESTS_CLI_CLI_TEST_UTIL_H_
