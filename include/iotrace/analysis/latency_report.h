// LatencyReportBuilder, the EventSink that runs decode -> match -> filter -> histograms (+ per
// interval) and accounts for every lost event, into the LatencyReport model of report.h; and
// BuildLatencyReport, which reads a whole file through it (two time ranges where that pays).
#ifndef IOTRACE_ANALYSIS_LATENCY_REPORT_H_
#define IOTRACE_ANALYSIS_LATENCY_REPORT_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/analysis/breakdown.h"
#include "iotrace/analysis/histogram.h"
#include "iotrace/analysis/pairing_placement.h"
#include "iotrace/analysis/report.h"
#include "iotrace/analysis/request_matcher.h"
#include "iotrace/base/arena.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/pointer_index.h"
#include "iotrace/base/spsc_queue.h"
#include "iotrace/event/block_event.h"
#include "iotrace/formats/coverage.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/sys/device_names.h"

namespace iotrace {

struct LossTally;  // the builder's own (src/analysis/report_steps.h)
class CountsBlock;  // (src/analysis/report_steps.h)

// Sees every sample the builder puts into its histograms, after the filters, with the phases of
// it that went in (`iotrace live`'s intervals, LiveWindow).
class SampleTap {
 public:
  virtual ~SampleTap() = default;
  virtual void OnSample(const RequestSample& sample, unsigned phases) = 0;
};

// Turns the events of one file into a LatencyReport. Feed it through TraceReader::ReadAll (it
// is the EventSink), then call Finish once.
class LatencyReportBuilder : public EventSink, private RequestSampleSink {
 public:
  // Fails when the formats hold no block request event at all. `options` are taken as valid
  // (ValidateReportOptions, which the command line and BuildLatencyReport run).
  static absl::StatusOr<std::unique_ptr<LatencyReportBuilder>> Create(
      const std::vector<EventFormat>& formats, const ReportOptions& options);
  ~LatencyReportBuilder() override;

  // Every decoded block event is also handed to `sink` (e.g. a per-event dump); may be null.
  void set_block_event_sink(BlockEventSink* sink) {
    block_sink_ = sink;
    if (sink != nullptr) decoder_.set_decode_comm(true);  // the sink may look at it
  }

  // Every sample recorded is also shown to `tap` (not owned; live's interval window, its
  // metrics), after the taps added before it; the names of processes are decoded for them.
  void add_sample_tap(SampleTap* tap) {
    RecordPending();  // what came before it is not the tap's
    taps_.push_back(tap);
    decoder_.set_decode_comm(true);
  }

  void OnEvent(const RawEvent& event) override;
  void OnLoss(const LossRecord& loss) override;

  // Keeps a sample only where no gap of `coverage` lies within it (a second pass over a file
  // whose first pass found gaps: BuildLatencyReport). Call before the first event.
  void set_coverage(const Coverage& coverage);

  // Feeds every event of `reader` through the builder (reader.ReadAll(this)), with the threads
  // options.threads asks for (see ReportOptions::threads).
  absl::Status ReadAll(TraceReader& reader);
  // Feeds the events of `range` through the builder (reader.ReadRange(this, ...): one of the two
  // time ranges of BuildLatencyReport), on the caller's thread.
  absl::Status ReadRange(TraceReader& reader, const TimeRange& range, RangeReadResult* out);

  LatencyReport Finish(const ReadStats& reader_stats);

