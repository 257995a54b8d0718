// The latency report: ReportOptions (what the CLI fills and tests build directly), the plain
// LatencyReport model that formatters print, and LatencyReportBuilder, the EventSink that runs
// decode -> match -> filter -> histograms (+ per interval) and accounts for every lost event.
#ifndef IOTRACE_ANALYSIS_LATENCY_REPORT_H_
#define IOTRACE_ANALYSIS_LATENCY_REPORT_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/analysis/histogram.h"
#include "iotrace/analysis/pairing_placement.h"
#include "iotrace/analysis/request_matcher.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/spsc_queue.h"
#include "iotrace/event/block_event.h"
#include "iotrace/formats/coverage.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/sys/device_names.h"

namespace iotrace {

enum class TimeUnit : uint8_t { kNs, kUs, kMs };
std::string_view TimeUnitName(TimeUnit unit);  // "ns", "us", "ms"
bool ParseTimeUnit(std::string_view name, TimeUnit* unit);

enum class OutputFormat : uint8_t { kText, kCsv, kJson };
std::string_view OutputFormatName(OutputFormat format);
bool ParseOutputFormat(std::string_view name, OutputFormat* format);

struct ReportOptions {
  std::string input = "iotrace.data";  // -i
  std::string output;                  // -o: main output file; empty = stdout
  OutputFormat format = OutputFormat::kText;
  std::string summary_csv;             // --summary-csv FILE; empty = none
  TimeUnit unit = TimeUnit::kUs;       // text output only; csv/json are always ns

  // Filters; an empty list means "all". A request passes --comm/--pid when the process that
  // inserted it or the one that issued it matches.
  std::vector<std::string> devices;  // "MAJ:MIN" or a name ("loop0", "/dev/loop0")
  std::vector<BlockOp> ops;
  std::vector<std::string> comms;
  std::vector<int32_t> pids;
  // Seconds from the first event in the file; a phase sample is kept when its end time lies
  // in [since, until].
  std::optional<double> since_s;
  std::optional<double> until_s;

  double interval_s = 0;  // > 0: a time series, one block per interval of this length

  // --events: instead of the latency report, one line per record in time order (every event
  // of the file, tracepoints and probes alike), as text, CSV or JSON lines (`format`).
  bool events = false;

  // Matcher bounds.
  double expiry_s = 30;
  size_t max_inflight = 131072;

  // Threads for building the report: 1 reads, decodes, pairs and counts on the calling thread;
  // 2 also lets the reader read the file ahead on a second thread (TraceReader::set_read_ahead);
  // 3 in addition reads and decodes on a thread other than the pairing one, which gets the
  // decoded events in batches. 0 (auto), when the process may run on two CPUs or more: a large
  // file as two time ranges (split_min_bytes, BuildLatencyReport), else reads ahead, and pairs
  // on the reading thread or apart, whichever measures faster while the report runs
  // (PairingPlacement); with a block event sink (--events), as 2; on one CPU, as 1. The report
  // is the same whatever the number.
  int threads = 0;
  // Auto's stretches, in events (0: PairingPlacement's defaults: probe (and warm-up), first
  // hold, longest hold), and auto even when one CPU is usable: tests make the stretches small
  // and run auto wherever they run.
  uint64_t placement_probe_events = 0;
  uint64_t placement_hold_events = 0;
  uint64_t placement_max_hold_events = 0;
  bool placement_on_one_cpu = false;
  // Auto (threads 0) on two CPUs or more reads a file whose event data holds at least this many
  // bytes as two time ranges, on two threads, each with its own matcher and histograms, and
  // adds up the two when the later range's matcher, primed on the events just before its range,
  // was in the state the earlier range's ended in (else the earlier one reads on; see
  // LatencyReport::read_plan). 0: never. Tests lower it, and split_on_one_cpu splits anyway.
  uint64_t split_min_bytes = uint64_t{32} << 20;
  bool split_on_one_cpu = false;

  // Gaps to assume besides those the file has (tests: another recording's gaps, to compare
  // what both files cover on the same clock).
  std::vector<DataGap> assume_gaps;

  // Where device names come from (tests point these at fixtures).
  std::string sysfs_root = "/sys";
  std::string procfs_root = "/proc";

