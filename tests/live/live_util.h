// Support for live tests: they need root, tracefs and loop devices, create what they use
// (a scratch loop device, files under a temp dir) and remove it on every path. Each missing
// requirement skips the test with its reason.
#ifndef IOTRACE_TESTS_LIVE_LIVE_UTIL_H_
#define IOTRACE_TESTS_LIVE_LIVE_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace::live {

// Empty when the machine can run live tests, else the reason it cannot.
std::string LiveTestBlocker();
bool HaveTool(const std::string& name);

#define IOTRACE_REQUIRE_LIVE()                                   \
  do {                                                           \
    std::string blocker_ = ::iotrace::live::LiveTestBlocker();   \
    if (!blocker_.empty()) GTEST_SKIP() << blocker_;             \
  } while (0)

#define IOTRACE_REQUIRE_TOOL(tool)                                              \
  do {                                                                          \
    if (!::iotrace::live::HaveTool(tool)) GTEST_SKIP() << tool " is not installed"; \
  } while (0)

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

// Runs argv (no shell) and collects stdout/stderr.
CommandResult RunCmd(const std::vector<std::string>& argv);
// Runs a shell command line.
CommandResult Sh(const std::string& command);

// A scratch directory removed (recursively) on destruction; kept, and its path printed, when the
// test has failed and IOTRACE_KEEP_FAILED is set (a rare failure's files, to look at after).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A loop device over a sparse file, with the given scheduler; detached on destruction.
class ScratchLoop {
 public:
  explicit ScratchLoop(const std::string& scheduler = "mq-deadline", uint64_t size_mb = 256);
  ~ScratchLoop();
  bool ok() const { return !device_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& device() const { return device_; }  // /dev/loopN
  std::string name() const;                               // loopN
  uint32_t major() const { return major_; }
  uint32_t minor() const { return minor_; }
  std::string majmin() const;                             // "7:3"

 private:
  std::string backing_;
  std::string device_;
  std::string error_;
  uint32_t major_ = 0, minor_ = 0;
};

// What iotrace could leave behind in tracefs: instances, enabled events, filters, dynamic
// events, tracing_on. Two snapshots compare equal when nothing changed.
std::map<std::string, std::string> TracefsSnapshot();

// The path of the built iotrace binary.
std::string Binary();

// Counts lines of `text` containing `needle`.
size_t CountLines(const std::string& text, const std::string& needle);

// A whole file as a string ("" when it cannot be read).
std::string Slurp(const std::string& path);

// fio's count of I/Os it completed in one direction ("total_ios" of the job's "read" or
// "write" section of its --output-format=json), 0 when absent.
uint64_t FioIos(const std::string& json_path, const std::string& direction);

// Starts argv with standard output to /dev/null and standard error into `err`; the pid.
pid_t SpawnQuiet(const std::vector<std::string>& argv, const std::string& err);

// `perf script` (backend "perf") or `trace-cmd report`'s count of block_rq_complete records in
// `path`, -1 when it fails.
int64_t PeerCompletes(const std::string& backend, const std::string& path);

// block:block_rq_complete counted on every CPU for one device, as the kernel counts it: a
// counting perf event per CPU with the device filter, independent of what iotrace records.
class CompletionCounter {
 public:
  CompletionCounter(uint32_t major, uint32_t minor);
  ~CompletionCounter();
  CompletionCounter(const CompletionCounter&) = delete;
  CompletionCounter& operator=(const CompletionCounter&) = delete;
  bool ok() const { return !fds_.empty(); }
  uint64_t Read() const;

 private:
  std::vector<int> fds_;
};

}  // namespace iotrace::live

#endif  // IOTRACE_TESTS_LIVE_LIVE_UTIL_H_