  // Reading one file as two time ranges (BuildLatencyReport). The builder of the later range:
  // events before `cut_ts` only prime its matcher (no samples, and its counters at the cut are
  // kept to be taken off again). skip: events before `cut_ts` are ignored altogether (a builder
  // that read up to the cut and reads on from there).
  void HoldUntil(uint64_t cut_ts, bool prime);
  // The builder of the later range, after both ranges were read: whether its matcher, at the
  // cut, was in the state `earlier`'s ended in, but for requests last active before
  // `primed_from` that none of its events touched; those it then takes in (RequestMatcher::
  // Adopt). *older: how many there were.
  bool StartedWhereEnded(const LatencyReportBuilder& earlier, uint64_t primed_from,
                         size_t* older);
  // The later range's builder, before it reads (after HoldUntil(cut, prime)): from `from_ts` to
  // the cut, counts the completions its matcher meets, and those of requests it never saw
  // issued. Where at the cut those are at least kMinUnseen and more than 1 in kUnseenShare, the
  // requests in flight outlive most of the priming (deep queues): the later matcher is then most
  // likely not in the state the earlier one ends in (a request in flight at the cut that began
  // before the priming is enough), so the builder asks its read to stop there (priming_short),
  // and BuildSplit stops the earlier range too and leaves the file to one pass. (Requests that
  // live between 3/4 of the priming and all of it also stop the split, where two ranges would
  // have fitted: the report is the same, only slower.)
  void ProbePriming(uint64_t from_ts);
  bool priming_short() const { return priming_short_; }
  // The probe's completions, and of them those of requests not seen issued.
  std::pair<uint64_t, uint64_t> priming_probe() const { return {probe_completes_, probe_unseen_}; }
  static constexpr uint64_t kMinUnseen = 16;
  static constexpr uint64_t kUnseenShare = 100;
  // Adds `later`'s counted part (everything from its cut on) to this builder, which read every
  // event before that cut: counters, histograms, losses, and the matcher, which takes over.
  void Absorb(LatencyReportBuilder& later);

  const BlockDecoder& decoder() const { return decoder_; }
  // Auto's placement decisions, after ReadAll (nullptr when the threads were fixed).
  const PairingPlacement* placement() const {
    return placement_.has_value() ? &*placement_ : nullptr;
  }
  const RequestMatcher& matcher() const { return *matcher_; }
  // --by ioprio on events without the field (before 6.11): every class is "-".
  bool ioprio_absent() const { return breakdown_.ioprio_absent(); }

 private:
  struct Group {
    explicit Group(HistogramArena& arena) : total(arena) {}
    // First: the part of a group every sample touches is the first line of its histogram.
    Histogram total;
    uint32_t dev = 0;
    uint32_t klass = 0;  // --by's class (ClassOf), 0 without --by
    BlockOp op{};
    Phase phase{};
    uint64_t outside_coverage = 0;
    // Time series with coverage: the intervals in which a sample of this group was left out
    // (by the end of the sample, as samples are put in intervals).
    absl::flat_hash_map<uint64_t, uint64_t> outside_by_interval;
    std::unique_ptr<Histogram> current;  // the open interval (time series only)
    uint64_t current_index = 0;
    std::vector<LatencyInterval> closed;  // one group each
  };
  // A device's (with --by: a device x class's) groups.
  struct DeviceSlot {
    uint64_t key = 0;  // SlotKey
    uint32_t dev = 0;
    uint32_t klass = 0;
    bool allowed = true;
    std::array<std::array<Group*, kPhaseCount>, kBlockOpCount> groups{};
    uint64_t requests = 0;  // before filters; counted only when a filter is given
  };

  // Decoded events on their way from the reading thread to the pairing one. 1 MiB a batch: the
  // pairing thread, faster than the reader, sleeps between batches, and each wake-up costs both
  // CPUs microseconds (8192 events a batch measured ~3% slower on perf.data).
  struct EventBatch {
    static constexpr size_t kCapacity = 16384;
    size_t size = 0;
    BlockEvent* events = nullptr;  // kCapacity events in batch_storage_, given at first use
  };
  // Where the queue's batches keep their events: raw memory in huge pages (MapHugeAnonymous),
  // in which each decoded event is stored (StreamStore64) before it is read (BlockEvent is an
  // implicit-lifetime type). Value-initialized batches in 4 KiB pages cost every threaded
  // report 10-20 ms on this VM, zeroing 4 MiB and faulting its pages in, even when a small file
  // filled a sliver of one.
  static constexpr size_t kQueueBatches = 4;
  // The queue's next free batch, with its storage (assigned the first time a slot comes round).
  EventBatch* BeginBatch();

