// What the live engine reads: the kernel's per-CPU buffers as streams of records that appear as
// the kernel writes them, each stream in time order (one per CPU), plus the kernel's loss
// counters. The ftrace source (ftrace_source.h) reads memory-mapped sub-buffers, or pages by
// read(); the perf source (perf_source.h) reads the perf rings. Records are handed over where
// they lie (RawEvent::payload points into the buffer), valid until the next call for the stream.
#ifndef IOTRACE_LIVE_LIVE_SOURCE_H_
#define IOTRACE_LIVE_LIVE_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/event/event_format.h"
#include "iotrace/event/raw_event.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {

// How a run ended on the source's side, for the summary.
struct LiveSourceEnd {
  uint64_t output_bytes = 0;  // the recording written beside (-o), 0 without
  bool disk_full = false;
  absl::Status storage_error;
  absl::Status cleanup_error;  // the file is fine, but something was left (then: iotrace reset)
  std::vector<std::string> notes;  // one line each, for the summary
};

class LiveSource {
 public:
  virtual ~LiveSource() = default;

  virtual std::string backend() const = 0;  // "ftrace", "perf"
  virtual std::string ingest() const = 0;   // "mmap", "read", "perf rings"
  // Why the preferred way of reading was not used ("" when it was).
  virtual std::string ingest_note() const { return ""; }
  virtual const std::vector<EventFormat>& formats() const = 0;
  virtual int nr_cpus() const = 0;
  virtual size_t stream_count() const = 0;

  virtual absl::Status SetEnabled(bool on) = 0;
  virtual void WatchFd(int fd) = 0;
  // Waits for data, a watched fd (true) or the timeout.
  virtual absl::StatusOr<bool> Wait(int timeout_ms) = 0;

  // The next record of stream `i` that the kernel has written by now; false when there is none
  // yet. The payload stays valid until the next call for `i`. Losses the stream's data reports
  // (a page that says events were missed before it) go to `losses`.
  virtual absl::StatusOr<bool> Next(size_t i, RawEvent* event, EventSink* losses) = 0;

  // Events the kernel lost so far (its counters), for each interval's count.
  virtual uint64_t LostSoFar() = 0;

  // After every record was taken (the events off): hands the kernel's final loss counts to
  // `losses` (as a reader of the recording would find them), closes the output, cleans up.
  virtual absl::StatusOr<LiveSourceEnd> Finish(EventSink* losses) = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_LIVE_LIVE_SOURCE_H_
