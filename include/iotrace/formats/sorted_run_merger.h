// Time-orders a byte stream of records that is a concatenation of sorted runs (per-CPU perf
// ring drains written one after another), in place and in bounded memory: the stream is cut
// into maximal non-decreasing runs as it is scanned, and a small tournament tree over run cursors
// (never over events) merges them. A record is emitted once nothing later in the stream can precede
// it: by round marks (PERF_RECORD_FINISHED_ROUND semantics: everything up to the largest time
// seen before the previous mark is final), else by a window (bytes and records scanned past it).
// A source that can read a run's records again from where they lie (a file) lets the merge keep
// only the last `near_bytes` scanned in memory: a cursor further behind the scan reads its run
// through the source's far path (a small buffer per run), so the rounds of a many-CPU recording
// (a round per drain of every CPU's ring: ~1 MiB x CPUs) cost memory per live run, not per byte.
// Memory caps (live runs; bytes between the oldest cursor and the scan, for a source without the
// far path) force emission in pathological streams; records that then arrive older than what
// was emitted are still delivered, flagged out of order. A record that is the same, byte for
// byte, as one emitted just before it with the same time (perf record on this machine writes
// some samples twice, in consecutive drains of a CPU's ring) is dropped and counted, when the
// source can compare.
#ifndef IOTRACE_FORMATS_SORTED_RUN_MERGER_H_
#define IOTRACE_FORMATS_SORTED_RUN_MERGER_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "iotrace/base/prefetch.h"

namespace iotrace {

struct MergeLimits {
  // Without round marks: a record is final once this many bytes / records follow it. 2 MiB
  // keeps the trailing cursors in cache (the reader runs ~30% faster than with 8 MiB).
  uint64_t window_bytes = uint64_t{2} << 20;
  uint64_t window_records = uint64_t{1} << 16;
  // With round marks, a record is final once this many further marks were seen after the mark
  // that followed it. 1 is perf's rule (tools/perf/util/ordered-events.c). `perf record -a` files
  // from this 2-vCPU VM show samples written a round or more late (seen up to 85 us, 4 rounds;
  // perf report counts them as "out of order events"): with 2, four of the six seen in four
  // recordings came out in order, at the cost of holding one more round. At most 8.
  int round_lag = 2;
  // Memory caps, whatever the marks say. The span (scan position - oldest live cursor) costs
  // memory only in a source without the far path, which sets a cap on it; by default none.
  uint64_t max_span_bytes = ~uint64_t{0};
  size_t max_runs = 4096;  // live runs (>= 2)
  // With a source that has the far path (RunBytes): a cursor more than this many bytes behind
  // the scan reads its run through it, and nothing below the nearest of the other cursors is
  // kept (Release). Without the far path, ignored.
  uint64_t near_bytes = ~uint64_t{0};
  // The source's Release() is called each time the oldest cursor moves on by this much.
  uint64_t release_step = uint64_t{2} << 20;
  // With the far path, the window is at least this many bytes and a sixteenth as many records:
  // a stream with round marks then holds its whole first round until the first mark, as perf
  // does (a round of a recording of 256 busy CPUs is ~256 MiB, and the first mark comes after
  // it). A stream without marks (rare: perf and iotrace record write them) is read with this
  // window throughout, its cursors far behind the scan.
  uint64_t far_window_bytes = uint64_t{1} << 30;
};

struct MergeCounters {
  uint64_t emitted = 0;
  uint64_t out_of_order = 0;  // emitted with a time below an earlier emitted record's
  uint64_t forced = 0;        // emitted because a memory cap was reached
  uint64_t runs = 0;          // runs found in the stream
  uint64_t max_live_runs = 0;
  uint64_t duplicates = 0;    // dropped: the same bytes as a record emitted just before
};

// kSkip: a timed record the source leaves out of the merge (it ends the run being scanned, as
// a record earlier than the run's last would: a run holds consecutive records).
enum class ScanKind : uint8_t { kTimed, kUntimed, kRoundEnd, kStop, kSkip };

// Source (duck-typed, so that its calls inline):
//   using Item = ...;   // copyable, with a `uint64_t time` member
//   // First visit of the record at `pos`: sets *next (the following record) and, for a timed
//   // record, *time. kStop ends the stream (the source accounts for why). kSkip: a record
//   // never emitted nor revisited (a source reading a time range of the stream skips what lies
//   // before it).
//   ScanKind Scan(uint64_t pos, uint64_t* next, uint64_t* time);
//   // Revisit of a scanned record (no side effects): true when it is timed.
//   bool Peek(uint64_t pos, uint64_t* next, Item* item);
//   // Optional: revisit of a record Scan returned kTimed for (so it needs no checks); Peek
//   // stands in when the source has no PeekTimed.
//   void PeekTimed(uint64_t pos, uint64_t* next, Item* item);
//   void Emit(const Item& item, bool out_of_order);
//   // Optional: true once the source wants no more records (Emit said so); the merge ends
//   // there, the records it holds not emitted.
//   bool Stopped() const;
//   // Optional: true when the scanned records at `a` and `b` hold the same bytes. Asked only of
//   // records with equal times: the next one and those emitted last with its time (kept from
//   // Release until a later time is emitted).
//   bool SameRecord(uint64_t a, uint64_t b);
//   // Optional, with SameRecord: false when `item` (timed as the last record emitted in order)
//   // cannot hold the same bytes as any record emitted in order with its time; then no record
//   // is compared. Asked before SameRecord, of the record that would be dropped.
//   bool MayRepeat(const Item& item);
//   // Optional: told of each record dropped as a copy (counted in counters().duplicates too).
//   void Duplicate(const Item& item);
//   void Release(uint64_t below);  // nothing before `below` will be read again
//   // Optional, the far path: a run's records read again from where they lie, below what was
//   // released. RunBytes (trivially copyable, value-initialized empty) is a cursor's state, e.g.
//   // a buffer of the run's bytes. PeekFar is Peek, PeekTimedFar PeekTimed, through it; both set
//   // *next <= pos and return false when the bytes cannot be read again (the run then ends
//   // there). DropFar: the cursor will not read through `run` again until a PeekFar/PeekTimedFar.
//   // With the far path, SameRecord may be asked of released records too.
//   using RunBytes = ...;
//   bool PeekFar(uint64_t pos, uint64_t* next, Item* item, RunBytes* run);
//   bool PeekTimedFar(uint64_t pos, uint64_t* next, Item* item, RunBytes* run);
//   void DropFar(RunBytes* run);
template <typename Source>
struct MergerRunBytes {
  struct type {};
};
template <typename Source>
  requires requires { typename Source::RunBytes; }
struct MergerRunBytes<Source> {
  using type = typename Source::RunBytes;
};

template <typename Source>
class SortedRunMerger {
 public:
  using Item = typename Source::Item;