  LatencyReportBuilder(const std::vector<EventFormat>& formats, const ReportOptions& options);
  void PublishBatch();
  // Auto: the current stretch of events is over; time it and go on in the placement chosen.
  void EndStretch();
  void OnRequestSample(const RequestSample& sample) override;
  void OnUnpairedEvent(uint64_t ts) override;
  // The slot of a device, with --by of a device x class: dev | class << 32.
  uint64_t SlotKey(const RequestSample& s) {
    if (!breakdown_.active()) [[likely]] return s.dev;
    return s.dev | uint64_t{breakdown_.ClassOf(s)} << 32;
  }
  DeviceSlot& SlotFor(uint64_t key) {
    // Samples of one device come in long stretches: remember the last one (its key here, so
    // that a sample of another device does not read the last one's slot to find out).
    if (last_slot_ != nullptr && last_slot_key_ == key) return *last_slot_;
    DeviceSlot* found = slot_index_.Find(key);
    last_slot_ = found != nullptr ? found : &NewSlot(key);
    last_slot_key_ = key;
    return *last_slot_;
  }
  // The slot of a device (x class) not seen before.
  DeviceSlot& NewSlot(uint64_t key);
  // A model group of `g` (its by label set; the device name left to the caller).
  LatencyGroup GroupOf(const Histogram& h, const Group& g, const std::string& device,
                       CountsBlock* block = nullptr) const;
  Group* GroupFor(DeviceSlot& slot, BlockOp op, Phase phase);
  // ReportOptions::max_interval_groups passed: the intervals kept so far go, and no more are
  // made (interval_ns_ 0 from here on).
  void DropIntervals();
  void CloseInterval(Group* g);
  // Counts what the filters remove (filtering_ only); true when `s` passes all of them.
  bool PassesFilters(DeviceSlot& slot, const RequestSample& s);
  // Whether the process that inserted or issued `s` is one of --comm / of --pid (true when not
  // given); `mark`: remember which values matched.
  bool MatchesComm(const RequestSample& s, bool mark);
  bool MatchesPid(const RequestSample& s, bool mark);
  // Within ReadAll and ReadRange, with many devices and nobody else looking at the events or
  // the matcher as they go (no block event sink, sample taps or coverage), events reach the
  // matcher kEventLag events after they were decoded, so that the line of the device each one
  // counts itself in is asked for ahead (RequestMatcher::Prefetch): with a thousand devices
  // interleaving, waiting for it was a third of the matcher's time. FlushEvents hands over
  // what is held; everything that reads the matcher calls it first.
  static constexpr size_t kEventLag = 8;
  static constexpr size_t kLagFromDevices = 64;
  // The devices are counted every kLagRecheck events, not for each one: at one device the
  // count's loads were ~4% more instructions an event.
  static constexpr uint32_t kLagRecheck = 4096;
  // Only while this thread pairs (no batch: with one, the pairing thread owns the matcher, and
  // the lag is not used).
  void RecheckLag() {
    lag_recheck_ = kLagRecheck;
    if (batch_ == nullptr) lag_on_ = matcher_->device_count() >= kLagFromDevices;
  }
  void FlushEvents() {
    for (; lag_out_ != lag_in_; ++lag_out_) matcher_->OnEvent(lag_[lag_out_ % kEventLag]);
  }
  // Runs `read` with the event lag allowed where it may be, and flushed at the end.
  template <typename Read>
  absl::Status WithEventLag(Read read);

  // Finish's steps, in order: the histograms (whole run and intervals) and the coverage; the
  // completeness counts (returns the losses by event, for the warnings); then the warnings
  // (report_notes.cc) and the notes, which say what is absent and why.
  void FinishHistograms(const ReadStats& reader_stats, LatencyReport& r);
  LossTally FinishCompleteness(const ReadStats& reader_stats, LatencyReport& r);
  void AddNotes(const ReadStats& reader_stats, LatencyReport& r);
  // AddNotes: filter values that match nothing, and what the filters removed when nothing is
  // left.
  void ExplainFilters(LatencyReport& r);
  // At the first event after the cut of HoldUntil.
  void PassCut();
  void AddLoss(LossRecord::Kind kind, int32_t cpu, int32_t event_id, uint64_t count,
               uint64_t placed);
  // The samples of `s` that cross a gap of the coverage: counted and taken out of `phases`.
  unsigned DropOutsideCoverage(const RequestSample& s, DeviceSlot& slot, unsigned phases);
  // OnRequestSample with coverage set; both end in Record (filters, histograms, intervals).
  void OnRequestSampleCovered(const RequestSample& s);
  [[gnu::always_inline]] inline void Record(const RequestSample& s, unsigned phases);

