// Pairs time-ordered block events into per-request latency samples (btt's phases: Q2D, I2D,
// D2C, I2C, Q2C) on (dev, sector), with the rules of docs/kernel-notes.md: flushes paired
// per device in FIFO order, requeues, request merges, partial completions, collisions, and a
// bounded table whose stale entries expire. Every event that cannot be paired is counted.
#ifndef IOTRACE_ANALYSIS_REQUEST_MATCHER_H_
#define IOTRACE_ANALYSIS_REQUEST_MATCHER_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "iotrace/analysis/comm_pool.h"
#include "iotrace/analysis/match_stats.h"
#include "iotrace/analysis/request_table.h"
#include "iotrace/base/arena.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/pointer_index.h"
#include "iotrace/base/prefetch.h"
#include "iotrace/event/block_event.h"
#include "iotrace/formats/coverage.h"

namespace iotrace {

// One request reaching a stage that ends one or more phases: at its first issue (I2D, Q2D) or
// at its final completion (D2C, I2C, Q2C). Only the phases in `phases` are valid.
struct RequestSample {
  uint32_t dev = 0;
  BlockOp op = BlockOp::kOther;
  uint8_t flags = 0;
  uint8_t phases = 0;  // PhaseBit() set
  uint8_t ioprio = 0;  // IoprioClassLevel of its last insert or issue (0 when not recorded)
  uint16_t issue_cpu = 0;  // the CPU of its last issue
  uint64_t queue_ts = 0;
  uint64_t insert_ts = 0;
  uint64_t issue_ts = 0;
  uint64_t complete_ts = 0;
  uint32_t nr_sector = 0;
  uint32_t bytes = 0;
  int32_t insert_pid = -1;  // the process that inserted the request (-1: no insert)
  int32_t issue_pid = -1;   // the process that issued it
  const char* insert_comm = "";  // NUL-terminated, valid during the callback only
  const char* issue_comm = "";

  bool Has(Phase p) const { return (phases & PhaseBit(p)) != 0; }
  // A table lookup each (a load of the member's offset): these run for every phase of every
  // request, twice.
  uint64_t Start(Phase p) const { return this->*kStartOf[static_cast<int>(p)]; }
  uint64_t End(Phase p) const { return this->*kEndOf[static_cast<int>(p)]; }

  static constexpr uint64_t RequestSample::*kStartOf[kPhaseCount] = {
      &RequestSample::insert_ts,  // I2D
      &RequestSample::issue_ts,   // D2C
      &RequestSample::insert_ts,  // I2C
      &RequestSample::queue_ts,   // Q2D
      &RequestSample::queue_ts,   // Q2C
  };
  static constexpr uint64_t RequestSample::*kEndOf[kPhaseCount] = {
      &RequestSample::issue_ts,     // I2D
      &RequestSample::complete_ts,  // D2C
      &RequestSample::complete_ts,  // I2C
      &RequestSample::issue_ts,     // Q2D
      &RequestSample::complete_ts,  // Q2C
  };
  uint64_t Latency(Phase p) const { return End(p) - Start(p); }
};

class RequestSampleSink {
 public:
  virtual ~RequestSampleSink() = default;
  virtual void OnRequestSample(const RequestSample& sample) = 0;
  // An event that found nothing to pair with: an issue without an insert, a completion without
  // an issue, a requeue of a request not seen issued (the matcher counts each in its stats too;
  // this says when, for a report's time series).
  virtual void OnUnpairedEvent(uint64_t /*ts*/) {}
};

struct MatcherOptions {
  uint64_t expiry_ns = 30'000'000'000;  // an entry idle this long (trace time) is dropped
  size_t max_entries = 131072;          // requests tracked at once; the oldest is evicted
  size_t flush_depth = 32;              // flushes tracked per device
  // Hand the phases a request ends at its issue (I2D, Q2D) over together with those it ends at
  // its completion, in one sample, instead of one sample at each: half the samples. The phases,
  // their values and the counters are the same; only the order and the grouping of samples
  // change, so a sink may ask for it when it neither counts samples nor cares about order. A
  // request that never completes gets its issue phases when it leaves the table (requeue,
  // collision, merge, expiry, eviction, Finish).
  bool combine_samples = false;
};

class RequestMatcher {
 public:
  struct FlushSlot {
    RequestState state;
    uint8_t has;
    uint8_t flags;
    uint8_t ioprio;      // as RequestEntry's
    uint16_t issue_cpu;
    uint64_t insert_ts, issue_ts, last_ts;
    int32_t insert_pid, issue_pid;
    char insert_comm[kCommSize];
    char issue_comm[kCommSize];
  };
  using FlushList = std::vector<std::pair<uint32_t, std::vector<FlushSlot>>>;  // by dev