  SortedRunMerger(Source* source, uint64_t begin, uint64_t end, MergeLimits limits = {})
      : source_(source),
        limits_(limits),
        scan_pos_(begin),
        end_(end),
        released_(begin),
        release_at_(SaturatingAdd(begin, limits.release_step)),
        round_lag_(std::clamp(limits.round_lag, 1, kRoundSlots - 1)) {
    limits_.max_runs = std::max<size_t>(limits_.max_runs, 2);
    if constexpr (kFar) {
      limits_.window_bytes = std::max(limits_.window_bytes, limits_.far_window_bytes);
      limits_.window_records = std::max(limits_.window_records, limits_.far_window_bytes / 16);
    }
    ring_.resize(2);  // grown with the live runs: the tree is as deep as they need
    mask_ = ring_.size() - 1;
    tree_.assign(2 * ring_.size(), kEndedKey);
    // 32 KiB: room for the untimed records between two releases in any usual file (a 3 M-event
    // `perf record -a` file keeps up to ~400); more grows the list, like the cursor ring.
    untimed_.reserve(4096);
  }

  // Scans the whole stream and emits every timed record, but those the source skips, or until
  // the source stops.
  void Run() {
    for (;;) {
      if (tree_[1] != kEndedKey && CanEmit(ring_[TopSlot()])) {
        EmitTop();
        if (Stopped()) break;
        continue;
      }
      if (scan_done_) break;  // tree empty: CanEmit is always true once the scan is done
      ScanAhead();
    }
    source_->Release(end_);
  }

