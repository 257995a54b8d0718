// The matcher's side of reading a file as two time ranges on two threads (LatencyReportBuilder):
// the state at the cut and its comparison, the counters taken over from the earlier range,
// the requests the earlier range held and the later one never saw (SplitOlder), whether one
// pass would have done the same with them (WatchKeys, Resolve), and taking them in (Adopt).
// Pairing itself is in request_matcher.cc; the declarations are in its header.
#include "iotrace/analysis/request_matcher.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "iotrace/base/counters.h"
#include "iotrace/base/fd.h"

namespace iotrace {
namespace {

int StateIndex(RequestState s) { return static_cast<int>(s); }

bool SameRequest(const RequestEntry& a, const RequestEntry& b) {
  // Every member but the activity links (slot numbers, which differ between tables).
  return a.sector == b.sector && a.queue_ts == b.queue_ts && a.insert_ts == b.insert_ts &&
         a.issue_ts == b.issue_ts && a.last_ts == b.last_ts && a.dev == b.dev &&
         a.nr_sector == b.nr_sector && a.outstanding == b.outstanding && a.bytes == b.bytes &&
         a.insert_pid == b.insert_pid && a.issue_pid == b.issue_pid &&
         std::memcmp(a.insert_comm, b.insert_comm, kCommSize) == 0 &&
         std::memcmp(a.issue_comm, b.issue_comm, kCommSize) == 0 && a.state == b.state &&
         a.op == b.op && a.flags == b.flags && a.has == b.has &&
         a.pending_phases == b.pending_phases && a.ioprio == b.ioprio &&
         a.issue_cpu == b.issue_cpu;
}

bool SameRequests(const std::vector<RequestEntry>& a, const std::vector<RequestEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameRequest(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

bool RequestMatcher::State::operator==(const State& other) const {
  if (!SameRequests(requests, other.requests) || !SameRequests(queued, other.queued) ||
      !SameRequests(overlapped, other.overlapped) || flushes.size() != other.flushes.size()) {
    return false;
  }
  for (size_t i = 0; i < flushes.size(); ++i) {
    const auto& [dev, fifo] = flushes[i];
    const auto& [other_dev, other_fifo] = other.flushes[i];
    // Slots are zeroed before they are filled (OnFlush): their bytes compare.
    if (dev != other_dev || fifo.size() != other_fifo.size() ||
        (!fifo.empty() &&
         std::memcmp(fifo.data(), other_fifo.data(), fifo.size() * sizeof(FlushSlot)) != 0)) {
      return false;
    }
  }
  return true;
}

RequestMatcher::State RequestMatcher::Snapshot() const {
  State s;
  table_.ForEach([&s](const RequestEntry& e) { s.requests.push_back(e); });
  queued_.ForEach([&s](const RequestEntry& e) { s.queued.push_back(e); });
  s.overlapped = overlapped_;
  for (const auto& d : devices_) {
    if (!d->flushes.empty()) s.flushes.emplace_back(d->stats.dev, d->flushes);
  }
  std::sort(s.flushes.begin(), s.flushes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
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

bool RequestMatcher::SplitOlder(const State& earlier, const State& later, uint64_t primed_from,
                                Older* older) {
  *older = Older{};
  if (earlier.flushes.size() != later.flushes.size()) return false;
  State rest;
  rest.flushes = earlier.flushes;
  // In activity order: the older requests come first.
  auto split_list = [primed_from](const std::vector<RequestEntry>& all,
                                  std::vector<RequestEntry>* old_part,
                                  std::vector<RequestEntry>* rest_part) {
    size_t i = 0;
    while (i < all.size() && all[i].last_ts < primed_from) old_part->push_back(all[i++]);
    rest_part->assign(all.begin() + static_cast<std::ptrdiff_t>(i), all.end());
  };
  split_list(earlier.requests, &older->requests, &rest.requests);
  split_list(earlier.queued, &older->queued, &rest.queued);
  for (const RequestEntry& o : earlier.overlapped) {
    (o.last_ts < primed_from ? older->overlapped : rest.overlapped).push_back(o);
  }
  return rest == later;
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
  // What Expire would have done at the events since: an entry expires at the first event after
  // its last activity + expiry_ns.
  auto take = [this](RequestTable& t, const RequestEntry& e) {
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
  for (const RequestEntry& e : older.overlapped) overlapped_.push_back(e);
  for (const RequestEntry& e : older.kept_apart) {
    ++stats_.overlapping;
    overlapped_.push_back(e);
  }
  for (const RequestEntry& e : older.collided) {
    ++stats_.collisions;
    ++stats_.collided[StateIndex(e.state)];
    RequestEntry gone = e;
    if (gone.pending_phases != 0) FlushPending(&gone);
  }
  return true;
}

}  // namespace iotrace
