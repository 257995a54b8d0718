#include "iotrace/base/signal_guard.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include "absl/strings/str_format.h"

namespace iotrace {

SignalGuard::SignalGuard(bool take_sigusr2) {
  sigemptyset(&set_);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set_, s);
  if (take_sigusr2) sigaddset(&set_, SIGUSR2);
  sigprocmask(SIG_BLOCK, &set_, &old_);
  fd_.Reset(signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
}

SignalGuard::~SignalGuard() {
  fd_.Reset();
  // Drop what is pending for signals we handled (SIGCHLD), then restore.
  sigprocmask(SIG_SETMASK, &old_, nullptr);
}

int SignalGuard::Read(bool* child_changed, bool* sigusr2) {
  int term = 0;
  signalfd_siginfo si;
  while (read(fd_.get(), &si, sizeof(si)) == sizeof(si)) {
    if (si.ssi_signo == SIGCHLD) {
      *child_changed = true;
    } else if (si.ssi_signo == SIGUSR2) {
      if (sigusr2 != nullptr) *sigusr2 = true;
    } else {
      term = static_cast<int>(si.ssi_signo);
    }
  }
  return term;
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return absl::StrFormat("signal %d", sig);
  }
}

}  // namespace iotrace
