#include "iotrace/analysis/latency_report.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>
#include <type_traits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/base/clock.h"
#include "iotrace/base/counters.h"
#include "iotrace/base/non_temporal_store.h"
#include "iotrace/base/prefetch.h"
#include "iotrace/base/run_on_threads.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"
#include "report_steps.h"

namespace iotrace {

void CountsBlock::Allocate() {
  mem_ = std::make_shared_for_overwrite<uint64_t[]>(high_words_ + (low_bytes_ + 7) / 8);
  high_ = mem_.get();
  low_ = reinterpret_cast<uint8_t*>(mem_.get() + high_words_);
}

LatencyBuckets CountsBlock::Take(const Histogram& h) {
  if (h.empty()) return {};
  const size_t n = LowBytes(h);
  // (Within what Add sized for: the histograms taken are those added, unchanged.)
  assert(low_ + n <= reinterpret_cast<const uint8_t*>(mem_.get() + high_words_) + low_bytes_);
  uint64_t* high = h.carried() ? high_ : nullptr;
  h.CopyCounts(low_, high);
  LatencyBuckets b =
      LatencyBuckets::OfCounts(mem_, low_, high, h.FirstBucket(), n, h.NonEmptyBuckets());
  low_ += n;
  if (high != nullptr) high_ += n;
  return b;
}

LatencyGroup MakeGroup(const Histogram& h, uint32_t dev, const std::string& device, BlockOp op,
                       Phase phase, CountsBlock* block) {
  LatencyGroup g;
  g.dev = dev;
  g.device = device;
  g.op = op;
  g.phase = phase;
  g.summary.count = h.count();
  g.summary.min_ns = h.min();
  g.summary.max_ns = h.max();
  g.summary.sum_ns = h.sum();
  g.summary.mean_ns = h.mean();
  static constexpr std::array<double, 4> kPercentiles = {50, 90, 99, 99.9};
  std::array<uint64_t, 4> at{};
  h.ValuesAtPercentiles(kPercentiles, at);
  g.summary.p50_ns = at[0];
  g.summary.p90_ns = at[1];
  g.summary.p99_ns = at[2];
  g.summary.p999_ns = at[3];
  if (block != nullptr) {
    g.buckets = block->Take(h);
  } else if (!h.empty()) {
    CountsBlock own;
    own.Add(h);
    own.Allocate();
    g.buckets = own.Take(h);
  }
  return g;
}

namespace {

bool GroupLess(const LatencyGroup& a, const LatencyGroup& b) {
  return std::tie(a.dev, a.by_order, a.by, a.op, a.phase) <
         std::tie(b.dev, b.by_order, b.by, b.op, b.phase);
}

}  // namespace

LatencyReportBuilder::LatencyReportBuilder(const std::vector<EventFormat>& formats,
                                           const ReportOptions& options)
    : options_(options),
      names_(options.sysfs_root, options.procfs_root),
      decoder_(formats),
      breakdown_(options.by) {
  MatcherOptions mo;
  mo.expiry_ns = SecondsToNs(options.expiry_s);
  mo.max_entries = options.max_inflight;
  // Without a time series and without filters, the report neither depends on the order of
  // samples nor counts them: one sample per request instead of two.
  mo.combine_samples = !options.samples_at_each_stage && SecondsToNs(options.interval_s) == 0 &&
                       options.devices.empty() &&
                       options.ops.empty() && options.comms.empty() && options.pids.empty();
  matcher_ = std::make_unique<RequestMatcher>(mo, static_cast<RequestSampleSink*>(this));
  matcher_->set_insert_recorded(decoder_.Has(BlockEventKind::kInsert));
  for (const EventFormat& f : formats) format_names_.emplace_back(f.id, f.FullName());
  for (BlockOp op : options.ops) op_mask_ |= 1u << static_cast<int>(op);
  if (op_mask_ == 0) op_mask_ = ~0u;
  interval_ns_ = SecondsToNs(options.interval_s);
  windowed_ = options.since_s.has_value() || options.until_s.has_value() || interval_ns_ != 0;
  process_filter_ = !options.comms.empty() || !options.pids.empty();
  filtering_ = !options.devices.empty() || !options.ops.empty() || process_filter_;
  comm_hit_.assign(options.comms.size(), 0);
  pid_hit_.assign(options.pids.size(), 0);
  // The names of processes matter only to --comm and --by comm (set_block_event_sink turns this
  // back on).
  decoder_.set_decode_comm(!options.comms.empty() || breakdown_.needs_comm());
  breakdown_.set_ioprio_absent(options.by == BreakdownBy::kIoprio &&
                               !decoder_.HasIoprio(BlockEventKind::kIssue) &&
                               !decoder_.HasIoprio(BlockEventKind::kInsert));
}

LatencyReportBuilder::~LatencyReportBuilder() = default;

absl::StatusOr<std::unique_ptr<LatencyReportBuilder>> LatencyReportBuilder::Create(
    const std::vector<EventFormat>& formats, const ReportOptions& options) {
  std::unique_ptr<LatencyReportBuilder> b(new LatencyReportBuilder(formats, options));
  const BlockDecoder& d = b->decoder_;
  if (!d.Has(BlockEventKind::kIssue) && !d.Has(BlockEventKind::kComplete) &&
      !d.Has(BlockEventKind::kInsert)) {
    std::vector<std::string> held;
    for (const EventFormat& f : formats) {
      if (held.size() == 8) {
        held.push_back("...");
        break;
      }
      held.push_back(f.FullName());
    }
    std::string what = held.empty() ? "no event formats at all" : "only " + absl::StrJoin(held, ", ");
    if (!d.format_problems().empty()) {
      what += "; unusable: " + absl::StrJoin(d.format_problems(), "; ");
    }
    return WithHint(
        absl::InvalidArgumentError(absl::StrFormat(
            "no usable block request events (block:block_rq_insert/issue/complete): the file has %s",
            what)),
        "record block events: iotrace record, or perf record -e 'block:*' -a");
  }
  return b;
}

void LatencyReportBuilder::OnEvent(const RawEvent& event) {
  if (!started_) {
    started_ = true;
    first_ts_ = last_ts_ = event.ts;
    if (options_.since_s) since_ns_ = first_ts_ + SecondsToNs(*options_.since_s);
    if (options_.until_s) {
      uint64_t u = SecondsToNs(*options_.until_s);
      until_ns_ = u > ~uint64_t{0} - first_ts_ ? ~uint64_t{0} : first_ts_ + u;
    }
  }
  if (slow_path_) [[unlikely]] {
    // Set coverage: the matcher is told where each gap ends, before the events after it.
    if (event.ts >= next_gap_end_) PassGapEnds(event.ts);
    // HoldUntil: before the cut, skipped, or only priming the matcher (its samples go to the
    // null sink, its counters are taken off at the cut), through the one call site below.
    if (before_cut_) {
      if (event.ts >= cut_ts_) {
        PassCut();
        if (stop_requested()) return;  // ProbePriming: the priming was too short
      } else {
        if (event.ts >= probe_ts_) [[unlikely]]
          StartProbe();
        if (!prime_) return;
      }
    }
  }
  if (event.ts > last_ts_) last_ts_ = event.ts;
  // One call site, so that the decoder's fast path is inlined here (a second one, for the
  // event lag, took it out of line: +9 ms in 3 M events). With pairing on its own
  // thread, the event goes on into the batch with streaming stores (non_temporal_store.h:
  // decoding straight into the batch made the reading thread pay for taking each line back from
  // the pairing thread's cache).
  BlockEvent* decoded = &event_;
  if (lag_allowed_ && --lag_recheck_ == 0) [[unlikely]] RecheckLag();
  const bool lag = lag_on_ && batch_ == nullptr;
  if (lag) {
    // The oldest event held goes to the matcher first, then the new one takes its place.
    if (lag_in_ - lag_out_ == kEventLag) matcher_->OnEvent(lag_[lag_out_++ % kEventLag]);
    decoded = &lag_[lag_in_ % kEventLag];
  }
  if (!decoder_.Decode(event, decoded)) return;
  if (lag) {
    matcher_->Prefetch(*decoded);
    ++lag_in_;
  } else if (batch_ != nullptr) {
    StreamStore64(&event_, &batch_->events[batch_->size]);
    if (++batch_->size == EventBatch::kCapacity) PublishBatch();
  } else {
    if (block_sink_ != nullptr) block_sink_->OnBlockEvent(event_);
    matcher_->OnEvent(event_);
  }
  if (placement_.has_value() && --stretch_left_ == 0) EndStretch();
}

// The batches' raw memory holds BlockEvents without constructing them: an aggregate of
// trivial members, written by the decoder before it is read (comm only when a --comm filter
// reads it). (C++20 lets allocation functions create such objects implicitly; that mmap's
// memory does the same is what every compiler does, not what the standard says.)
static_assert(std::is_aggregate_v<BlockEvent> && std::is_trivially_copyable_v<BlockEvent> &&
              std::is_trivially_destructible_v<BlockEvent>);
// One cache line an event, for StreamStore64 (the storage starts on a page boundary).
static_assert(sizeof(BlockEvent) == 64);

LatencyReportBuilder::EventBatch* LatencyReportBuilder::BeginBatch() {
  EventBatch* b = queue_->BeginWrite();  // never nullptr: the pairing thread does not cancel
  if (b->events == nullptr) {
    // Each of the queue's slots once, in turn.
    b->events = static_cast<BlockEvent*>(batch_storage_.addr()) +
                std::min(batches_given_++, kQueueBatches - 1) * EventBatch::kCapacity;
  }
  b->size = 0;
  return b;
}

void LatencyReportBuilder::PublishBatch() {
  StreamFence();  // the batch's events before the queue's release
  queue_->EndWrite();
  batch_ = BeginBatch();
}

void LatencyReportBuilder::EndStretch() {
  FlushEvents();  // pairing here: the stretch ends once its last event is paired
  if (batch_ != nullptr) {
    // Apart: the stretch ends once its last event is paired.
    if (batch_->size != 0) PublishBatch();
    queue_->WaitDrained();  // true: the pairing thread does not cancel
  }
  // Both placements are timed the same way, from the end of the stretch before to the moment
  // this one's last event is paired: an apart stretch pays for filling and draining the queue,
  // as it would whenever it runs.
  const uint64_t now = MonotonicNs();
  placement_->Finished(placement_->stretch_events(), now - std::min(stretch_start_ns_, now));
  if (placement_->apart()) {
    // The pairing thread takes the matcher back with the next batch (the queue is empty and it
    // waits for one; everything paired here happened before that batch is published).
    batch_ = BeginBatch();
  } else {
    // Pair here: the pairing thread has handed everything back and waits for a batch.
    batch_ = nullptr;
  }
  stretch_start_ns_ = now;
  stretch_left_ = placement_->stretch_events();
}

template <typename Read>
absl::Status LatencyReportBuilder::WithEventLag(Read read) {
  lag_allowed_ = block_sink_ == nullptr && taps_.empty() && coverage_ == nullptr;
  lag_recheck_ = 1;  // counted at the first event
  absl::Status s = read();
  FlushEvents();
  lag_allowed_ = lag_on_ = false;
  return s;
}

absl::Status LatencyReportBuilder::ReadAll(TraceReader& reader) {
  int threads = options_.threads;
  const bool two_cpus = UsableCpus() >= 2 || options_.placement_on_one_cpu;
  const bool adaptive = threads == 0 && two_cpus && block_sink_ == nullptr;
  if (threads == 0) threads = two_cpus ? 3 : 1;
  // With gaps known, the matcher is told where each ends (PassGapEnds): in the reading thread.
  if (coverage_ != nullptr) threads = std::min(threads, 2);
  // 2 and up: the kernel's copy of the file into the reader's ring overlaps the parsing
  // (perf.data; ~10% faster on a 2-vCPU VM, bench/README.md).
  reader.set_read_ahead(threads >= 2);
  // A block event sink sees events as they are decoded, in the caller's thread.
  if (threads < 3 || block_sink_ != nullptr) {
    return WithEventLag([&] { return reader.ReadAll(this); });
  }

  // 3 and auto: pairing + histograms on this thread, reading + decoding on another. Only decoded
  // block events cross (a few MiB in flight at most); the reading thread owns the reader, the
  // decoder and the loss list, this one the matcher and the histograms, and nothing else is
  // shared until the join. Auto also pairs on the reading thread, in the stretches where that
  // measures faster: the queue is drained first, so the matcher has one user at a time, and the
  // queue's hand-over orders its uses.
  auto storage = MapHugeAnonymous(kQueueBatches * EventBatch::kCapacity * sizeof(BlockEvent));
  if (!storage.ok()) return storage.status();
  SpscQueue<EventBatch> queue(kQueueBatches);
  queue_ = &queue;
  batch_storage_ = std::move(*storage);
  batches_given_ = 0;
  batch_ = BeginBatch();
  if (adaptive) {
    PairingPlacement::Options po;
    if (options_.placement_probe_events != 0) {
      po.probe_events = po.warmup_events = options_.placement_probe_events;
    }
    if (options_.placement_hold_events != 0) po.hold_events = options_.placement_hold_events;
    if (options_.placement_max_hold_events != 0) {
      po.max_hold_events = options_.placement_max_hold_events;
    }
    placement_.emplace(po);
    stretch_left_ = placement_->stretch_events();
    stretch_start_ns_ = MonotonicNs();
  }
  absl::Status read_status;
  std::thread reading([this, &reader, &read_status] {
    // Where the reading thread pairs (auto), what it holds is paired before the queue closes.
    read_status = WithEventLag([&] { return reader.ReadAll(this); });
    StreamFence();
    if (batch_ != nullptr && batch_->size != 0) queue_->EndWrite();
    queue_->Close();
  });
  while (EventBatch* b = queue.BeginRead()) {
    for (size_t i = 0; i < b->size; ++i) matcher_->OnEvent(b->events[i]);
    queue.EndRead();
  }
  reading.join();
  queue_ = nullptr;
  batch_ = nullptr;
  batch_storage_.Reset();
  return read_status;
}

absl::Status LatencyReportBuilder::ReadRange(TraceReader& reader, const TimeRange& range,
                                             RangeReadResult* out) {
  return WithEventLag([&] { return reader.ReadRange(this, range, out); });
}

void LatencyReportBuilder::PassCut() {
  FlushEvents();  // the matcher's state at the cut is after every event before it
  before_cut_ = false;
  slow_path_ = next_gap_end_ != ~uint64_t{0};
  if (!prime_) return;
  cut_ = std::make_unique<Cut>();
  cut_->state = matcher_->Snapshot();
  cut_->counts = matcher_->counts();
  cut_->decode = decoder_.stats();
  matcher_->set_sink(this);
  matcher_->WatchKeys();
  if (probe_started_) EndProbe();
}

void LatencyReportBuilder::OnLoss(const LossRecord& loss) {
  AddLoss(loss.kind, loss.cpu, loss.event_id, loss.count, loss.placed ? loss.count : 0);
}

void LatencyReportBuilder::set_coverage(const Coverage& coverage) {
  RecordPending();  // recorded as before it
  coverage_ = coverage.gaps.empty() ? nullptr : std::make_unique<CoverageFilter>(coverage.gaps);
  matcher_->set_coverage(coverage_.get());
  gap_ends_passed_ = 0;
  next_gap_end_ = coverage_ == nullptr || coverage_->gap_ends().empty()
                      ? ~uint64_t{0}
                      : coverage_->gap_ends().front();
  slow_path_ = before_cut_ || next_gap_end_ != ~uint64_t{0};
}

void LatencyReportBuilder::PassGapEnds(uint64_t ts) {
  FlushEvents();  // the flushes given up are those of the events before the gap's end
  const std::vector<uint64_t>& ends = coverage_->gap_ends();
  while (gap_ends_passed_ < ends.size() && ends[gap_ends_passed_] <= ts) ++gap_ends_passed_;
  next_gap_end_ = gap_ends_passed_ < ends.size() ? ends[gap_ends_passed_] : ~uint64_t{0};
  slow_path_ = before_cut_ || next_gap_end_ != ~uint64_t{0};
  matcher_->DropFlushes();
}

void LatencyReportBuilder::AddLoss(LossRecord::Kind kind, int32_t cpu, int32_t event_id,
                                   uint64_t count, uint64_t placed) {
  std::string_view event = "unknown";
  for (const auto& [id, name] : format_names_) {
    if (event_id >= 0 && id == static_cast<uint32_t>(event_id)) event = name;
  }
  // A damaged or crafted file can hold loss records for any number of (cpu, event) pairs: past
  // kMaxLossRows distinct ones, losses are still counted, per kind and known event, on a row
  // whose cpu is -1 (and whose event is "unknown" when the file has no format for its id).
  if (losses_.size() >= kMaxLossRows && !loss_index_.contains({kind, cpu, event_id})) {
    cpu = -1;
    if (event == "unknown") event_id = -1;
  }
  auto [it, inserted] =
      loss_index_.try_emplace({kind, cpu, event_id}, static_cast<uint32_t>(losses_.size()));
  if (!inserted) {
    losses_[it->second].count += count;
    losses_[it->second].placed += placed;
    return;
  }
  LossSummary l;
  l.kind = kind;
  l.cpu = cpu;
  l.event_id = event_id;
  l.count = count;
  l.placed = placed;
  l.event = std::string(event);
  losses_.push_back(std::move(l));
}

LatencyReportBuilder::DeviceSlot& LatencyReportBuilder::NewSlot(uint64_t key) {
  // First sample of a device (x class): resolve the --dev filter once (reads sysfs).
  ArenaPool<DeviceSlot>::Ptr s = slot_pool_.Make();
  const uint32_t dev = static_cast<uint32_t>(key);
  s->key = key;
  s->dev = dev;
  s->klass = static_cast<uint32_t>(key >> 32);
  s->allowed = options_.devices.empty();
  for (const std::string& spec : options_.devices) {
    if (names_.Matches(spec, dev)) s->allowed = true;
  }
  DeviceSlot& slot = *s;
  slots_.push_back(std::move(s));
  slot_index_.Insert(key, &slot);
  return slot;
}

LatencyReportBuilder::Group* LatencyReportBuilder::GroupFor(DeviceSlot& slot, BlockOp op,
                                                            Phase phase) {
  Group*& g = slot.groups[static_cast<int>(op)][static_cast<int>(phase)];
  if (g == nullptr) {
    // (Only the groups of the phases shown count: --phases keeps those.)
    if (options_.phases == 0 || (options_.phases & PhaseBit(phase)) != 0) ++shown_groups_;
    if (interval_ns_ != 0 && options_.max_interval_groups != 0 &&
        shown_groups_ > options_.max_interval_groups) [[unlikely]] {
      DropIntervals();
    }
    ArenaPool<Group>::Ptr ng = group_pool_.Make(arena_);
    ng->dev = slot.dev;
    ng->klass = slot.klass;
    ng->op = op;
    ng->phase = phase;
    if (interval_ns_ != 0) ng->current = std::make_unique<Histogram>();
    g = ng.get();
    groups_.push_back(std::move(ng));
  }
  return g;
}

void LatencyReportBuilder::DropIntervals() {
  interval_ns_ = 0;  // from here on, samples go into the whole run's histograms alone
  intervals_dropped_ = true;
  for (const ArenaPool<Group>::Ptr& g : groups_) {
    g->current.reset();
    g->closed = {};
    g->outside_by_interval = {};
  }
  unpaired_by_interval_.clear();
  counters_.late_interval_samples = 0;
}

bool LatencyReportBuilder::MatchesPid(const RequestSample& s, bool mark) {
  if (options_.pids.empty()) return true;
  bool hit = false;
  for (size_t i = 0; i < options_.pids.size(); ++i) {
    const int32_t pid = options_.pids[i];
    if ((s.insert_pid >= 0 && s.insert_pid == pid) || (s.issue_pid >= 0 && s.issue_pid == pid)) {
      hit = true;
      if (mark) pid_hit_[i] = 1;
    }
  }
  return hit;
}

bool LatencyReportBuilder::MatchesComm(const RequestSample& s, bool mark) {
  if (options_.comms.empty()) return true;
  bool hit = false;
  for (size_t i = 0; i < options_.comms.size(); ++i) {
    const char* comm = options_.comms[i].c_str();
    if (std::strncmp(s.insert_comm, comm, kCommSize) == 0 ||
        std::strncmp(s.issue_comm, comm, kCommSize) == 0) {
      hit = true;
      if (mark) comm_hit_[i] = 1;
    }
  }
  return hit;
}

bool LatencyReportBuilder::PassesFilters(DeviceSlot& slot, const RequestSample& s) {
  // A request is counted at its final completion (the sample that ends D2C, I2C and Q2C; with
  // filters given, the matcher hands the issue's phases over in a sample of their own).
  constexpr unsigned kRequestEnd =
      PhaseBit(Phase::kD2C) | PhaseBit(Phase::kI2C) | PhaseBit(Phase::kQ2C);
  const bool request = (s.phases & kRequestEnd) != 0;
  if (request) {
    ++slot.requests;
    ++requests_by_op_[static_cast<int>(s.op)];
  }
  uint64_t* removed_by = nullptr;
  if (!slot.allowed) {
    removed_by = &counters_.filtered.dev;
  } else if ((op_mask_ & (1u << static_cast<int>(s.op))) == 0) {
    removed_by = &counters_.filtered.op;
  }
  if (process_filter_) {
    // Every request is matched against every value, also one the filters above removed, so that
    // a value that matches no request of the file can be named.
    const bool comm = MatchesComm(s, request);
    const bool pid = MatchesPid(s, request);
    if (removed_by == nullptr && !comm) {
      removed_by = &counters_.filtered.comm;
    } else if (removed_by == nullptr && !pid) {
      removed_by = &counters_.filtered.pid;
    }
  }
  if (removed_by == nullptr) return true;
  ++counters_.samples_filtered;
  if (request) ++*removed_by;
  return false;
}

void LatencyReportBuilder::CloseInterval(Group* g) {
  if (g->current == nullptr || g->current->empty()) return;
  LatencyInterval iv;
  iv.index = g->current_index;
  iv.groups.push_back(GroupOf(*g->current, *g, ""));
  g->closed.push_back(std::move(iv));
  g->current->Reset();
}

unsigned LatencyReportBuilder::DropOutsideCoverage(const RequestSample& s, DeviceSlot& slot,
                                                   unsigned phases) {
  unsigned kept = phases;
  for (unsigned bits = phases; bits != 0; bits &= bits - 1) {
    const int p = std::countr_zero(bits);
    const Phase phase = static_cast<Phase>(p);
    // Outside --since/--until: the window's to count, not the coverage's.
    if (windowed_ && (s.End(phase) < since_ns_ || s.End(phase) > until_ns_)) continue;
    const std::optional<GapCause> gap = coverage_->Crosses(s.Start(phase), s.End(phase));
    if (!gap.has_value()) continue;
    kept &= ~(1u << p);
    ++outside_coverage_[p][static_cast<int>(*gap)];
    Group* g = GroupFor(slot, s.op, phase);
    ++g->outside_coverage;
    if (interval_ns_ != 0 && s.End(phase) >= first_ts_) {
      ++g->outside_by_interval[(s.End(phase) - first_ts_) / interval_ns_];
    }
  }
  return kept;
}

void LatencyReportBuilder::OnRequestSample(const RequestSample& s) {
  if (coverage_ != nullptr) [[unlikely]] return OnRequestSampleCovered(s);
  if ((s.phases & (1u << static_cast<int>(Phase::kD2C))) != 0) {
    longest_d2c_ = std::max(longest_d2c_, s.End(Phase::kD2C) - s.Start(Phase::kD2C));
  }
  Record(s, s.phases);
}

void LatencyReportBuilder::OnUnpairedEvent(uint64_t ts) {
  if (interval_ns_ == 0) return;
  ++unpaired_by_interval_[(ts - std::min(ts, first_ts_)) / interval_ns_];
}

void LatencyReportBuilder::OnRequestSampleCovered(const RequestSample& s) {
  if ((s.phases & (1u << static_cast<int>(Phase::kD2C))) != 0 &&
      !coverage_->Crosses(s.Start(Phase::kD2C), s.End(Phase::kD2C)).has_value()) {
    // (A pair across a gap may be false: it must not stretch the yardstick for stale requests.)
    longest_d2c_ = std::max(longest_d2c_, s.End(Phase::kD2C) - s.Start(Phase::kD2C));
  }
  Record(s, s.phases);
}

LatencyGroup LatencyReportBuilder::GroupOf(const Histogram& h, const Group& g,
                                           const std::string& device, CountsBlock* block) const {
  LatencyGroup out = MakeGroup(h, g.dev, device, g.op, g.phase, block);
  if (breakdown_.active()) {
    out.by = breakdown_.Label(g.klass);
    out.by_order = breakdown_.Order(g.klass);
  }
  return out;
}

inline void LatencyReportBuilder::Record(const RequestSample& s, unsigned phases) {
  DeviceSlot& slot = SlotFor(SlotKey(s));
  if (filtering_ && !PassesFilters(slot, s)) return;
  std::array<Group*, kPhaseCount>& groups = slot.groups[static_cast<int>(s.op)];
  if (coverage_ != nullptr) [[unlikely]] {
    phases = DropOutsideCoverage(s, slot, phases);
  }
  // Only the set phases, lowest first (the order of the loop over all phases this replaces).
  if (!windowed_) {
    if (groups_.size() >= kDeferFromGroups && taps_.empty() && coverage_ == nullptr) {
      Defer(slot, s, phases);
      return;
    }
    if (!taps_.empty()) [[unlikely]] {
      for (SampleTap* t : taps_) t->OnSample(s, phases);
    }
    // What the loop below does when no sample is outside the window and there are no intervals.
    for (unsigned bits = phases; bits != 0; bits &= bits - 1) {
      const int p = std::countr_zero(bits);
      const Phase phase = static_cast<Phase>(p);
      Group* g = groups[p] != nullptr ? groups[p] : GroupFor(slot, s.op, phase);
      g->total.Record(s.End(phase) - s.Start(phase));
    }
    return;
  }
  unsigned recorded = phases;
  for (unsigned bits = phases; bits != 0; bits &= bits - 1) {
    const int p = std::countr_zero(bits);
    const Phase phase = static_cast<Phase>(p);
    const uint64_t end = s.End(phase);
    if (end < since_ns_ || end > until_ns_) {
      ++counters_.phases_outside_window;
      ++(end < since_ns_ ? counters_.filtered.since : counters_.filtered.until);
      recorded &= ~(1u << p);
      continue;
    }
    const uint64_t latency = end - s.Start(phase);
    Group* g = groups[p] != nullptr ? groups[p] : GroupFor(slot, s.op, phase);
    g->total.Record(latency);
    if (interval_ns_ != 0) {
      const uint64_t index = (end - first_ts_) / interval_ns_;
      if (index > g->current_index) {
        CloseInterval(g);
        g->current_index = index;
      } else if (index < g->current_index) {
        ++counters_.late_interval_samples;  // counted in the open interval
      }
      g->current->Record(latency);
    }
  }
  if (!taps_.empty() && recorded != 0) [[unlikely]] {
    for (SampleTap* t : taps_) t->OnSample(s, recorded);
  }
}

void LatencyReportBuilder::Defer(DeviceSlot& slot, const RequestSample& s, unsigned phases) {
  const uint64_t i = pending_pushed_++;
  PendingSample& p = pending_[i % kPendingSamples];
  p.slot = &slot;
  p.op = s.op;
  p.phases = static_cast<uint8_t>(phases);
  for (unsigned bits = phases; bits != 0; bits &= bits - 1) {
    const int ph = std::countr_zero(bits);
    p.latency[ph] = s.Latency(static_cast<Phase>(ph));
  }
  const auto& row = slot.groups[static_cast<int>(s.op)];
  Prefetch(&row.front());
  Prefetch(&row.back());
  // The samples before pending_from_ were recorded (RecordPending) and take no further step.
  const uint64_t from = pending_from_;
  if (i >= from + kSampleStep) FindGroups(pending_[(i - kSampleStep) % kPendingSamples]);
  if (i >= from + 2 * kSampleStep) {
    PrefetchBuckets(pending_[(i - 2 * kSampleStep) % kPendingSamples]);
  }
  if (i >= from + 3 * kSampleStep) RecordSample(pending_[(i - 3 * kSampleStep) % kPendingSamples]);
}

void LatencyReportBuilder::FindGroups(PendingSample& p) {
  auto& row = p.slot->groups[static_cast<int>(p.op)];
  for (unsigned bits = p.phases; bits != 0; bits &= bits - 1) {
    const int ph = std::countr_zero(bits);
    Group* g = row[ph] != nullptr ? row[ph] : GroupFor(*p.slot, p.op, static_cast<Phase>(ph));
    p.groups[ph] = g;
    Prefetch(&g->total);
  }
}

void LatencyReportBuilder::PrefetchBuckets(const PendingSample& p) {
  for (unsigned bits = p.phases; bits != 0; bits &= bits - 1) {
    const int ph = std::countr_zero(bits);
    p.groups[ph]->total.PrefetchBucket(p.latency[ph]);
  }
}

void LatencyReportBuilder::RecordSample(const PendingSample& p) {
  for (unsigned bits = p.phases; bits != 0; bits &= bits - 1) {
    const int ph = std::countr_zero(bits);
    p.groups[ph]->total.Record(p.latency[ph]);
  }
}

void LatencyReportBuilder::RecordPending() {
  const uint64_t end = pending_pushed_;
  const uint64_t records_from = 3 * kSampleStep;  // steps a sample takes before it is recorded
  uint64_t i = end > pending_from_ + records_from ? end - records_from : pending_from_;
  for (; i < end; ++i) {
    PendingSample& p = pending_[i % kPendingSamples];
    if (i + kSampleStep >= end) FindGroups(p);  // not found yet: it came in the last step
    RecordSample(p);
  }
  pending_from_ = end;
}

void LatencyReportBuilder::FinishCoverage(const ReadStats& reader_stats, LatencyReport* r) const {
  Coverage in = reader_stats.coverage;
  in.gaps.insert(in.gaps.end(), options_.assume_gaps.begin(), options_.assume_gaps.end());
  CoverageReport& out = r->coverage;
  out.outside = outside_coverage_;
  out.window_start_ns = first_ts_;
  out.window_end_ns = last_ts_;
  out.complete = in.gaps.empty();
  std::map<int32_t, CpuCoverage> cpus;
  for (const CpuSpan& s : in.cpus) {
    CpuCoverage& c = cpus[s.cpu];
    c.cpu = s.cpu;
    c.records = s.records;
    c.first_ts_ns = s.first_ts;
    c.last_ts_ns = s.last_ts;
  }
  std::vector<DataGap> inside;
  for (const DataGap& g : in.gaps) {
    CpuCoverage& c = cpus[g.cpu];
    c.cpu = g.cpu;
    if (g.open_end()) {
      // The earliest end of any CPU's data ends the window; a CPU with no data leaves none.
      if (!c.ends_early || g.after_ts < c.last_ts_ns) c.end_cause = g.cause;
      c.ends_early = true;
      if (g.after_ts == 0) {
        out.has_window = false;
      } else {
        out.window_end_ns = std::min(out.window_end_ns, g.after_ts);
      }
    } else {
      ++c.gaps;
      inside.push_back(g);
    }
  }
  if (out.window_end_ns < out.window_start_ns) out.has_window = false;
  if (!out.has_window) out.window_end_ns = out.window_start_ns;
  for (auto& [cpu, c] : cpus) out.cpus.push_back(c);
  std::stable_sort(inside.begin(), inside.end(), [](const DataGap& a, const DataGap& b) {
    return std::tie(a.after_ts, a.cpu) < std::tie(b.after_ts, b.cpu);
  });
  out.gap_count = inside.size();
  if (inside.size() > CoverageReport::kMaxListedGaps) inside.resize(CoverageReport::kMaxListedGaps);
  out.gaps = std::move(inside);
}

LatencyReport LatencyReportBuilder::Finish(const ReadStats& reader_stats) {
  // Requests still issued at the end of the file for far longer than any request of the file
  // took (kStaleFactor times the longest D2C, and at least kStaleFloorNs) are stale: their
  // completion is not in the file, most likely not recorded. That is how perf's silent drops
  // (completions taken in the idle task, docs/kernel-notes.md) show in a `perf record` file,
  // which does not count them; D2C and I2C lack those requests either way. Inserted requests are
  // not judged so: schedulers keep some waiting for seconds on purpose (mq-deadline's sorted
  // dispatch, write starvation), and their issue is not what perf drops.
  const uint64_t longest = std::min(longest_d2c_, ~uint64_t{0} / kStaleFactor);
  const uint64_t wait = std::max(kStaleFloorNs, longest * kStaleFactor);
  matcher_->Finish(last_ts_ > wait ? last_ts_ - wait : 0);
  LatencyReport r;
  r.first_ts_ns = first_ts_;
  r.last_ts_ns = last_ts_;
  r.interval_s = interval_ns_ != 0 ? options_.interval_s : 0;
  r.intervals_dropped = intervals_dropped_;
  r.expiry_s = options_.expiry_s;
  r.by = std::string(BreakdownName(options_.by));
  r.ioprio_absent = breakdown_.ioprio_absent();
  r.max_inflight = options_.max_inflight;
  for (const std::string& d : options_.devices) r.filters.emplace_back("dev", d);
  for (BlockOp op : options_.ops) r.filters.emplace_back("op", std::string(BlockOpName(op)));
  for (const std::string& c : options_.comms) r.filters.emplace_back("comm", c);
  for (int32_t pid : options_.pids) r.filters.emplace_back("pid", absl::StrFormat("%d", pid));
  if (options_.since_s) r.filters.emplace_back("since", absl::StrFormat("%g", *options_.since_s));
  if (options_.until_s) r.filters.emplace_back("until", absl::StrFormat("%g", *options_.until_s));

  FinishHistograms(reader_stats, r);
  const LossTally losses = FinishCompleteness(reader_stats, r);
  AddIncompleteWarnings(reader_stats, losses, r);
  AddPartialWarnings(r);
  AddNotes(reader_stats, r);
  return r;
}

// Finish's steps.

void LatencyReportBuilder::FinishHistograms(const ReadStats& reader_stats, LatencyReport& r) {
  RecordPending();
  std::map<uint64_t, LatencyInterval> intervals;
  FinishCoverage(reader_stats, &r);
  const bool partial = !r.coverage.complete;
  // A group whose every sample lay outside the coverage has nothing to show (its count is in
  // the coverage's).
  auto shown = [](const Group& g) { return !g.total.empty() || g.outside_coverage == 0; };
  std::vector<std::string> devices(groups_.size());
  for (size_t i = 0; i < groups_.size(); ++i) devices[i] = names_.Label(groups_[i]->dev);
  // The rows of the whole run, in GroupLess's order (found from the groups: moving 6,144 rows
  // made in the groups' order into the report and sorting them was ~5 ms, on one thread), each
  // made in its place: from kTwoThreadGroups rows on, with a second CPU, the later half on a
  // second thread (1024 devices: 6,144 rows, 0.84 M buckets). Each thread's rows are views of
  // their histograms' counts, copied into one block of their exact size (~1 MB a thread at 1024
  // devices: as lists of buckets they were 20 MB of fresh memory, 11-32 ms on two threads).
  std::vector<uint32_t> rows;  // of groups_, the shown ones
  rows.reserve(groups_.size());
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (shown(*groups_[i])) rows.push_back(static_cast<uint32_t>(i));
  }
  // Each group's row's --by order and label, as GroupOf gives them (0 and "" without --by).
  std::vector<uint64_t> by_order(groups_.size(), 0);
  std::vector<std::string> by_label(groups_.size());
  if (breakdown_.active()) {
    for (size_t i = 0; i < groups_.size(); ++i) {
      by_order[i] = breakdown_.Order(groups_[i]->klass);
      by_label[i] = breakdown_.Label(groups_[i]->klass);
    }
  }
  std::sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
    const Group& x = *groups_[a];
    const Group& y = *groups_[b];
    return std::tie(x.dev, by_order[a], by_label[a], x.op, x.phase) <
           std::tie(y.dev, by_order[b], by_label[b], y.op, y.phase);
  });
  // (r is a new report: its rows are these alone.)
  r.groups.resize(rows.size());
  auto make_rows = [&](size_t from, size_t to) {
    CountsBlock block;
    for (size_t k = from; k < to; ++k) block.Add(groups_[rows[k]]->total);
    block.Allocate();
    for (size_t k = from; k < to; ++k) {
      const Group& g = *groups_[rows[k]];
      LatencyGroup& row = r.groups[k];
      row = GroupOf(g.total, g, devices[rows[k]], &block);
      row.partial = partial;
      row.outside_coverage = g.outside_coverage;
    }
  };
  const size_t threads = rows.size() >= kTwoThreadGroups && UsableCpus() >= 2 ? 2 : 1;
  RunOnThreads(threads, [&](size_t t) {
    make_rows(rows.size() * t / threads, rows.size() * (t + 1) / threads);
  });
  for (size_t i = 0; i < groups_.size(); ++i) {
    const ArenaPool<Group>::Ptr& g = groups_[i];
    const std::string& device = devices[i];
    CloseInterval(g.get());
    // An interval whose every sample of the group was left out still shows the group, with no
    // samples and its count left out: the intervals add up to the whole run, and an interval
    // does not look idle when it was not covered.
    if (!g->outside_by_interval.empty()) {
      absl::flat_hash_set<uint64_t> shown;
      for (const LatencyInterval& iv : g->closed) shown.insert(iv.index);
      static const Histogram kEmpty;
      for (const auto& [index, count] : g->outside_by_interval) {
        if (shown.contains(index)) continue;
        LatencyInterval iv;
        iv.index = index;
        iv.groups.push_back(GroupOf(kEmpty, *g, ""));
        g->closed.push_back(std::move(iv));
      }
    }
    for (LatencyInterval& iv : g->closed) {
      LatencyInterval& out = intervals[iv.index];
      out.index = iv.index;
      out.start_s = static_cast<double>(iv.index) * options_.interval_s;
      // An interval is partial when a sample of it was left out, or it reaches past what every
      // CPU's data covers.
      const uint64_t iv_end = first_ts_ + (iv.index + 1) * interval_ns_;
      auto left_out = g->outside_by_interval.find(iv.index);
      for (LatencyGroup& lg : iv.groups) {
        lg.device = device;
        lg.outside_coverage = left_out == g->outside_by_interval.end() ? 0 : left_out->second;
        lg.partial = partial && (lg.outside_coverage != 0 || !r.coverage.has_window ||
                                 (r.coverage.window_end_ns < last_ts_ &&
                                  iv_end > r.coverage.window_end_ns));
        out.groups.push_back(std::move(lg));
      }
    }
  }
  for (const auto& [index, n] : unpaired_by_interval_) {
    auto it = intervals.find(index);
    if (it != intervals.end()) {
      it->second.unpaired = n;
    } else {
      r.unpaired_idle.emplace_back(index, n);
    }
  }
  for (auto& [index, iv] : intervals) {
    std::sort(iv.groups.begin(), iv.groups.end(), GroupLess);
    r.intervals.push_back(std::move(iv));
  }
}

