// The bounded table of requests in flight for RequestMatcher: (dev, sector) -> entry, in a
// fixed slab allocated once, found through an index (open addressing, Fibonacci hashing,
// linear probing, backward-shift deletion, so no tombstones) that starts small and doubles
// while the table fills, so that the few dozen requests a device has in flight are looked up in
// a few cache lines. The entries are linked in order of last activity so the oldest can be
// expired or evicted in O(1).
#ifndef IOTRACE_ANALYSIS_REQUEST_TABLE_H_
#define IOTRACE_ANALYSIS_REQUEST_TABLE_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "iotrace/analysis/match_stats.h"
#include "iotrace/event/block_event.h"

namespace iotrace {


// Which timestamps of a request are known.
enum RequestHas : uint8_t {
  kHasQueue = 1 << 0,
  kHasInsert = 1 << 1,
  kHasIssue = 1 << 2,
  kIssuedBefore = 1 << 3,  // issued at least once (a requeued request has its I2D already)
};

// Trivially constructible on purpose: the slab is allocated uninitialized so that a large
// capacity costs only the pages that are used.
struct RequestEntry {
  uint64_t sector;
  uint64_t queue_ts;
  uint64_t insert_ts;
  uint64_t issue_ts;
  uint64_t last_ts;       // last activity (trace time), the expiry clock
  uint32_t dev;
  uint32_t nr_sector;     // size of the request when inserted / issued
  uint32_t outstanding;   // sectors not completed yet (partial completions)
  uint32_t bytes;
  int32_t insert_pid;
  int32_t issue_pid;
  uint32_t prev;          // activity list links (slot indices)
  uint32_t next;
  uint32_t insert_comm;   // names: ids in the matcher's CommPool
  uint32_t issue_comm;
  RequestState state;
  BlockOp op;
  uint8_t flags;          // BlockFlag bits
  uint8_t has;            // RequestHas bits
  uint8_t pending_phases; // PhaseBit()s ended at the issue, not sent yet (combined samples)
  uint8_t ioprio;         // IoprioClassLevel of the last insert or issue
  uint16_t issue_cpu;     // the CPU of the last issue
};
// The table's memory is max_inflight of these: keep them at 88 bytes.
static_assert(sizeof(RequestEntry) == 88);

class RequestTable {
 public:
  // Room for `max_entries` requests; the memory is reserved now and never grows. An entry
  // idle for more than `expiry_ns` (trace time) has expired: see expires_after().
  explicit RequestTable(size_t max_entries, uint64_t expiry_ns = ~uint64_t{0});
  RequestTable(const RequestTable&) = delete;
  RequestTable& operator=(const RequestTable&) = delete;

  RequestEntry* Find(uint32_t dev, uint64_t sector);
  // Adds a zeroed entry for a key that is not in the table, last in activity order.
  // nullptr when the table is full (the caller evicts Oldest() first).
  RequestEntry* Add(uint32_t dev, uint64_t sector, uint64_t ts);
  void Remove(RequestEntry* entry);
  // Moves `entry` to `new_sector` of the same device. False (and nothing changed) when another
  // entry holds that key.
  bool Rekey(RequestEntry* entry, uint64_t new_sector);
  // Records activity at `ts`: the entry becomes the newest.
  void Touch(RequestEntry* entry, uint64_t ts);
  // The entry with the oldest activity, nullptr when empty.
  RequestEntry* Oldest() { return head_ == kNil ? nullptr : &slots_[head_]; }
  // The time after which the oldest entry has expired: its last activity + expiry_ns (~0 when
  // that overflows, and when the table is empty). Kept as the oldest entry changes, so that a
  // look for expired entries, made for every event, is one comparison.
  uint64_t expires_after() const { return expires_after_; }

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool full() const { return size_ == capacity_; }

  // Calls fn(const RequestEntry&) for every entry, oldest first.
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (uint32_t i = head_; i != kNil; i = slots_[i].next) fn(slots_[i]);
  }

 private:
  static constexpr uint32_t kNil = ~uint32_t{0};
  // The index's first size; it doubles whenever it would become more than half full.
  static constexpr size_t kInitialIndexSize = 1024;

  // One index position: the slot (+1; 0 = empty) and the key's 32-bit hash, so that probes and
  // moves compare and place keys without touching the entries.
  struct Bucket {
    uint32_t slot1;
    uint32_t hash;
  };

