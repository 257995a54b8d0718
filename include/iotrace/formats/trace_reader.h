// What every trace file reader (perf.data, trace.dat) gives the report: the event formats it
// carries, and its tracepoint records in timestamp order, decoded in place (no copies), plus
// the losses it records and the problems it met while reading.
#ifndef IOTRACE_FORMATS_TRACE_READER_H_
#define IOTRACE_FORMATS_TRACE_READER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"
#include "iotrace/event/event_format.h"
#include "iotrace/event/raw_event.h"
#include "iotrace/formats/coverage.h"

namespace iotrace {

// Events that the kernel produced but that did not reach the file, as the file reports them.
struct LossRecord {
  enum class Kind : uint8_t {
    kRingLost,       // perf PERF_RECORD_LOST: ring full; the event is unknown (-1)
    kSilentDrop,     // perf: kernel count minus samples (PERF_RECORD_LOST_SAMPLES)
    kFtraceOverrun,  // ftrace per_cpu stats "overrun": oldest events overwritten
    kFtraceDropped,  // ftrace per_cpu stats "dropped events"
  };
  Kind kind = Kind::kRingLost;
  int32_t cpu = -1;        // -1 when the file does not say
  int32_t event_id = -1;   // format id of the lost event, -1 when unknown
  uint64_t count = 0;
  uint64_t ts = 0;         // when the loss was reported (0 when unknown)
  // The reader placed these events in time: a gap of its Coverage holds them (a perf ring loss
  // with a time and a CPU, an ftrace page that says events were missed before it). Losses that
  // cannot be placed (perf's silent drops, ftrace's per-CPU totals) leave every phase they feed
  // incomplete instead.
  bool placed = false;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void OnEvent(const RawEvent& event) = 0;
  virtual void OnLoss(const LossRecord& loss) {}
  // Whether the sink wants no more events: a time range's read (ReadRange) then ends, its result
  // incomplete, at the next record it counts (trace.dat) or emits (perf.data); other reads go
  // on. Any thread may ask.
  bool stop_requested() const { return stop_requested_.load(std::memory_order_relaxed); }
  void RequestStop() { stop_requested_.store(true, std::memory_order_relaxed); }

