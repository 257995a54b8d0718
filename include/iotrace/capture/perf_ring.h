// One perf_event mmap ring (a metadata page + 2^n data pages), drained without decoding: its
// readable bytes go to a sink in at most two pieces (split at the wrap), and only the record
// headers are looked at, to count samples per event id and the kernel's LOST records.
#ifndef IOTRACE_CAPTURE_PERF_RING_H_
#define IOTRACE_CAPTURE_PERF_RING_H_

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "iotrace/base/bytes.h"

namespace iotrace {

// What one drain saw in the record headers. `samples` is indexed like the ids given to
// PerfRing (one slot per event sharing the ring); samples of other ids land in `other`.
struct RingCounts {
  std::vector<uint64_t> samples;
  uint64_t other_samples = 0;
  uint64_t lost_records = 0;  // PERF_RECORD_LOST records seen
  uint64_t lost_events = 0;   // sum of their `lost` fields
  uint64_t records = 0;       // all records
  uint64_t bytes = 0;
  uint64_t bad_headers = 0;   // size 0 / not 8-aligned / past the readable end (ring corrupt)
};

class PerfRing {
 public:
  // `base` is the mapping (metadata page first), `data_size` a power of two. `ids` are the
  // kernel ids (PERF_EVENT_IOC_ID) of the events writing into this ring, all with
  // PERF_SAMPLE_IDENTIFIER so a sample's id sits right after its header.
  PerfRing(void* base, size_t page_size, size_t data_size, std::vector<uint64_t> ids);

  // Bytes the kernel has written and we have not consumed yet.
  uint64_t Readable() const;

  // Passes the readable bytes to `sink` (first piece, second piece after the wrap; the second
  // is empty when nothing wraps), counts headers into `counts`, then hands the space back to
  // the kernel (data_tail, release). When the sink fails, nothing is released or counted: the
  // bytes did not reach the output.
  absl::Status Drain(absl::FunctionRef<absl::Status(ByteView, ByteView)> sink,
                     RingCounts* counts);

  size_t data_size() const { return data_size_; }

 private:
  perf_event_mmap_page* meta_;
  uint8_t* data_;
  size_t data_size_;
  std::vector<uint64_t> ids_;
  RingCounts scratch_;  // one drain's counts, sized once: no allocation per drain
};

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_PERF_RING_H_
