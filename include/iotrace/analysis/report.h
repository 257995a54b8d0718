// The latency report as data: ReportOptions (what the CLI fills and tests build directly) and
// the plain LatencyReport model that the builder (latency_report.h) fills and the formatters
// (output/) print, knowing nothing of how it was built.
#ifndef IOTRACE_ANALYSIS_REPORT_H_
#define IOTRACE_ANALYSIS_REPORT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "iotrace/analysis/bucket_scale.h"
#include "iotrace/analysis/match_stats.h"
#include "iotrace/event/block_event.h"
#include "iotrace/formats/coverage.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {

enum class TimeUnit : uint8_t { kNs, kUs, kMs };
std::string_view TimeUnitName(TimeUnit unit);  // "ns", "us", "ms"
bool ParseTimeUnit(std::string_view name, TimeUnit* unit);

// kSvg: the report's pictures (output/svg_plot.h); `report` only.
enum class OutputFormat : uint8_t { kText, kCsv, kJson, kSvg };
std::string_view OutputFormatName(OutputFormat format);
bool ParseOutputFormat(std::string_view name, OutputFormat* format);

// --by: a dimension the rows are broken down by, besides device x op x phase.
//   size    the request's size class: a power of two, 4K = 4 KiB up to under 8 KiB (0: no data)
//   comm    the process that inserted the request (the one that issued it when not inserted)
//   ioprio  its I/O priority class and level as the insert/issue events carry it (6.11+)
//   cpu     the CPU that issued it to the driver
enum class BreakdownBy : uint8_t { kNone, kSize, kComm, kIoprio, kCpu };
std::string_view BreakdownName(BreakdownBy by);  // "", "size", "comm", "ioprio", "cpu"
// --by's value; an unknown one is an InvalidArgument with a hint (report, live, diff).
absl::Status ParseBreakdown(std::string_view name, BreakdownBy* by);

// The text report's histograms: none; log2, power-of-two rows like bcc's biolatency; full, the
// report's own log-linear buckets (the CSV's rows).
enum class HistogramView : uint8_t { kNone, kLog2, kFull };
std::string_view HistogramViewName(HistogramView view);  // "none", "log2", "full"
bool ParseHistogramView(std::string_view name, HistogramView* view);

struct ReportOptions {
  std::string input = "iotrace.data";  // -i
  // Several files read as one recording (-i A -i B, files after the options, a glob), as given;
  // then `input` names them all, for messages. Empty: `input` alone.
  std::vector<std::string> inputs;
  std::string output;                  // -o: main output file; empty = stdout
  OutputFormat format = OutputFormat::kText;
  std::string summary_csv;             // --summary-csv FILE; empty = none
  TimeUnit unit = TimeUnit::kUs;       // text output only; csv/json are always ns
  // --histograms, text output only. log2 wherever the text goes (terminal, pipe or file), so
  // that a report piped to a file or a pager reads as the one on the screen.
  HistogramView histograms = HistogramView::kLog2;

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
  // --phases: the phases whose histograms the report shows (PhaseBit); 0: all of them.
  unsigned phases = 0;
  BreakdownBy by = BreakdownBy::kNone;  // --by

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

  // Hand the phases a request ends at its issue (I2D, Q2D) over at the issue, never together
  // with its completion's (MatcherOptions::combine_samples): `iotrace live` puts each sample in
  // the interval in which it ended. The report is the same either way.
  bool samples_at_each_stage = false;

  // With interval_s: once the report has more groups (device x class x op x phase; of the
  // phases `phases` keeps) than this, it keeps no intervals (LatencyReport::intervals_dropped),
  // only the whole run's histograms.
  // 0: no limit. The pictures set it (report --format svg): at 1024 devices, 6,144 groups x 600
  // intervals made 1.5 GB of intervals, for a picture of 6,144 panels nobody could read.
  size_t max_interval_groups = 0;

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

// Checks values and combinations (usage errors: InvalidArgument with a hint). Run once, where
// options are made: the command line; BuildLatencyReport for library callers. The layers below
// take them as valid.
absl::Status ValidateReportOptions(const ReportOptions& options);

// A --phases list: names comma-separated, in either case ("d2c,I2C"), into a mask of PhaseBit;
// an unknown or missing name is an InvalidArgument with a hint. `report` and `live` share it.
absl::Status ParsePhaseList(std::string_view list, unsigned* mask);

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

// A row's non-empty buckets, increasing. Either a list of its own (a row built by hand or
// merged from others), or a view of a histogram's counts on the bucket scale (bucket_scale.h):
// the bytes and carries of its buckets between its lowest and highest values, copied side by
// side with other rows' into memory the view shares (the builder's Histogram::CopyCounts). A
// report's rows with samples are views: at 1024 devices their 0.84 M buckets as lists were 20 MB
// of fresh memory and most of the report's time after the reading (bench/README.md); as counts
// they are ~2 MB, and a bucket's bounds are worked out from its index as it is visited.
class LatencyBuckets {
 public:
  // Walks the buckets it was made from (not the LatencyBuckets: a moved one keeps its data).
  class Iterator {
   public:
    // Forward traversal; the buckets are made as they are read, so for the standard library's
    // older algorithms an input iterator.
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::input_iterator_tag;
    using value_type = LatencyBucket;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = LatencyBucket;

