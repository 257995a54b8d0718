#include "iotrace/analysis/request_matcher.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_map>

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
  overlapped_.reserve(kMaxOverlapping);
}

RequestMatcher::~RequestMatcher() = default;

RequestMatcher::Device& RequestMatcher::NewDevice(uint32_t dev) {
  // The only allocations the matcher makes after construction.
  if (devices_.size() % kDeviceChunk == 0) {
    device_chunks_.push_back(std::make_unique<Device[]>(kDeviceChunk));
    // Faulted in at once from the second chunk on: a file of a few devices keeps the FIFOs'
    // pages untouched until used, as the heap did.
    flush_arena_ = PopulatedArena::Create(kDeviceChunk * options_.flush_depth * sizeof(FlushSlot),
                                          /*populate=*/!devices_.empty());
  }
  Device& d = device_chunks_.back()[devices_.size() % kDeviceChunk];
  d.stats.dev = dev;
  d.flushes = decltype(d.flushes)(ArenaAllocator<FlushSlot>(flush_arena_));
  d.flushes.reserve(options_.flush_depth);
  devices_.push_back(&d);
  device_index_.Insert(dev, &d);
  return d;
}

void RequestMatcher::ExpireIn(RequestTable& t, uint64_t now) {
  while (now > t.expires_after()) {  // the table keeps its oldest entry's expiry time
    RequestEntry* oldest = t.Oldest();
    ++GivenUp(stats_.expired, oldest->state, oldest->last_ts, now);
    ++DeviceFor(oldest->dev).stats.expired;
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
    ++DeviceFor(oldest->dev).stats.evicted;
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
RequestSample SampleOf(const RequestEntry& ent, const CommPool& comms) {
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
  s.insert_comm = comms.Name(ent.insert_comm);
  s.issue_comm = comms.Name(ent.issue_comm);
  s.ioprio = ent.ioprio;
  s.issue_cpu = ent.issue_cpu;
  return s;
}

}  // namespace

void RequestMatcher::FlushPending(RequestEntry* ent) {
  RequestSample s = SampleOf(*ent, comms_);
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
      if (e.IsFlush()) OnFlush(d, e); else OnComplete(d, e);
      break;
    case BlockEventKind::kRequeue:
      if (e.IsFlush()) OnFlush(d, e); else OnRequeue(d, e);
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
          ++DeviceFor(ent->dev).stats.collided;
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
  ent->insert_comm = comms_.Intern(e.comm);
  ent->op = e.op;
  ent->flags = e.flags;
  ent->nr_sector = ent->outstanding = e.nr_sector;
  ent->bytes = e.bytes;
  ent->ioprio = IoprioClassLevel(e.ioprio);
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
      ++d.stats.collided;
      RemoveRequest(table_, ent);
    }
    ent = nullptr;
  }
  if (ent == nullptr) {
    // Issued with no insert before it: the request starts here (its bio may have been seen).
    ent = AddEntry(e);
    TakeQueued(ent);
    ++d.stats.issues_without_insert;
    Unpaired(e.ts);
    emit_queue_phases = true;
  } else {
    table_.Touch(ent, e.ts);
    emit_queue_phases = ent->state != RequestState::kRequeued;
  }
  ent->state = RequestState::kIssued;
  ent->has |= kHasIssue;
  ent->issue_ts = e.ts;  // after a requeue: the last issue, D2C runs from here
  ent->issue_pid = e.pid;
  ent->issue_comm = comms_.Intern(e.comm);
  ent->op = e.op;
  ent->flags = e.flags;
  // The issue carries the final size (bios may have merged in since the insert).
  ent->nr_sector = ent->outstanding = e.nr_sector;
  ent->bytes = e.bytes;
  ent->ioprio = IoprioClassLevel(e.ioprio);
  ent->issue_cpu = static_cast<uint16_t>(e.cpu);
  if (emit_queue_phases && (ent->has & kIssuedBefore) == 0) {
    uint8_t phases = 0;
    if (ent->has & kHasInsert) phases |= PhaseBit(Phase::kI2D);
    if (ent->has & kHasQueue) phases |= PhaseBit(Phase::kQ2D);
    if (options_.combine_samples) {
      ent->pending_phases = phases;  // sent with the completion, or when the request leaves
    } else if (phases != 0) {
      RequestSample s = SampleOf(*ent, comms_);
      s.phases = phases;
      Emit(&s);
    }
  }
  ent->has |= kIssuedBefore;
}

