// The command traced by `iotrace record -- CMD ARGS`: started before recording begins but held
// at a gate until the events are enabled, so that none of its I/O escapes the recording.
#ifndef IOTRACE_BASE_GATED_CHILD_H_
#define IOTRACE_BASE_GATED_CHILD_H_

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/base/fd.h"

namespace iotrace {

// Finds `name` in $PATH (or checks it when it contains a '/'); NotFound when it is not there or
// not executable.
absl::StatusOr<std::string> FindExecutable(const std::string& name);

class GatedChild {
 public:
  // Forks; the child restores default signal handling and an empty signal mask, waits for
  // Release(), then execs argv. Fails when argv[0] cannot be found. `stdout_to_stderr`: the
  // command's standard output goes to standard error (ours carries a stream).
  static absl::StatusOr<GatedChild> Start(const std::vector<std::string>& argv,
                                          bool stdout_to_stderr = false);
  GatedChild(GatedChild&& other) noexcept { *this = std::move(other); }
  GatedChild& operator=(GatedChild&& other) noexcept {
    pid_ = std::exchange(other.pid_, -1);
    gate_ = std::move(other.gate_);
    exec_error_ = std::move(other.exec_error_);
    exited_ = other.exited_;
    exit_code_ = other.exit_code_;
    return *this;
  }
  ~GatedChild();

  // Lets the child exec; returns an error when exec fails (errno passed back over a pipe).
  absl::Status Release();
  pid_t pid() const { return pid_; }
  // Non-blocking reap; true once the child has exited (exit_code() valid).
  bool Poll();
  // Blocking reap.
  void Wait();
  bool exited() const { return exited_; }
  // The command's exit status, or 128 + signal when a signal ended it.
  int exit_code() const { return exit_code_; }
  // Sends `sig` to the child if it still runs.
  void Signal(int sig);

 private:
  GatedChild() = default;
  void Record(int status);

  pid_t pid_ = -1;
  UniqueFd gate_;        // write end: closing it (or writing) releases the child
  UniqueFd exec_error_;  // read end: 4 bytes of errno when exec failed, EOF on success
  bool exited_ = false;
  int exit_code_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_BASE_GATED_CHILD_H_