    Iterator() = default;
    LatencyBucket operator*() const {
      if (counts_ == nullptr) return list_[at_];
      return {bucket_scale::Low(first_ + at_), bucket_scale::High(first_ + at_), CountAt(at_)};
    }
    Iterator& operator++() {
      ++at_;
      if (counts_ != nullptr) at_ = NextNonEmpty(at_);
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const Iterator& o) const { return at_ == o.at_; }

   private:
    friend class LatencyBuckets;
    Iterator(const LatencyBucket* list, size_t at) : list_(list), at_(at) {}
    Iterator(const uint8_t* counts, const uint64_t* high, size_t first, size_t len, size_t at)
        : counts_(counts), high_(high), first_(first), len_(len), at_(NextNonEmpty(at)) {}
    uint64_t CountAt(size_t at) const {
      return counts_[at] + (high_ != nullptr ? high_[at] << 8 : 0);
    }
    size_t NextNonEmpty(size_t at) const {
      while (at < len_ && CountAt(at) == 0) ++at;
      return at;
    }
    const LatencyBucket* list_ = nullptr;
    const uint8_t* counts_ = nullptr;  // a view's, else nullptr
    const uint64_t* high_ = nullptr;
    size_t first_ = 0;
    size_t len_ = 0;
    size_t at_ = 0;  // in list_, or in the window of counts
  };
  using value_type = LatencyBucket;
  using const_iterator = Iterator;

  // The scale's buckets: how many there are, the i-th's bounds (its count 0), and the index of
  // [lo, hi) among them (nullopt for other bounds).
  static constexpr size_t kScaleBuckets = bucket_scale::kBucketCount;
  static LatencyBucket ScaleBucket(size_t i) {
    return {bucket_scale::Low(i), bucket_scale::High(i), 0};
  }
  static std::optional<size_t> ScaleIndex(uint64_t lo, uint64_t hi) {
    if (lo > bucket_scale::kMaxTrackable) return std::nullopt;
    const size_t i = bucket_scale::Index(lo);
    if (bucket_scale::Low(i) != lo || bucket_scale::High(i) != hi) return std::nullopt;
    return i;
  }

  LatencyBuckets() = default;
  LatencyBuckets(std::initializer_list<LatencyBucket> list) : list_(list) {}
  explicit LatencyBuckets(std::vector<LatencyBucket> list) : list_(std::move(list)) {}
  LatencyBuckets(const LatencyBuckets&) = default;
  LatencyBuckets& operator=(const LatencyBuckets&) = default;
  // A moved-from one is empty (a list of nothing), as a moved-from vector is in practice.
  LatencyBuckets(LatencyBuckets&& o) noexcept { *this = std::move(o); }
  LatencyBuckets& operator=(LatencyBuckets&& o) noexcept {
    if (this == &o) return *this;
    list_ = std::move(o.list_);
    o.list_.clear();
    keep_ = std::move(o.keep_);
    counts_ = std::exchange(o.counts_, nullptr);
    high_ = std::exchange(o.high_, nullptr);
    first_ = std::exchange(o.first_, 0);
    len_ = std::exchange(o.len_, 0);
    size_ = std::exchange(o.size_, 0);
    return *this;
  }

  // A view of buckets [first, first + len) of the scale: `low` their counts' low bytes, `high`
  // their carries (nullptr when none carried), in memory `keep` holds; `non_empty` of them
  // counted, the first and last among them.
  static LatencyBuckets OfCounts(std::shared_ptr<const void> keep, const uint8_t* low,
                                 const uint64_t* high, size_t first, size_t len, size_t non_empty);

  Iterator begin() const {
    if (counts_ == nullptr) return {list_.data(), 0};
    return {counts_, high_, first_, len_, 0};
  }
  Iterator end() const {
    if (counts_ == nullptr) return {list_.data(), list_.size()};
    return {counts_, high_, first_, len_, len_};
  }
  size_t size() const { return counts_ == nullptr ? list_.size() : size_; }
  bool empty() const { return size() == 0; }
  LatencyBucket front() const { return *begin(); }
  LatencyBucket back() const;
  // The i-th non-empty bucket (a walk of the counts in a view: for tests, not for loops).
  LatencyBucket operator[](size_t i) const;
  std::vector<LatencyBucket> ToVector() const;
  bool is_view() const { return counts_ != nullptr; }
  // The memory a view's counts are in (shared with the other rows made with it); null for a list.
  const void* memory() const { return keep_.get(); }