  // A run of the stream found by a scan made elsewhere (Seed): its first record, timed, at
  // `pos`, and where the run ends (the next run's first record, or a record the source skips,
  // or the end of the stream); `open`: the run the scan leaves open at the end (the last one,
  // unless a skipped record closed it).
  struct SeedRun {
    uint64_t pos = 0;
    uint64_t end = 0;
    bool open = false;
  };
  // Sets the merge up as a scan of the whole stream would have left it, for a stream whose scan
  // emits nothing before it has met every record: no round limit before its last record (at
  // most round_lag marks, or one more as the last record), no window, no cap reached (the
  // caller's to know). `runs` in stream order; `untimed`: the positions of the records Scan did not
  // time (ascending), as the scan would have kept them; `scanned`: the records scanned. Run() then
  // only emits, without a call to Scan; each run's cursor reads through the far path when the
  // source has one (the scan's bytes were never in the source's memory), else with PeekTimed. On a
  // merger that has not run.
  void Seed(const std::vector<SeedRun>& runs, std::vector<uint64_t> untimed, uint64_t scanned) {
    size_t size = 2;
    while (size < runs.size()) size *= 2;
    ring_.assign(size, RunCursor{});
    mask_ = size - 1;
    untimed_ = std::move(untimed);
    untimed_head_ = 0;
    head_ = 0;
    live_ = runs.size();
    far_ = kFar ? live_ : 0;
    SetNearHead();
    for (size_t i = 0; i < runs.size(); ++i) {
      RunCursor& r = ring_[i];
      r.pos = runs[i].pos;
      r.end = runs[i].end;
      r.seq = i;
      r.closed = !runs[i].open;
      r.far = kFar;
      UntimedAfter(r, r.pos);  // (the run's first record is timed: its mark lies after it)
      uint64_t n = 0;
      r.ready = ReadTimed(r, r.pos, &n);
      r.next = n;
      if (!r.ready) {
        r.pos = r.end;  // the far path could not read it: the run ends before it starts
        if constexpr (kFar) source_->DropFar(&r.bytes);
      }
    }
    BuildTree();
    counters_.runs = runs.size();
    counters_.max_live_runs = runs.size();
    scanned_ = scanned;
    scan_pos_ = end_;
    scan_done_ = true;
  }

  const MergeCounters& counters() const { return counters_; }
  // Where the scan stopped: the first record not scanned (the end, once all was).
  uint64_t scan_position() const { return scan_pos_; }
  // The largest time seen up to the round mark `marks_back` (1..8) marks before the last one:
  // by perf's round rule, records not yet scanned come later (0: fewer marks seen). The
  // further back, the more late writes it allows for.
  uint64_t time_at_mark(int marks_back) const {
    marks_back = std::clamp(marks_back, 1, kRoundSlots - 1);
    if (rounds_ <= static_cast<uint64_t>(marks_back)) return 0;
    return round_max_[(rounds_ - marks_back) % kRoundSlots];
  }

 private:
  static constexpr uint32_t kNone = 0xffffffff;
  // From this many slots in the ring on, EmitTop asks for the next leader's cursor and record
  // ahead (64 cursors: 16 KiB, a third of the first-level cache).
  static constexpr size_t kPrefetchFromSlots = 64;
  static constexpr bool kFar = requires { typename Source::RunBytes; };
  bool Stopped() const {
    if constexpr (requires { source_->Stopped(); }) {
      return source_->Stopped();
    } else {
      return false;
    }
  }

  // Read when its run leads, a cursor at a time in no order (at 256 CPUs a cache miss each):
  // aligned, the fields each record moves in its first line and the decoded record's time and
  // event in the second, so that a turn touches two lines, not the four or five of an unaligned
  // cursor with the record first.
  struct alignas(64) RunCursor {
    uint64_t pos = 0;        // offset of the current record (== end when starved)
    uint64_t next = 0;       // offset of the record after it
    uint64_t end = 0;        // end of the run (the scan position for the open run)
    uint64_t index = 0;      // scan index of the current record
    uint64_t seq = 0;        // creation order: breaks ties so equal times keep file order
    // Where the next record Scan did not time lies in the run, at or after the cursor (none
    // known: ~0). Records before it are all timed: the cursor revisits them with PeekTimed, and
    // only that record with Peek.
    uint64_t untimed_from = ~uint64_t{0};
    bool ready = false;      // has a current record (its key is in the tree)
    bool closed = false;     // a later run exists: this one gets no more records
    bool far = false;        // reads its run through the source's far path (kFar)
    Item item{};             // the current record, decoded
    [[no_unique_address]] typename MergerRunBytes<Source>::type bytes{};
  };