LossTally LatencyReportBuilder::FinishCompleteness(const ReadStats& reader_stats, LatencyReport& r) {
  Completeness& c = r.completeness;
  const DecodeStats& ds = decoder_.stats();
  c.events = ds.decoded;
  c.other_events = ds.other_events;
  c.decode = ds;
  c.format_problems = decoder_.format_problems();
  for (int k = 0; k < kBlockEventKindCount; ++k) {
    c.recorded[k] = decoder_.Has(static_cast<BlockEventKind>(k));
  }
  c.match = matcher_->stats();
  c.samples_filtered = counters_.samples_filtered;
  c.phases_outside_window = counters_.phases_outside_window;
  c.late_interval_samples = counters_.late_interval_samples;
  c.filtered = counters_.filtered;
  c.reader_records = reader_stats.records;
  c.reader_events = reader_stats.events;
  c.reader_problems = reader_stats.problems;
  c.losses = losses_;
  std::sort(c.losses.begin(), c.losses.end(), [](const LossSummary& a, const LossSummary& b) {
    return std::tie(a.event, a.kind, a.cpu) < std::tie(b.event, b.kind, b.cpu);
  });
  // Per block event: losses by kind, to explain each phase's warning.
  LossTally tally;
  auto& lost_by = tally.lost_by;
  auto& unknown_by = tally.unknown_by;
  for (const LossSummary& l : c.losses) {
    int kind_of_event = -1;
    for (int k = 0; k < kBlockEventKindCount; ++k) {
      if (l.event_id >= 0 && decoder_.FormatId(static_cast<BlockEventKind>(k)) == l.event_id) {
        kind_of_event = k;
      }
    }
    // Losses the reader placed in time are gaps of the coverage: the samples across them are
    // left out and counted there; the phases they feed are partial, not incomplete.
    const uint64_t unplaced = l.count - std::min(l.placed, l.count);
    if (l.event_id < 0) {
      c.lost_unknown += unplaced;
      unknown_by[static_cast<int>(l.kind)] += unplaced;
    } else if (kind_of_event >= 0) {
      c.lost[kind_of_event] += unplaced;
      lost_by[kind_of_event][static_cast<int>(l.kind)] += unplaced;
    }
  }
  for (const DeviceMatchStats& dm : matcher_->devices()) {
    DeviceSummary d;
    d.dev = dm.dev;
    d.device = names_.Label(dm.dev);
    d.events = dm.events;
    d.issues_without_insert = dm.issues_without_insert;
    d.no_insert_reason = dm.no_insert_reason;
    c.devices.push_back(std::move(d));
  }
  std::sort(c.devices.begin(), c.devices.end(),
            [](const DeviceSummary& a, const DeviceSummary& b) { return a.dev < b.dev; });
  return tally;
}

