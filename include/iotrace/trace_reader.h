// What every trace file reader (perf.data, trace.dat) gives the report: the event formats it
// carries, and its tracepoint records in timestamp order, decoded in place (no copies), plus
// the losses it records and the problems it met while reading.
#ifndef IOTRACE_TRACE_READER_H_
#define IOTRACE_TRACE_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/bytes.h"
#include "iotrace/event_format.h"

namespace iotrace {

// One tracepoint (or probe) record. `payload` points into the reader's mapping and is valid
// only during the OnEvent call; it starts with the 8-byte common header (common_type ...).
struct RawEvent {
  uint64_t ts = 0;       // nanoseconds in the file's trace clock
  uint32_t cpu = 0;
  int32_t pid = -1;      // process (tgid) when the file says; else common_pid
  int32_t tid = -1;      // thread; common_pid for ftrace
  uint16_t type = 0;     // common_type: the event format id
  ByteView payload;
};

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
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void OnEvent(const RawEvent& event) = 0;
  virtual void OnLoss(const LossRecord& loss) {}
};

// Named counters of problems met while reading (short records, unknown ids, records out of
// time order beyond the reorder window, ...). Every one is shown in the report.
// ReadStats problem of a file whose writer never finished it (killed): what it holds is read,
// but whatever the writer stores at the end (perf's silent-drop counts) is missing.
inline constexpr char kProblemUnfinishedFile[] = "file_not_finished";

struct ReadStats {
  uint64_t records = 0;   // all records seen in the data
  uint64_t events = 0;    // tracepoint records delivered to OnEvent
  std::vector<std::pair<std::string, uint64_t>> problems;  // name -> count, only non-zero
  void AddProblem(const std::string& name, uint64_t count = 1);
  uint64_t Problem(const std::string& name) const;
};

class TraceReader {
 public:
  virtual ~TraceReader() = default;

  // Opens `path`, sniffing its magic: perf.data ("PERFILE2") or trace.dat ("\x17\x08\x44tracing").
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path);

  virtual std::string_view FileFormat() const = 0;  // "perf.data" or "trace.dat"
  virtual const std::vector<EventFormat>& formats() const = 0;
  virtual const TracingMetadata& metadata() const = 0;
  virtual int nr_cpus() const = 0;
  // Key/value facts from the file header (hostname, os release, clock, cmdline, ...).
  virtual std::vector<std::pair<std::string, std::string>> Info() const = 0;
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
};

}  // namespace iotrace

#endif  // IOTRACE_TRACE_READER_H_
