#include "iotrace/analysis/latency_report.h"

#include <sched.h>

#include <algorithm>
#include <bit>
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
#include "iotrace/base/status.h"
#include "iotrace/base/non_temporal_store.h"
#include "iotrace/base/text.h"
#include "iotrace/formats/ftrace_page.h"

namespace iotrace {
namespace {

constexpr std::string_view kUnitNames[] = {"ns", "us", "ms"};
constexpr std::string_view kFormatNames[] = {"text", "csv", "json"};
constexpr int kLossKindCount = 4;
constexpr std::string_view kLossKindNames[kLossKindCount] = {"ring_lost", "silent_drop",
                                                             "ftrace_overrun", "ftrace_dropped"};

// Reader problems that lose no block event: copies dropped whole, records delivered out of
// order (counted, and noted), samples of other kinds of event, formats that could not be parsed
// (a block event's shows as absent, with a note), and an unfinished file (a phase warning of
// its own). Any other problem, known or not, may have cost events (ftrace_time_backwards too:
// the rest of that page is skipped).
bool ReaderProblemMayLoseEvents(std::string_view name) {
  static constexpr std::string_view kHarmless[] = {
      "duplicate_record",      "out_of_order_beyond_window", "non_tracepoint_sample",
      "event_format_unparsed", kProblemUnfinishedFile,
      // perf.data cut short after its data: feature sections lost, every event read.
      "file_cut_after_data",
  };
  for (std::string_view h : kHarmless) {
    if (name == h) return false;
  }
  return true;
}

// Reader problems whose damage the reader placed in time, as gaps of its coverage: the data of
// a CPU (or of all, in perf.data's one stream) ends early, or a page of it was skipped. Samples
// across them are left out and counted (CoverageReport), so they leave phases partial, not
// incomplete. Per-record problems of perf.data (a sample that does not parse) are not placed.
bool ReaderProblemPlaced(std::string_view name) {
  static constexpr std::string_view kPlaced[] = {
      kProblemFileCut, "truncated_record", "perf_pipe_stream_truncated", "bad_record_size", "read_error",
      "trace_dat_cpu_data_truncated", "trace_dat_cpu_data_overlap", "ftrace_partial_page",
      "ftrace_short_record", "ftrace_missed_events_uncounted",
  };
  for (std::string_view p : kPlaced) {
    if (name == p) return true;
  }
  // The page problems of ftrace_page.h (bad header, record past the page, time backwards, ...).
  for (int i = 0; i < kFtracePageProblemCount; ++i) {
    if (name == FtracePageProblemName(static_cast<FtracePageProblem>(i))) return true;
  }
  return false;
}

// A request issued and not completed at the end of the file is stale (its completion most
// likely lost) past this many times the longest D2C, and at least this long.
constexpr uint64_t kStaleFactor = 16;
constexpr uint64_t kStaleFloorNs = 100000000;  // 100 ms

// The events whose loss makes a phase incomplete: its start and its end.
constexpr BlockEventKind kPhaseInputs[kPhaseCount][2] = {
    {BlockEventKind::kInsert, BlockEventKind::kIssue},      // I2D
    {BlockEventKind::kIssue, BlockEventKind::kComplete},    // D2C
    {BlockEventKind::kInsert, BlockEventKind::kComplete},   // I2C
    {BlockEventKind::kBioQueue, BlockEventKind::kIssue},    // Q2D
    {BlockEventKind::kBioQueue, BlockEventKind::kComplete}, // Q2C
};

uint64_t SecondsToNs(double s) {
  if (!(s > 0)) return 0;
  double ns = std::round(s * 1e9);
  return ns >= 1.8e19 ? ~uint64_t{0} : static_cast<uint64_t>(ns);
}

LatencyGroup MakeGroup(const Histogram& h, uint32_t dev, const std::string& device, BlockOp op,
                       Phase phase) {
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
  g.summary.p50_ns = h.ValueAtPercentile(50);
  g.summary.p90_ns = h.ValueAtPercentile(90);
  g.summary.p99_ns = h.ValueAtPercentile(99);
  g.summary.p999_ns = h.ValueAtPercentile(99.9);
  h.ForEachBucket([&g](uint64_t lo, uint64_t hi, uint64_t count) {
    g.buckets.push_back({lo, hi, count});
  });
  return g;
}

bool GroupLess(const LatencyGroup& a, const LatencyGroup& b) {
  return std::tie(a.dev, a.op, a.phase) < std::tie(b.dev, b.op, b.phase);
}

}  // namespace

std::string_view TimeUnitName(TimeUnit unit) { return kUnitNames[static_cast<int>(unit)]; }

bool ParseTimeUnit(std::string_view name, TimeUnit* unit) {
  for (int i = 0; i < 3; ++i) {
    if (kUnitNames[i] == name) {
      *unit = static_cast<TimeUnit>(i);
      return true;
    }
  }
  return false;
}

std::string_view OutputFormatName(OutputFormat format) {
  return kFormatNames[static_cast<int>(format)];
}

bool ParseOutputFormat(std::string_view name, OutputFormat* format) {
  for (int i = 0; i < 3; ++i) {
    if (kFormatNames[i] == name) {
      *format = static_cast<OutputFormat>(i);
      return true;
    }
  }
  return false;
}

std::string_view LossKindName(LossRecord::Kind kind) {
  return kLossKindNames[static_cast<int>(kind)];
}

std::string_view NoInsertReasonText(NoInsertReason reason) {
  switch (reason) {
    case NoInsertReason::kInsertNotRecorded:
      return "block_rq_insert was not recorded in this file (record with -e "
             "block:block_rq_insert, one of iotrace record's default events)";
    case NoInsertReason::kNoInsertOnDevice:
      return "the device showed no block_rq_insert at all: requests went straight to the driver "
             "(scheduler none, or a bypass)";
    case NoInsertReason::kFlush:
      return "flush requests are issued by the flush machinery without an insert";
    case NoInsertReason::kInsertMissing:
      return "the insert of these requests was not seen (lost, before the recording started, "
             "issued directly, or the request was front-merged)";
  }
  return "";
}

absl::Status ValidateReportOptions(const ReportOptions& o) {
  auto bad = [](std::string message, std::string_view hint) {
    return WithHint(absl::InvalidArgumentError(message), hint);
  };
  if (o.since_s && !(*o.since_s >= 0)) {
    return bad(absl::StrFormat("--since %g: must be >= 0 seconds", *o.since_s),
               "--since and --until count seconds from the first event in the file");
  }
  if (o.until_s && !(*o.until_s >= 0)) {
    return bad(absl::StrFormat("--until %g: must be >= 0 seconds", *o.until_s),
               "--since and --until count seconds from the first event in the file");
  }
  if (o.since_s && o.until_s && *o.until_s < *o.since_s) {
    return bad(absl::StrFormat("--until %g is before --since %g", *o.until_s, *o.since_s),
               "give a window with since <= until");
  }
  if (!(o.interval_s >= 0) || (o.interval_s > 0 && o.interval_s < 1e-6)) {
    return bad(absl::StrFormat("--interval %g: must be at least 0.000001 seconds", o.interval_s),
               "for example --interval 1 for one block per second");
  }
  if (!(o.expiry_s > 0)) {
    return bad(absl::StrFormat("--expiry %g: must be > 0 seconds", o.expiry_s),
               "the default, 30 s, drops requests idle for 30 s of trace time");
  }
  if (o.max_inflight < 16 || o.max_inflight > (size_t{1} << 26)) {
    return bad(absl::StrFormat("--max-inflight %u: must be between 16 and %u", o.max_inflight,
                               size_t{1} << 26),
               "the default, 131072, is far above any device queue depth");
  }
  if (o.threads < 0 || o.threads > 3) {
    return bad(absl::StrFormat("--threads %d: must be 1, 2, 3 or 0 (auto)", o.threads),
               "1: one thread; 2: + reading ahead; 3: + pairing on a thread of its own; "
               "auto: pairing where it measures faster");
  }
  for (const std::string& d : o.devices) {
    if (d.empty()) return bad("--dev: empty device", "give MAJ:MIN (7:0) or a name (loop0)");
  }
  for (const std::string& c : o.comms) {
    if (c.empty() || c.size() >= kCommSize) {
      return bad(absl::StrFormat("--comm '%s': must be 1 to 15 characters", c),
                 "the kernel keeps only the first 15 characters of a process name");
    }
  }
  return absl::OkStatus();
}

LatencyReportBuilder::LatencyReportBuilder(const std::vector<EventFormat>& formats,
                                           const ReportOptions& options)
    : options_(options),
      names_(options.sysfs_root, options.procfs_root),
      decoder_(formats) {
  MatcherOptions mo;
  mo.expiry_ns = SecondsToNs(options.expiry_s);
  mo.max_entries = options.max_inflight;
  // Without a time series and without filters, the report neither depends on the order of
  // samples nor counts them: one sample per request instead of two.
  mo.combine_samples = SecondsToNs(options.interval_s) == 0 && options.devices.empty() &&
                       options.ops.empty() && options.comms.empty() && options.pids.empty();
  matcher_ = std::make_unique<RequestMatcher>(mo, static_cast<RequestSampleSink*>(this));
  matcher_->set_insert_recorded(decoder_.Has(BlockEventKind::kInsert));
  for (const EventFormat& f : formats) format_names_.emplace_back(f.id, f.FullName());
  for (BlockOp op : options.ops) op_mask_ |= 1u << static_cast<int>(op);
  if (op_mask_ == 0) op_mask_ = ~0u;
  interval_ns_ = SecondsToNs(options.interval_s);
  windowed_ = options.since_s.has_value() || options.until_s.has_value() || interval_ns_ != 0;
  slot_index_.reserve(64);
  process_filter_ = !options.comms.empty() || !options.pids.empty();
  filtering_ = !options.devices.empty() || !options.ops.empty() || process_filter_;
  comm_hit_.assign(options.comms.size(), 0);
  pid_hit_.assign(options.pids.size(), 0);
  // The names of processes matter only to --comm (set_block_event_sink turns this back on).
  decoder_.set_decode_comm(!options.comms.empty());
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
      } else if (!prime_) {
        return;
      }
    }
  }
  if (event.ts > last_ts_) last_ts_ = event.ts;
  // One call site, so that the decoder's fast path is inlined here. With pairing on its own
  // thread, the event goes on into the batch with streaming stores (non_temporal_store.h:
  // decoding straight into the batch made the reading thread pay for taking each line back from
  // the pairing thread's cache).
  if (!decoder_.Decode(event, &event_)) return;
  if (batch_ != nullptr) {
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

namespace {

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return CPU_COUNT(&set);
}

}  // namespace

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
  if (threads < 3 || block_sink_ != nullptr) return reader.ReadAll(this);

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
    read_status = reader.ReadAll(this);
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