LatencyReport FinishReport(LatencyReportBuilder& builder, const TraceReader& reader,
                           const ReadStats& stats, const ReportOptions& options) {
  LatencyReport report = builder.Finish(stats);
  report.input = options.input;
  report.files = reader.Files();
  if (!report.files.empty()) report.input = absl::StrJoin(report.files, ", ");
  report.file_format = std::string(reader.FileFormat());
  report.formats_source = reader.FormatsSource();
  report.formats_warning = reader.FormatsWarning();
  report.nr_cpus = reader.nr_cpus();
  report.recorded_on = RecordingHostOf(report.file_format, reader.Info());
  return report;
}

absl::StatusOr<LatencyReport> BuildLatencyReport(TraceReader& reader,
                                                 const ReportOptions& options) {
  IOTRACE_RETURN_IF_ERROR(ValidateReportOptions(options));
  std::string plan;
  if (auto split = BuildSplit(reader, options, &plan); split.has_value()) {
    return *std::move(split);  // not a copy: at 1024 devices its buckets are ~20 MB
  }
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<LatencyReportBuilder> builder,
                           LatencyReportBuilder::Create(reader.formats(), options));
  Coverage assumed;
  assumed.gaps = options.assume_gaps;
  builder->set_coverage(assumed);
  IOTRACE_RETURN_IF_ERROR(builder->ReadAll(reader));
  if (!reader.stats().coverage.complete()) {
    // The data has gaps. Where they lie is known only now (a perf ring loss shows where it
    // ends, not where it began): read again, leaving out every sample across one.
    Coverage coverage = reader.stats().coverage;
    coverage.Merge(assumed);
    IOTRACE_ASSIGN_OR_RETURN(builder, LatencyReportBuilder::Create(reader.formats(), options));
    builder->set_coverage(coverage);
    IOTRACE_RETURN_IF_ERROR(builder->ReadAll(reader));
  }
  LatencyReport report = FinishReport(*builder, reader, reader.stats(), options);
  report.read_plan = plan;
  return report;
}

}  // namespace iotrace