  // The merge is a winner (tournament) tree over the ring's slots: tree_[ring size + slot] is the
  // key of the run in that slot, each node above the smaller of its two children, tree_[1] the
  // earliest. A key is (time, seq) as one 128-bit integer, so that a level is a compare and two
  // conditional moves (see base/loser_tree.h: as branches, which child wins is a coin toss). Not
  // a loser tree: a run becomes ready at any slot (a new run, the open run's cursor the scan
  // caught up with), and a loser tree can play again only from its winner's leaf; here any
  // slot's key is set in one pass up its path, whose siblings' loads do not wait on each other.
  // The ring's size is a power of two and a run's slot its seq modulo that size (runs are
  // consecutive in seq and in the ring), so the key names its slot. Against the binary heap it
  // replaces: at 256 CPUs (512 live runs) 9 levels a record without a mispredicted branch,
  // against a sift of up to 18 comparisons that mispredicted about half of them.
  using Key = unsigned __int128;
  static constexpr Key kEndedKey = ~Key{0};  // a slot with no ready run: after every real key
  static Key MakeKey(uint64_t time, uint64_t seq) { return Key{time} << 64 | seq; }
  uint32_t TopSlot() const {
    return static_cast<uint32_t>(static_cast<uint64_t>(tree_[1]) & mask_);
  }
  uint64_t TopTime() const { return static_cast<uint64_t>(tree_[1] >> 64); }
  // Sets the key of the run in `slot` and plays its path's matches again.
  void SetKey(size_t slot, Key k) {
    Key* const t = tree_.data();
    size_t i = mask_ + 1 + slot;
    t[i] = k;
    for (; i > 1; i /= 2) {
      const Key other = t[i ^ 1];
      k = other < k ? other : k;  // a select, not a branch
      t[i / 2] = k;
    }
  }
  void SetReady(const RunCursor& r) { SetKey(SlotOf(r), MakeKey(r.item.time, r.seq)); }
  size_t SlotOf(const RunCursor& r) const { return r.seq & mask_; }

  uint64_t LowPos() const { return live_ > 0 ? ring_[head_].pos : scan_pos_; }
  // The oldest cursor that reads from the source's memory: LowPos without far runs. Runs lie in
  // stream order and each cursor in its run, so the far ones are the first far_ runs.
  // Kept in near_head_ (EmitTop asks on every change of leader): set again wherever head_,
  // live_ or far_ change.
  void SetNearHead() {
    const size_t i = head_ + far_;  // both below the ring's size: no division
    near_head_ = far_ >= live_ ? kNone
                               : static_cast<uint32_t>(i < ring_.size() ? i : i - ring_.size());
  }
  uint64_t NearLowPos() const { return near_head_ != kNone ? ring_[near_head_].pos : scan_pos_; }

  // The cursor's next record, at `pos`, which Scan timed; false only when the far path could not
  // read it again.
  bool ReadTimed(RunCursor& r, uint64_t pos, uint64_t* next) {
    if constexpr (kFar) {
      if (r.far) return source_->PeekTimedFar(pos, next, &r.item, &r.bytes);
    }
    PeekTimed(pos, next, &r.item);
    return true;
  }
  // Peek for the cursor (true: a timed record).
  bool ReadAny(RunCursor& r, uint64_t pos, uint64_t* next) {
    if constexpr (kFar) {
      if (r.far) return source_->PeekFar(pos, next, &r.item, &r.bytes);
    }
    return source_->Peek(pos, next, &r.item);
  }

  bool CanEmit(const RunCursor& r) {
    if (scan_done_) return true;
    if (has_round_limit_ && r.item.time <= round_limit_) return true;
    if (!rounds_seen_ && (scan_pos_ - r.pos >= limits_.window_bytes ||
                          scanned_ - r.index >= limits_.window_records)) {
      return true;
    }
    if (live_ >= limits_.max_runs || scan_pos_ - LowPos() > limits_.max_span_bytes) {
      ++counters_.forced;
      return true;
    }
    return false;
  }

  void PeekTimed(uint64_t pos, uint64_t* next, Item* item) {
    if constexpr (requires { source_->PeekTimed(pos, next, item); }) {
      source_->PeekTimed(pos, next, item);
    } else {
      source_->Peek(pos, next, item);
    }
  }

  static constexpr bool kComparesRecords =
      requires(Source* s, uint64_t a, uint64_t b) { s->SameRecord(a, b); };

  // Emits the cursor's record, unless it repeats one of the last records emitted with its time.
  // Per record only the time is compared, with the last emitted one's (as for out_of_order);
  // equal times are rare (one in several thousand records in a recording of this workload).
  void EmitOne(const RunCursor& r) {
    if constexpr (kComparesRecords) {
      if (r.item.time <= last_emitted_) [[unlikely]] {
        EmitNotLater(r);
        return;
      }
    }
    Deliver(r);
  }

  // EmitOne for a record no later than the last emitted: a possible copy, or out of order.
  [[gnu::noinline]] void EmitNotLater(const RunCursor& r) {
    const uint64_t t = r.item.time;
    if (t == last_emitted_ && last_pos_ != kNoPos) {
      if (MayRepeat(r.item) && IsRepeat(t, r.pos)) {
        ++counters_.duplicates;
        if constexpr (requires { source_->Duplicate(r.item); }) source_->Duplicate(r.item);
        return;
      }
      // The record emitted before this one joins the others with this time.
      if (same_time_ != t || same_time_count_ == 0) {
        same_time_ = t;
        same_time_count_ = 0;
      }
      same_time_pos_[same_time_count_++ % kSameTimeKept] = last_pos_;
    }
    Deliver(r);
  }