  // --formats-from PATH: event formats for a perf.data that lost its own (cut short before its
  // feature sections): a perf.data or trace.dat recorded on the same kernel, or a tracefs tree.
  // Without it, such a file is read with the running kernel's formats when they match it; they
  // are read under `kernel_tracefs` ("": the mounted tracefs; tests point it at a fixture).
  std::string formats_from;
  std::string kernel_tracefs;
};

// Checks values and combinations (usage errors: InvalidArgument with a hint).
absl::Status ValidateReportOptions(const ReportOptions& options);

struct LatencySummary {
  uint64_t count = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  uint64_t sum_ns = 0;
  double mean_ns = 0;
  uint64_t p50_ns = 0;
  uint64_t p90_ns = 0;
  uint64_t p99_ns = 0;
  uint64_t p999_ns = 0;
};

struct LatencyBucket {
  uint64_t lo_ns = 0;  // inclusive
  uint64_t hi_ns = 0;  // exclusive
  uint64_t count = 0;
};

// One histogram: a device x op x phase (in the whole file, or in one interval).
struct LatencyGroup {
  uint32_t dev = 0;
  std::string device;  // name, or "MAJ:MIN" when unknown
  BlockOp op = BlockOp::kOther;
  Phase phase = Phase::kD2C;
  LatencySummary summary;
  std::vector<LatencyBucket> buckets;  // non-empty buckets, increasing
  bool incomplete = false;             // its phase has a warning (inputs were lost)
  // The file's data does not cover the whole recording on every CPU (see CoverageReport): the
  // histogram holds only the requests wholly inside what is covered, and `outside_coverage` of
  // this device x op x phase were left out.
  bool partial = false;
  uint64_t outside_coverage = 0;
};

struct LatencyInterval {
  uint64_t index = 0;
  double start_s = 0;  // seconds from the first event
  std::vector<LatencyGroup> groups;
};

// Losses of one kind, on one CPU, of one event, as the file reports them.
struct LossSummary {
  LossRecord::Kind kind = LossRecord::Kind::kRingLost;
  int32_t cpu = -1;
  int32_t event_id = -1;
  std::string event;  // "block:block_rq_complete", or "unknown"
  uint64_t count = 0;
  uint64_t placed = 0;  // of count, placed in time by the reader (a gap of the coverage)
};
std::string_view LossKindName(LossRecord::Kind kind);  // "ring_lost", "silent_drop", ...

struct DeviceSummary {
  uint32_t dev = 0;
  std::string device;
  std::array<uint64_t, kBlockEventKindCount> events{};
  uint64_t issues_without_insert = 0;
  NoInsertReason no_insert_reason = NoInsertReason::kInsertMissing;
};

// What each filter removed. A request is counted once, at its final completion (the sample that
// ends D2C, I2C and Q2C), under the first filter that removes it in the order dev, op, comm,
// pid; --since and --until count phase samples, by whether they ended before or after the
// window.
struct FilterCounts {
  uint64_t dev = 0;
  uint64_t op = 0;
  uint64_t comm = 0;
  uint64_t pid = 0;
  uint64_t since = 0;
  uint64_t until = 0;
};

struct Completeness {
  std::array<uint64_t, kBlockEventKindCount> events{};  // decoded, per type
  std::array<bool, kBlockEventKindCount> recorded{};    // the file has the event's format
  uint64_t other_events = 0;                            // records that are not block events
  MatchStats match;
  std::vector<LossSummary> losses;
  std::array<uint64_t, kBlockEventKindCount> lost{};  // losses of a known block event
  uint64_t lost_unknown = 0;                          // losses of unknown events (affect all)
  uint64_t reader_records = 0;
  uint64_t reader_events = 0;
  std::vector<std::pair<std::string, uint64_t>> reader_problems;
  DecodeStats decode;
  std::vector<std::string> format_problems;
  std::vector<DeviceSummary> devices;
  uint64_t samples_filtered = 0;       // request samples removed by --dev/--op/--comm/--pid
  uint64_t phases_outside_window = 0;  // phase samples removed by --since/--until
  uint64_t late_interval_samples = 0;  // samples older than their group's current interval
  FilterCounts filtered;               // samples_filtered and phases_outside_window, per filter
};

// One CPU's data in the file, as far as coverage goes.
struct CpuCoverage {
  int32_t cpu = 0;
  uint64_t records = 0;
  uint64_t first_ts_ns = 0;  // its first and last records (trace clock; 0 without records)
  uint64_t last_ts_ns = 0;
  bool ends_early = false;   // its data ends before the recording did (a gap with an open end)
  GapCause end_cause = GapCause::kCut;
  uint64_t gaps = 0;         // gaps inside its data
};

// What the report's histograms stand for: the window of time that every CPU's data covers,
// less the gaps inside it. A phase sample (a request's start to its end) is in a histogram only
// when it lies wholly in that window and crosses no gap; the others are counted in `outside`.
struct CoverageReport {
  bool complete = true;       // no gap at all: the whole recording, on every CPU
  bool has_window = true;     // some time is covered by every CPU's data
  uint64_t window_start_ns = 0;
  uint64_t window_end_ns = 0;
  std::vector<CpuCoverage> cpus;  // CPUs with records or gaps, by number
  static constexpr size_t kMaxListedGaps = 64;
  std::vector<DataGap> gaps;  // gaps inside the data (not the open ends), by time; at most
                              // kMaxListedGaps
  uint64_t gap_count = 0;     // all of them
  // Phase samples left out, by phase and by the cause of the gap they crossed.
  std::array<std::array<uint64_t, kGapCauseCount>, kPhaseCount> outside{};
  uint64_t outside_total() const {
    uint64_t n = 0;
    for (const auto& by_cause : outside) {
      for (uint64_t v : by_cause) n += v;
    }
    return n;
  }
};

struct PhaseWarning {
  Phase phase = Phase::kD2C;
  std::string message;
};

struct LatencyReport {
  static constexpr int kSchemaVersion = 1;

