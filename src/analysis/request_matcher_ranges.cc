// The matcher's side of reading a file as two time ranges on two threads (LatencyReportBuilder):
// the state at the cut and its comparison, the counters taken over from the earlier range,
// the requests the earlier range held and the later one never saw (SplitOlder), whether one
// pass would have done the same with them (WatchKeys, Resolve), and taking them in (Adopt).
// Pairing itself is in request_matcher.cc; the declarations are in its header.
#include "iotrace/analysis/request_matcher.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include "iotrace/base/counters.h"
#include "iotrace/base/fd.h"

namespace iotrace {
namespace {

int StateIndex(RequestState s) { return static_cast<int>(s); }

// A request's digest (State): every member but the activity links (slot numbers, which differ
// between tables) and with the names themselves for their ids (each matcher has its own pool),
// 8 bytes at a time through a multiply-xorshift mix from a per-process seed. The entry has no
// padding, and Add zeroes it before anything is set.
static_assert(sizeof(RequestEntry) % 8 == 0 && offsetof(RequestEntry, prev) % 8 == 0 &&
              offsetof(RequestEntry, next) == offsetof(RequestEntry, prev) + 4 &&
              offsetof(RequestEntry, insert_comm) == offsetof(RequestEntry, prev) + 8 &&
              offsetof(RequestEntry, issue_comm) == offsetof(RequestEntry, prev) + 12);

uint64_t Mix(uint64_t h) {
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ULL;
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ULL;
  return h ^ (h >> 32);
}

uint64_t DigestSeed() {
  static const uint64_t seed = [] {
    std::random_device rd;
    return (uint64_t{rd()} << 32) ^ rd() ^ 0x9e3779b97f4a7c15ULL;
  }();
  return seed;
}

uint64_t Digest(const RequestEntry& e, const CommPool& comms) {
  constexpr size_t kWords = sizeof(RequestEntry) / 8;
  constexpr size_t kLinks = offsetof(RequestEntry, prev) / 8;
  constexpr size_t kNames = offsetof(RequestEntry, insert_comm) / 8;
  uint64_t words[kWords + 2 * kCommSize / 8];
  std::memcpy(words, &e, sizeof(e));
  std::memcpy(&words[kWords], comms.Name(e.insert_comm), kCommSize);
  std::memcpy(&words[kWords + kCommSize / 8], comms.Name(e.issue_comm), kCommSize);
  uint64_t h = DigestSeed();
  for (size_t i = 0; i < std::size(words); ++i) {
    if (i != kLinks && i != kNames) h = Mix(h ^ (words[i] + 0x9e3779b97f4a7c15ULL * (i + 1)));
  }
  return h;
}

}  // namespace

uint64_t RequestMatcher::completes_seen() const {
  uint64_t n = 0;
  for (const Device* d : devices_)
    n += d->stats.events[static_cast<int>(BlockEventKind::kComplete)];
  return n;
}

bool RequestMatcher::SameFlushes(const FlushList& a, const FlushList& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& [dev, fifo] = a[i];
    const auto& [other_dev, other_fifo] = b[i];
    // Slots are zeroed before they are filled (OnFlush): their bytes compare.
    if (dev != other_dev || fifo.size() != other_fifo.size() ||
        (!fifo.empty() &&
         std::memcmp(fifo.data(), other_fifo.data(), fifo.size() * sizeof(FlushSlot)) != 0)) {
      return false;
    }
  }
  return true;
}

bool RequestMatcher::State::operator==(const State& other) const {
  return requests == other.requests && queued == other.queued && overlapped == other.overlapped &&
         SameFlushes(flushes, other.flushes);
}

