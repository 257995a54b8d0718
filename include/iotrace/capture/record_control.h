// `iotrace record --control`: perf record's control channel. A client writes commands, one per
// line, into a FIFO or an inherited fd; iotrace carries them out between two drains and answers
// "ack\n" on the ack channel when there is one. Commands: enable, disable, stop, ping (the
// subset of perf's that applies to tracepoints). With --delay -1 the recording starts disabled.
#ifndef IOTRACE_CAPTURE_RECORD_CONTROL_H_
#define IOTRACE_CAPTURE_RECORD_CONTROL_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/base/fd.h"

namespace iotrace {

// "fifo:CTL[,ACK]" (paths, created by the client) or "fd:CTL[,ACK]" (inherited descriptors).
struct ControlSpec {
  bool fifo = true;
  std::string ctl_path, ack_path;  // fifo form; ack_path may be empty
  int ctl_fd = -1, ack_fd = -1;    // fd form; ack_fd may be -1
};
absl::StatusOr<ControlSpec> ParseControlSpec(std::string_view spec);

enum class ControlCommand { kEnable, kDisable, kStop, kPing, kUnknown };
// One line as received (surrounding blanks ignored).
ControlCommand ParseControlCommand(std::string_view line);

// Cuts a byte stream into commands: each ends at '\n' or '\0' (perf's clients send either).
class ControlLineBuffer {
 public:
  // Appends `bytes` and moves every complete, non-empty line into `lines`.
  void Append(std::string_view bytes, std::vector<std::string>* lines);

 private:
  std::string partial_;
};

class ControlChannel {
 public:
  // Opens the channel without blocking: the FIFOs read-write (so that a client closing its end
  // is no end-of-file and writing "ack" never waits for a reader), fds duplicated.
  static absl::StatusOr<ControlChannel> Open(const ControlSpec& spec);

  int fd() const { return ctl_.get(); }
  // Reads whatever is there (never blocks) into complete commands. False once the client closed
  // an fd-form channel for good (the caller stops watching it).
  absl::StatusOr<bool> Read(std::vector<std::string>* lines);
  // Answers one command, as perf does; a missing or full ack channel is not an error.
  void Ack();

 private:
  UniqueFd ctl_, ack_;
  ControlLineBuffer lines_;
};

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_RECORD_CONTROL_H_