  // Everything that decides what the matcher does with the events still to come (its counters
  // aside): the requests and bios it tracks, in activity order, and each device's flushes. Two
  // matchers in equal states pair what follows the same way. For reading a file as two time
  // ranges apart (LatencyReportBuilder): the later range's matcher, primed on the events just
  // before its range, stands for the earlier one's when their states at the cut are equal.
  // That reconciliation (State, Snapshot, TakeOver, Older, SplitOlder, WatchKeys, Resolve,
  // Adopt, and the key log behind them) is defined in src/analysis/request_matcher_ranges.cc.
  //
  // A request stands in the state as a 64-bit digest of every member but its table links, keyed
  // by a seed drawn once per process: 8 bytes held per request in flight instead of a copy of
  // its 112-byte entry (at 1 M in flight the copies were most of a two-range read's memory).
  // Two different requests compare equal only when their digests collide (about 2^-64 a pair).
  struct State {
    std::vector<uint64_t> requests;
    std::vector<uint64_t> queued;
    std::vector<uint64_t> overlapped;
    FlushList flushes;  // non-empty, by dev
    bool operator==(const State& other) const;
  };
  // The counters: the totals and each device's.
  struct Counts {
    MatchStats stats;
    std::vector<DeviceMatchStats> devices;
  };

  // `sink` receives every sample; it must outlive the matcher.
  RequestMatcher(const MatcherOptions& options, RequestSampleSink* sink);
  ~RequestMatcher();

  void set_sink(RequestSampleSink* sink) { sink_ = sink; }
  State Snapshot() const;
  Counts counts() const { return Counts{stats_, devices()}; }
  // Makes this matcher's counters those of one that read `earlier`'s events and then this one's
  // since `at_cut` (its counters when its own range began): minus `at_cut`, plus `earlier`.
  void TakeOver(const Counts& at_cut, const Counts& earlier);

  // Requests (and bios) that the earlier range's matcher held at the cut and the later one,
  // primed from a later time, never saw: last active before the priming began, most often
  // requests whose completion was lost.
  struct Older {
    std::vector<RequestEntry> requests;
    std::vector<RequestEntry> queued;
    std::vector<RequestEntry> overlapped;
    // Resolve: issued requests that an insert or issue at their sector met after the cut (one
    // pass would have kept them apart), and inserted ones an insert met (given up).
    std::vector<RequestEntry> kept_apart;
    std::vector<RequestEntry> collided;
    const CommPool* comms = nullptr;  // the pool of their names (the earlier matcher's)
    bool empty() const {
      return requests.empty() && queued.empty() && overlapped.empty() && kept_apart.empty() &&
             collided.empty();
    }
  };
  // Whether this (the earlier range's) matcher's state is `later` plus requests last active
  // before `primed_from` (*older gets copies of those): equal flushes, and the rest equal and
  // in the same order. Compares in place: no copy of the tables.
  bool SplitOlder(const State& later, uint64_t primed_from, Older* older) const;
  // From now on, remembers every key the events look up and do not find (and every key a
  // request moves to), with the kind of event, and the largest sizes of the tables, so that
  // Resolve can tell what requests it never saw would have changed.
  void WatchKeys();
  // Since WatchKeys: whether one pass, holding `older` too, would have done what this matcher
  // did, but for what Adopt accounts for: requests whose key no event looked up, issued ones
  // whose key an insert or issue looked up first (moved to kept_apart), inserted ones an insert
  // met first (moved to collided); requests kept apart that no completion looked for; and
  // tables that never came so close to full that holding those too would have evicted
  // anything. False for anything else.
  bool Resolve(Older* older) const;
  // Takes in `older` (Resolved) as if it had tracked them since before WatchKeys: those idle
  // past the expiry by the last event since expire, those met after the cut are kept apart or
  // given up (counted as one pass would count them), the others stay tracked (for Finish;
  // nothing else may follow). False (nothing done) when the tables have no room for them.
  bool Adopt(const Older& older);

  // Whether the input carries block_rq_insert at all (decides the no-insert reason).
  void set_insert_recorded(bool recorded) { insert_recorded_ = recorded; }