  // The report's samples (no window, intervals, taps or coverage) go into the histograms a few
  // samples after they come, so that the memory each one writes is asked for ahead: its slot's
  // groups, their histograms' first lines, then the lines of counts. With a thousand devices
  // x ops x phases, each of those was a cache miss waited for in turn, three a phase (bench/
  // README.md, "report at scale"). A sample passes kSampleStages stages, kSampleStep samples
  // apart; it is in the histograms kSampleStages x kSampleStep samples after it came, or at
  // RecordPending, which everything that reads the groups calls first. Only from
  // kDeferFromGroups groups on: the stages cost ~200 instructions a sample, more than the
  // misses of a few devices' groups, which the cache holds (1 device: +10% instructions).
  struct PendingSample {
    DeviceSlot* slot;
    std::array<Group*, kPhaseCount> groups;  // of the set phases, from the groups stage on
    std::array<uint64_t, kPhaseCount> latency;
    uint8_t phases;
    BlockOp op;
  };
  static constexpr size_t kDeferFromGroups = 256;
  // From this many rows (groups shown) on, with a second CPU, Finish makes the later half of the
  // rows (their buckets) on a second thread.
  static constexpr size_t kTwoThreadGroups = 512;
  static constexpr uint64_t kSampleStep = 4;
  static constexpr uint64_t kSampleStages = 3;  // groups, buckets, record
  static constexpr size_t kPendingSamples = 16;  // a power of two above kSampleStages x step
  static_assert(kPendingSamples > kSampleStages * kSampleStep);
  void Defer(DeviceSlot& slot, const RequestSample& s, unsigned phases);
  // The stages: the sample's groups found (made when new, in the order samples came), then the
  // lines of their counts asked for, then the sample recorded.
  void FindGroups(PendingSample& p);
  static void PrefetchBuckets(const PendingSample& p);
  static void RecordSample(const PendingSample& p);
  // Records every sample still pending.
  void RecordPending();
  void FinishCoverage(const ReadStats& reader_stats, LatencyReport* r) const;

  // Samples of the events before the cut of HoldUntil(prime) go nowhere.
  class NullSampleSink : public RequestSampleSink {
   public:
    void OnRequestSample(const RequestSample&) override {}
  };
  struct Cut {
    RequestMatcher::State state;
    RequestMatcher::Counts counts;
    DecodeStats decode;
  };

  // With pairing on a thread of its own (threads 3, auto), the members below fall into three
  // groups: set up before the run and only read during it; written by the reading thread for
  // every event; read or written by whichever thread pairs, for every event or sample (under
  // auto the reading thread too, in its stretches, while the pairing thread waits). The last two
  // groups start on cache lines of their own, so that neither thread's writes evict lines the
  // other reads all the time (false sharing).
  ReportOptions options_;
  DeviceNames names_;
  BlockEventSink* block_sink_ = nullptr;
  std::vector<SampleTap*> taps_;
  std::vector<std::pair<uint32_t, std::string>> format_names_;  // id -> "system:name"

  // Reading thread.
  alignas(64) BlockDecoder decoder_;
  BlockEvent event_;  // decoded in place, reused
  // The event lag: events [lag_out_, lag_in_) are decoded, not yet matched.
  bool lag_allowed_ = false;  // within ReadAll or ReadRange, with nobody else looking
  bool lag_on_ = false;       // and enough devices
  uint32_t lag_recheck_ = 0;  // events until the devices are counted again
  uint64_t lag_in_ = 0;
  uint64_t lag_out_ = 0;
  std::array<BlockEvent, kEventLag> lag_{};
  bool started_ = false;
  uint64_t first_ts_ = 0;  // also read by the pairing thread once set (before the first batch)
  uint64_t last_ts_ = 0;
  // HoldUntil: events before cut_ts_ are held back (before_cut_), priming the matcher or not.
  bool before_cut_ = false;
  bool prime_ = false;
  uint64_t cut_ts_ = 0;
  NullSampleSink null_sink_;
  // ProbePriming: where its count starts (~0: not asked, or started), and the counts, first at
  // that start, then from there to the cut.
  uint64_t probe_ts_ = ~uint64_t{0};
  bool probe_started_ = false;
  uint64_t probe_completes_ = 0;
  uint64_t probe_unseen_ = 0;
  bool priming_short_ = false;
  void StartProbe();
  void EndProbe();
  std::unique_ptr<Cut> cut_;  // taken at the first event after the cut (HoldUntil(prime))
  // While ReadAll pairs on a thread of its own: the queue to the pairing thread and the batch
  // that OnEvent decodes into (nullptr otherwise).
  SpscQueue<EventBatch>* queue_ = nullptr;
  EventBatch* batch_ = nullptr;
  UniqueMapping batch_storage_;
  size_t batches_given_ = 0;
  // Auto: where pairing runs now (batch_ != nullptr: apart), events left in this stretch, and
  // when it started (the end of the stretch before).
  std::optional<PairingPlacement> placement_;
  uint64_t stretch_left_ = 0;
  uint64_t stretch_start_ns_ = 0;

