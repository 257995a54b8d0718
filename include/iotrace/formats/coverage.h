// What part of the kernel's events a reader's data covers: per CPU, the span of its records and
// the known gaps in it (a cut or damaged part, a ring loss, an ftrace overrun, an unfinished
// recording), and the filter that keeps a latency sample only where every CPU's data is whole.
#ifndef IOTRACE_FORMATS_COVERAGE_H_
#define IOTRACE_FORMATS_COVERAGE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace iotrace {

// Why a CPU's data has a hole.
enum class GapCause : uint8_t {
  kCut,            // the file ends inside the CPU's data (a copy cut short, a disk that filled)
  kUnfinished,     // the recording was never finished (its writer was killed)
  kDamaged,        // part of the data could not be read (a corrupt page or record) and was skipped
  kRingLost,       // perf: the ring was full, the kernel counted the events it could not write
  kFtraceOverrun,  // ftrace: events overwritten or dropped before a page (its missed-events flag)
};
inline constexpr int kGapCauseCount = 5;
std::string_view GapCauseName(GapCause cause);  // "cut", "unfinished", "damaged", ...
// What the cause means, for warnings: "the file is cut short", ...
std::string_view GapCauseText(GapCause cause);

// A stretch of one CPU's data in which events are missing: after its record at `after_ts` (0:
// none before) and before its record at `before_ts` (kOpenEnd: none after, its data ends).
struct DataGap {
  static constexpr uint64_t kOpenEnd = ~uint64_t{0};
  int32_t cpu = -1;
  uint64_t after_ts = 0;
  uint64_t before_ts = kOpenEnd;
  GapCause cause = GapCause::kDamaged;
  uint64_t events = 0;  // events known to be missing in it (0: unknown)
  bool open_end() const { return before_ts == kOpenEnd; }
};

// The records of one CPU that a reader delivered.
struct CpuSpan {
  int32_t cpu = 0;
  uint64_t first_ts = 0;
  uint64_t last_ts = 0;
  uint64_t records = 0;
};

struct Coverage {
  std::vector<CpuSpan> cpus;  // by CPU number; only CPUs with records
  std::vector<DataGap> gaps;  // in the order found
  bool complete() const { return gaps.empty(); }
  // Adds the records of one CPU (readers keep their own per-CPU counts on the hot path and
  // hand them over once): widens that CPU's span.
  void AddSpan(const CpuSpan& span);
  // The span of `cpu`, or nullptr when it has no records.
  const CpuSpan* Span(int32_t cpu) const;
  // Every CPU's data ends early (perf.data's one stream of all CPUs, cut or unfinished): an
  // open-ended gap after each CPU's last record, for CPUs 0..nr_cpus-1 and any with records.
  // `known_until`: no record missing from any CPU is older than it (perf.data's round marks
  // bound it; 0: nothing is known, and a CPU with no records then has no data at all). A CPU
  // that already ends early keeps its gap.
  void EndAll(int nr_cpus, GapCause cause, uint64_t known_until = 0);
  // Merges another read's coverage of the same file (spans widen, gaps are appended).
  void Merge(const Coverage& other);
};

// Keeps a sample only when no known gap of any CPU lies within its span: a request whose
// start and end are both covered, with nothing missing in between on any CPU, was paired from
// events that are all in the file. Built once; Crosses is a binary search.
class CoverageFilter {
 public:
  explicit CoverageFilter(const std::vector<DataGap>& gaps);
  // The cause of a gap that [start, end] crosses (events may be missing strictly inside it, or
  // between the record at `start` and the next of its CPU), or nullopt when none does.
  std::optional<GapCause> Crosses(uint64_t start, uint64_t end) const;
  bool empty() const { return gaps_.empty(); }
  // The ends of the gaps that have one (their before_ts), in increasing order.
  const std::vector<uint64_t>& gap_ends() const { return ends_; }

 private:
  std::vector<DataGap> gaps_;       // by after_ts
  static constexpr size_t kBlock = 64;
  std::vector<uint64_t> max_before_;  // max before_ts of gaps_[0..i]
  std::vector<uint64_t> block_max_;   // max before_ts of each kBlock gaps
  std::vector<uint64_t> ends_;
};

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_COVERAGE_H_