void LatencyReportBuilder::HoldUntil(uint64_t cut_ts, bool prime) {
  before_cut_ = true;
  slow_path_ = true;
  cut_ts_ = cut_ts;
  prime_ = prime;
  if (prime) matcher_->set_sink(&null_sink_);
}

void LatencyReportBuilder::PassCut() {
  before_cut_ = false;
  slow_path_ = next_gap_end_ != ~uint64_t{0};
  if (!prime_) return;
  cut_ = std::make_unique<Cut>();
  cut_->state = matcher_->Snapshot();
  cut_->counts = matcher_->counts();
  cut_->decode = decoder_.stats();
  matcher_->set_sink(this);
  matcher_->WatchKeys();
}

bool LatencyReportBuilder::StartedWhereEnded(const LatencyReportBuilder& earlier,
                                              uint64_t primed_from, size_t* older) {
  RequestMatcher::Older old;
  if (cut_ == nullptr ||
      !RequestMatcher::SplitOlder(earlier.matcher_->Snapshot(), cut_->state, primed_from, &old) ||
      !matcher_->Resolve(&old) || !matcher_->Adopt(old)) {
    return false;
  }
  *older = old.requests.size() + old.queued.size() + old.overlapped.size() +
           old.kept_apart.size() + old.collided.size();
  return true;
}

