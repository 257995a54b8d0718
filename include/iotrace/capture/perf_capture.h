// The perf backend of `iotrace record`: per CPU, one tracepoint perf event per recorded event,
// all redirected into that CPU's single mmapped ring; waits with epoll on the rings' wakeup
// watermark, drains them without decoding, and keeps the per-event, per-CPU books that show
// what the kernel counted against what reached the rings.
#ifndef IOTRACE_CAPTURE_PERF_CAPTURE_H_
#define IOTRACE_CAPTURE_PERF_CAPTURE_H_

#include <linux/perf_event.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "iotrace/sys/cpus.h"
#include "iotrace/base/bytes.h"
#include "iotrace/base/fd.h"
#include "iotrace/capture/perf_ring.h"
#include "iotrace/formats/perf_data_writer.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {

struct PerfCaptureOptions {
  std::vector<TraceEventInfo> events;
  std::vector<int> cpus;        // CPUs to record (all online CPUs by default)
  uint32_t mmap_pages = 1024;   // data pages per CPU ring, a power of two
  // Kernel-side filter text applied to every event that has a `dev` field (empty: none).
  std::string dev_filter;
  int clockid = 1;              // CLOCK_MONOTONIC
};

// An event's attr and the ids of its per-CPU fds, as the output file needs them.
struct CapturedEvent {
  perf_event_attr attr;
  std::string name;            // "system:event"
  uint32_t tracepoint_id = 0;
  std::vector<uint64_t> ids;   // one per CPU, in cpus order
};

// Books for one (event, CPU).
struct EventCpuCounts {
  uint64_t samples = 0;       // samples that reached the ring (and the output)
  uint64_t kernel_count = 0;  // read() on the fd: events the kernel counted
  uint64_t ring_lost = 0;     // PERF_FORMAT_LOST: samples lost because the ring was full
  // Counted by the kernel, neither sampled nor reported lost (never negative).
  uint64_t Silent() const {
    uint64_t accounted = samples + ring_lost;
    return kernel_count > accounted ? kernel_count - accounted : 0;
  }
};

class PerfCapture {
 public:
  static absl::StatusOr<std::unique_ptr<PerfCapture>> Open(const PerfCaptureOptions& options);
  ~PerfCapture();

  const std::vector<CapturedEvent>& events() const { return events_; }
  const std::vector<int>& cpus() const { return cpus_; }

  absl::Status Enable();
  absl::Status Disable();

  // Adds an fd (a signalfd) that ends Wait when readable.
  absl::Status WatchFd(int fd);
  absl::Status UnwatchFd(int fd);
  // Waits until a ring passes its wakeup watermark, a watched fd is readable, or `timeout_ms`
  // passes. Returns true when a watched fd is readable.
  absl::StatusOr<bool> Wait(int timeout_ms);

  // Drains every CPU's ring into `sink` (ring bytes, at most two pieces per ring).
  absl::Status DrainAll(absl::FunctionRef<absl::Status(int cpu, ByteView, ByteView)> sink);

  // In-place reading, for the live engine (instead of DrainAll): the next record of the ring
  // of cpus()[c], see PerfRing::ReadRecord; its header is counted into the ring's books.
  bool ReadRecord(size_t c, ByteView* record) {
    return rings_[c]->ReadRecord(record, &ring_counts_[c]);
  }
  // Hands the space of ring c's records read so far back to the kernel; the views ReadRecord
  // gave end here.
  void Release(size_t c) { rings_[c]->Release(); }
  // The same up to `position` only, and a view of the bytes not handed back yet (PerfRing's).
  void Release(size_t c, uint64_t position) { rings_[c]->Release(position); }
  void View(size_t c, uint64_t from, uint64_t to, ByteView* first, ByteView* second) const {
    rings_[c]->View(from, to, first, second);
  }
  // Brings the books' samples up to the records read in place so far (DrainAll does it itself).
  void CountReadSamples();
  // Ring c's read position and the kernel's write position (PerfRing::read_position, Head).
  uint64_t read_position(size_t c) const { return rings_[c]->read_position(); }
  uint64_t head(size_t c) const { return rings_[c]->Head(); }

  // Reads every fd's count and PERF_FORMAT_LOST into the books.
  absl::Status ReadCounts();

  // counts(event index, cpu index)
  const EventCpuCounts& counts(size_t event, size_t cpu) const {
    return counts_[event * cpus_.size() + cpu];
  }
  // PERF_RECORD_LOST records seen in a CPU's ring (events unknown), and their total.
  uint64_t lost_records(size_t cpu) const { return ring_counts_[cpu].lost_records; }
  uint64_t lost_in_records(size_t cpu) const { return ring_counts_[cpu].lost_events; }
  uint64_t bytes_drained() const;
  uint64_t bad_headers() const;

 private:
  PerfCapture() = default;
  // Copies ring c's sample counts into the books.
  void CountSamples(size_t c);

  std::vector<CapturedEvent> events_;
  std::vector<int> cpus_;
  std::vector<UniqueFd> fds_;          // [event * ncpu + cpu]
  std::vector<UniqueMapping> maps_;    // [cpu]
  std::vector<std::unique_ptr<PerfRing>> rings_;  // [cpu]
  std::vector<RingCounts> ring_counts_;           // [cpu]
  std::vector<EventCpuCounts> counts_;            // [event * ncpu + cpu]
  UniqueFd epoll_;
};

// The perf_event_attr iotrace records a tracepoint with (see PerfCapture).
perf_event_attr TracepointAttr(uint32_t tracepoint_id, int clockid, uint32_t wakeup_bytes,
                               bool track_comm);

// The perf.data side of a capture (record, and live with -o): the writer's specs of its events,
// and the names of every running process as COMM records, so that perf script and iotrace
// report can name the pids seen in samples (exec'd later ones come from the kernel's COMM
// records).
std::vector<PerfEventSpec> PerfEventSpecs(const PerfCapture& capture);
absl::Status WriteExistingComms(PerfDataWriter* writer, const CapturedEvent& first_event,
                                int first_cpu);


}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_PERF_CAPTURE_H_