  // Fibonacci hashing: the multiply spreads runs of sectors (dense, sequential, strided) over
  // the top bits, which pick the position.
  static uint32_t HashOf(uint32_t dev, uint64_t sector) {
    return static_cast<uint32_t>(((sector ^ std::rotl(uint64_t{dev}, 40)) * 0x9e3779b97f4a7c15ULL) >> 32);
  }
  size_t HomeOf(uint32_t hash) const { return hash >> shift_; }
  // Index position of the slot holding (dev, sector), or the empty position where it would go.
  size_t Probe(uint32_t dev, uint64_t sector, uint32_t hash) const;
  // Index position of `slot` (which is in the index).
  size_t PositionOf(uint32_t slot) const;
  void IndexInsert(uint32_t slot, uint32_t hash);
  void IndexErase(size_t pos);
  void GrowIndex();
  void Unlink(uint32_t slot);
  void LinkLast(uint32_t slot);
  // After the oldest entry, or its last activity, changed.
  void OldestChanged() {
    const uint64_t ts = head_ == kNil ? ~uint64_t{0} : slots_[head_].last_ts;
    expires_after_ = ts > ~uint64_t{0} - expiry_ns_ ? ~uint64_t{0} : ts + expiry_ns_;
  }

  size_t capacity_;
  size_t size_ = 0;
  std::unique_ptr<RequestEntry[]> slots_;
  uint32_t never_used_ = 0;    // slots [never_used_, capacity_) were never handed out
  uint32_t free_head_ = kNil;  // freed slots, chained through `next`
  std::vector<Bucket> index_;  // a power of two, at most half full
  size_t mask_ = 0;
  int shift_ = 0;              // 32 - log2(index size)
  size_t max_index_size_ = 0;  // the smallest power of two >= 2 * capacity
  uint32_t head_ = kNil;  // oldest activity
  uint32_t tail_ = kNil;  // newest activity
  uint64_t expiry_ns_;
  uint64_t expires_after_ = ~uint64_t{0};
  // Where the last Find ended: a request is usually removed right after it was found, and
  // Remove then need not probe again (it checks that the bucket still holds the entry).
  size_t last_found_ = 0;
};

// Inline: Find runs for nearly every event.
inline size_t RequestTable::Probe(uint32_t dev, uint64_t sector, uint32_t hash) const {
  size_t pos = HomeOf(hash);
  // The index is at most half full, so an empty position is always found.
  for (;;) {
    const Bucket& b = index_[pos];
    if (b.slot1 == 0) return pos;
    if (b.hash == hash) {
      const RequestEntry& e = slots_[b.slot1 - 1];
      if (e.sector == sector && e.dev == dev) return pos;
    }
    pos = (pos + 1) & mask_;
  }
}

inline void RequestTable::Unlink(uint32_t slot) {
  RequestEntry& e = slots_[slot];
  if (e.prev != kNil) {
    slots_[e.prev].next = e.next;
  } else {
    head_ = e.next;
    OldestChanged();
  }
  if (e.next != kNil) slots_[e.next].prev = e.prev; else tail_ = e.prev;
  e.prev = e.next = kNil;
}

inline void RequestTable::LinkLast(uint32_t slot) {
  RequestEntry& e = slots_[slot];
  e.prev = tail_;
  e.next = kNil;
  tail_ = slot;
  if (e.prev != kNil) {
    slots_[e.prev].next = slot;
  } else {
    head_ = slot;
    OldestChanged();
  }
}

inline void RequestTable::Touch(RequestEntry* entry, uint64_t ts) {
  entry->last_ts = ts;
  uint32_t slot = static_cast<uint32_t>(entry - slots_.get());
  if (slot == tail_) {
    if (slot == head_) OldestChanged();  // the only entry
    return;
  }
  Unlink(slot);  // the next one becomes the oldest if this one was
  LinkLast(slot);
}

inline RequestEntry* RequestTable::Find(uint32_t dev, uint64_t sector) {
  const size_t pos = Probe(dev, sector, HashOf(dev, sector));
  last_found_ = pos;
  return index_[pos].slot1 == 0 ? nullptr : &slots_[index_[pos].slot1 - 1];
}

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_REQUEST_TABLE_H_