  // Pairing thread (since_ns_ and until_ns_ are set by the reading thread at the first event,
  // before the first batch is published).
  alignas(64) std::unique_ptr<RequestMatcher> matcher_;
  Breakdown breakdown_;  // --by
  bool process_filter_ = false;  // --comm or --pid given
  bool filtering_ = false;       // --dev, --op, --comm or --pid given
  DeviceSlot* last_slot_ = nullptr;
  uint64_t last_slot_key_ = 0;
  uint32_t op_mask_ = 0;
  // The longest D2C of any paired request, filtered out or not: Finish's yardstick for stale
  // requests (the filters must not change what counts as one).
  uint64_t longest_d2c_ = 0;
  uint64_t since_ns_ = 0;
  uint64_t until_ns_ = ~uint64_t{0};
  uint64_t interval_ns_ = 0;
  bool intervals_dropped_ = false;
  size_t shown_groups_ = 0;  // groups of the phases --phases keeps (all without it)
  // --since, --until or --interval given: samples are looked at against the window and put
  // into intervals; without them (the usual report) into the totals alone.
  bool windowed_ = false;
  // set_coverage: the gaps a sample must not cross (nullptr: the file has none, or no second
  // pass), and the samples left out by phase and cause.
  std::unique_ptr<CoverageFilter> coverage_;
  // The next end of a gap the events have not passed yet (~0: none): there the matcher gives up
  // the flushes in flight (RequestMatcher::DropFlushes).
  uint64_t next_gap_end_ = ~uint64_t{0};
  bool slow_path_ = false;  // before_cut_, or a gap end ahead: OnEvent looks at both
  size_t gap_ends_passed_ = 0;
  void PassGapEnds(uint64_t ts);
  std::array<std::array<uint64_t, kGapCauseCount>, kPhaseCount> outside_coverage_{};

  // Defer: samples [pending_from_, pending_pushed_) are not recorded yet.
  std::array<PendingSample, kPendingSamples> pending_{};
  uint64_t pending_pushed_ = 0;
  uint64_t pending_from_ = 0;

  // The groups' whole-run histograms (before groups_: it outlives them).
  HistogramArena arena_;
  ArenaPool<Group> group_pool_;  // (before groups_: it outlives them)
  std::vector<ArenaPool<Group>::Ptr> groups_;
  ArenaPool<DeviceSlot> slot_pool_;  // (before slots_: it outlives them)
  std::vector<ArenaPool<DeviceSlot>::Ptr> slots_;
  PointerIndex<DeviceSlot> slot_index_;  // slots_ by key

  static constexpr size_t kMaxLossRows = 4096;
  std::vector<LossSummary> losses_;
  absl::flat_hash_map<std::tuple<LossRecord::Kind, int32_t, int32_t>, uint32_t> loss_index_;
  Completeness counters_;  // filter and interval counters, filled during the run
  // With intervals: unpaired events per interval index (rare: a map).
  std::map<uint64_t, uint64_t> unpaired_by_interval_;
  // With a filter given: requests per op before filters, and which --comm / --pid values
  // matched a request.
  std::array<uint64_t, kBlockOpCount> requests_by_op_{};
  std::vector<char> comm_hit_;
  std::vector<char> pid_hit_;
};

// Reads the whole file through `reader` and builds the report. Invalid options are an
// InvalidArgument error (ValidateReportOptions).
absl::StatusOr<LatencyReport> BuildLatencyReport(TraceReader& reader,
                                                 const ReportOptions& options);


}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_LATENCY_REPORT_H_