void LatencyReportBuilder::Absorb(LatencyReportBuilder& later) {
  AddCounters(decoder_.mutable_stats(), later.decoder_.stats(), later.cut_->decode);
  later.matcher_->TakeOver(later.cut_->counts, matcher_->counts());
  later.matcher_->set_sink(this);
  matcher_ = std::move(later.matcher_);
  for (const auto& g : later.groups_) {
    GroupFor(SlotFor(g->dev), g->op, g->phase)->total.Merge(g->total);
  }
  counters_.samples_filtered += later.counters_.samples_filtered;
  FilterCounts& f = counters_.filtered;
  const FilterCounts& lf = later.counters_.filtered;
  f.dev += lf.dev;
  f.op += lf.op;
  f.comm += lf.comm;
  f.pid += lf.pid;
  for (int op = 0; op < kBlockOpCount; ++op) requests_by_op_[op] += later.requests_by_op_[op];
  for (size_t i = 0; i < comm_hit_.size(); ++i) comm_hit_[i] |= later.comm_hit_[i];
  for (size_t i = 0; i < pid_hit_.size(); ++i) pid_hit_[i] |= later.pid_hit_[i];
  for (const auto& slot : later.slots_) SlotFor(slot->dev).requests += slot->requests;
  longest_d2c_ = std::max(longest_d2c_, later.longest_d2c_);
  last_ts_ = std::max(last_ts_, later.last_ts_);
  for (const LossSummary& l : later.losses_) AddLoss(l.kind, l.cpu, l.event_id, l.count, l.placed);
}

void LatencyReportBuilder::OnLoss(const LossRecord& loss) {
  AddLoss(loss.kind, loss.cpu, loss.event_id, loss.count, loss.placed ? loss.count : 0);
}

void LatencyReportBuilder::set_coverage(const Coverage& coverage) {
  coverage_ = coverage.gaps.empty() ? nullptr : std::make_unique<CoverageFilter>(coverage.gaps);
  matcher_->set_coverage(coverage_.get());
  gap_ends_passed_ = 0;
  next_gap_end_ = coverage_ == nullptr || coverage_->gap_ends().empty()
                      ? ~uint64_t{0}
                      : coverage_->gap_ends().front();
  slow_path_ = before_cut_ || next_gap_end_ != ~uint64_t{0};
}