  void Deliver(const RunCursor& r) {
    const uint64_t t = r.item.time;
    const bool out_of_order = t < last_emitted_;
    source_->Emit(r.item, out_of_order);
    ++counters_.emitted;
    if (out_of_order) {
      ++counters_.out_of_order;
    } else {
      last_emitted_ = t;
      if constexpr (kComparesRecords) last_pos_ = r.pos;
    }
  }

  // The source's cheap answer (optional), before records are compared byte by byte.
  bool MayRepeat(const Item& item) {
    if constexpr (requires { source_->MayRepeat(item); }) {
      return source_->MayRepeat(item);
    } else {
      return true;
    }
  }

  bool IsRepeat(uint64_t t, uint64_t pos) {
    if (source_->SameRecord(last_pos_, pos)) return true;
    if (same_time_ != t) return false;
    const uint64_t n = std::min<uint64_t>(same_time_count_, kSameTimeKept);
    for (uint64_t i = 0; i < n; ++i) {
      if (source_->SameRecord(same_time_pos_[i], pos)) return true;
    }
    return false;
  }

  // Nothing below this may be released: the oldest cursor's record, and the records emitted
  // last with the latest time, while the next ones may be compared with them.
  uint64_t KeepPos() const {
    // The far path reads anything below again, the records SameRecord compares included.
    if constexpr (kFar) return NearLowPos();
    uint64_t low = LowPos();
    if constexpr (kComparesRecords) {
      low = std::min(low, last_pos_);  // kNoPos when none
      if (same_time_count_ != 0 && same_time_ == last_emitted_) {
        const uint64_t n = std::min<uint64_t>(same_time_count_, kSameTimeKept);
        for (uint64_t i = 0; i < n; ++i) low = std::min(low, same_time_pos_[i]);
      }
    }
    return low;
  }

  static uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > ~b ? ~uint64_t{0} : a + b; }

  // Scans records while the top run cannot emit, which Run would otherwise check before
  // each one. Only a few things can change that answer: a round mark (a new limit), a run
  // starting or a cursor becoming ready (a new top), the end of the scan, and the scan reaching
  // the window or the span cap, whose positions are known in advance. Until one of them,
  // CanEmit's answer stays "no" and asking costs nothing.
  void ScanAhead() {
    uint64_t stop_pos = ~uint64_t{0};
    uint64_t stop_index = ~uint64_t{0};
    if (tree_[1] != kEndedKey) {
      const RunCursor& top = ring_[TopSlot()];
      if (!rounds_seen_) {
        stop_pos = SaturatingAdd(top.pos, limits_.window_bytes);
        stop_index = SaturatingAdd(top.index, limits_.window_records);
      }
      stop_pos = std::min(stop_pos, SaturatingAdd(LowPos(), SaturatingAdd(limits_.max_span_bytes, 1)));
    }
    if constexpr (kFar) {
      // Where the nearest cursor falls behind by more than near_bytes (it goes far), or, with
      // none near, where the bytes scanned since must be let go of.
      stop_pos =
          std::min(stop_pos, SaturatingAdd(NearLowPos(), SaturatingAdd(limits_.near_bytes, 1)));
    }
    while (!ScanOne() && scan_pos_ < stop_pos && scanned_ < stop_index) {
    }
    // The open run reaches the scan position (kept here rather than per record: only the
    // cursors read it, and they move between scans).
    if (open_ != kNone) ring_[open_].end = scan_pos_;
    if constexpr (kFar) {
      MoveFar();
      MaybeRelease();
    }
  }

  // The runs whose cursors are more than near_bytes behind the scan read through the far path
  // from now on, their current record read again that way (it was decoded from bytes the source
  // may let go of next).
  void MoveFar() {
    while (far_ < live_) {
      RunCursor& r = ring_[near_head_];
      if (scan_pos_ - r.pos <= limits_.near_bytes) break;
      r.far = true;
      ++far_;
      SetNearHead();
      uint64_t n = 0;
      if (r.ready && !ReadTimed(r, r.pos, &n)) Unready(r);
    }
  }

  // A ready cursor whose record the far path could not read again: its run ends there (the
  // source counts the failed read). Rare.
  [[gnu::noinline]] void Unready(RunCursor& r) {
    r.ready = false;
    r.pos = r.end;
    source_->DropFar(&r.bytes);
    SetKey(SlotOf(r), kEndedKey);
  }

