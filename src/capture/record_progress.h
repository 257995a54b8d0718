// `iotrace record`'s progress line on stderr, refreshed about once a second: rate, bytes
// written, losses so far. Private to the capture stage.
#ifndef IOTRACE_CAPTURE_RECORD_PROGRESS_H_
#define IOTRACE_CAPTURE_RECORD_PROGRESS_H_

#include <cstdint>
#include <string>

namespace iotrace {

// What the progress line and the loop need to know about a running capture.
struct CaptureProgress {
  uint64_t events = 0;       // events so far (0 when the backend does not know: ftrace)
  bool events_known = true;
  uint64_t bytes = 0;        // bytes written to the output
  uint64_t ring_lost = 0;    // reported lost so far
  uint64_t silent = 0;       // silently dropped so far (perf)
  std::string latency;       // RecordTap::Progress: device time per disk ("" for none)
  // --switch-output / --max-size: the run's files on disk and their bytes (files 0: not shown).
  uint64_t files = 0;
  uint64_t disk_bytes = 0;
};

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  void Update(double seconds, const CaptureProgress& p);
  void Clear();

 private:
  bool enabled_;
  bool shown_ = false;
  double last_s_ = 0;
  uint64_t last_events_ = 0;
  uint64_t last_bytes_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_RECORD_PROGRESS_H_