 private:
  std::atomic<bool> stop_requested_{false};  // (a plain load: readers look for every record)
};

// Named counters of problems met while reading (short records, unknown ids, records out of
// time order beyond the reorder window, ...). Every one is shown in the report.
// ReadStats problem of a file whose writer never finished it (killed): what it holds is read,
// but whatever the writer stores at the end (perf's silent-drop counts) is missing.
inline constexpr char kProblemUnfinishedFile[] = "file_not_finished";
// ReadStats problem of a file cut short (a copy cut off, a disk that filled): its data section
// runs past the end of the file. What is there is read, up to the last whole record.
inline constexpr char kProblemFileCut[] = "file_cut_short";

struct ReadStats {
  uint64_t records = 0;   // all records seen in the data
  uint64_t events = 0;    // tracepoint records delivered to OnEvent
  // How the reading went, not what the file holds: reads made together with others, many a
  // system call (io_uring; see base/batch_read.h) and used.
  uint64_t batched_reads = 0;
  std::vector<std::pair<std::string, uint64_t>> problems;  // name -> count, only non-zero
  // Per CPU, the span of the records delivered, and the gaps found in the data (see coverage.h).
  Coverage coverage;
  void AddProblem(const std::string& name, uint64_t count = 1);
  uint64_t Problem(const std::string& name) const;
};

// A time slice of a file, for reading one file on two threads at once (ReadRange): the records
// with `start_ts <= ts < end_ts` are delivered, in time order. Only those at or after
// `count_from_ts` are counted in the range's stats, and only losses placed before such a record
// (or at the end of the file) are delivered.
struct TimeRange {
  uint64_t start_ts = 0;
  uint64_t count_from_ts = 0;
  uint64_t end_ts = ~uint64_t{0};
  // Readers of one stream of records that is not in time order (perf.data): records are read
  // from `start_position` (a record boundary, TraceTimeSpan::split_position, or 0 for the start
  // of the data), and those placed before `end_position` (untimed ones, the reader's record
  // count) belong to this range. Other readers ignore both.
  uint64_t start_position = 0;
  uint64_t end_position = ~uint64_t{0};
  // Which of the two ranges of a shared read this is (TraceReader::ShareRanges: 0 the earlier,
  // 1 the later), or -1: read alone.
  int shared_part = -1;
};

// Where the file's records lie in time, for choosing where to cut it (TimeSpan).
struct TraceTimeSpan {
  uint64_t first_ts = 0;
  uint64_t middle_ts = 0;  // about half of the record bytes lie before it (see TimeSpanFrom)
  uint64_t last_ts = 0;
  uint64_t data_bytes = 0;
  // perf.data: a record boundary near the middle of the data, where records from middle_ts on
  // start (TimeRange::start_position); records before it may reach past middle_ts (by the time
  // between two drains of a ring), so a later range must start reading after that.
  uint64_t split_position = 0;
  // perf.data: how far past middle_ts records before split_position may reach: the time of a
  // round of drains, the largest time of one round past the one before it.
  uint64_t late_ns = 0;
  // A range may start at any time: trace.dat (each CPU's stream is found by time), and
  // perf.data whose rounds are too long to cut at a mark (split_position is then the start of
  // the data: both ranges read from there, the later one passing over what lies before it).
  bool starts_anywhere = false;
};

// What one ReadRange saw at the edges of its range, so that the caller can check that two
// adjacent ranges, read apart, covered each record exactly once and in the order ReadAll gives.
struct RangeReadResult {
  // The records and events counted (see TimeRange); the problems of the data and of the file
  // only in the range that reads to the end of the file (and duplicates, counted by time).
  ReadStats stats;
  // trace.dat, per stream of the file (the same numbering in every range of one reader): the
  // position of the first record counted, and of the first record not delivered because it
  // lies at or after end_ts; kNoPosition when there is none (the stream ended first).
  static constexpr uint64_t kNoPosition = ~uint64_t{0};
  std::vector<uint64_t> first_counted;
  std::vector<uint64_t> stopped_at;
  // Records found out of time order, problems met anywhere in the data the range read, and
  // (trace.dat) pages that say events were lost before them: any of these makes the ranges
  // unfit to stand for one ReadAll.
  uint64_t out_of_order = 0;
  uint64_t problems = 0;
  uint64_t losses_placed = 0;
  // perf.data: where the scan stopped (the first record not scanned); whether a record began
  // exactly at end_position; the latest time of a record before end_position; and the position
  // of the last record timed before count_from_ts.
  uint64_t scan_end = 0;
  bool met_end_position = false;
  uint64_t latest_before_end_position = 0;
  uint64_t last_position_before_count = 0;
  // The range merged what a walk shared with the other range found (ShareRanges), not a scan of
  // its own.
  bool shared_walk = false;
};

// Event formats from outside a file, for a perf.data that lost its own (cut short before its
// feature sections): another recording's (report --formats-from) or the running kernel's. The
// reader takes them only when they fit the file: a format for every tracepoint id of its attrs,
// and the raw data of its first samples of each id laid out as the format says.
struct FormatsFallback {
  std::string source;       // for the report (JSON input.formats_source): "running kernel", a path
  std::string description;  // for messages: "the running kernel (6.18.44)", "FILE (trace.dat)"
  // The formats it has of these ids (an id it lacks is reported as not matching).
  std::function<absl::StatusOr<std::vector<EventFormat>>(const std::vector<uint32_t>& ids)> load;
};

// Where and by what a file was recorded, from its header (TraceReader::Info): perf.data's
// hostname, os_release, arch and perf_version features; trace.dat's uname ("sysname nodename
// release machine") and version options. Empty where the file does not say.
struct RecordingHost {
  std::string host;
  std::string kernel;    // the release, "6.18.44"
  std::string arch;      // "x86_64"
  std::string recorder;  // "perf 6.1.187", "trace-cmd 3.1.6 not-a-git-repo", "iotrace 0.1.0"
  bool known() const {
    return !host.empty() || !kernel.empty() || !arch.empty() || !recorder.empty();
  }
};
// `file_format`: FileFormat()'s (several files': the first one's), which names the tool when the
// version starts with a digit (perf and trace-cmd write their version without their name;
// iotrace writes its name before it). The strings are the file's, unchecked: whoever prints
// them to a terminal makes them printable.
RecordingHost RecordingHostOf(std::string_view file_format,
                              const std::vector<std::pair<std::string, std::string>>& info);

class TraceReader {
 public:
  virtual ~TraceReader() = default;