  // Events must arrive in timestamp order (all CPUs merged).
  void OnEvent(const BlockEvent& event);
  // Asks for the line of `event`'s device that OnEvent(event) counts it in, a few events ahead
  // (LatencyReportBuilder's event lag; nothing when the device is new).
  void Prefetch(const BlockEvent& event) const {
    if (const Device* d = device_index_.Find(event.dev)) iotrace::Prefetch(&d->stats.events);
  }
  size_t device_count() const { return devices_.size(); }
  // Gives up every flush in flight (counted in flushes_at_gap): the events have just passed the
  // end of a gap in the data, and flushes pair in FIFO order per device, which a flush event
  // lost in the gap would shift for good. (Requests pair on their sector: a request left over
  // from the gap meets the next one at its sector as a collision, and the new one pairs right;
  // GivenUp counts it across_gap.)
  void DropFlushes();
  // The gaps in the data (nullptr: none; it outlives the matcher): a request given up with a
  // gap between its last event and then is counted as across_gap.
  void set_coverage(const CoverageFilter* coverage) { coverage_ = coverage; }
  // Counts what is left as in flight (issued or requeued requests last active before
  // `stale_before`, trace time, also as stale; 0: none) and settles the per-device no-insert
  // reasons.
  void Finish(uint64_t stale_before = 0);

  const MatchStats& stats() const { return stats_; }
  // Completion events met so far, every device's (stats().completes_without_issue: those of
  // requests not seen issued).
  uint64_t completes_seen() const;
  // Events this matcher found nothing to pair with so far, as they came (stats() has them by
  // reason, but a device's issues without an insert only from Finish on, once their reason is
  // settled).
  uint64_t unpaired_events() const { return unpaired_events_; }
  std::vector<DeviceMatchStats> devices() const;
  size_t tracked() const { return table_.size() + queued_.size(); }

 private:
  void Unpaired(uint64_t ts) {
    ++unpaired_events_;
    sink_->OnUnpairedEvent(ts);
  }
  // Each device's flushes in flight, by dev (devices without any left out), and their equality.
  FlushList SortedFlushes() const;
  static bool SameFlushes(const FlushList& a, const FlushList& b);
  struct Device {
    DeviceMatchStats stats;
    // FIFO, capacity reserved once (in the arena of its chunk of devices), oldest first.
    std::vector<FlushSlot, ArenaAllocator<FlushSlot>> flushes;
  };

  static uint32_t KeyHash(uint32_t dev, uint64_t sector) {
    return static_cast<uint32_t>(((sector * 0x9e3779b97f4a7c15ULL) ^ dev) >> 32);
  }
  // What looked up a key that was not there (WatchKeys).
  enum class TouchKind : uint8_t { kInsert, kIssue, kOther };
  struct TouchRecord {
    uint64_t sector;
    uint32_t dev;
    TouchKind kind;
  };
  void Touched(uint32_t dev, uint64_t sector, TouchKind kind) {
    if (!watching_) [[likely]] return;
    if (touch_left_ == 0) [[unlikely]] {
      if (!NewTouchChunk()) return;
    }
    *touch_at_++ = TouchRecord{sector, dev, kind};
    --touch_left_;
  }
  bool NewTouchChunk();
  // Whether the request in the table at a completion's sector is the one it completes (of its
  // size and op); else the completion goes to one kept apart, if one fits (CompleteOverlapped).
  static bool FitsInTable(const BlockEvent& e, const RequestEntry* in_table) {
    return in_table != nullptr && in_table->state == RequestState::kIssued &&
           in_table->outstanding == e.nr_sector && in_table->op == e.op;
  }
  // Whether a key of `keys` (sorted here) is in `log`.
  static bool AnyKeyIn(const uint32_t* log, size_t n, std::vector<uint32_t>* keys);
  // Whether an entry last active at `last_ts` would have expired by the last event seen while
  // watching: Expire drops it at the first event after last_ts + expiry_ns.
  bool ExpiredSinceCut(uint64_t last_ts) const {
    const uint64_t expiry = options_.expiry_ns;
    return last_ts <= ~uint64_t{0} - expiry && last_event_ts_ > last_ts + expiry;
  }

