#include "iotrace/live/live_merger.h"

#include "iotrace/base/status.h"

namespace iotrace {

LiveMerger::LiveMerger(LiveSource* source, EventSink* sink) : source_(source), sink_(sink) {
  cursors_.resize(source->stream_count());
  for (size_t i = 0; i < cursors_.size(); ++i) cursors_[i].stream = i;
}

absl::Status LiveMerger::Fill(Cursor& c) {
  for (;;) {
    IOTRACE_ASSIGN_OR_RETURN(c.has, source_->Next(c.stream, &c.event, sink_));
    if (!c.has) return absl::OkStatus();
    if (c.event.ts >= last_ts_) return absl::OkStatus();
    // Written after the merge passed its time: pairing it now would pair out of order.
    ++late_;
  }
}

uint64_t LiveMerger::next_ts() const {
  uint64_t t = ~uint64_t{0};
  for (const Cursor& c : cursors_) {
    if (c.has && c.event.ts < t) t = c.event.ts;
  }
  return t;
}

absl::Status LiveMerger::DeliverBefore(uint64_t limit) {
  // The streams that ran dry may have data now; then the tournament of those that hold a record
  // (log2(CPUs) steps per record).
  tree_.Reset(cursors_.size());
  for (Cursor& c : cursors_) {
    if (!c.has) IOTRACE_RETURN_IF_ERROR(Fill(c));
    if (c.has) tree_.Set(static_cast<uint32_t>(c.stream), c.event.ts);
  }
  tree_.Build();
  while (!tree_.empty() && tree_.top_ts() < limit) {
    Cursor& c = cursors_[tree_.top()];
    last_ts_ = c.event.ts;
    ++delivered_;
    sink_->OnEvent(c.event);
    IOTRACE_RETURN_IF_ERROR(Fill(c));
    if (c.has) {
      tree_.ReplaceTop(c.event.ts);
    } else {
      tree_.PopTop();
    }
  }
  return absl::OkStatus();
}

}  // namespace iotrace
