// The signals of a run that traces (`record`, `live`): Ctrl-C, SIGTERM, SIGHUP and the traced
// command's SIGCHLD, taken from a signalfd that the run loop waits on.
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
  SignalGuard();
  ~SignalGuard();
  int fd() const { return fd_.get(); }
  // Reads pending signals; returns the last terminating one (0 if none).
  int Read(bool* child_changed);

 private:
  sigset_t set_, old_;
  UniqueFd fd_;
};

std::string SignalName(int sig);

}  // namespace iotrace

#endif  // IOTRACE_BASE_SIGNAL_GUARD_H_
