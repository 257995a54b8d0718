// The live engine's merge: the per-CPU streams of a LiveSource in time order, up to a
// watermark. A record is handed on only once no stream can still produce an earlier one: the
// caller gives as watermark a time that every CPU has passed (the clock read before the buffers
// were looked at, less a slack for writes under way), so that a CPU with an empty buffer holds
// nothing back. A record that turns up behind what was already handed on (its CPU's write took
// longer than the slack) is counted as late and dropped, never paired out of order.
#ifndef IOTRACE_LIVE_LIVE_MERGER_H_
#define IOTRACE_LIVE_LIVE_MERGER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "iotrace/event/raw_event.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/live/live_source.h"

namespace iotrace {

class LiveMerger {
 public:
  LiveMerger(LiveSource* source, EventSink* sink);

  // Hands `sink` every record with a time before `limit`, in time order (ties: the lower stream
  // first, as trace.dat's reader), taking new data from the source as streams run dry. A call
  // costs one look at every stream, then log2(streams) steps per record.
  absl::Status DeliverBefore(uint64_t limit);

  uint64_t delivered() const { return delivered_; }
  uint64_t late() const { return late_; }
  uint64_t last_ts() const { return last_ts_; }
  // The earliest record waiting (~0 when none): what DeliverBefore(~0) would hand on first.
  uint64_t next_ts() const;

 private:
  struct Cursor {
    size_t stream = 0;
    bool has = false;
    RawEvent event;
  };
  // A stream holding a record, in the heap: its time beside its index, so that the heap's
  // comparisons read one small array and no cursor (bench/live_merger_benchmark at 256 streams:
  // 101 -> 69 ns per event for the merge alone, against a heap of cursor pointers). Not
  // trace.dat's LoserTree (base/loser_tree.h): here it took 66 -> 76 ns at 256 streams for the
  // merge alone (19 against 22 at 2). Each record's Fill is a cache miss at many streams; the
  // tree knows its next winner only once the new time has gone through every level, while the
  // heap's next top is, when its branches are predicted, the root's smaller child, so the next
  // record's load starts before this sift ends.
  struct Entry {
    uint64_t ts;
    uint32_t stream;
  };
  // Makes `c` hold its stream's next record in order (late ones counted and skipped).
  absl::Status Fill(Cursor& c);
  void SiftDown(size_t i);

  LiveSource* source_;
  EventSink* sink_;
  std::vector<Cursor> cursors_;
  std::vector<Entry> heap_;  // a binary min-heap on (ts, stream)
  uint64_t delivered_ = 0;
  uint64_t late_ = 0;
  uint64_t last_ts_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_LIVE_LIVE_MERGER_H_