  // Scans one record. True when the state CanEmit looks at changed beyond the scan position:
  // the scan ended, a round mark came, a run started or got a current record, or a skipped
  // record closed the open run (the runs live and the lowest position may change).
  bool ScanOne() {
    const uint64_t pos = scan_pos_;
    if (pos >= end_) {
      scan_done_ = true;
      return true;
    }
    uint64_t next = 0;
    uint64_t t = 0;
    ScanKind kind = source_->Scan(pos, &next, &t);
    if (kind == ScanKind::kStop || next <= pos || next > end_) {
      scan_done_ = true;
      return true;
    }
    const uint64_t index = scanned_++;
    scan_pos_ = next;
    if (kind == ScanKind::kSkip) {
      if (open_ == kNone) return false;
      CloseOpen(pos);
      return true;
    }
    bool changed = false;
    if (kind != ScanKind::kTimed) {
      // Remembered so that a cursor steps over it and goes on with PeekTimed (round marks fall
      // inside runs: without this, the rest of such a run would be revisited with Peek).
      untimed_.push_back(pos);
      if (open_ != kNone && ring_[open_].untimed_from == ~uint64_t{0}) {
        ring_[open_].untimed_from = pos;
      }
    }
    if (kind == ScanKind::kRoundEnd) {
      // perf's ordered_events: a round mark makes final what was seen before the previous one
      // (round_lag 1), or before the one round_lag marks back.
      ++rounds_;
      if (open_ != kNone) max_time_ = std::max(max_time_, open_last_);
      round_max_[rounds_ % kRoundSlots] = max_time_;
      if (rounds_ > static_cast<uint64_t>(round_lag_)) {
        has_round_limit_ = true;
        round_limit_ = round_max_[(rounds_ - round_lag_) % kRoundSlots];
      }
      rounds_seen_ = true;
      changed = true;
    } else if (kind == ScanKind::kTimed) {
      // The open run's times do not decrease: its last one is its largest, taken into max_time_
      // when the run closes or a round mark needs it.
      if (open_ != kNone && t >= open_last_) {
        RunCursor& o = ring_[open_];
        uint64_t n = 0;
        // The scan only times records: decode this one now that a cursor stands on it.
        if (!o.ready && ReadTimed(o, pos, &n)) {
          o.pos = pos;
          o.next = next;
          o.index = index;
          o.ready = true;
          SetReady(o);
          changed = true;
        }
        open_last_ = t;
      } else {
        // Decoded before the closed runs are let go: with none left, their release reaches the
        // scan position, past this record.
        Item first;
        uint64_t n = 0;
        PeekTimed(pos, &n, &first);
        if (open_ != kNone) CloseOpen(pos);
        if (live_ == ring_.size()) Grow();
        const uint32_t slot = static_cast<uint32_t>((head_ + live_) & mask_);  // seq's
        ++live_;
        SetNearHead();
        RunCursor& r = ring_[slot];
        r.item = first;
        r.pos = pos;
        r.untimed_from = ~uint64_t{0};
        r.next = next;
        r.index = index;
        r.seq = counters_.runs++;
        r.ready = true;
        r.closed = false;
        r.far = false;  // follows every live run: the far ones are the first far_
        open_ = slot;
        open_last_ = t;
        SetReady(r);
        counters_.max_live_runs = std::max<uint64_t>(counters_.max_live_runs, live_);
        changed = true;
      }
    }
    return changed;
  }

  // The open run ends before the record at `pos`.
  void CloseOpen(uint64_t pos) {
    RunCursor& o = ring_[open_];
    max_time_ = std::max(max_time_, open_last_);
    o.end = pos;
    o.closed = true;
    open_ = kNone;
    PopExhaustedFront();
  }

