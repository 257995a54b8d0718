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
#include "iotrace/base/loser_tree.h"
#include "iotrace/event/raw_event.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/live/live_source.h"

namespace iotrace {

class LiveMerger {
 public:
  LiveMerger(LiveSource* source, EventSink* sink);

  // Hands `sink` every record with a time before `limit`, in time order (ties: the lower stream
  // first, as trace.dat's reader), taking new data from the source as streams run dry. A call
  // costs one look at every stream, then log2(streams) matches per record.
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
  // Makes `c` hold its stream's next record in order (late ones counted and skipped).
  absl::Status Fill(Cursor& c);

  LiveSource* source_;
  EventSink* sink_;
  std::vector<Cursor> cursors_;
  // The streams holding a record, by (ts, stream): the matches read the tree's own small array
  // and no cursor. Better than the heap of (ts, stream) it replaced only since the sources ask
  // for each stream's next record ahead (ftrace_source, perf_source): without that, every fill
  // missed the cache at many streams, and the tree, whose next winner is known only once the new
  // time has gone through every level, waited for each miss in turn where the heap's predicted
  // branches ran ahead (bench/README.md, "The live engine against the number of per-CPU
  // buffers").
  LoserTree tree_;
  uint64_t delivered_ = 0;
  uint64_t late_ = 0;
  uint64_t last_ts_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_LIVE_LIVE_MERGER_H_