  virtual std::string_view FileFormat() const = 0;  // "perf.data" or "trace.dat"
  virtual const std::vector<EventFormat>& formats() const = 0;
  virtual const TracingMetadata& metadata() const = 0;
  // Where formats() came from: "file", or FormatsFallback::source when the file's were lost; and
  // then a warning that says so, and what to check ("" for "file").
  virtual std::string FormatsSource() const { return "file"; }
  virtual std::string FormatsWarning() const { return ""; }
  virtual int nr_cpus() const = 0;
  // Key/value facts from the file header (hostname, os release, clock, cmdline, ...).
  virtual std::vector<std::pair<std::string, std::string>> Info() const = 0;
  // Several files read as one (multi_trace_reader.h): their paths, in the order of their first
  // records once ReadAll has run; empty for a reader of one file.
  virtual std::vector<std::string> Files() const { return {}; }
  // pid -> comm known from the file (COMM records, saved cmdlines); empty string if unknown.
  virtual std::string CommOf(int32_t pid) const = 0;

  // Delivers every tracepoint record in timestamp order, and every loss record, to `sink`.
  // Problems inside the data are counted in stats(), not returned, unless reading cannot go on.
  virtual absl::Status ReadAll(EventSink* sink) = 0;
  // Lets the reader read the file ahead on a thread of its own during ReadAll (FileRing's
  // read-ahead), where that pays: perf.data's one stream, a trace.dat's long CPU streams (see
  // TraceDatReaderOptions). A hint; readers may ignore it.
  virtual void set_read_ahead(bool on) {}
  virtual const ReadStats& stats() const = 0;

  // Reading in time ranges, on several threads at once: readers that can say so, and give the
  // file's time span (nullopt when they cannot, or the file has no records). TimeSpan and
  // TimeSpanFrom are for one thread at a time, not while a read runs (a reader may keep what
  // their first call found, and its scratch memory until a read begins).
  virtual std::optional<TraceTimeSpan> TimeSpan() const { return std::nullopt; }
  // TimeSpan with its split position looked for from `fraction` (0 < fraction < 1) of the data
  // on, not from the middle: readers whose ranges start where a round begins (perf.data), so
  // that a plan can put the later range's start where both ranges read as much. nullopt from
  // readers whose ranges may start anywhere.
  virtual std::optional<TraceTimeSpan> TimeSpanFrom(double fraction) const { return std::nullopt; }
  // Delivers the records of `range` to `sink` (see TimeRange). Safe to call from several threads
  // at once, each with its own sink; not together with ReadAll. stats() is left alone.
  virtual absl::Status ReadRange(EventSink* sink, const TimeRange& range, RangeReadResult* out) {
    return absl::UnimplementedError("this reader does not read time ranges");
  }
  // Two ranges about to be read at once, each by a thread of its own, with ReadRange: true when
  // the reader shares work between them; each is then read with its `shared_part` set (0 for
  // `earlier`, 1 for `later`), and each read waits for the other's part of the work, so both must
  // be read, at once. (perf.data whose records form one merge from start to end: each thread
  // walks half the data for both.) False: each is read alone, as without the call.
  virtual bool ShareRanges(const TimeRange& earlier, const TimeRange& later) { return false; }
  // Why `earlier` (read with `range`, up to its end_ts) and `later` (counted from that time)
  // cannot stand for one ReadAll, or "" when they can. By default: no problems, losses placed
  // in the data or records out of order in either, and every stream stops in `earlier` at the
  // record where `later` starts counting it.
  virtual std::string RangesUnfit(const TimeRange& range, const RangeReadResult& earlier,
                                  const RangeReadResult& later) const;
};

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_TRACE_READER_H_