  // Emits the top run's current record, then its following ones for as long as the run stays
  // the earliest and its record final: exactly what Run's loop would do one record at a time,
  // without going back to it in between. Nothing the loop asks about but the cursor itself
  // changes while it runs (the scan stands still), so the final-time limit is read once, into
  // locals that the source's Emit (an opaque call) cannot make the compiler load again. Each
  // record sets the run's key in the tree, which then tells whether it still leads (per-CPU
  // runs of a many-CPU file interleave in time: one record a turn). When another run takes
  // the lead and its record is final by the same rule, the streak goes on with it here: two
  // CPUs' runs in a `perf record -a` file interleave record by record (1.2 records a streak on
  // this VM's recordings), and going back to Run for each one cost ~30 instructions.
  void EmitTop() {
    // CanEmit's answers that hold for any record of the streak: the scan has ended, or a record
    // at or below the round limit is final.
    const bool all_final = scan_done_;
    const uint64_t final_up_to = has_round_limit_ ? round_limit_ : 0;
    const bool has_final_limit = has_round_limit_;
    uint32_t slot = TopSlot();
    for (;;) {
      RunCursor& r = ring_[slot];
      // Only the nearest cursor's moves can let the source release anything.
      const bool at_head = slot == near_head_;
      // The other runs' earliest key: the least of the siblings on the slot's path, whose
      // subtrees hold every other run. Read while the record is emitted and the next decoded,
      // it tells whether the run still leads, and which run leads next, without waiting for
      // SetKey's chain of matches to reach the root.
      Key other = kEndedKey;
      for (size_t i = mask_ + 1 + slot; i > 1; i /= 2) other = std::min(other, tree_[i ^ 1]);
      // The run that leads next, unless this one keeps the lead: its cursor comes in while this
      // record is delivered, and then the bytes of its record that the sink reads (decoded a
      // whole turn of the runs ago: at 256 CPUs out of the cache) while the next is decoded.
      // With a few runs (a 2-CPU file has ~6) their cursors stay in the cache: not asked for.
      const RunCursor* next_leader = other != kEndedKey && mask_ + 1 >= kPrefetchFromSlots
                                         ? &ring_[static_cast<uint64_t>(other) & mask_]
                                         : nullptr;
      if (next_leader != nullptr) {
        Prefetch(next_leader);
        Prefetch(reinterpret_cast<const char*>(next_leader) + 64);
      }
      for (;;) {
        EmitOne(r);
        if (Stopped()) [[unlikely]]
          return;
        if constexpr (requires(const Item& item) { source_->PrefetchItem(item); }) {
          if (next_leader != nullptr) source_->PrefetchItem(next_leader->item);
        }
        uint64_t p = r.next;
        uint64_t index = r.index + 1;
        bool found = false;
        if (p < r.end && p < r.untimed_from) {
          uint64_t n = 0;
          if (ReadTimed(r, p, &n)) {
            r.pos = p;
            r.next = n;
            r.index = index;
            found = true;
          } else {
            p = r.end;  // the far path could not read it again: the run ends here
          }
        }
        while (!found && p < r.end) {
          uint64_t n = 0;
          if (p < r.untimed_from) {
            if (!ReadTimed(r, p, &n)) break;
            r.pos = p;
            r.next = n;
            r.index = index;
            found = true;
            break;
          }
          // At the run's next untimed record (or past it, when the cursor jumped ahead while it
          // waited for the scan): move the mark beyond p, and look this record over with Peek.
          UntimedAfter(r, p);
          if (ReadAny(r, p, &n)) {
            r.pos = p;
            r.next = n;
            r.index = index;
            found = true;
            break;
          }
          if (n <= p) break;  // cannot happen on scanned bytes; never loop
          p = n;
          ++index;
        }
        if (!found) {
          r.pos = r.end;
          r.index = index;
          r.ready = false;
          if constexpr (kFar) {
            if (r.far) source_->DropFar(&r.bytes);
          }
          SetKey(slot, kEndedKey);
          PopExhaustedFront();
          return;
        }
        if (at_head && r.pos >= release_at_) MaybeRelease();  // NearLowPos() is r.pos
        const uint64_t t = r.item.time;
        const Key k = MakeKey(t, r.seq);
        if (k < other) {
          // Still leads: the least key of every subtree on its path is its own.
          for (size_t i = mask_ + 1 + slot; i >= 1; i /= 2) tree_[i] = k;
        } else {
          SetKey(slot, k);
          // No longer before the other runs' earliest record: that record's run leads.
          if (all_final || (has_final_limit && static_cast<uint64_t>(other >> 64) <= final_up_to)) {
            slot = static_cast<uint32_t>(static_cast<uint64_t>(other) & mask_);
            break;
          }
          return;  // Run asks CanEmit about the new leader
        }
        // Run's next turn would ask the same (CanEmit changes nothing when it says no).
        if (all_final || (has_final_limit && t <= final_up_to)) continue;
        if (!CanEmit(r)) return;
      }
    }
  }

  // Doubles the ring (CanEmit keeps live_ below max_runs), each run in the slot its seq names
  // in the larger ring, and builds the tree again. Rare: only when more runs are live than ever
  // before.
  void Grow() {
    std::vector<RunCursor> bigger(ring_.size() * 2);
    const size_t mask = bigger.size() - 1;
    for (size_t i = 0; i < live_; ++i) {
      const RunCursor& r = ring_[(head_ + i) % ring_.size()];
      bigger[r.seq & mask] = r;
    }
    if (live_ > 0) head_ = ring_[head_].seq & mask;
    if (open_ != kNone) open_ = static_cast<uint32_t>(ring_[open_].seq & mask);
    ring_.swap(bigger);
    mask_ = mask;
    SetNearHead();
    BuildTree();
  }