RequestMatcher::FlushList RequestMatcher::SortedFlushes() const {
  FlushList flushes;
  for (const auto& d : devices_) {
    if (!d->flushes.empty()) {
      flushes.emplace_back(d->stats.dev,
                           std::vector<FlushSlot>(d->flushes.begin(), d->flushes.end()));
    }
  }
  std::sort(flushes.begin(), flushes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return flushes;
}

RequestMatcher::State RequestMatcher::Snapshot() const {
  State s;
  s.requests.reserve(table_.size());
  table_.ForEach([this, &s](const RequestEntry& e) { s.requests.push_back(Digest(e, comms_)); });
  s.queued.reserve(queued_.size());
  queued_.ForEach([this, &s](const RequestEntry& e) { s.queued.push_back(Digest(e, comms_)); });
  s.overlapped.reserve(overlapped_.size());
  for (const RequestEntry& e : overlapped_) s.overlapped.push_back(Digest(e, comms_));
  s.flushes = SortedFlushes();
  return s;
}

void RequestMatcher::TakeOver(const Counts& at_cut, const Counts& earlier) {
  AddCounters(&stats_, earlier.stats, at_cut.stats);
  auto add = [this](const DeviceMatchStats& d, bool plus) {
    DeviceMatchStats& mine = DeviceFor(d.dev).stats;
    const auto take = [plus](uint64_t& m, uint64_t v) { m = plus ? m + v : m - v; };
    for (int k = 0; k < kBlockEventKindCount; ++k) take(mine.events[k], d.events[k]);
    take(mine.issues_without_insert, d.issues_without_insert);
    take(mine.completes_without_issue, d.completes_without_issue);
    take(mine.requeues_unmatched, d.requeues_unmatched);
    take(mine.expired, d.expired);
    take(mine.evicted, d.evicted);
    take(mine.collided, d.collided);
  };
  for (const DeviceMatchStats& d : at_cut.devices) add(d, false);
  for (const DeviceMatchStats& d : earlier.devices) add(d, true);
}

bool RequestMatcher::SplitOlder(const State& later, uint64_t primed_from, Older* older) const {
  *older = Older{};
  older->comms = &comms_;
  if (!SameFlushes(SortedFlushes(), later.flushes)) return false;
  // In activity order: the older requests come first, then the rest must be `later`'s, in order.
  // Resolve takes fewer than kMaxOverlapping older requests and bios kept apart together: with
  // more (deep queues), the answer is no before any more of them are copied.
  bool same = true;
  auto too_many = [older] {
    return older->requests.size() + older->overlapped.size() >= kMaxOverlapping;
  };
  auto split_list = [this, primed_from, &same, &too_many](const RequestTable& table,
                                                    const std::vector<uint64_t>& rest,
                                                    std::vector<RequestEntry>* old_part) {
    size_t i = 0;
    bool older_part = true;
    table.ForEach([&](const RequestEntry& e) {
      if (!same) return;
      if (older_part && e.last_ts < primed_from) {
        old_part->push_back(e);
        same = !too_many();
        return;
      }
      older_part = false;
      same = i < rest.size() && rest[i++] == Digest(e, comms_);
    });
    same = same && i == rest.size();
  };
  split_list(table_, later.requests, &older->requests);
  split_list(queued_, later.queued, &older->queued);
  size_t i = 0;
  for (const RequestEntry& o : overlapped_) {
    if (!same) break;
    if (o.last_ts < primed_from) {
      older->overlapped.push_back(o);
      same = !too_many();
    } else {
      same = i < later.overlapped.size() && later.overlapped[i++] == Digest(o, comms_);
    }
  }
  return same && i == later.overlapped.size();
}

void RequestMatcher::WatchKeys() {
  watching_ = true;
  touch_chunks_.clear();
  touch_at_ = nullptr;
  touch_left_ = 0;
  watch_failed_ = false;
  searched_keys_.clear();
  searched_keys_.reserve(4096);
  max_tracked_ = table_.size();
  max_queued_ = queued_.size();
  max_overlapped_ = overlapped_.size();
}

bool RequestMatcher::Resolve(Older* older) const {
  if (older->empty()) return true;
  if (!watching_ || watch_failed_) return false;
  // Holding the older ones too, no table would have been full when something was added (the
  // sizes were taken before each addition; any older request may have been kept apart).
  if (max_tracked_ + older->requests.size() >= table_.capacity() ||
      max_queued_ + older->queued.size() >= queued_.capacity() ||
      max_overlapped_ + older->overlapped.size() + older->requests.size() >= kMaxOverlapping) {
    return false;
  }
  // The first lookup of each older request's or bio's key since the cut.
  struct Key {
    uint32_t dev;
    uint64_t sector;
    auto operator<=>(const Key&) const = default;
  };
  std::vector<std::pair<Key, int>> first;  // key -> kind of its first lookup (-1: none)
  for (const auto* list : {&older->requests, &older->queued}) {
    for (const RequestEntry& e : *list) first.push_back({Key{e.dev, e.sector}, -1});
  }
  std::sort(first.begin(), first.end());
  std::array<uint64_t, 64> filter{};  // by KeyHash: the log holds millions, the older are few
  for (const auto& [k, kind] : first) {
    const uint32_t h = KeyHash(k.dev, k.sector);
    filter[(h >> 6) & 63] |= uint64_t{1} << (h & 63);
  }
  const size_t per_chunk = kTouchChunkBytes / sizeof(TouchRecord);
  for (size_t i = 0; i < touch_chunks_.size(); ++i) {
    const auto* log = static_cast<const TouchRecord*>(touch_chunks_[i].addr());
    const size_t n = i + 1 < touch_chunks_.size() ? per_chunk : per_chunk - touch_left_;
    for (size_t j = 0; j < n; ++j) {
      const uint32_t h = KeyHash(log[j].dev, log[j].sector);
      if (((filter[(h >> 6) & 63] >> (h & 63)) & 1) == 0) continue;
      auto it = std::lower_bound(first.begin(), first.end(),
                                 std::make_pair(Key{log[j].dev, log[j].sector}, -1));
      if (it != first.end() && it->first == Key{log[j].dev, log[j].sector} && it->second < 0) {
        it->second = static_cast<int>(log[j].kind);
      }
    }
  }
  auto kind_of = [&first](const RequestEntry& e) {
    return std::lower_bound(first.begin(), first.end(), std::make_pair(Key{e.dev, e.sector}, -1))
        ->second;
  };
  for (const RequestEntry& q : older->queued) {
    if (kind_of(q) >= 0) return false;  // a request at its sector would have taken its time
  }
  std::vector<RequestEntry> untouched;
  for (const RequestEntry& r : older->requests) {
    const int kind = kind_of(r);
    if (kind < 0) {
      untouched.push_back(r);
      continue;
    }
    // Met after the cut: it must still have been there (not expired before).
    if (ExpiredSinceCut(r.last_ts)) return false;
    const auto k = static_cast<TouchKind>(kind);
    if (r.state == RequestState::kIssued && (k == TouchKind::kInsert || k == TouchKind::kIssue)) {
      older->kept_apart.push_back(r);  // KeepApart, with room (checked above)
    } else if (r.state == RequestState::kInserted && k == TouchKind::kInsert) {
      older->collided.push_back(r);  // OnInsert gives an inserted one up
    } else {
      return false;
    }
  }
  older->requests = std::move(untouched);
  // Those kept apart change only with a completion at their sector that does not fit the
  // request in the table there.
  std::vector<uint32_t> apart;
  for (const auto* list : {&older->overlapped, &older->kept_apart}) {
    for (const RequestEntry& e : *list) apart.push_back(KeyHash(e.dev, e.sector));
  }
  return !AnyKeyIn(searched_keys_.data(), searched_keys_.size(), &apart);
}

bool RequestMatcher::NewTouchChunk() {
  absl::StatusOr<UniqueMapping> chunk = touch_chunks_.size() < kMaxTouchChunks
                                            ? MapHugeAnonymous(kTouchChunkBytes)
                                            : absl::ResourceExhaustedError("touch log full");
  if (!chunk.ok()) {
    watch_failed_ = true;
    watching_ = false;
    return false;
  }
  touch_at_ = static_cast<TouchRecord*>(chunk->addr());
  touch_left_ = kTouchChunkBytes / sizeof(TouchRecord);
  touch_chunks_.push_back(*std::move(chunk));
  return true;
}

bool RequestMatcher::AnyKeyIn(const uint32_t* log, size_t n, std::vector<uint32_t>* keys) {
  if (keys->empty()) return false;
  std::sort(keys->begin(), keys->end());
  // A 4096-bit filter in front of the search: the logged keys are millions, the older few.
  std::array<uint64_t, 64> filter{};
  for (uint32_t k : *keys) filter[(k >> 6) & 63] |= uint64_t{1} << (k & 63);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t k = log[i];
    if (((filter[(k >> 6) & 63] >> (k & 63)) & 1) != 0 &&
        std::binary_search(keys->begin(), keys->end(), k)) {
      return true;  // (or another key with the same hash: taken as the same, to be safe)
    }
  }
  return false;
}

