#include "iotrace/request_table.h"

#include <cstring>

namespace iotrace {
namespace {

constexpr std::string_view kStateNames[kRequestStateCount] = {"queued", "inserted", "issued",
                                                              "requeued"};

// Sectors are dense and sequential: a full 64-bit finalizer (MurmurHash3 fmix64) spreads them.
inline uint64_t Mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

}  // namespace

std::string_view RequestStateName(RequestState state) {
  return kStateNames[static_cast<int>(state)];
}

RequestTable::RequestTable(size_t max_entries)
    : capacity_(max_entries < 1 ? 1 : max_entries),
      // Default-initialized: RequestEntry is trivial, so the pages stay untouched until used.
      slots_(new RequestEntry[capacity_]) {
  size_t n = 16;
  while (n < 2 * capacity_) n <<= 1;
  index_.assign(n, 0);
  mask_ = n - 1;
}

size_t RequestTable::HomeOf(uint32_t dev, uint64_t sector) const {
  return static_cast<size_t>(Mix(sector ^ (uint64_t{dev} * 0x9e3779b97f4a7c15ULL))) & mask_;
}

size_t RequestTable::Probe(uint32_t dev, uint64_t sector) const {
  size_t pos = HomeOf(dev, sector);
  // The index is at most half full, so an empty position is always found.
  while (index_[pos] != 0) {
    const RequestEntry& e = slots_[index_[pos] - 1];
    if (e.sector == sector && e.dev == dev) return pos;
    pos = (pos + 1) & mask_;
  }
  return pos;
}

RequestEntry* RequestTable::Find(uint32_t dev, uint64_t sector) {
  size_t pos = Probe(dev, sector);
  return index_[pos] == 0 ? nullptr : &slots_[index_[pos] - 1];
}

void RequestTable::IndexInsert(uint32_t slot) {
  const RequestEntry& e = slots_[slot];
  size_t pos = Probe(e.dev, e.sector);
  index_[pos] = slot + 1;
}

void RequestTable::IndexErase(size_t pos) {
  // Backward-shift deletion: pull later members of the probe run into the hole when their home
  // position does not lie cyclically in (hole, current].
  index_[pos] = 0;
  size_t hole = pos;
  size_t cur = pos;
  while (true) {
    cur = (cur + 1) & mask_;
    if (index_[cur] == 0) return;
    const RequestEntry& e = slots_[index_[cur] - 1];
    size_t home = HomeOf(e.dev, e.sector);
    bool stays = hole <= cur ? (hole < home && home <= cur) : (hole < home || home <= cur);
    if (!stays) {
      index_[hole] = index_[cur];
      index_[cur] = 0;
      hole = cur;
    }
  }
}

void RequestTable::Unlink(uint32_t slot) {
  RequestEntry& e = slots_[slot];
  if (e.prev != kNil) slots_[e.prev].next = e.next; else head_ = e.next;
  if (e.next != kNil) slots_[e.next].prev = e.prev; else tail_ = e.prev;
  e.prev = e.next = kNil;
}

void RequestTable::LinkLast(uint32_t slot) {
  RequestEntry& e = slots_[slot];
  e.prev = tail_;
  e.next = kNil;
  if (tail_ != kNil) slots_[tail_].next = slot; else head_ = slot;
  tail_ = slot;
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
  IndexInsert(slot);
  LinkLast(slot);
  ++size_;
  return &e;
}

void RequestTable::Remove(RequestEntry* entry) {
  uint32_t slot = static_cast<uint32_t>(entry - slots_.get());
  IndexErase(Probe(entry->dev, entry->sector));
  Unlink(slot);
  entry->next = free_head_;
  free_head_ = slot;
  --size_;
}

bool RequestTable::Rekey(RequestEntry* entry, uint64_t new_sector) {
  if (new_sector == entry->sector) return true;
  size_t target = Probe(entry->dev, new_sector);
  if (index_[target] != 0) return false;
  uint32_t slot = static_cast<uint32_t>(entry - slots_.get());
  IndexErase(Probe(entry->dev, entry->sector));
  entry->sector = new_sector;
  IndexInsert(slot);
  return true;
}

void RequestTable::Touch(RequestEntry* entry, uint64_t ts) {
  entry->last_ts = ts;
  uint32_t slot = static_cast<uint32_t>(entry - slots_.get());
  if (slot == tail_) return;
  Unlink(slot);
  LinkLast(slot);
}

}  // namespace iotrace
