#include "iotrace/capture/perf_ring.h"

#include <algorithm>
#include <cstring>

namespace iotrace {

PerfRing::PerfRing(void* base, size_t page_size, size_t data_size, std::vector<uint64_t> ids)
    : meta_(static_cast<perf_event_mmap_page*>(base)),
      data_(static_cast<uint8_t*>(base) + page_size),
      data_size_(data_size),
      ids_(std::move(ids)),
      read_(meta_->data_tail),
      head_(read_) {
  scratch_.samples.assign(ids_.size(), 0);
}

uint64_t PerfRing::Readable() const {
  uint64_t head = __atomic_load_n(&meta_->data_head, __ATOMIC_ACQUIRE);
  return head - meta_->data_tail;
}

absl::Status PerfRing::Drain(absl::FunctionRef<absl::Status(ByteView, ByteView)> sink,
                             RingCounts* counts) {
  // data_head is written by the kernel; the acquire load orders our reads of the data after it
  // (include/uapi/linux/perf_event.h, "User-space reading the @data_head value should issue
  // an smp_rmb(), after reading this value").
  const uint64_t head = __atomic_load_n(&meta_->data_head, __ATOMIC_ACQUIRE);
  const uint64_t tail = meta_->data_tail;
  if (head == tail) return absl::OkStatus();
  const uint64_t avail = head - tail;
  const size_t mask = data_size_ - 1;
  const size_t start = tail & mask;
  const size_t first_len = avail <= data_size_ - start ? avail : data_size_ - start;
  ByteView first(data_ + start, first_len);
  ByteView second(data_, avail - first_len);

  // Walk the headers (read only, no copy; a header or id that straddles the wrap is gathered
  // into 24 bytes on the stack). Counted into scratch first and merged only once the sink kept
  // the bytes, so that "recorded" never counts records that did not reach the output.
  RingCounts& seen = scratch_;
  std::fill(seen.samples.begin(), seen.samples.end(), 0);
  seen.other_samples = seen.lost_records = seen.lost_events = seen.records = 0;
  seen.bad_headers = 0;
  uint64_t pos = 0;
  while (pos < avail) {
    uint8_t head_bytes[24];
    const size_t off = (start + pos) & mask;
    const size_t want = avail - pos < sizeof(head_bytes) ? avail - pos : sizeof(head_bytes);
    if (off + want <= data_size_) {
      std::memcpy(head_bytes, data_ + off, want);
    } else {
      size_t a = data_size_ - off;
      std::memcpy(head_bytes, data_ + off, a);
      std::memcpy(head_bytes + a, data_, want - a);
    }
    if (want < sizeof(perf_event_header)) {
      ++seen.bad_headers;
      break;
    }
    perf_event_header h;
    std::memcpy(&h, head_bytes, sizeof(h));
    if (h.size < sizeof(h) || (h.size & 7) != 0 || h.size > avail - pos) {
      // The kernel only publishes whole records; this can only be corruption. Stop counting:
      // the bytes still go to the file, where the reader counts them as bad.
      ++seen.bad_headers;
      break;
    }
    ++seen.records;
    if (h.type == PERF_RECORD_SAMPLE && want >= 16) {
      uint64_t id;
      std::memcpy(&id, head_bytes + 8, 8);
      bool found = false;
      for (size_t i = 0; i < ids_.size(); ++i) {
        if (ids_[i] == id) {
          ++seen.samples[i];
          found = true;
          break;
        }
      }
      if (!found) ++seen.other_samples;
    } else if (h.type == PERF_RECORD_LOST && want >= 24) {
      uint64_t lost;
      std::memcpy(&lost, head_bytes + 16, 8);
      ++seen.lost_records;
      seen.lost_events += lost;
    }
    pos += h.size;
  }

  absl::Status s = sink(first, second);
  if (!s.ok()) return s;
  if (counts->samples.size() < ids_.size()) counts->samples.resize(ids_.size());
  for (size_t i = 0; i < ids_.size(); ++i) counts->samples[i] += seen.samples[i];
  counts->other_samples += seen.other_samples;
  counts->lost_records += seen.lost_records;
  counts->lost_events += seen.lost_events;
  counts->records += seen.records;
  counts->bad_headers += seen.bad_headers;
  counts->bytes += avail;
  // Release: the kernel may overwrite the space only after our reads are done.
  __atomic_store_n(&meta_->data_tail, head, __ATOMIC_RELEASE);
  return absl::OkStatus();
}

bool PerfRing::ReadRecord(ByteView* record, RingCounts* counts) {
  if (read_ == head_) {
    // Acquire, as in Drain: the record bytes are read after data_head.
    head_ = Head();
    if (read_ == head_) return false;
  }
  const uint64_t avail = head_ - read_;
  const size_t mask = data_size_ - 1;
  const size_t off = read_ & mask;
  const size_t to_end = data_size_ - off;
  // The kernel keeps records 8-aligned, so a header straddles the end only when the positions
  // it started from were not (a data_tail left so by someone else): gathered then.
  perf_event_header h;
  if (to_end >= sizeof(h)) {
    std::memcpy(&h, data_ + off, sizeof(h));
  } else {
    std::memcpy(&h, data_ + off, to_end);
    std::memcpy(reinterpret_cast<uint8_t*>(&h) + to_end, data_, sizeof(h) - to_end);
  }
  if (avail < sizeof(h) || h.size < sizeof(h) || (h.size & 7) != 0 || h.size > avail) {
    // The kernel only publishes whole records: the ring is corrupt. Nothing after this point
    // can be framed; skip what is readable so that the kernel can go on.
    ++counts->bad_headers;
    counts->bytes += avail;
    read_ = head_;
    return false;
  }
  if (h.size <= to_end) {
    *record = ByteView(data_ + off, h.size);
  } else {
    wrapped_.resize(h.size);
    std::memcpy(wrapped_.data(), data_ + off, to_end);
    std::memcpy(wrapped_.data() + to_end, data_, h.size - to_end);
    *record = ByteView(wrapped_.data(), h.size);
  }
  read_ += h.size;
  ++counts->records;
  counts->bytes += h.size;
  if (counts->samples.size() < ids_.size()) counts->samples.resize(ids_.size());
  if (h.type == PERF_RECORD_SAMPLE && h.size >= 16) {
    uint64_t id;
    std::memcpy(&id, record->data + 8, 8);
    size_t i = 0;
    while (i < ids_.size() && ids_[i] != id) ++i;
    if (i < ids_.size()) {
      ++counts->samples[i];
    } else {
      ++counts->other_samples;
    }
  } else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
    uint64_t lost;
    std::memcpy(&lost, record->data + 16, 8);
    ++counts->lost_records;
    counts->lost_events += lost;
  }
  return true;
}

void PerfRing::Release(uint64_t position) {
  // Release: the kernel may overwrite the space only after our reads of it are done.
  __atomic_store_n(&meta_->data_tail, position, __ATOMIC_RELEASE);
}

void PerfRing::View(uint64_t from, uint64_t to, ByteView* first, ByteView* second) const {
  const size_t start = from & (data_size_ - 1);
  const uint64_t len = to - from;
  const size_t first_len = len <= data_size_ - start ? len : data_size_ - start;
  *first = ByteView(data_ + start, first_len);
  *second = ByteView(data_, len - first_len);
}

}  // namespace iotrace