void LatencyReportBuilder::PassGapEnds(uint64_t ts) {
  const std::vector<uint64_t>& ends = coverage_->gap_ends();
  while (gap_ends_passed_ < ends.size() && ends[gap_ends_passed_] <= ts) ++gap_ends_passed_;
  next_gap_end_ = gap_ends_passed_ < ends.size() ? ends[gap_ends_passed_] : ~uint64_t{0};
  slow_path_ = before_cut_ || next_gap_end_ != ~uint64_t{0};
  matcher_->DropFlushes(ts);
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

LatencyReportBuilder::DeviceSlot& LatencyReportBuilder::SlotForSlow(uint32_t dev) {
  for (size_t i = 0; i < fast_count_; ++i) {
    if (fast_dev_[i] == dev) return *fast_slot_[i];
  }
  auto it = slot_index_.find(dev);
  if (it != slot_index_.end()) return *slots_[it->second];
  // First sample of a device: resolve the --dev filter once (reads sysfs).
  auto s = std::make_unique<DeviceSlot>();
  s->dev = dev;
  s->allowed = options_.devices.empty();
  for (const std::string& spec : options_.devices) {
    if (names_.Matches(spec, dev)) s->allowed = true;
  }
  DeviceSlot* slot = s.get();
  slot_index_.emplace(dev, static_cast<uint32_t>(slots_.size()));
  slots_.push_back(std::move(s));
  if (fast_count_ < kFastDevices) {
    fast_dev_[fast_count_] = dev;
    fast_slot_[fast_count_] = slot;
    ++fast_count_;
  }
  return *slot;
}

LatencyReportBuilder::Group* LatencyReportBuilder::GroupFor(DeviceSlot& slot, BlockOp op,
                                                            Phase phase) {
  Group*& g = slot.groups[static_cast<int>(op)][static_cast<int>(phase)];
  if (g == nullptr) {
    auto ng = std::make_unique<Group>();
    ng->dev = slot.dev;
    ng->op = op;
    ng->phase = phase;
    if (interval_ns_ != 0) ng->current = std::make_unique<Histogram>();
    g = ng.get();
    groups_.push_back(std::move(ng));
  }
  return g;
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
  iv.groups.push_back(MakeGroup(*g->current, g->dev, "", g->op, g->phase));
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

void LatencyReportBuilder::OnRequestSampleCovered(const RequestSample& s) {
  if ((s.phases & (1u << static_cast<int>(Phase::kD2C))) != 0 &&
      !coverage_->Crosses(s.Start(Phase::kD2C), s.End(Phase::kD2C)).has_value()) {
    // (A pair across a gap may be false: it must not stretch the yardstick for stale requests.)
    longest_d2c_ = std::max(longest_d2c_, s.End(Phase::kD2C) - s.Start(Phase::kD2C));
  }
  Record(s, s.phases);
}

inline void LatencyReportBuilder::Record(const RequestSample& s, unsigned phases) {
  DeviceSlot& slot = SlotFor(s.dev);
  if (filtering_ && !PassesFilters(slot, s)) return;
  std::array<Group*, kPhaseCount>& groups = slot.groups[static_cast<int>(s.op)];
  if (coverage_ != nullptr) [[unlikely]] {
    phases = DropOutsideCoverage(s, slot, phases);
  }
  // Only the set phases, lowest first (the order of the loop over all phases this replaces).
  if (!windowed_) {
    // What the loop below does when no sample is outside the window and there are no intervals.
    for (unsigned bits = phases; bits != 0; bits &= bits - 1) {
      const int p = std::countr_zero(bits);
      const Phase phase = static_cast<Phase>(p);
      Group* g = groups[p] != nullptr ? groups[p] : GroupFor(slot, s.op, phase);
      g->total.Record(s.End(phase) - s.Start(phase));
    }
    return;
  }
  for (unsigned bits = phases; bits != 0; bits &= bits - 1) {
    const int p = std::countr_zero(bits);
    const Phase phase = static_cast<Phase>(p);
    const uint64_t end = s.End(phase);
    if (end < since_ns_ || end > until_ns_) {
      ++counters_.phases_outside_window;
      ++(end < since_ns_ ? counters_.filtered.since : counters_.filtered.until);
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

namespace {

// Notes that name the fix for what the warnings report: losses by kind (a bigger ring or buffer,
// or the ftrace backend against perf's silent drops), requests given up by the matcher's bounds.
void AddFixNotes(const Completeness& c, const ReportOptions& options,
                 std::vector<std::string>* notes) {
  std::array<uint64_t, kLossKindCount> lost{};
  for (const LossSummary& l : c.losses) lost[static_cast<int>(l.kind)] += l.count;
  const uint64_t ring = lost[static_cast<int>(LossRecord::Kind::kRingLost)];
  const uint64_t silent = lost[static_cast<int>(LossRecord::Kind::kSilentDrop)];
  const uint64_t ftrace = lost[static_cast<int>(LossRecord::Kind::kFtraceOverrun)] +
                          lost[static_cast<int>(LossRecord::Kind::kFtraceDropped)];
  if (ring != 0) {
    notes->push_back(absl::StrFormat(
        "%s lost because a perf ring was full (ring_lost): record with bigger rings, iotrace "
        "record -m 4096 (pages per CPU, default 1024) or perf record -m 4096, or with "
        "--backend ftrace",
        Plural(ring, "event")));
  }
  if (silent != 0) {
    notes->push_back(absl::StrFormat(
        "%s dropped by perf without a trace (silent_drop: perf drops samples taken in the idle "
        "task on some kernels, docs/kernel-notes.md): record with iotrace record --backend "
        "ftrace, which does not",
        Plural(silent, "event")));
  }
  if (ftrace != 0) {
    notes->push_back(absl::StrFormat(
        "%s lost because an ftrace buffer was full (ftrace_overrun, ftrace_dropped): record with "
        "a bigger buffer, iotrace record --buffer-kb 32768 (per CPU, default 8192) or trace-cmd "
        "record -b 32768",
        Plural(ftrace, "event")));
  }
  const MatchStats& m = c.match;
  uint64_t stale = 0, expired = 0, evicted = 0;
  for (int i = 0; i < kRequestStateCount; ++i) {
    stale += m.stale_at_end[i];
    expired += m.expired[i];
    evicted += m.evicted[i];
  }
  if (stale != 0 && silent == 0) {
    notes->push_back(absl::StrFormat(
        "%s left issued at the end of the file most likely lost %s completion: if perf "
        "recorded the file, record with iotrace record --backend ftrace, which does not drop "
        "events silently (iotrace's perf backend counts perf's drops)",
        Plural(stale, "request"), stale == 1 ? "its" : "their"));
  }
  if (expired != 0) {
    notes->push_back(absl::StrFormat(
        "%s expired, idle for over %s s of trace time: if a device really takes that long, "
        "report with a longer --expiry",
        Plural(expired, "request"), absl::StrFormat("%g", options.expiry_s)));
  }
  if (evicted != 0) {
    notes->push_back(absl::StrFormat(
        "%s evicted from the full table of requests in flight (--max-inflight %u): report with "
        "a larger --max-inflight",
        Plural(evicted, "request"), options.max_inflight));
  }
}

}  // namespace

void LatencyReportBuilder::ExplainFilters(LatencyReport& r) {
  const Completeness& c = r.completeness;
  const std::string& file = options_.input;
  auto label = [this](uint32_t dev) {
    const std::string name = names_.Label(dev);
    return name == DevString(dev) ? name : absl::StrFormat("%s (%s)", name, DevString(dev));
  };
  // "--op discard" or "--op discard, --op flush".
  auto flags = [](std::string_view flag, const std::vector<std::string>& values) {
    std::vector<std::string> parts;
    for (const std::string& v : values) parts.push_back(absl::StrFormat("--%s %s", flag, v));
    return absl::StrJoin(parts, ", ");
  };
  auto matches = [](size_t n) { return n == 1 ? "matches" : "match"; };

  // Values that match nothing in the file.
  std::vector<std::string> no_dev;
  for (const std::string& spec : options_.devices) {
    bool found = false;
    for (const DeviceSummary& d : c.devices) found = found || names_.Matches(spec, d.dev);
    if (!found) no_dev.push_back(spec);
  }
  if (!no_dev.empty()) {
    std::vector<std::string> held;
    for (const DeviceSummary& d : c.devices) held.push_back(label(d.dev));
    r.filter_warnings.push_back(absl::StrFormat(
        "%s %s no device in %s; %s", flags("dev", no_dev), matches(no_dev.size()), file,
        held.empty() ? "it holds no block device events"
                     : "it holds " + absl::StrJoin(held, ", ")));
    r.devices_unmatched = no_dev;
  }
  // What the file holds per op, and per device: "read 600, write 634".
  std::vector<std::string> by_op, by_dev;
  for (int op = 0; op < kBlockOpCount; ++op) {
    if (requests_by_op_[op] != 0) {
      by_op.push_back(
          absl::StrFormat("%s %u", BlockOpName(static_cast<BlockOp>(op)), requests_by_op_[op]));
    }
  }
  std::vector<const DeviceSlot*> slots;
  for (const auto& slot : slots_) slots.push_back(slot.get());
  std::sort(slots.begin(), slots.end(),
            [](const DeviceSlot* a, const DeviceSlot* b) { return a->dev < b->dev; });
  for (const DeviceSlot* slot : slots) {
    if (slot->requests != 0) {
      by_dev.push_back(absl::StrFormat("%s %u", label(slot->dev), slot->requests));
    }
  }
  auto holds = [](const std::vector<std::string>& held) {
    return held.empty() ? std::string("no completed request") : absl::StrJoin(held, ", ");
  };
  std::vector<std::string> ops, comms, pids;
  for (BlockOp op : options_.ops) {
    if (requests_by_op_[static_cast<int>(op)] == 0) ops.emplace_back(BlockOpName(op));
  }
  for (size_t i = 0; i < options_.comms.size(); ++i) {
    if (comm_hit_[i] == 0) comms.push_back(options_.comms[i]);
  }
  for (size_t i = 0; i < options_.pids.size(); ++i) {
    if (pid_hit_[i] == 0) pids.push_back(absl::StrFormat("%d", options_.pids[i]));
  }
  if (!ops.empty()) {
    r.filter_warnings.push_back(absl::StrFormat("%s %s no request in %s (it holds %s)",
                                                flags("op", ops), matches(ops.size()), file,
                                                holds(by_op)));
  }
  if (!comms.empty()) {
    r.filter_warnings.push_back(absl::StrFormat(
        "%s %s no request in %s (no request was inserted or issued by a process of that name)",
        flags("comm", comms), matches(comms.size()), file));
  }
  if (!pids.empty()) {
    r.filter_warnings.push_back(absl::StrFormat(
        "%s %s no request in %s (no request was inserted or issued by that process)",
        flags("pid", pids), matches(pids.size()), file));
  }
  for (const std::string& w : r.filter_warnings) r.notes.push_back(w);

  // Nothing left to show: which filter removed what.
  if (!r.groups.empty()) return;
  const FilterCounts& f = c.filtered;
  std::vector<std::string> ops_given, pids_given;
  for (BlockOp op : options_.ops) ops_given.emplace_back(BlockOpName(op));
  for (int32_t pid : options_.pids) pids_given.push_back(absl::StrFormat("%d", pid));
  struct Removed {
    std::string flag;
    uint64_t count;
    std::string_view what;
    std::string held;  // what the file holds, when it says more
  };
  const std::string span = absl::StrFormat("the trace spans %.3f s", r.duration_s());
  std::vector<Removed> removed;
  auto add = [&removed](std::string flag, uint64_t count, std::string_view what, std::string held) {
    if (count != 0) removed.push_back({std::move(flag), count, what, std::move(held)});
  };
  add(flags("dev", options_.devices), f.dev, "request", "the file holds " + holds(by_dev));
  add(flags("op", ops_given), f.op, "request", "the file holds " + holds(by_op));
  add(flags("comm", options_.comms), f.comm, "request", "");
  add(flags("pid", pids_given), f.pid, "request", "");
  if (options_.since_s) {
    add(absl::StrFormat("--since %g", *options_.since_s), f.since, "phase sample", span);
  }
  if (options_.until_s) {
    add(absl::StrFormat("--until %g", *options_.until_s), f.until, "phase sample", span);
  }
  std::vector<std::string> parts;
  for (const Removed& x : removed) {
    // The only filter that removed anything removed all there was (else a group would be left).
    parts.push_back(absl::StrFormat("%s removed %s%s%s", x.flag, removed.size() == 1 ? "all " : "",
                                    Plural(x.count, std::string(x.what)),
                                    x.held.empty() ? "" : " (" + x.held + ")"));
  }
  if (parts.empty()) return;
  r.empty_reason = absl::StrJoin(parts, ", ");
  r.notes.push_back("no request latencies to show: " + r.empty_reason);
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
  r.expiry_s = options_.expiry_s;
  r.max_inflight = options_.max_inflight;
  for (const std::string& d : options_.devices) r.filters.emplace_back("dev", d);
  for (BlockOp op : options_.ops) r.filters.emplace_back("op", std::string(BlockOpName(op)));
  for (const std::string& c : options_.comms) r.filters.emplace_back("comm", c);
  for (int32_t pid : options_.pids) r.filters.emplace_back("pid", absl::StrFormat("%d", pid));
  if (options_.since_s) r.filters.emplace_back("since", absl::StrFormat("%g", *options_.since_s));
  if (options_.until_s) r.filters.emplace_back("until", absl::StrFormat("%g", *options_.until_s));

  // Histograms.
  std::map<uint64_t, LatencyInterval> intervals;
  FinishCoverage(reader_stats, &r);
  const bool partial = !r.coverage.complete;
  for (auto& g : groups_) {
    const std::string device = names_.Label(g->dev);
    // A group whose every sample lay outside the coverage has nothing to show (its count is
    // in the coverage's).
    if (!g->total.empty() || g->outside_coverage == 0) {
      r.groups.push_back(MakeGroup(g->total, g->dev, device, g->op, g->phase));
      r.groups.back().partial = partial;
      r.groups.back().outside_coverage = g->outside_coverage;
    }
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
        iv.groups.push_back(MakeGroup(kEmpty, g->dev, "", g->op, g->phase));
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
  std::sort(r.groups.begin(), r.groups.end(), GroupLess);
  for (auto& [index, iv] : intervals) {
    std::sort(iv.groups.begin(), iv.groups.end(), GroupLess);
    r.intervals.push_back(std::move(iv));
  }

  // Completeness.
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
  std::array<std::array<uint64_t, kLossKindCount>, kBlockEventKindCount> lost_by{};
  std::array<uint64_t, kLossKindCount> unknown_by{};
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

  // Warnings: a phase whose inputs were lost, or whose requests were given up, is incomplete.
  std::array<bool, kPhaseCount> present{};
  for (const LatencyGroup& g : r.groups) present[static_cast<int>(g.phase)] = true;
  auto breakdown = [](const std::array<uint64_t, kLossKindCount>& by) {
    std::vector<std::string> parts;
    for (int i = 0; i < kLossKindCount; ++i) {
      if (by[i] != 0) parts.push_back(absl::StrFormat("%s %u", kLossKindNames[i], by[i]));
    }
    return absl::StrJoin(parts, ", ");
  };
  const MatchStats& ms = c.match;
  const bool unfinished = reader_stats.Problem(kProblemUnfinishedFile) != 0;
  // Reader problems after which events may be missing: a record, a page or the rest of a CPU's
  // data that could not be read (a file cut short or damaged). Which events were in it is
  // unknown, so every phase is incomplete.
  std::vector<std::string> unreadable;
  for (const auto& [name, count] : reader_stats.problems) {
    if (count != 0 && ReaderProblemMayLoseEvents(name) &&
        !(ReaderProblemPlaced(name) && !r.coverage.complete)) {
      unreadable.push_back(absl::StrFormat("%s %u", name, count));
    }
  }
  const int issued = static_cast<int>(RequestState::kIssued);
  const int inserted = static_cast<int>(RequestState::kInserted);
  const int requeued = static_cast<int>(RequestState::kRequeued);
  for (int p = 0; p < kPhaseCount; ++p) {
    // A phase with no histogram at all is still reported when both of its events were recorded:
    // losing every completion must not read as "no D2C to show".
    const bool recorded = c.recorded[static_cast<int>(kPhaseInputs[p][0])] &&
                          c.recorded[static_cast<int>(kPhaseInputs[p][1])];
    if (!present[p] && !recorded) continue;
    std::vector<std::string> why;
    for (BlockEventKind kind : kPhaseInputs[p]) {
      const int k = static_cast<int>(kind);
      if (c.lost[k] != 0) {
        // (Losses placed in time are gaps of the coverage; these are not: any request may
        // have lost an event to them.)
        why.push_back(absl::StrFormat(
            "%s lost (%s), not placed in time",
            Plural(c.lost[k], std::string(BlockEventKindName(kind)) + " event"),
            breakdown(lost_by[k])));
      }
      if (ds.rejected[k] != 0) {
        why.push_back(absl::StrFormat(
            "%s could not be decoded",
            Plural(ds.rejected[k], std::string(BlockEventKindName(kind)) + " record")));
      }
    }
    if (c.lost_unknown != 0) {
      why.push_back(absl::StrFormat("%s of unknown type lost (%s), not placed in time",
                                    Plural(c.lost_unknown, "event"), breakdown(unknown_by)));
    }
    if (unfinished) {
      why.push_back("the file was not finished (its writer was killed?): the losses it counts "
                    "last are not in it");
    }
    if (!unreadable.empty()) {
      why.push_back(absl::StrFormat("parts of the file could not be read (%s): it is cut short "
                                    "or damaged, and the events in those parts are missing",
                                    absl::StrJoin(unreadable, ", ")));
    }
    // Requests given up in a state the phase had started in and not ended: inserted ones for
    // the phases that end at the issue, issued (or requeued) ones for D2C, both for I2C / Q2C.
    const Phase phase = static_cast<Phase>(p);
    const bool ends_at_issue = phase == Phase::kI2D || phase == Phase::kQ2D;
    const bool starts_at_issue = phase == Phase::kD2C;
    auto given_up_in = [&ms](int state) {
      return ms.expired[state] + ms.evicted[state] + ms.collided[state];
    };
    const uint64_t given_up_inserted = starts_at_issue ? 0 : given_up_in(inserted);
    const uint64_t given_up_issued = ends_at_issue ? 0 : given_up_in(issued) + given_up_in(requeued);
    const uint64_t stale_issued =
        ends_at_issue ? 0 : ms.stale_at_end[issued] + ms.stale_at_end[requeued];
    if (stale_issued != 0) {
      why.push_back(absl::StrFormat(
          "%s issued before the end of the file had waited over %d times the longest D2C "
          "seen (and over %d ms) for a completion that is not in the file: most likely not "
          "recorded (perf drops samples without counting them on some kernels), else the device "
          "is stuck",
          Plural(stale_issued, "request"), kStaleFactor, kStaleFloorNs / 1000000));
    }
    if (given_up_inserted + given_up_issued != 0) {
      why.push_back(absl::StrFormat(
          "%u %s %s never %s (expired, evicted from the table or given up at a collision)",
          given_up_inserted + given_up_issued,
          ends_at_issue ? "inserted" : starts_at_issue ? "issued" : "inserted or issued",
          given_up_inserted + given_up_issued == 1 ? "request" : "requests",
          ends_at_issue ? "issued" : "completed"));
    }
    if (why.empty()) continue;
    r.warnings.push_back(
        {phase, absl::StrFormat("%s is incomplete: %s; %s", PhaseName(phase),
                                absl::StrJoin(why, "; "),
                                present[p] ? "its histograms miss those requests"
                                           : "no request of it could be measured")});
    for (LatencyGroup& g : r.groups) {
      if (g.phase == phase) g.incomplete = true;
    }
    for (LatencyInterval& iv : r.intervals) {
      for (LatencyGroup& g : iv.groups) {
        if (g.phase == phase) g.incomplete = true;
      }
    }
  }

  // Partial phases: the file's data does not cover the whole recording on every CPU.
  if (!r.coverage.complete) {
    const CoverageReport& cov = r.coverage;
    for (int p = 0; p < kPhaseCount; ++p) {
      uint64_t outside = 0;
      std::vector<std::string> by;
      for (int g = 0; g < kGapCauseCount; ++g) {
        const uint64_t n = cov.outside[p][g];
        outside += n;
        if (n != 0) by.push_back(absl::StrFormat("%s %u", GapCauseName(static_cast<GapCause>(g)), n));
      }
      if (!present[p] && outside == 0) continue;
      const Phase phase = static_cast<Phase>(p);
      const std::string left_out =
          outside == 0 ? std::string()
                       : absl::StrFormat("; %u %s across a gap or past the end of some CPU's data "
                                         "(%s) %s left out, never drawn",
                                         outside, outside == 1 ? "request" : "requests",
                                         absl::StrJoin(by, ", "), outside == 1 ? "is" : "are");
      if (!cov.has_window) {
        r.warnings.push_back({phase, absl::StrFormat("%s cannot be shown: no time is covered by "
                                                     "every CPU's data (a CPU has none)%s",
                                                     PhaseName(phase), left_out)});
      } else {
        r.warnings.push_back(
            {phase, absl::StrFormat("%s is partial: it holds only requests wholly inside "
                                    "%.3f-%.3f s, the time every CPU's data covers%s%s",
                                    PhaseName(phase), (cov.window_start_ns - first_ts_) / 1e9,
                                    (cov.window_end_ns - first_ts_) / 1e9,
                                    cov.gap_count == 0 ? "" : ", less the gaps inside it",
                                    left_out)});
      }
    }
  }

  // Notes: phases that are absent, and why.
  ExplainFilters(r);
  uint64_t block_events = 0;
  for (uint64_t n : c.events) block_events += n;
  if (block_events == 0) {
    r.notes.push_back("the file holds no decodable block events: nothing to pair");
  }
  for (const DeviceSummary& d : c.devices) {
    bool has_d2c = false, has_i2d = false;
    for (const LatencyGroup& g : r.groups) {
      if (g.dev != d.dev) continue;
      has_d2c |= g.phase == Phase::kD2C;
      has_i2d |= g.phase == Phase::kI2D;
    }
    if (has_d2c && !has_i2d) {
      // Without inserts, the time a request waited before the driver took it shows only from
      // the bio's submission on (Q2D).
      std::string queueing;
      if (d.no_insert_reason == NoInsertReason::kNoInsertOnDevice) {
        queueing = c.recorded[static_cast<int>(BlockEventKind::kBioQueue)]
                       ? "; queueing then shows only in Q2D (bio queued -> issue)"
                       : "; queueing is then only visible as Q2D, through -e block:block_bio_queue";
      }
      r.notes.push_back(absl::StrFormat("%s (%s): no I2D/I2C: %s%s", d.device, DevString(d.dev),
                                        NoInsertReasonText(d.no_insert_reason), queueing));
    } else if (d.issues_without_insert != 0) {
      r.notes.push_back(absl::StrFormat(
          "%s (%s): %s issued without an insert (D2C only): %s", d.device, DevString(d.dev),
          Plural(d.issues_without_insert, "request"), NoInsertReasonText(d.no_insert_reason)));
    }
  }
  if (!c.recorded[static_cast<int>(BlockEventKind::kBioQueue)]) {
    r.notes.push_back(
        "no Q2D/Q2C: block_bio_queue was not recorded; record with -e block:block_bio_queue to "
        "see them");
  }
  std::vector<std::string> parts;
  for (const auto& [name, count] : reader_stats.problems) {
    if (name == "duplicate_record") {
      // Dropped whole: what is left is what the kernel produced, so nothing is incomplete.
      r.notes.push_back(absl::StrFormat(
          "%s twice in the file, byte for byte (perf record writes some samples "
          "again in its next drain of the same CPU's ring): %s used once",
          count == 1 ? "1 record appears" : absl::StrFormat("%u records appear", count),
          count == 1 ? "it was" : "each was"));
    } else {
      parts.push_back(absl::StrFormat("%s %u", name, count));
    }
  }
  if (!parts.empty()) {
    r.notes.push_back(absl::StrFormat("the reader met problems in the file (%s); pairing may be "
                                      "affected",
                                      absl::StrJoin(parts, ", ")));
  }
  for (const std::string& f : c.format_problems) {
    r.notes.push_back(absl::StrFormat("unusable event format: %s", f));
  }
  if (c.late_interval_samples != 0) {
    r.notes.push_back(
        absl::StrFormat("%s after %s interval closed and %s counted in a later one",
                        c.late_interval_samples == 1
                            ? "1 sample arrived"
                            : absl::StrFormat("%u samples arrived", c.late_interval_samples),
                        c.late_interval_samples == 1 ? "its" : "their",
                        c.late_interval_samples == 1 ? "was" : "were"));
  }
  AddFixNotes(c, options_, &r.notes);
  return r;
}

namespace {

ReadStats AddReadStats(const ReadStats& a, const ReadStats& b) {
  ReadStats sum = b;
  sum.records += a.records;
  sum.events += a.events;
  sum.coverage.Merge(a.coverage);
  for (const auto& [name, count] : a.problems) sum.AddProblem(name, count);
  return sum;
}

// The time ranges of a split read: the earlier one up to the cut, the later one primed for
// half a span before it (a span: 1/64 of the file's, at least 20 ms, at most the matcher's
// expiry and a second: an entry idle longer is gone from the earlier matcher too) and counted
// from the cut; and the rest of the file from the cut, for the earlier builder to read on when
// the later matcher did not start in its state.
struct SplitPlan {
  uint64_t cut = 0;
  TimeRange first, second, rest;
};

std::optional<SplitPlan> PlanSplit(TraceReader& reader, const ReportOptions& options,
                                   std::string* why_not) {
  const bool windowed =
      options.since_s.has_value() || options.until_s.has_value() || options.interval_s != 0;
  if (options.threads != 0 || options.split_min_bytes == 0 || windowed || options.events ||
      !options.assume_gaps.empty()) {
    *why_not = "one pass";
    return std::nullopt;
  }
  if (UsableCpus() < 2 && !options.split_on_one_cpu) {
    *why_not = "one pass: one CPU";
    return std::nullopt;
  }
  const std::optional<TraceTimeSpan> span = reader.TimeSpan();
  if (!span.has_value()) {
    *why_not = "one pass: the reader cannot read time ranges";
    return std::nullopt;
  }
  if (span->data_bytes < options.split_min_bytes) {
    *why_not = "one pass: a small file";
    return std::nullopt;
  }
  if (!(span->first_ts < span->middle_ts && span->middle_ts < span->last_ts)) {
    *why_not = "one pass: no time to cut at";
    return std::nullopt;
  }
  const uint64_t max_prime = SecondsToNs(options.expiry_s) + 1'000'000'000;
  const uint64_t prime =
      std::clamp<uint64_t>((span->last_ts - span->first_ts) / 64, 20'000'000, max_prime);
  if (span->last_ts - span->middle_ts <= prime) {
    *why_not = "one pass: no time to cut at";
    return std::nullopt;
  }
  SplitPlan plan;
  // Half a span of priming. Where the later range may start anywhere, the cut lies a quarter
  // span after the middle, so that both threads read as much; else (perf.data) the priming
  // starts half a span after it, and the cut a whole span.
  plan.cut = span->middle_ts + (span->starts_anywhere ? prime / 4 : prime);
  plan.first.end_ts = plan.cut;
  plan.first.end_position = span->split_position;
  plan.second.start_ts = plan.cut - std::min(plan.cut, prime / 2);
  plan.second.count_from_ts = plan.cut;
  plan.second.start_position = span->split_position;
  plan.rest = plan.second;
  plan.rest.start_ts = plan.cut;
  return plan;
}

LatencyReport FinishReport(LatencyReportBuilder& builder, const TraceReader& reader,
                           const ReadStats& stats, const ReportOptions& options) {
  LatencyReport report = builder.Finish(stats);
  report.input = options.input;
  report.file_format = std::string(reader.FileFormat());
  report.formats_source = reader.FormatsSource();
  report.formats_warning = reader.FormatsWarning();
  report.nr_cpus = reader.nr_cpus();
  return report;
}

// Reads the file as two time ranges on two threads (see ReportOptions::split_min_bytes). nullopt
// when that cannot stand for one pass (`why_not` says why): the caller reads it in one pass.
std::optional<absl::StatusOr<LatencyReport>> BuildSplit(TraceReader& reader,
                                                        const ReportOptions& options,
                                                        std::string* why_not) {
  const std::optional<SplitPlan> plan = PlanSplit(reader, options, why_not);
  if (!plan.has_value()) return std::nullopt;
  ReportOptions each = options;
  each.threads = 1;
  auto early = LatencyReportBuilder::Create(reader.formats(), each);
  if (!early.ok()) return early.status();
  auto late = LatencyReportBuilder::Create(reader.formats(), each);
  if (!late.ok()) return late.status();
  LatencyReportBuilder& a = **early;
  LatencyReportBuilder& b = **late;
  b.HoldUntil(plan->cut, /*prime=*/true);
  reader.set_read_ahead(false);  // two threads already; read-ahead on top measured no gain
  RangeReadResult ra, rb;
  absl::Status sb;
  std::thread later([&] { sb = reader.ReadRange(&b, plan->second, &rb); });
  absl::Status sa = reader.ReadRange(&a, plan->first, &ra);
  later.join();
  if (!sa.ok() || !sb.ok()) {
    *why_not = "one pass: a range could not be read";
    return std::nullopt;
  }
  // (Records out of order are the readers' to find: every record they pass is compared with
  // the one before it.)
  std::string unfit = reader.RangesUnfit(plan->first, ra, rb);
  if (unfit.empty() && !(ra.stats.coverage.complete() && rb.stats.coverage.complete())) {
    unfit = "gaps in the data";
  }
  if (!unfit.empty()) {
    *why_not = "one pass: " + unfit;
    return std::nullopt;
  }
  size_t older = 0;
  if (b.StartedWhereEnded(a, plan->second.start_ts, &older)) {
    a.Absorb(b);
    LatencyReport report = FinishReport(a, reader, AddReadStats(ra.stats, rb.stats), options);
    report.read_plan = older == 0 ? "two ranges"
                                  : absl::StrFormat("two ranges, %u older requests carried over",
                                                    older);
    return report;
  }
  // The later matcher did not start where the earlier one ended (but for older requests it can
  // account for, RequestMatcher::Resolve): the earlier builder reads on from the cut.
  a.HoldUntil(plan->cut, /*prime=*/false);
  RangeReadResult rc;
  if (!reader.ReadRange(&a, plan->rest, &rc).ok() ||
      !reader.RangesUnfit(plan->first, ra, rc).empty() || !rc.stats.coverage.complete()) {
    *why_not = "one pass: the first range could not read on";
    return std::nullopt;
  }
  LatencyReport report = FinishReport(a, reader, AddReadStats(ra.stats, rc.stats), options);
  report.read_plan = "two ranges, the first read on";
  return report;
}

}  // namespace

absl::StatusOr<LatencyReport> BuildLatencyReport(TraceReader& reader,
                                                 const ReportOptions& options) {
  IOTRACE_RETURN_IF_ERROR(ValidateReportOptions(options));
  std::string plan;
  if (auto split = BuildSplit(reader, options, &plan); split.has_value()) return *split;
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
