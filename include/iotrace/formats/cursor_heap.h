// The merge of per-CPU streams that are each whole and in time order (trace.dat's): a binary
// min-heap of one cursor per stream, whose top is the earliest record and final at once.
// (perf.data's one interleaved stream needs SortedRunMerger instead; docs/architecture.md, "Two
// per-CPU merges".)
#ifndef IOTRACE_FORMATS_CURSOR_HEAP_H_
#define IOTRACE_FORMATS_CURSOR_HEAP_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace iotrace {

// `Less(a, b)`: cursor a's current record comes before b's (ties broken by the caller, e.g. on
// stream order, to keep the merge stable).
template <typename Cursor, typename Less>
class CursorHeap {
 public:
  explicit CursorHeap(Less less = Less()) : less_(less) {}

  // Builds the heap of `cursors` (each on its first record).
  void Build(std::vector<Cursor*> cursors) {
    heap_ = std::move(cursors);
    for (size_t i = heap_.size(); i-- > 0;) SiftDown(i);
  }
  bool empty() const { return heap_.empty(); }
  Cursor* top() const { return heap_.front(); }
  // The top cursor moved on to its next record (`more`), or its stream ended (it leaves).
  void Step(bool more) {
    if (!more) {
      heap_.front() = heap_.back();
      heap_.pop_back();
      if (heap_.empty()) return;
    }
    SiftDown(0);
  }
  // The cursors still in the heap, in no order.
  const std::vector<Cursor*>& cursors() const { return heap_; }

 private:
  // Inlined, on a local copy of the array's pointer: as an outlined member reloading the vector's
  // fields, trace.dat's merge took 8 more instructions a record under callgrind (2 more as is).
  [[gnu::always_inline]] void SiftDown(size_t i) {
    Cursor** const h = heap_.data();
    const size_t n = heap_.size();
    for (;;) {
      const size_t l = 2 * i + 1;
      size_t m = i;
      if (l < n && less_(h[l], h[m])) m = l;
      if (l + 1 < n && less_(h[l + 1], h[m])) m = l + 1;
      if (m == i) return;
      std::swap(h[i], h[m]);
      i = m;
    }
  }

  Less less_;
  std::vector<Cursor*> heap_;
};

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_CURSOR_HEAP_H_