  Device& DeviceFor(uint32_t dev) {
    // Events of one device come in long stretches: remember the last one.
    if (last_device_ != nullptr && last_device_->stats.dev == dev) return *last_device_;
    Device* found = device_index_.Find(dev);
    last_device_ = found != nullptr ? found : &NewDevice(dev);
    return *last_device_;
  }
  // The state of a device not seen before.
  Device& NewDevice(uint32_t dev);
  // Runs for every event: an inline comparison with each table's expiry time (its oldest
  // entry's last activity + expiry_ns, kept by the table), the loop out of line.
  void Expire(uint64_t now) {
    if (now > table_.expires_after()) ExpireIn(table_, now);
    if (now > queued_.expires_after()) ExpireIn(queued_, now);
  }
  void ExpireIn(RequestTable& table, uint64_t now);
  RequestEntry* AddEntry(const BlockEvent& e);
  // Gives a new request the queue time of the bio queued at its sector, if one is waiting.
  void TakeQueued(RequestEntry* ent);
  // The three events of nearly every request: inlined into OnEvent, their only caller, so that
  // an event costs one call instead of two.
  [[gnu::always_inline]] void OnInsert(Device& d, const BlockEvent& e);
  [[gnu::always_inline]] void OnIssue(Device& d, const BlockEvent& e);
  [[gnu::always_inline]] void OnComplete(Device& d, const BlockEvent& e);
  void OnRequeue(Device& d, const BlockEvent& e);
  void OnMerge(const BlockEvent& e);
  void OnBioQueue(const BlockEvent& e);
  void OnBioFrontMerge(const BlockEvent& e);
  void OnBioBackMerge(const BlockEvent& e);
  void OnFlush(Device& d, const BlockEvent& e);
  void Emit(RequestSample* s);
  // Moves the issued request `ent` out of the table into overlapped_ (a new request came to its
  // sector), when there is room.
  bool KeepApart(RequestEntry* ent);
  // A completion for a request kept apart (its size and op, not those of the request in the
  // table at that sector, or none there): completes it and returns true.
  bool CompleteOverlapped(const BlockEvent& e, const RequestEntry* in_table);
  // Sends the issue phases still held by `ent` (combine_samples), then removes it from table.
  void FlushPending(RequestEntry* ent);
  void RemoveRequest(RequestTable& table, RequestEntry* ent) {
    if (ent->pending_phases != 0) FlushPending(ent);
    table.Remove(ent);
  }

  MatcherOptions options_;
  RequestSampleSink* sink_;
  CommPool comms_;  // the names in the entries of table_, queued_, overlapped_
  uint64_t unpaired_events_ = 0;
  RequestTable table_;   // requests: inserted, issued, requeued
  // Bios seen queued (block_bio_queue) whose request has not appeared yet. Apart from the
  // requests so that a bio queued at the sector of a request still tracked (say, one whose
  // completion was lost) keeps its own queue time.
  RequestTable queued_;
  // Requests kept apart (KeepApart), at most kMaxOverlapping: rare, searched linearly.
  static constexpr size_t kMaxOverlapping = 256;
  std::vector<RequestEntry> overlapped_;
  bool insert_recorded_ = true;
  // The devices side by side, kDeviceChunk to an allocation: each event counts itself in its
  // device's stats, and with a thousand devices interleaving, objects allocated one by one
  // (each followed by its flush FIFO) spread those lines over a page each.
  // Their flush FIFOs (options_.flush_depth slots each, ~2.3 KiB) in one arena a chunk, faulted
  // in at once from the second chunk on: in heap allocations of their own, a report of 1024
  // devices made ~1,150 first touches of fresh pages for them (two builders).
  static constexpr size_t kDeviceChunk = 64;
  std::vector<std::unique_ptr<Device[]>> device_chunks_;
  std::shared_ptr<PopulatedArena> flush_arena_;  // the last chunk's
  std::vector<Device*> devices_;       // in the order they came
  PointerIndex<Device> device_index_;  // devices_ by dev_t
  Device* last_device_ = nullptr;
  MatchStats stats_;
  const CoverageFilter* coverage_ = nullptr;  // set_coverage
  // The counter of `counter`'s kind for a request given up in `state` at `now`, last active at
  // `last_ts`: across_gap instead when a gap of the data lies between the two (its next event
  // may have been in the gap).
  uint64_t& GivenUp(std::array<uint64_t, kRequestStateCount>& counter, RequestState state,
                    uint64_t last_ts, uint64_t now) {
    const size_t i = static_cast<size_t>(state);
    const bool across = coverage_ != nullptr && coverage_->Crosses(last_ts, now).has_value();
    return across ? stats_.across_gap[i] : counter[i];
  }
  // WatchKeys.
  bool watching_ = false;
  // The keys looked up and not found: about one per request, in 2 MiB chunks of huge pages (a
  // vector in 4 KiB pages cost the later range ~30% more time on this VM, faulting its pages
  // in), at most kMaxTouchChunks of them (32 MiB, ~6 M events after the cut): past that the
  // log stops and Resolve says no to any older request.
  static constexpr size_t kTouchChunkBytes = size_t{2} << 20;
  static constexpr size_t kMaxTouchChunks = 16;
  std::vector<UniqueMapping> touch_chunks_;
  TouchRecord* touch_at_ = nullptr;
  size_t touch_left_ = 0;
  bool watch_failed_ = false;  // the log stopped (full, or no memory): Resolve says no
  std::vector<uint32_t> searched_keys_;  // completions that look among those kept apart
  static constexpr size_t kMaxSearchedKeys = size_t{4} << 20;
  size_t max_tracked_ = 0;
  size_t max_queued_ = 0;
  size_t max_overlapped_ = 0;
  uint64_t last_event_ts_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_REQUEST_MATCHER_H_
