// The live engine's perf source: PerfCapture's per-CPU mmapped rings read in place, one stream
// of records per CPU, samples decoded by perf.data's record parser where they lie. The kernel
// gets a ring's space back only for records the merge has taken; with -o, those bytes go to a
// perf.data first, as `record` writes it.
#ifndef IOTRACE_LIVE_PERF_SOURCE_H_
#define IOTRACE_LIVE_PERF_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/capture/perf_capture.h"
#include "iotrace/formats/perf_record_parser.h"
#include "iotrace/live/live_source.h"

namespace iotrace {

struct PerfLiveOptions {
  // `capture.clockid` should stay CLOCK_MONOTONIC: the engine's watermark is MonotonicNs().
  PerfCaptureOptions capture;
  std::string output;             // -o: the perf.data written beside; "" for none
  std::string tracefs;            // with -o: where the event formats are read for the file
  std::vector<std::string> argv;  // with -o: the command line, stored in the file
};

class PerfLiveSource : public LiveSource {
 public:
  static absl::StatusOr<std::unique_ptr<PerfLiveSource>> Create(PerfLiveOptions options);

  std::string backend() const override { return "perf"; }
  std::string ingest() const override { return "perf rings"; }
  const std::vector<EventFormat>& formats() const override { return formats_; }
  int nr_cpus() const override { return nr_cpus_; }
  size_t stream_count() const override { return cpus_.size(); }
  absl::Status SetEnabled(bool on) override;
  void WatchFd(int fd) override;
  absl::StatusOr<bool> Wait(int timeout_ms) override;
  absl::StatusOr<bool> Next(size_t i, RawEvent* event, EventSink* losses) override;
  uint64_t LostSoFar() override;
  absl::StatusOr<LiveSourceEnd> Finish(EventSink* losses) override;

  // Records the parser could not decode, or not as a tracepoint sample.
  uint64_t problems() const { return problems_; }

 private:
  PerfLiveSource() = default;
  // The silent drops of the books read at the last mark, for the rings read past it.
  void EstimateSilent();
  // Hands ring i's space before `position` back to the kernel, its bytes to the output first.
  void HandBack(size_t i, uint64_t position);

  std::unique_ptr<PerfCapture> cap_;
  PerfRecordParser parser_;
  std::vector<EventFormat> formats_;
  std::vector<int> cpus_;
  int nr_cpus_ = 0;
  bool enabled_ = false;
  absl::Status watch_error_;  // WatchFd's, returned by the next Wait
  uint64_t problems_ = 0;
  // A ring's space goes back to the kernel when it runs dry, or once this much was read: the
  // kernel reads data_tail's line, so not after every record.
  uint64_t release_every_ = 0;
  std::vector<uint64_t> released_;  // [cpu]: the read position last handed back
  // [cpu]: where the record handed out last begins (the merge may hold it): what lies before
  // is done with, and goes back at each Wait, so that every ring's bytes reach the output in
  // step with the others (a round of the file is one Wait's worth).
  std::vector<uint64_t> keep_;
  std::unique_ptr<PerfDataWriter> writer_;
  std::string output_;
  absl::Status storage_error_;  // the first failed write: the file holds what came before
  bool unrounded_ = false;      // bytes written since the last round mark
  uint64_t ring_lost_ = 0;  // events the PERF_RECORD_LOST records taken so far say were lost
  // Silent drops (kernel count - samples - ring lost) known mid-run, per [event * ncpu + cpu].
  // The kernel counts an event a moment before its sample reaches the ring, so the books read
  // at a mark are set against the samples only once the ring has been read past the head
  // loaded after them, one counts cadence later: never more than the truth.
  std::vector<uint64_t> silent_;
  bool mark_pending_ = false;
  uint64_t mark_ns_ = 0;
  std::vector<uint64_t> mark_head_;             // [cpu]
  std::vector<EventCpuCounts> mark_counts_;     // [event * ncpu + cpu]
};

}  // namespace iotrace

#endif  // IOTRACE_LIVE_PERF_SOURCE_H_