  // A list's own (a view becomes a list first).
  void push_back(const LatencyBucket& b) {
    if (counts_ != nullptr) *this = LatencyBuckets(ToVector());
    list_.push_back(b);
  }
  void reserve(size_t n) { list_.reserve(n); }
  template <typename It>
  void assign(It first, It last) {
    *this = LatencyBuckets(std::vector<LatencyBucket>(first, last));
  }

 private:
  std::vector<LatencyBucket> list_;
  std::shared_ptr<const void> keep_;
  const uint8_t* counts_ = nullptr;  // nullptr: a list
  const uint64_t* high_ = nullptr;
  size_t first_ = 0;  // the scale's index of counts_[0]
  size_t len_ = 0;
  size_t size_ = 0;
};

// One histogram: a device x op x phase (in the whole file, or in one interval).
struct LatencyGroup {
  uint32_t dev = 0;
  std::string device;  // name, or "MAJ:MIN" when unknown
  BlockOp op = BlockOp::kOther;
  Phase phase = Phase::kD2C;
  // --by's class of this row ("4K", "fio", "be/4", "3"; LatencyReport::by names the
  // dimension), and its place in the order of the classes; empty and 0 without --by.
  std::string by;
  uint64_t by_order = 0;
  LatencySummary summary;
  LatencyBuckets buckets;              // non-empty buckets, increasing
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
  // Known per interval only live (LiveIntervalCounts); a file's report leaves it 0 and shows
  // its losses as coverage gaps.
  uint64_t lost = 0;  // events the kernel lost
  // Events that could not be paired: issues without an insert, completions without an issue,
  // requeues of requests not seen issued, each in the interval of its own time (live: those
  // counted in the interval).
  uint64_t unpaired = 0;
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
  // Several files read as one recording, in the order of their first records (then `input` is
  // their names joined by ", "); empty for one file.
  std::vector<std::string> files;
  std::string file_format;  // "perf.data", "trace.dat"; "perf.data+trace.dat" for a mix
  // Where the event formats came from (TraceReader::FormatsSource): "file", "running kernel" or
  // the --formats-from path; and the warning that says so when not "file".
  std::string formats_source = "file";
  std::string formats_warning;
  int nr_cpus = 0;
  // The machine and tool that recorded the file, as its header says (the first file's, for
  // several read as one recording).
  RecordingHost recorded_on;
  uint64_t first_ts_ns = 0;  // trace clock
  uint64_t last_ts_ns = 0;
  double interval_s = 0;
  std::vector<std::pair<std::string, std::string>> filters;  // ("dev", "loop0"), ...
  double expiry_s = 0;
  size_t max_inflight = 0;

  // --by's dimension ("size", "comm", "ioprio", "cpu"; empty: none): each row is a device x
  // class x op x phase. ioprio_absent: --by ioprio on a file whose events lack the field (before
  // 6.11), every row's class then "-" (said in the notes).
  std::string by;
  bool ioprio_absent = false;
  std::vector<LatencyGroup> groups;  // sorted by dev, by_order, by, op, phase
  std::vector<LatencyInterval> intervals;  // only with interval_s > 0, increasing
  // ReportOptions::max_interval_groups was passed: no intervals (nor unpaired_idle), the groups
  // whole.
  bool intervals_dropped = false;
  // Unpaired events (LatencyInterval::unpaired) of intervals that hold no sample and so are not
  // in `intervals`: (interval index, count), increasing. With the intervals' they add up to the
  // matcher's issues without insert, completions without issue and unmatched requeues.
  std::vector<std::pair<uint64_t, uint64_t>> unpaired_idle;
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

// Keeps the histograms and warnings of the phases in `mask` (PhaseBit; 0 keeps all): --phases.
void KeepPhases(unsigned mask, LatencyReport* report);

// The devices with the most requests (a device's: over its ops, the largest count of any of
// its rows of that op), as many as keep their rows of `report` (all of a device's: ops, phases,
// --by's classes) within `max_rows`; at least one when there is any. Ties go to the lower dev.
// In order of dev; `rows` (if not null) gets how many rows they have.
std::vector<uint32_t> BusiestDevices(const LatencyReport& report, size_t max_rows,
                                     size_t* rows = nullptr);

// Human-readable "why" of a no-insert reason, for notes.
std::string_view NoInsertReasonText(NoInsertReason reason);

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_REPORT_H_