bool RequestMatcher::Adopt(const Older& older) {
  if (table_.size() + older.requests.size() > table_.capacity() ||
      queued_.size() + older.queued.size() > queued_.capacity() ||
      overlapped_.size() + older.overlapped.size() + older.kept_apart.size() > kMaxOverlapping) {
    return false;
  }
  watching_ = false;
  // The entries with their names' ids in this matcher's pool.
  auto mine = [this, &older](RequestEntry e) {
    e.insert_comm = comms_.From(*older.comms, e.insert_comm);
    e.issue_comm = comms_.From(*older.comms, e.issue_comm);
    return e;
  };
  // What Expire would have done at the events since: an entry expires at the first event after
  // its last activity + expiry_ns.
  auto take = [this, &mine](RequestTable& t, const RequestEntry& older_entry) {
    const RequestEntry e = mine(older_entry);
    if (ExpiredSinceCut(e.last_ts)) {
      ++stats_.expired[StateIndex(e.state)];
      RequestEntry gone = e;
      if (gone.pending_phases != 0) FlushPending(&gone);
      return;
    }
    // Last in activity order though they are the oldest: only Finish follows, which counts
    // and sends what is left whatever the order.
    RequestEntry* ent = t.Add(e.dev, e.sector, e.last_ts);
    const uint32_t prev = ent->prev, next = ent->next;
    *ent = e;
    ent->prev = prev;
    ent->next = next;
  };
  for (const RequestEntry& e : older.requests) take(table_, e);
  for (const RequestEntry& e : older.queued) take(queued_, e);
  for (const RequestEntry& e : older.overlapped) overlapped_.push_back(mine(e));
  for (const RequestEntry& e : older.kept_apart) {
    ++stats_.overlapping;
    overlapped_.push_back(mine(e));
  }
  for (const RequestEntry& e : older.collided) {
    ++stats_.collisions;
    ++stats_.collided[StateIndex(e.state)];
    RequestEntry gone = mine(e);
    if (gone.pending_phases != 0) FlushPending(&gone);
  }
  return true;
}

}  // namespace iotrace
