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

void LiveMerger::SiftDown(size_t i) {
  Entry* const h = heap_.data();
  const size_t n = heap_.size();
  auto less = [](const Entry& a, const Entry& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.stream < b.stream;
  };
  const Entry moving = h[i];
  for (;;) {
    const size_t l = 2 * i + 1;
    if (l >= n) break;
    const size_t m = l + 1 < n && less(h[l + 1], h[l]) ? l + 1 : l;
    if (!less(h[m], moving)) break;
    h[i] = h[m];
    i = m;
  }
  h[i] = moving;
}

absl::Status LiveMerger::DeliverBefore(uint64_t limit) {
  // The streams that ran dry may have data now; then the heap of those that hold a record
  // (log2(CPUs) steps per record).
  heap_.clear();
  for (Cursor& c : cursors_) {
    if (!c.has) IOTRACE_RETURN_IF_ERROR(Fill(c));
    if (c.has) heap_.push_back({c.event.ts, static_cast<uint32_t>(c.stream)});
  }
  for (size_t i = heap_.size() / 2; i-- > 0;) SiftDown(i);
  while (!heap_.empty() && heap_[0].ts < limit) {
    Cursor& c = cursors_[heap_[0].stream];
    last_ts_ = c.event.ts;
    ++delivered_;
    sink_->OnEvent(c.event);
    IOTRACE_RETURN_IF_ERROR(Fill(c));
    if (c.has) {
      heap_[0].ts = c.event.ts;
    } else {
      heap_[0] = heap_.back();
      heap_.pop_back();
      if (heap_.empty()) break;
    }
    SiftDown(0);
  }
  return absl::OkStatus();
}

}  // namespace iotrace