  // The tree from nothing: each ready live run's key at its slot's leaf, every match above it.
  void BuildTree() {
    tree_.assign(2 * ring_.size(), kEndedKey);
    for (size_t i = 0; i < live_; ++i) {
      const RunCursor& r = ring_[(head_ + i) & mask_];
      if (r.ready) tree_[ring_.size() + SlotOf(r)] = MakeKey(r.item.time, r.seq);
    }
    for (size_t node = ring_.size() - 1; node >= 1; --node) {
      tree_[node] = std::min(tree_[2 * node], tree_[2 * node + 1]);
    }
  }

  // Moves the run's untimed mark to the first untimed record of the run after `p`, or to ~0
  // (the scan sets it again when it adds one to the open run). A binary search, once per
  // untimed record a cursor meets: the list holds those between the oldest cursor and the scan.
  void UntimedAfter(RunCursor& r, uint64_t p) {
    const auto it = std::upper_bound(untimed_.begin() + static_cast<ptrdiff_t>(untimed_head_),
                                     untimed_.end(), p);
    r.untimed_from = it != untimed_.end() && *it < r.end ? *it : ~uint64_t{0};
  }

  void PopExhaustedFront() {
    while (live_ > 0 && ring_[head_].closed && !ring_[head_].ready) {
      head_ = (head_ + 1) & mask_;
      --live_;
      if (far_ > 0) --far_;
    }
    SetNearHead();
    MaybeRelease();
  }

  void MaybeRelease() {
    // KeepPos is never above NearLowPos: the cheaper test first, on every emitted record.
    if (NearLowPos() < release_at_) return;
    const uint64_t low = KeepPos();
    if (low >= release_at_) {
      source_->Release(low);
      released_ = low;
      release_at_ = SaturatingAdd(low, limits_.release_step);
      // Untimed records below every cursor (far ones too) are behind every run: dropped. The
      // list keeps its room (no allocation once it holds what the stream keeps between
      // releases: a few hundred in a 3 M-event `perf record -a` file).
      const uint64_t behind = LowPos();
      while (untimed_head_ < untimed_.size() && untimed_[untimed_head_] < behind) ++untimed_head_;
      if (untimed_head_ == untimed_.size()) {
        untimed_.clear();
        untimed_head_ = 0;
      } else if (untimed_head_ >= 256 && 2 * untimed_head_ >= untimed_.size()) {
        untimed_.erase(untimed_.begin(), untimed_.begin() + static_cast<ptrdiff_t>(untimed_head_));
        untimed_head_ = 0;
      }
    }
  }

  Source* source_;
  MergeLimits limits_;
  uint64_t scan_pos_;
  uint64_t end_;
  uint64_t released_;
  uint64_t release_at_;  // released_ + release_step: MaybeRelease does nothing below it
  bool scan_done_ = false;
  uint64_t scanned_ = 0;

  std::vector<RunCursor> ring_;  // runs in stream order: [head_, head_ + live_)
  size_t head_ = 0;
  size_t mask_ = 0;  // ring_.size() - 1: the size is a power of two
  size_t live_ = 0;
  size_t far_ = 0;  // the first far_ live runs read through the far path
  uint32_t near_head_ = kNone;  // the first near run (kNone: none)
  uint32_t open_ = kNone;       // the run the scan extends
  uint64_t open_last_ = 0;      // the time of its last timed record
  std::vector<Key> tree_;  // [1, ring size): matches; [ring size, 2 ring size): each slot's key
  // Positions of the records Scan did not time, in stream order, from untimed_head_ on (those
  // below the oldest cursor are dropped as it moves).
  std::vector<uint64_t> untimed_;
  size_t untimed_head_ = 0;

  bool rounds_seen_ = false;
  static constexpr int kRoundSlots = 9;
  int round_lag_;
  uint64_t rounds_ = 0;
  uint64_t round_max_[kRoundSlots] = {};  // max time seen at each of the last marks
  bool has_round_limit_ = false;
  uint64_t round_limit_ = 0;
  uint64_t max_time_ = 0;  // the largest time of the closed runs (the open run's: open_last_)
  uint64_t last_emitted_ = 0;
  // For IsRepeat, only with a source that compares records: where the last record emitted in
  // order lies, and before it the last kSameTimeKept ones emitted with the same time (a ring;
  // a copy follows its original closely).
  static constexpr uint64_t kNoPos = ~uint64_t{0};
  static constexpr uint64_t kSameTimeKept = 8;
  uint64_t last_pos_ = kNoPos;
  uint64_t same_time_ = 0;
  uint64_t same_time_count_ = 0;
  uint64_t same_time_pos_[kSameTimeKept] = {};
  MergeCounters counters_;
};

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_SORTED_RUN_MERGER_H_