  std::string input;
  std::string file_format;  // "perf.data", "trace.dat"
  // Where the event formats came from (TraceReader::FormatsSource): "file", "running kernel" or
  // the --formats-from path; and the warning that says so when not "file".
  std::string formats_source = "file";
  std::string formats_warning;
  int nr_cpus = 0;
  uint64_t first_ts_ns = 0;  // trace clock
  uint64_t last_ts_ns = 0;
  double interval_s = 0;
  std::vector<std::pair<std::string, std::string>> filters;  // ("dev", "loop0"), ...
  double expiry_s = 0;
  size_t max_inflight = 0;

  std::vector<LatencyGroup> groups;  // sorted by dev, op, phase
  std::vector<LatencyInterval> intervals;  // only with interval_s > 0, increasing
  Completeness completeness;
  std::vector<PhaseWarning> warnings;  // inputs of a phase were incomplete
  std::vector<std::string> notes;      // absent phases and why, reader problems, ...
  CoverageReport coverage;

  double duration_s() const { return (last_ts_ns - first_ts_ns) / 1e9; }

  // How the file was read (not printed; the report is the same either way): "one pass", "two
  // ranges", "two ranges, N older requests carried over" (requests the later range's matcher
  // never saw and none of its events touched, taken in), "two ranges, the first read on" (the
  // later range's matcher did not start in the state the earlier one ended in), or "one pass:
  // <why the two ranges were not used>".
  std::string read_plan;

  // Filter values that match nothing in the file, one message per filter, --dev first ("--dev
  // sdz matches no device in FILE; it holds loop0 (7:0), loop1 (7:1)", "--op discard matches no
  // request in FILE (it holds read 600, write 634)"); also among the notes, and the runner
  // prints them on stderr. devices_unmatched: the --dev values that name no device of the file
  // (when that is every one, the runner fails with the first message).
  std::vector<std::string> filter_warnings;
  std::vector<std::string> devices_unmatched;
  // When there are no groups because the filters removed every sample: what each removed
  // ("--op discard removed all 1234 requests (the file holds read 600, write 634)"); else empty.
  std::string empty_reason;
};

// Turns the events of one file into a LatencyReport. Feed it through TraceReader::ReadAll (it
// is the EventSink), then call Finish once.
class LatencyReportBuilder : public EventSink, private RequestSampleSink {
 public:
  // Fails when the formats hold no block request event at all.
  static absl::StatusOr<std::unique_ptr<LatencyReportBuilder>> Create(
      const std::vector<EventFormat>& formats, const ReportOptions& options);
  ~LatencyReportBuilder() override;

  // Every decoded block event is also handed to `sink` (e.g. a per-event dump); may be null.
  void set_block_event_sink(BlockEventSink* sink) {
    block_sink_ = sink;
    if (sink != nullptr) decoder_.set_decode_comm(true);  // the sink may look at it
  }

  void OnEvent(const RawEvent& event) override;
  void OnLoss(const LossRecord& loss) override;

  // Keeps a sample only where no gap of `coverage` lies within it (a second pass over a file
  // whose first pass found gaps: BuildLatencyReport). Call before the first event.
  void set_coverage(const Coverage& coverage);

  // Feeds every event of `reader` through the builder (reader.ReadAll(this)), with the threads
  // options.threads asks for (see ReportOptions::threads).
  absl::Status ReadAll(TraceReader& reader);

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
  // Adds `later`'s counted part (everything from its cut on) to this builder, which read every
  // event before that cut: counters, histograms, losses, and the matcher, which takes over.
  void Absorb(LatencyReportBuilder& later);

