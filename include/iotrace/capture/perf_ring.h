// One perf_event mmap ring (a metadata page + 2^n data pages), drained without decoding: its
// readable bytes go to a sink in at most two pieces (split at the wrap), and only the record
// headers are looked at, to count samples per event id and the kernel's LOST records. Or read
// in place, a record at a time (the live engine): records stay where the kernel wrote them
// until the reader hands their space back.
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

  // In-place reading (the live engine), instead of Drain (the two do not mix on one ring).
  // Takes the next whole record past the read position and counts its header as Drain does.
  // `record` views the ring where the record lies; a record that wraps around the ring's end is
  // copied into the ring's own buffer (the only copy). The view stays valid until the next
  // ReadRecord or Release: the kernel gets the space back only through Release. False when the
  // kernel has written no record past the read position (or the ring is corrupt: then what is
  // readable is skipped and counted in bad_headers).
  bool ReadRecord(ByteView* record, RingCounts* counts);
  // Hands the space of every record read so far back to the kernel (data_tail, release order).
  void Release() { Release(read_); }
  // Hands back the space before `position`: a record boundary no later than the read position
  // (the records before it are done with, those after it may still be in use).
  void Release(uint64_t position);
  // The ring's bytes from `from` to `to` (positions of records read, not yet handed back), in
  // place: `second` is the part after the wrap, empty when nothing wraps.
  void View(uint64_t from, uint64_t to, ByteView* first, ByteView* second) const;
  // Where the next ReadRecord reads, and where the kernel writes next, as positions since the
  // ring's start (data_tail and data_head are of the same kind).
  uint64_t read_position() const { return read_; }
  uint64_t Head() const { return __atomic_load_n(&meta_->data_head, __ATOMIC_ACQUIRE); }

  size_t data_size() const { return data_size_; }

 private:
  perf_event_mmap_page* meta_;
  uint8_t* data_;
  size_t data_size_;
  std::vector<uint64_t> ids_;
  RingCounts scratch_;  // one drain's counts, sized once: no allocation per drain
  // In-place reading: the read position, data_head as last loaded (reloaded only when the read
  // position reaches it), and the copy of a record that wraps (a record is at most 64 KiB).
  uint64_t read_ = 0;
  uint64_t head_ = 0;
  std::vector<uint8_t> wrapped_;
};

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_PERF_RING_H_
