// The bounded table of requests in flight for RequestMatcher: (dev, sector) -> entry, in a
// fixed slab allocated once (open addressing, linear probing, backward-shift deletion, so no
// tombstones and no rehash), with the entries linked in order of last activity so the oldest
// can be expired or evicted in O(1).
#ifndef IOTRACE_REQUEST_TABLE_H_
#define IOTRACE_REQUEST_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "iotrace/block_event.h"

namespace iotrace {

// Where a tracked request is in its life.
enum class RequestState : uint8_t {
  kQueued,    // only its bio was seen (block_bio_queue)
  kInserted,  // inserted, not issued yet
  kIssued,    // issued to the driver, not (fully) completed yet
  kRequeued,  // given back by the driver, waiting to be issued again
};
inline constexpr int kRequestStateCount = 4;
// "queued", "inserted", "issued", "requeued".
std::string_view RequestStateName(RequestState state);

// Which timestamps of a request are known.
enum RequestHas : uint8_t {
  kHasQueue = 1 << 0,
  kHasInsert = 1 << 1,
  kHasIssue = 1 << 2,
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
  char insert_comm[kCommSize];
  char issue_comm[kCommSize];
  RequestState state;
  BlockOp op;
  uint8_t flags;          // BlockFlag bits
  uint8_t has;            // RequestHas bits
  bool issued_before;     // issued at least once (a requeued request has its I2D already)
};

class RequestTable {
 public:
  // Room for `max_entries` requests; the memory is reserved now and never grows.
  explicit RequestTable(size_t max_entries);
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

  size_t HomeOf(uint32_t dev, uint64_t sector) const;
  // Index position of the slot holding (dev, sector), or the empty position where it would go.
  size_t Probe(uint32_t dev, uint64_t sector) const;
  void IndexInsert(uint32_t slot);
  void IndexErase(size_t pos);
  void Unlink(uint32_t slot);
  void LinkLast(uint32_t slot);

  size_t capacity_;
  size_t size_ = 0;
  std::unique_ptr<RequestEntry[]> slots_;
  uint32_t never_used_ = 0;    // slots [never_used_, capacity_) were never handed out
  uint32_t free_head_ = kNil;  // freed slots, chained through `next`
  std::vector<uint32_t> index_;  // slot + 1, 0 = empty; size is a power of two >= 2 * capacity
  size_t mask_ = 0;
  uint32_t head_ = kNil;  // oldest activity
  uint32_t tail_ = kNil;  // newest activity
};

}  // namespace iotrace

#endif  // IOTRACE_REQUEST_TABLE_H_