  const BlockDecoder& decoder() const { return decoder_; }
  // Auto's placement decisions, after ReadAll (nullptr when the threads were fixed).
  const PairingPlacement* placement() const {
    return placement_.has_value() ? &*placement_ : nullptr;
  }
  const RequestMatcher& matcher() const { return *matcher_; }

 private:
  struct Group {
    uint32_t dev;
    BlockOp op;
    Phase phase;
    Histogram total;
    uint64_t outside_coverage = 0;
    // Time series with coverage: the intervals in which a sample of this group was left out
    // (by the end of the sample, as samples are put in intervals).
    absl::flat_hash_map<uint64_t, uint64_t> outside_by_interval;
    std::unique_ptr<Histogram> current;  // the open interval (time series only)
    uint64_t current_index = 0;
    std::vector<LatencyInterval> closed;  // one group each
  };
  struct DeviceSlot {
    uint32_t dev = 0;
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
  DeviceSlot& SlotFor(uint32_t dev) {
    // Samples of one device come in long stretches: remember the last one.
    if (last_slot_ != nullptr && last_slot_->dev == dev) return *last_slot_;
    last_slot_ = &SlotForSlow(dev);
    return *last_slot_;
  }
  DeviceSlot& SlotForSlow(uint32_t dev);
  Group* GroupFor(DeviceSlot& slot, BlockOp op, Phase phase);
  void CloseInterval(Group* g);
  // Counts what the filters remove (filtering_ only); true when `s` passes all of them.
  bool PassesFilters(DeviceSlot& slot, const RequestSample& s);
  // Whether the process that inserted or issued `s` is one of --comm / of --pid (true when not
  // given); `mark`: remember which values matched.
  bool MatchesComm(const RequestSample& s, bool mark);
  bool MatchesPid(const RequestSample& s, bool mark);
  // Finish: filter values that match nothing, and what the filters removed when nothing is left.
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
  std::vector<std::pair<uint32_t, std::string>> format_names_;  // id -> "system:name"

  // Reading thread.
  alignas(64) BlockDecoder decoder_;
  BlockEvent event_;  // decoded in place, reused
  bool started_ = false;
  uint64_t first_ts_ = 0;  // also read by the pairing thread once set (before the first batch)
  uint64_t last_ts_ = 0;
  // HoldUntil: events before cut_ts_ are held back (before_cut_), priming the matcher or not.
  bool before_cut_ = false;
  bool prime_ = false;
  uint64_t cut_ts_ = 0;
  NullSampleSink null_sink_;
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
  bool process_filter_ = false;  // --comm or --pid given
  bool filtering_ = false;       // --dev, --op, --comm or --pid given
  DeviceSlot* last_slot_ = nullptr;
  uint32_t op_mask_ = 0;
  // The longest D2C of any paired request, filtered out or not: Finish's yardstick for stale
  // requests (the filters must not change what counts as one).
  uint64_t longest_d2c_ = 0;
  uint64_t since_ns_ = 0;
  uint64_t until_ns_ = ~uint64_t{0};
  uint64_t interval_ns_ = 0;
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

  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<std::unique_ptr<DeviceSlot>> slots_;
  absl::flat_hash_map<uint32_t, uint32_t> slot_index_;
  static constexpr size_t kFastDevices = 8;  // found by a linear scan, the rest by hash
  std::array<uint32_t, kFastDevices> fast_dev_{};
  std::array<DeviceSlot*, kFastDevices> fast_slot_{};
  size_t fast_count_ = 0;

  static constexpr size_t kMaxLossRows = 4096;
  std::vector<LossSummary> losses_;
  absl::flat_hash_map<std::tuple<LossRecord::Kind, int32_t, int32_t>, uint32_t> loss_index_;
  Completeness counters_;  // filter and interval counters, filled during the run
  // With a filter given: requests per op before filters, and which --comm / --pid values
  // matched a request.
  std::array<uint64_t, kBlockOpCount> requests_by_op_{};
  std::vector<char> comm_hit_;
  std::vector<char> pid_hit_;
};

// Reads the whole file through `reader` and builds the report.
absl::StatusOr<LatencyReport> BuildLatencyReport(TraceReader& reader,
                                                 const ReportOptions& options);

// Human-readable "why" of a no-insert reason, for notes.
std::string_view NoInsertReasonText(NoInsertReason reason);

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_LATENCY_REPORT_H_
