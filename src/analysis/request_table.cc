#include "iotrace/analysis/request_table.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace iotrace {
namespace {

constexpr std::string_view kStateNames[kRequestStateCount] = {"queued", "inserted", "issued",
                                                              "requeued"};

}  // namespace

std::string_view RequestStateName(RequestState state) {
  return kStateNames[static_cast<int>(state)];
}

RequestTable::RequestTable(size_t max_entries, uint64_t expiry_ns)
    : capacity_(max_entries < 1 ? 1 : max_entries),
      // Default-initialized: RequestEntry is trivial, so the pages stay untouched until used.
      slots_(new RequestEntry[capacity_]),
      expiry_ns_(expiry_ns) {
  max_index_size_ = 16;
  while (max_index_size_ < 2 * capacity_) max_index_size_ <<= 1;
  const size_t n = std::min(max_index_size_, kInitialIndexSize);
  index_.assign(n, Bucket{0, 0});
  mask_ = n - 1;
  shift_ = 32 - std::countr_zero(n);
}

size_t RequestTable::PositionOf(uint32_t slot) const {
  const RequestEntry& e = slots_[slot];
  size_t pos = HomeOf(HashOf(e.dev, e.sector));
  while (index_[pos].slot1 != slot + 1) pos = (pos + 1) & mask_;
  return pos;
}

void RequestTable::IndexInsert(uint32_t slot, uint32_t hash) {
  size_t pos = HomeOf(hash);
  while (index_[pos].slot1 != 0) pos = (pos + 1) & mask_;
  index_[pos] = Bucket{slot + 1, hash};
}

void RequestTable::IndexErase(size_t pos) {
  // Backward-shift deletion: pull later members of the probe run into the hole when their home
  // position does not lie cyclically in (hole, current].
  index_[pos].slot1 = 0;
  size_t hole = pos;
  size_t cur = pos;
  while (true) {
    cur = (cur + 1) & mask_;
    if (index_[cur].slot1 == 0) return;
    const size_t home = HomeOf(index_[cur].hash);
    bool stays = hole <= cur ? (hole < home && home <= cur) : (hole < home || home <= cur);
    if (!stays) {
      index_[hole] = index_[cur];
      index_[cur].slot1 = 0;
      hole = cur;
    }
  }
}

// Doubles the index and places every entry again from its stored hash. Happens only when more
// requests are in flight than ever before: at most log2(capacity / 512) times in a table's life.
void RequestTable::GrowIndex() {
  std::vector<Bucket> old;
  old.swap(index_);
  const size_t n = old.size() * 2;
  index_.assign(n, Bucket{0, 0});
  mask_ = n - 1;
  shift_ = 32 - std::countr_zero(n);
  for (const Bucket& b : old) {
    if (b.slot1 != 0) IndexInsert(b.slot1 - 1, b.hash);
  }
}

RequestEntry* RequestTable::Add(uint32_t dev, uint64_t sector, uint64_t ts) {
  if (size_ == capacity_) return nullptr;
  uint32_t slot;
  if (free_head_ != kNil) {
    slot = free_head_;
    free_head_ = slots_[slot].next;
  } else {
    slot = never_used_++;
  }
  RequestEntry& e = slots_[slot];
  std::memset(&e, 0, sizeof(e));
  e.dev = dev;
  e.sector = sector;
  e.last_ts = ts;
  e.insert_pid = e.issue_pid = -1;
  if (2 * (size_ + 1) > index_.size() && index_.size() < max_index_size_) GrowIndex();
  IndexInsert(slot, HashOf(dev, sector));
  LinkLast(slot);
  ++size_;
  return &e;
}

void RequestTable::Remove(RequestEntry* entry) {
  uint32_t slot = static_cast<uint32_t>(entry - slots_.get());
  // last_found_ is always inside the index (it only grows); each slot is in one bucket.
  IndexErase(index_[last_found_].slot1 == slot + 1 ? last_found_ : PositionOf(slot));
  Unlink(slot);
  entry->next = free_head_;
  free_head_ = slot;
  --size_;
}

bool RequestTable::Rekey(RequestEntry* entry, uint64_t new_sector) {
  if (new_sector == entry->sector) return true;
  const uint32_t hash = HashOf(entry->dev, new_sector);
  if (index_[Probe(entry->dev, new_sector, hash)].slot1 != 0) return false;
  uint32_t slot = static_cast<uint32_t>(entry - slots_.get());
  IndexErase(PositionOf(slot));
  entry->sector = new_sector;
  IndexInsert(slot, hash);
  return true;
}

}  // namespace iotrace
