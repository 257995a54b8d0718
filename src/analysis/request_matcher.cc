#include "iotrace/analysis/request_matcher.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "iotrace/base/counters.h"

namespace iotrace {
namespace {

constexpr std::string_view kPhaseNames[kPhaseCount] = {"I2D", "D2C", "I2C", "Q2D", "Q2C"};
constexpr std::string_view kReasonNames[kNoInsertReasonCount] = {
    "insert_not_recorded", "no_insert_on_device", "flush", "insert_missing"};

void CopyComm(char* dst, const char* src) { std::memcpy(dst, src, kCommSize); }

int StateIndex(RequestState s) { return static_cast<int>(s); }

}  // namespace

std::string_view PhaseName(Phase phase) { return kPhaseNames[static_cast<int>(phase)]; }

bool ParsePhase(std::string_view name, Phase* phase) {
  for (int i = 0; i < kPhaseCount; ++i) {
    if (kPhaseNames[i] == name) {
      *phase = static_cast<Phase>(i);
      return true;
    }
  }
  return false;
}

std::string_view NoInsertReasonName(NoInsertReason reason) {
  return kReasonNames[static_cast<int>(reason)];
}

RequestMatcher::RequestMatcher(const MatcherOptions& options, RequestSampleSink* sink)
    : options_(options),
      sink_(sink),
      table_(options.max_entries, options.expiry_ns),
      // Bios wait only while plugged or being turned into requests: a quarter is plenty.
      queued_(options.max_entries / 4 + 1, options.expiry_ns) {
  if (options_.flush_depth == 0) options_.flush_depth = 1;
  device_index_.reserve(64);
  overlapped_.reserve(kMaxOverlapping);
}

RequestMatcher::~RequestMatcher() = default;

RequestMatcher::Device& RequestMatcher::DeviceForSlow(uint32_t dev) {
  for (size_t i = 0; i < fast_count_; ++i) {
    if (fast_dev_[i] == dev) return *fast_device_[i];
  }
  auto it = device_index_.find(dev);
  if (it != device_index_.end()) return *devices_[it->second];
  // First event of a device: the only allocation the matcher makes after construction.
  auto nd = std::make_unique<Device>();
  nd->stats.dev = dev;
  nd->flushes.reserve(options_.flush_depth);
  Device* d = nd.get();
  device_index_.emplace(dev, static_cast<uint32_t>(devices_.size()));
  devices_.push_back(std::move(nd));
  if (fast_count_ < kFastDevices) {
    fast_dev_[fast_count_] = dev;
    fast_device_[fast_count_] = d;
    ++fast_count_;
  }
  return *d;
}

void RequestMatcher::ExpireIn(RequestTable& t, uint64_t now) {
  while (now > t.expires_after()) {  // the table keeps its oldest entry's expiry time
    RequestEntry* oldest = t.Oldest();
    ++GivenUp(stats_.expired, oldest->state, oldest->last_ts, now);
    RemoveRequest(t, oldest);
  }
}

void RequestMatcher::TakeQueued(RequestEntry* ent) {
  if (queued_.size() == 0) return;  // block_bio_queue not recorded (or none waiting)
  RequestEntry* q = queued_.Find(ent->dev, ent->sector);
  if (q == nullptr) return;
  ent->queue_ts = q->queue_ts;
  ent->has |= kHasQueue;
  queued_.Remove(q);
}

RequestEntry* RequestMatcher::AddEntry(const BlockEvent& e) {
  if (watching_) [[unlikely]] max_tracked_ = std::max(max_tracked_, table_.size());
  if (table_.full()) {
    RequestEntry* oldest = table_.Oldest();
    ++GivenUp(stats_.evicted, oldest->state, oldest->last_ts, e.ts);
    RemoveRequest(table_, oldest);
  }
  RequestEntry* ent = table_.Add(e.dev, e.sector, e.ts);
  ent->op = e.op;
  ent->flags = e.flags;
  ent->nr_sector = ent->outstanding = e.nr_sector;
  ent->bytes = e.bytes;
  return ent;
}

void RequestMatcher::Emit(RequestSample* s) {
  for (unsigned bits = s->phases; bits != 0; bits &= bits - 1) {
    const int p = std::countr_zero(bits);
    const Phase phase = static_cast<Phase>(p);
    if (s->End(phase) < s->Start(phase)) {
      s->phases &= static_cast<uint8_t>(~PhaseBit(phase));
      ++stats_.negative_latency;
      continue;
    }
    ++stats_.paired[p];
  }
  if (s->phases != 0) sink_->OnRequestSample(*s);
}

namespace {

// A sample carrying everything known about an entry; phases are set by the caller.
RequestSample SampleOf(const RequestEntry& ent) {
  RequestSample s;
  s.dev = ent.dev;
  s.op = ent.op;
  s.flags = ent.flags;
  s.queue_ts = ent.queue_ts;
  s.insert_ts = ent.insert_ts;
  s.issue_ts = ent.issue_ts;
  s.nr_sector = ent.nr_sector;
  s.bytes = ent.bytes;
  s.insert_pid = ent.insert_pid;
  s.issue_pid = ent.issue_pid;
  s.insert_comm = ent.insert_comm;
  s.issue_comm = ent.issue_comm;
  return s;
}

}  // namespace

void RequestMatcher::FlushPending(RequestEntry* ent) {
  RequestSample s = SampleOf(*ent);
  s.phases = ent->pending_phases;
  ent->pending_phases = 0;
  Emit(&s);
}

void RequestMatcher::OnEvent(const BlockEvent& e) {
  Device& d = DeviceFor(e.dev);
  ++d.stats.events[static_cast<int>(e.kind)];
  Expire(e.ts);
  if (watching_) [[unlikely]] last_event_ts_ = e.ts;
  // Flushes carry no usable sector (issue 0 + 0, complete -1): paired per device, FIFO. (One
  // switch: the flush test sits in the four cases it applies to.)
  switch (e.kind) {
    case BlockEventKind::kInsert:
      if (e.IsFlush()) OnFlush(d, e); else OnInsert(d, e);
      break;
    case BlockEventKind::kIssue:
      if (e.IsFlush()) OnFlush(d, e); else OnIssue(d, e);
      break;
    case BlockEventKind::kComplete:
      if (e.IsFlush()) OnFlush(d, e); else OnComplete(e);
      break;
    case BlockEventKind::kRequeue:
      if (e.IsFlush()) OnFlush(d, e); else OnRequeue(e);
      break;
    case BlockEventKind::kMerge: OnMerge(e); break;
    case BlockEventKind::kBioQueue: OnBioQueue(e); break;
    case BlockEventKind::kBioFrontMerge: OnBioFrontMerge(e); break;
    case BlockEventKind::kBioBackMerge: OnBioBackMerge(e); break;
    case BlockEventKind::kIoStart:
    case BlockEventKind::kIoDone:
      break;  // accounting events: counted per device, not used for pairing
  }
}

inline void RequestMatcher::OnInsert(Device& d, const BlockEvent& e) {
  RequestEntry* ent = table_.Find(e.dev, e.sector);
  if (ent == nullptr) Touched(e.dev, e.sector, TouchKind::kInsert);
  if (ent != nullptr) {
    switch (ent->state) {
      case RequestState::kQueued:  // not held in table_
      case RequestState::kRequeued:
        // The kernel re-inserts a requeued request (blk_mq_requeue_work): same request.
        table_.Touch(ent, e.ts);
        return;
      case RequestState::kInserted:
      case RequestState::kIssued: {
        // A second live request on the key: an issued one is kept apart (while there is room),
        // an inserted one given up.
        if (!KeepApart(ent)) {
          ++stats_.collisions;
          ++GivenUp(stats_.collided, ent->state, ent->last_ts, e.ts);
          RemoveRequest(table_, ent);
        }
        ent = nullptr;
        break;
      }
    }
  }
  ent = AddEntry(e);
  TakeQueued(ent);
  ent->state = RequestState::kInserted;
  ent->has |= kHasInsert;
  ent->insert_ts = e.ts;
  ent->insert_pid = e.pid;
  CopyComm(ent->insert_comm, e.comm);
  ent->op = e.op;
  ent->flags = e.flags;
  ent->nr_sector = ent->outstanding = e.nr_sector;
  ent->bytes = e.bytes;
}

inline void RequestMatcher::OnIssue(Device& d, const BlockEvent& e) {
  RequestEntry* ent = table_.Find(e.dev, e.sector);
  if (ent == nullptr) Touched(e.dev, e.sector, TouchKind::kIssue);
  bool emit_queue_phases = false;
  if (ent != nullptr && ent->state == RequestState::kIssued) {
    // Issued twice without a completion between: another request at the same sector, or the
    // first one's completion was not seen. Kept apart while there is room, else given up.
    if (!KeepApart(ent)) {
      ++stats_.collisions;
      ++GivenUp(stats_.collided, ent->state, ent->last_ts, e.ts);
      RemoveRequest(table_, ent);
    }
    ent = nullptr;
  }
  if (ent == nullptr) {
    // Issued with no insert before it: the request starts here (its bio may have been seen).
    ent = AddEntry(e);
    TakeQueued(ent);
    ++d.stats.issues_without_insert;
    emit_queue_phases = true;
  } else {
    table_.Touch(ent, e.ts);
    emit_queue_phases = ent->state != RequestState::kRequeued;
  }
  ent->state = RequestState::kIssued;
  ent->has |= kHasIssue;
  ent->issue_ts = e.ts;  // after a requeue: the last issue, D2C runs from here
  ent->issue_pid = e.pid;
  CopyComm(ent->issue_comm, e.comm);
  ent->op = e.op;
  ent->flags = e.flags;
  // The issue carries the final size (bios may have merged in since the insert).
  ent->nr_sector = ent->outstanding = e.nr_sector;
  ent->bytes = e.bytes;
  if (emit_queue_phases && !ent->issued_before) {
    uint8_t phases = 0;
    if (ent->has & kHasInsert) phases |= PhaseBit(Phase::kI2D);
    if (ent->has & kHasQueue) phases |= PhaseBit(Phase::kQ2D);
    if (options_.combine_samples) {
      ent->pending_phases = phases;  // sent with the completion, or when the request leaves
    } else if (phases != 0) {
      RequestSample s = SampleOf(*ent);
      s.phases = phases;
      Emit(&s);
    }
  }
  ent->issued_before = true;
}

inline void RequestMatcher::OnComplete(const BlockEvent& e) {
  if (e.error != 0) ++stats_.completion_errors;
  RequestEntry* ent = table_.Find(e.dev, e.sector);
  if (watching_ && !FitsInTable(e, ent)) [[unlikely]] {
    // Would look among those kept apart. Rare, but bounded like the touch log: past 4 M of
    // them (16 MiB), Resolve says no.
    if (searched_keys_.size() < kMaxSearchedKeys) {
      searched_keys_.push_back(KeyHash(e.dev, e.sector));
    } else {
      watch_failed_ = true;
    }
    if (ent == nullptr) Touched(e.dev, e.sector, TouchKind::kOther);
  }
  if (!overlapped_.empty() && CompleteOverlapped(e, ent)) [[unlikely]] return;
  if (ent == nullptr) {
    // A zero-length completion on no live request is the flush machinery ending a request
    // (blk_flush_complete_seq in block/blk-flush.c): an empty preflush request, never issued
    // itself, after the flush issued for it ("WS 0 + 0"); or a write with FUA on a device
    // without FUA, after its post-flush, once its data had completed ("WSM 524360 + 0").
    if (e.nr_sector == 0) {
      ++stats_.flush_sequence_completions;
    } else {
      ++stats_.completes_without_issue;
    }
    return;
  }
  const bool issued = ent->state == RequestState::kIssued;
  if (!issued) ++stats_.completes_without_issue;
  if (e.nr_sector != 0 && e.nr_sector < ent->outstanding) {
    // Partial completion: the rest of the request now starts at sector + done.
    ++stats_.partial_completions;
    const uint64_t next = e.sector + e.nr_sector;
    Touched(e.dev, next, TouchKind::kOther);  // looked up, and where the rest moves to
    if (RequestEntry* other = table_.Find(e.dev, next); other != nullptr) {
      ++stats_.collisions;
      RemoveRequest(table_, other);
    }
    table_.Rekey(ent, next);
    ent->outstanding -= e.nr_sector;
    table_.Touch(ent, e.ts);
    return;
  }
  RequestSample s = SampleOf(*ent);
  s.complete_ts = e.ts;
  // Nothing the sample holds has changed since the issue (a requeue sends the pending phases).
  s.phases = ent->pending_phases;
  if (issued) s.phases |= PhaseBit(Phase::kD2C);
  if (ent->has & kHasInsert) s.phases |= PhaseBit(Phase::kI2C);
  if (ent->has & kHasQueue) s.phases |= PhaseBit(Phase::kQ2C);
  table_.Remove(ent);
  Emit(&s);
}

bool RequestMatcher::KeepApart(RequestEntry* ent) {
  if (watching_) [[unlikely]] max_overlapped_ = std::max(max_overlapped_, overlapped_.size());
  if (ent->state != RequestState::kIssued || overlapped_.size() == kMaxOverlapping) return false;
  overlapped_.push_back(*ent);  // issue phases not sent yet travel with it
  table_.Remove(ent);
  ++stats_.overlapping;
  return true;
}

bool RequestMatcher::CompleteOverlapped(const BlockEvent& e, const RequestEntry* in_table) {
  if (FitsInTable(e, in_table)) return false;
  // The latest issued of those that fit: with a completion lost, the request it belonged to
  // stays behind rather than taking a later request's completion.
  size_t best = overlapped_.size();
  for (size_t i = 0; i < overlapped_.size(); ++i) {
    const RequestEntry& o = overlapped_[i];
    if (o.dev == e.dev && o.sector == e.sector && o.outstanding == e.nr_sector &&
        o.op == e.op && (best == overlapped_.size() || o.issue_ts >= overlapped_[best].issue_ts)) {
      best = i;
    }
  }
  if (best == overlapped_.size()) return false;
  RequestEntry& o = overlapped_[best];
  RequestSample s = SampleOf(o);
  s.complete_ts = e.ts;
  s.phases = o.pending_phases | PhaseBit(Phase::kD2C);
  if (o.has & kHasInsert) s.phases |= PhaseBit(Phase::kI2C);
  if (o.has & kHasQueue) s.phases |= PhaseBit(Phase::kQ2C);
  Emit(&s);  // before the entry goes: the sample points at its comms
  o = overlapped_.back();
  overlapped_.pop_back();
  return true;
}

void RequestMatcher::OnRequeue(const BlockEvent& e) {
  RequestEntry* ent = table_.Find(e.dev, e.sector);
  if (ent == nullptr) Touched(e.dev, e.sector, TouchKind::kOther);
  if (ent == nullptr || ent->state != RequestState::kIssued) {
    ++stats_.requeues_unmatched;
    return;
  }
  ++stats_.requeues;
  // The next issue rewrites the issue time, op and size: send what the first issue ended now.
  if (ent->pending_phases != 0) FlushPending(ent);
  ent->state = RequestState::kRequeued;
  table_.Touch(ent, e.ts);
}

void RequestMatcher::OnMerge(const BlockEvent& e) {
  // block_rq_merge traces the request that is merged into another one and freed.
  // A request merged while being inserted (elv_attempt_insert_merge) never had an insert
  // event: only its bio's queue entry is there, and it goes away with it.
  RequestEntry* ent = table_.Find(e.dev, e.sector);
  if (ent == nullptr) {
    Touched(e.dev, e.sector, TouchKind::kOther);
    if (RequestEntry* q = queued_.Find(e.dev, e.sector); q != nullptr) {
      ++stats_.merges_before_insert;
      queued_.Remove(q);
    } else {
      ++stats_.merges_unmatched;
    }
    return;
  }
  ++stats_.merges;
  RemoveRequest(table_, ent);
}

void RequestMatcher::OnBioQueue(const BlockEvent& e) {
  if (e.IsFlush()) return;  // empty preflush bios become flush requests: not tracked by sector
  Touched(e.dev, e.sector, TouchKind::kOther);  // both tables are looked up
  if (table_.Find(e.dev, e.sector) != nullptr) ++stats_.bio_queue_on_live;
  RequestEntry* q = queued_.Find(e.dev, e.sector);
  if (q == nullptr) {
    if (watching_) [[unlikely]] max_queued_ = std::max(max_queued_, queued_.size());
    if (queued_.full()) {
      ++stats_.evicted[StateIndex(RequestState::kQueued)];
      queued_.Remove(queued_.Oldest());
    }
    q = queued_.Add(e.dev, e.sector, e.ts);
  } else {
    queued_.Touch(q, e.ts);  // a newer bio at the same sector supersedes the old one
  }
  q->state = RequestState::kQueued;
  q->has = kHasQueue;
  q->queue_ts = e.ts;
  q->op = e.op;
  q->flags = e.flags;
  q->nr_sector = q->outstanding = e.nr_sector;
}

void RequestMatcher::OnBioFrontMerge(const BlockEvent& e) {
  ++stats_.bio_front_merges;
  // The bio at `sector` joins the front of the request that started right after it: that
  // request now starts at the bio's sector and keeps its own (earlier) queue time. The bio's
  // own queue entry goes away. The request may still sit in a plug (only its bio seen) or be
  // inserted already.
  if (RequestEntry* q = queued_.Find(e.dev, e.sector); q != nullptr) queued_.Remove(q);
  const uint64_t next = e.sector + e.nr_sector;
  Touched(e.dev, e.sector, TouchKind::kOther);  // looked up, and where a request moves to
  Touched(e.dev, next, TouchKind::kOther);
  if (RequestEntry* q = queued_.Find(e.dev, next); q != nullptr) {
    if (queued_.Rekey(q, e.sector)) {
      q->nr_sector += e.nr_sector;
      queued_.Touch(q, e.ts);
    }
    return;
  }
  RequestEntry* req = table_.Find(e.dev, next);
  if (req == nullptr || req->state != RequestState::kInserted) return;
  if (!table_.Rekey(req, e.sector)) return;  // a live request holds the key: leave both
  req->nr_sector += e.nr_sector;
  req->outstanding += e.nr_sector;
  table_.Touch(req, e.ts);
}

void RequestMatcher::OnBioBackMerge(const BlockEvent& e) {
  ++stats_.bio_back_merges;
  Touched(e.dev, e.sector, TouchKind::kOther);
  // The bio joined the back of another request: its own queue entry will never be inserted.
  if (RequestEntry* q = queued_.Find(e.dev, e.sector); q != nullptr) queued_.Remove(q);
}

void RequestMatcher::DropFlushes(uint64_t gap_end) {
  gap_end_ts_ = std::max(gap_end_ts_, gap_end);
  for (const std::unique_ptr<Device>& d : devices_) {
    for (const FlushSlot& f : d->flushes) ++stats_.flushes_at_gap[StateIndex(f.state)];
    d->flushes.clear();  // capacity kept: no allocation when they come back
  }
}

void RequestMatcher::OnFlush(Device& d, const BlockEvent& e) {
  std::vector<FlushSlot>& fifo = d.flushes;
  // Expire stale flushes (their completion was lost) so they do not shift the pairing forever.
  while (!fifo.empty() && e.ts > fifo.front().last_ts &&
         e.ts - fifo.front().last_ts > options_.expiry_ns) {
    ++stats_.expired[StateIndex(fifo.front().state)];
    fifo.erase(fifo.begin());
  }
  auto first_in = [&fifo](RequestState a, RequestState b) -> FlushSlot* {
    for (FlushSlot& f : fifo) {
      if (f.state == a || f.state == b) return &f;
    }
    return nullptr;
  };
  auto push = [&]() -> FlushSlot& {
    if (fifo.size() == options_.flush_depth) {
      ++stats_.evicted[StateIndex(fifo.front().state)];
      fifo.erase(fifo.begin());
    }
    FlushSlot slot;
    std::memset(&slot, 0, sizeof(slot));
    slot.insert_pid = slot.issue_pid = -1;
    fifo.push_back(slot);  // capacity reserved: no allocation
    return fifo.back();
  };
  auto sample_of = [&e](const FlushSlot& f) {
    RequestSample s;
    s.dev = e.dev;
    s.op = BlockOp::kFlush;
    s.flags = f.flags;
    s.insert_ts = f.insert_ts;
    s.issue_ts = f.issue_ts;
    s.insert_pid = f.insert_pid;
    s.issue_pid = f.issue_pid;
    s.insert_comm = f.insert_comm;
    s.issue_comm = f.issue_comm;
    return s;
  };
  switch (e.kind) {
    case BlockEventKind::kInsert: {
      FlushSlot& f = push();
      f.state = RequestState::kInserted;
      f.has = kHasInsert;
      f.flags = e.flags;
      f.insert_ts = f.last_ts = e.ts;
      f.insert_pid = e.pid;
      CopyComm(f.insert_comm, e.comm);
      break;
    }
    case BlockEventKind::kIssue: {
      FlushSlot* f = first_in(RequestState::kInserted, RequestState::kRequeued);
      bool first_issue = f != nullptr && f->state == RequestState::kInserted;
      if (f == nullptr) {
        f = &push();
        f->flags = e.flags;
        ++stats_.issues_without_insert[static_cast<int>(NoInsertReason::kFlush)];
      }
      f->state = RequestState::kIssued;
      f->has |= kHasIssue;
      f->issue_ts = f->last_ts = e.ts;
      f->issue_pid = e.pid;
      CopyComm(f->issue_comm, e.comm);
      if (first_issue) {
        RequestSample s = sample_of(*f);
        s.phases = PhaseBit(Phase::kI2D);
        Emit(&s);
      }
      break;
    }
    case BlockEventKind::kComplete: {
      if (e.error != 0) ++stats_.completion_errors;
      FlushSlot* f = first_in(RequestState::kIssued, RequestState::kIssued);
      if (f == nullptr) {
        ++stats_.completes_without_issue;
        break;
      }
      RequestSample s = sample_of(*f);
      s.complete_ts = e.ts;
      s.phases = PhaseBit(Phase::kD2C);
      if (f->has & kHasInsert) s.phases |= PhaseBit(Phase::kI2C);
      fifo.erase(fifo.begin() + (f - fifo.data()));
      ++stats_.flushes;
      Emit(&s);
      break;
    }
    case BlockEventKind::kRequeue: {
      FlushSlot* f = first_in(RequestState::kIssued, RequestState::kIssued);
      if (f == nullptr) {
        ++stats_.requeues_unmatched;
        break;
      }
      ++stats_.requeues;
      f->state = RequestState::kRequeued;
      f->last_ts = e.ts;
      break;
    }
    default:
      break;
  }
}

void RequestMatcher::Finish(uint64_t stale_before) {
  auto left = [this, stale_before](RequestState state, uint64_t last_ts) {
    ++stats_.in_flight_at_end[StateIndex(state)];
    const bool issued = state == RequestState::kIssued || state == RequestState::kRequeued;
    if (issued && last_ts < stale_before) ++GivenUp(stats_.stale_at_end, state, last_ts, ~uint64_t{0});
  };
  for (RequestTable* t : {&table_, &queued_}) {
    t->ForEach([&left](const RequestEntry& ent) { left(ent.state, ent.last_ts); });
  }
  for (RequestEntry& o : overlapped_) {
    left(o.state, o.last_ts);
    if (o.pending_phases != 0) FlushPending(&o);
  }
  overlapped_.clear();
  for (auto& d : devices_) {
    for (const FlushSlot& f : d->flushes) left(f.state, f.last_ts);
    d->flushes.clear();
    NoInsertReason reason = !insert_recorded_ ? NoInsertReason::kInsertNotRecorded
                            : d->stats.events[static_cast<int>(BlockEventKind::kInsert)] == 0
                                ? NoInsertReason::kNoInsertOnDevice
                                : NoInsertReason::kInsertMissing;
    d->stats.no_insert_reason = reason;
    stats_.issues_without_insert[static_cast<int>(reason)] += d->stats.issues_without_insert;
  }
  while (RequestEntry* oldest = table_.Oldest()) RemoveRequest(table_, oldest);
  while (RequestEntry* oldest = queued_.Oldest()) queued_.Remove(oldest);
}

namespace {

bool SameRequest(const RequestEntry& a, const RequestEntry& b) {
  // Every member but the activity links (slot numbers, which differ between tables).
  return a.sector == b.sector && a.queue_ts == b.queue_ts && a.insert_ts == b.insert_ts &&
         a.issue_ts == b.issue_ts && a.last_ts == b.last_ts && a.dev == b.dev &&
         a.nr_sector == b.nr_sector && a.outstanding == b.outstanding && a.bytes == b.bytes &&
         a.insert_pid == b.insert_pid && a.issue_pid == b.issue_pid &&
         std::memcmp(a.insert_comm, b.insert_comm, kCommSize) == 0 &&
         std::memcmp(a.issue_comm, b.issue_comm, kCommSize) == 0 && a.state == b.state &&
         a.op == b.op && a.flags == b.flags && a.has == b.has &&
         a.issued_before == b.issued_before && a.pending_phases == b.pending_phases;
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
    for (int k = 0; k < kBlockEventKindCount; ++k) {
      mine.events[k] = plus ? mine.events[k] + d.events[k] : mine.events[k] - d.events[k];
    }
    mine.issues_without_insert = plus ? mine.issues_without_insert + d.issues_without_insert
                                      : mine.issues_without_insert - d.issues_without_insert;
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

std::vector<DeviceMatchStats> RequestMatcher::devices() const {
  std::vector<DeviceMatchStats> out;
  out.reserve(devices_.size());
  for (const auto& d : devices_) out.push_back(d->stats);
  return out;
}

}  // namespace iotrace
