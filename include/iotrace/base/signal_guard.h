// The signals of a run that traces (`record`, `live`): Ctrl-C, SIGTERM, SIGHUP and the traced
// command's SIGCHLD, taken from a signalfd that the run loop waits on; SIGUSR2 too for record's
// --switch-output=signal.
#ifndef IOTRACE_BASE_SIGNAL_GUARD_H_
#define IOTRACE_BASE_SIGNAL_GUARD_H_

#include <signal.h>

#include <string>

#include "iotrace/base/fd.h"

namespace iotrace {

// Blocks the signals the recorder handles and reads them from a signalfd instead, so that the
// run loop, not a handler, decides what to do; restores the old mask when done.
class SignalGuard {
 public:
  // `take_sigusr2`: SIGUSR2 is read too (as a request, see Read), not left to kill the process.
  explicit SignalGuard(bool take_sigusr2 = false);
  ~SignalGuard();
  int fd() const { return fd_.get(); }
  // Reads pending signals; returns the last terminating one (0 if none). SIGCHLD sets
  // *child_changed, SIGUSR2 *sigusr2 (when taken).
  int Read(bool* child_changed, bool* sigusr2 = nullptr);

 private:
  sigset_t set_, old_;
  UniqueFd fd_;
};

std::string SignalName(int sig);

}  // namespace iotrace

#endif  // IOTRACE_BASE_SIGNAL_GUARD_H_
