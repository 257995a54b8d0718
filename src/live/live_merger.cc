#include "iotrace/live/live_merger.h"

#include "iotrace/base/status.h"
#include "iotrace/formats/cursor_heap.h"

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
  // The streams that ran dry may have data now; then the heap of those that hold a record (a
  // binary heap, as trace.dat's merge: log2(CPUs) steps per record).
  std::vector<Cursor*> held;
  held.reserve(cursors_.size());
  for (Cursor& c : cursors_) {
    if (!c.has) IOTRACE_RETURN_IF_ERROR(Fill(c));
    if (c.has) held.push_back(&c);
  }
  auto less = [](const Cursor* a, const Cursor* b) {
    return a->event.ts != b->event.ts ? a->event.ts < b->event.ts : a->stream < b->stream;
  };
  CursorHeap<Cursor, decltype(less)> heap(less);
  heap.Build(std::move(held));
  while (!heap.empty()) {
    Cursor* c = heap.top();
    if (c->event.ts >= limit) break;
    last_ts_ = c->event.ts;
    ++delivered_;
    sink_->OnEvent(c->event);
    IOTRACE_RETURN_IF_ERROR(Fill(*c));
    heap.Step(c->has);
  }
  return absl::OkStatus();
}

}  // namespace iotrace
