// `iotrace record`'s run loop, shared by both backends: waits on the kernel's buffers, the
// signals and the --control channel, drains, refreshes the progress line, and ends on the
// duration, the command's exit, a signal or a stop. Private to the capture stage.
#ifndef IOTRACE_CAPTURE_RECORD_LOOP_H_
#define IOTRACE_CAPTURE_RECORD_LOOP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/base/gated_child.h"
#include "iotrace/capture/record.h"
#include "iotrace/capture/record_control.h"
#include "iotrace/capture/record_rotation.h"
#include "record_progress.h"
#include "iotrace/base/signal_guard.h"

namespace iotrace {

// The two backends as the run loop sees them.
class RunningCapture {
 public:
  virtual ~RunningCapture() = default;
  virtual absl::Status WatchFd(int fd) = 0;
  virtual absl::Status UnwatchFd(int fd) = 0;
  // Turns the events on or off in the kernel (--delay, --control); the output stays open.
  virtual absl::Status SetEnabled(bool on) = 0;
  // Waits for data, a watched fd (true), or the timeout.
  virtual absl::StatusOr<bool> Wait(int timeout_ms) = 0;
  // Moves what is there to the output; `check` (about once a second) also refreshes the
  // loss books (and writes what they found into the output).
  virtual absl::Status Drain(bool check) = 0;
  virtual CaptureProgress Progress() const = 0;
  virtual bool disk_full() const = 0;
  // --switch-output: the file being written is finished (or handed to a thread that finishes
  // it) with everything taken from the kernel so far, and the recording goes on into `path`.
  // Files finished meanwhile are reported to the rotation (the oldest removed past
  // --switch-max-files).
  virtual absl::Status SwitchOutput(const std::string& path) = 0;
  // Bytes on disk of the file being written, and of every file opened but not finished yet.
  virtual uint64_t CurrentBytes() const = 0;
  virtual uint64_t OpenBytes() const = 0;
  // The recording ends before it began (the command could not be let go): the events off, the
  // output closed, errors aside (the cause is what is reported).
  virtual void Abandon() = 0;
};

// Both backends' start, in order: the loop will watch the signals and the --control channel,
// the backend is announced, the events go on unless --delay holds them, and the command is let
// go. A command that cannot be let go abandons the recording (a usage error). Returns when the
// recording started (MonotonicNs), for RunLoop.
absl::StatusOr<uint64_t> StartRecording(const RecordOptions& opt, RunningCapture& cap,
                                        SignalGuard& signals, GatedChild* child,
                                        ControlChannel* control, const RecordSummary& summary);

// Runs until the duration passes, the command exits, a signal arrives, the --control client
// says stop or the run's files reach --max-size. The caller released the command and enabled the
// events unless --delay holds them. `rotation` (--switch-output, --max-size; may be null) says
// when to switch files and when to stop.
absl::Status RunLoop(const RecordOptions& opt, RunningCapture& cap, SignalGuard& signals,
                     GatedChild* child, ControlChannel* control, uint64_t start_ns,
                     OutputRotation* rotation, RecordSummary* summary);

// The rotation of a recording with --switch-output or --max-size (null without them), and the
// name of its first file: OUTPUT itself, or OUTPUT.YYYYMMDDHHMMSSCC when switching.
std::unique_ptr<OutputRotation> MakeRotation(const RecordOptions& opt, const std::string& output,
                                             std::string* first_path);
// Removes the finished files the rotation gave up (--switch-max-files), saying so on stderr.
void RemoveRotatedFiles(const std::vector<std::string>& paths, int max_files);
// The summary's figures of a rotating recording (files made, kept, bytes).
void SummarizeRotation(const OutputRotation& rotation, RecordSummary* summary);

// After the recording: a command still running when the recording stopped for a reason of its
// own (duration, --control stop, an error) is ended with SIGTERM, as perf record does, instead of
// being waited for. Returns what iotrace exits with: the command's status, or 0 when iotrace
// ended it. After a signal (passed on to the command) the command is waited for.
int EndCommand(GatedChild& child, const RecordSummary& s);

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_RECORD_LOOP_H_
