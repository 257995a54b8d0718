#include "iotrace/capture/record_control.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"

namespace iotrace {
namespace {

constexpr char kSpecHint[] = "use --control fifo:CTL[,ACK] or --control fd:CTL[,ACK]";

absl::Status SpecError(std::string_view spec, std::string_view why) {
  return WithHint(absl::InvalidArgumentError(absl::StrFormat("--control '%s': %s", spec, why)),
                  kSpecHint);
}

absl::StatusOr<UniqueFd> OpenFifo(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError(errno, "open control FIFO", path);
  if (!S_ISFIFO(st.st_mode)) {
    return WithHint(
        absl::InvalidArgumentError(absl::StrFormat("--control: %s is not a FIFO", path)),
        absl::StrFormat("create it first: mkfifo %s", path));
  }
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open control FIFO", path);
  return fd;
}

absl::StatusOr<UniqueFd> DupFd(int fd) {
  UniqueFd dup(fcntl(fd, F_DUPFD_CLOEXEC, 3));
  if (!dup.valid()) {
    return WithHint(ErrnoError(errno, "use control fd", absl::StrFormat("%d", fd)),
                    "the fd must be open in the process that starts iotrace");
  }
  int flags = fcntl(dup.get(), F_GETFL);
  if (flags >= 0) fcntl(dup.get(), F_SETFL, flags | O_NONBLOCK);
  return dup;
}

}  // namespace

absl::StatusOr<ControlSpec> ParseControlSpec(std::string_view spec) {
  ControlSpec out;
  std::string_view rest;
  if (spec.starts_with("fifo:")) {
    rest = spec.substr(5);
  } else if (spec.starts_with("fd:")) {
    out.fifo = false;
    rest = spec.substr(3);
  } else {
    return SpecError(spec, "expected fifo: or fd:");
  }
  std::vector<std::string_view> parts = SplitText(rest, ',', /*skip_empty=*/false);
  if (parts.size() > 2 || parts[0].empty() || (parts.size() == 2 && parts[1].empty())) {
    return SpecError(spec, "expected one or two names after the colon");
  }
  if (out.fifo) {
    out.ctl_path = std::string(parts[0]);
    if (parts.size() == 2) out.ack_path = std::string(parts[1]);
    return out;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    int fd = -1;
    if (!absl::SimpleAtoi(std::string(parts[i]), &fd) || fd < 0) {
      return SpecError(spec, absl::StrFormat("'%s' is not a file descriptor number", parts[i]));
    }
    (i == 0 ? out.ctl_fd : out.ack_fd) = fd;
  }
  return out;
}

ControlCommand ParseControlCommand(std::string_view line) {
  std::string_view cmd = TrimText(line);
  if (cmd == "enable") return ControlCommand::kEnable;
  if (cmd == "disable") return ControlCommand::kDisable;
  if (cmd == "stop") return ControlCommand::kStop;
  if (cmd == "ping") return ControlCommand::kPing;
  return ControlCommand::kUnknown;
}

void ControlLineBuffer::Append(std::string_view bytes, std::vector<std::string>* lines) {
  for (char c : bytes) {
    if (c == '\n' || c == '\0') {
      if (!TrimText(partial_).empty()) lines->push_back(partial_);
      partial_.clear();
    } else if (partial_.size() < 256) {  // a line longer than any command is cut, not grown
      partial_.push_back(c);
    }
  }
}

absl::StatusOr<ControlChannel> ControlChannel::Open(const ControlSpec& spec) {
  ControlChannel ch;
  if (spec.fifo) {
    IOTRACE_ASSIGN_OR_RETURN(ch.ctl_, OpenFifo(spec.ctl_path));
    if (!spec.ack_path.empty()) {
      IOTRACE_ASSIGN_OR_RETURN(ch.ack_, OpenFifo(spec.ack_path));
    }
  } else {
    IOTRACE_ASSIGN_OR_RETURN(ch.ctl_, DupFd(spec.ctl_fd));
    if (spec.ack_fd >= 0) {
      IOTRACE_ASSIGN_OR_RETURN(ch.ack_, DupFd(spec.ack_fd));
    }
  }
  return ch;
}

absl::StatusOr<bool> ControlChannel::Read(std::vector<std::string>* lines) {
  char buf[512];
  for (;;) {
    ssize_t n = ::read(ctl_.get(), buf, sizeof(buf));
    if (n > 0) {
      lines_.Append(std::string_view(buf, static_cast<size_t>(n)), lines);
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return true;
    return ErrnoError(errno, "read", "the --control channel");
  }
}

void ControlChannel::Ack() {
  if (!ack_.valid()) return;
  static constexpr char kAck[] = "ack\n";
  ssize_t n;
  do {
    n = ::write(ack_.get(), kAck, sizeof(kAck) - 1);
  } while (n < 0 && errno == EINTR);
}

}  // namespace iotrace