inline void RequestMatcher::OnComplete(Device& d, const BlockEvent& e) {
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
      ++d.stats.completes_without_issue;
      Unpaired(e.ts);
    }
    return;
  }
  const bool issued = ent->state == RequestState::kIssued;
  if (!issued) {
    ++stats_.completes_without_issue;
    ++d.stats.completes_without_issue;
    Unpaired(e.ts);
  }
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
  RequestSample s = SampleOf(*ent, comms_);
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
  RequestSample s = SampleOf(o, comms_);
  s.complete_ts = e.ts;
  s.phases = o.pending_phases | PhaseBit(Phase::kD2C);
  if (o.has & kHasInsert) s.phases |= PhaseBit(Phase::kI2C);
  if (o.has & kHasQueue) s.phases |= PhaseBit(Phase::kQ2C);
  Emit(&s);  // before the entry goes: the sample points at its comms
  o = overlapped_.back();
  overlapped_.pop_back();
  return true;
}

void RequestMatcher::OnRequeue(Device& d, const BlockEvent& e) {
  RequestEntry* ent = table_.Find(e.dev, e.sector);
  if (ent == nullptr) Touched(e.dev, e.sector, TouchKind::kOther);
  if (ent == nullptr || ent->state != RequestState::kIssued) {
    ++stats_.requeues_unmatched;
    ++d.stats.requeues_unmatched;
    Unpaired(e.ts);
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

void RequestMatcher::DropFlushes() {
  for (Device* d : devices_) {
    for (const FlushSlot& f : d->flushes) ++stats_.flushes_at_gap[StateIndex(f.state)];
    d->flushes.clear();  // capacity kept: no allocation when they come back
  }
}

void RequestMatcher::OnFlush(Device& d, const BlockEvent& e) {
  auto& fifo = d.flushes;
  // Expire stale flushes (their completion was lost) so they do not shift the pairing forever.
  while (!fifo.empty() && e.ts > fifo.front().last_ts &&
         e.ts - fifo.front().last_ts > options_.expiry_ns) {
    ++stats_.expired[StateIndex(fifo.front().state)];
    ++d.stats.expired;
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
      ++d.stats.evicted;
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
    s.ioprio = f.ioprio;
    s.issue_cpu = f.issue_cpu;
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
      f.ioprio = IoprioClassLevel(e.ioprio);
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
        Unpaired(e.ts);
      }
      f->state = RequestState::kIssued;
      f->has |= kHasIssue;
      f->issue_ts = f->last_ts = e.ts;
      f->issue_pid = e.pid;
      f->ioprio = IoprioClassLevel(e.ioprio);
      f->issue_cpu = static_cast<uint16_t>(e.cpu);
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
        ++d.stats.completes_without_issue;
        Unpaired(e.ts);
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
        ++d.stats.requeues_unmatched;
        Unpaired(e.ts);
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

std::vector<DeviceMatchStats> RequestMatcher::devices() const {
  std::vector<DeviceMatchStats> out;
  out.reserve(devices_.size());
  std::unordered_map<uint32_t, size_t> at;  // dev -> index in out
  for (const auto& d : devices_) {
    at.emplace(d->stats.dev, out.size());
    out.push_back(d->stats);
    out.back().tracked = d->flushes.size();
  }
  const auto count = [&](const RequestEntry& e) {
    if (auto it = at.find(e.dev); it != at.end()) ++out[it->second].tracked;
  };
  table_.ForEach(count);
  queued_.ForEach(count);
  for (const RequestEntry& e : overlapped_) count(e);
  return out;
}

}  // namespace iotrace
