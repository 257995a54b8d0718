// `iotrace diff` as data: two LatencyReports compared per device x op x phase (the plain model
// that latency_diff.h fills and output/diff_format prints, knowing nothing of the statistics).
#ifndef IOTRACE_ANALYSIS_DIFF_MODEL_H_
#define IOTRACE_ANALYSIS_DIFF_MODEL_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "iotrace/analysis/match_stats.h"
#include "iotrace/event/block_event.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {

// The statistics compared per row; kMean has no bucket error of its own (it is exact).
enum class DiffStatKind : uint8_t { kP50, kP90, kP99, kP999, kMax, kMean };
inline constexpr int kDiffStatCount = 6;
std::string_view DiffStatName(DiffStatKind kind);  // "p50", "p90", "p99", "p99.9", "max", "mean"

// One statistic on both sides. A percentile is read from the histogram's bucket that holds its
// rank: the true value lies in [lo, hi] (the bucket's bounds, clamped to the side's min and
// max); the value shown is the report's (the bucket's middle, clamped the same way).
struct DiffStat {
  uint64_t a_ns = 0;
  uint64_t b_ns = 0;
  uint64_t a_lo_ns = 0, a_hi_ns = 0;
  uint64_t b_lo_ns = 0, b_hi_ns = 0;
  int64_t change_ns = 0;   // b - a
  double change_pct = 0;   // (b - a) / a * 100; 0 when a is 0
  // The two ranges [lo, hi] do not overlap: the change is larger than the buckets can blur.
  bool beyond_buckets = false;
};

enum class DiffVerdict : uint8_t {
  kSame,    // "~": not significant, within the bucket error, or under --min-change
  kSlower,  // "+"
  kFaster,  // "-"
  kOnlyA,   // the row has samples in A only
  kOnlyB,
};
// A change shown: slower or faster.
inline bool DiffChanged(DiffVerdict v) {
  return v == DiffVerdict::kSlower || v == DiffVerdict::kFaster;
}
std::string_view DiffVerdictSymbol(DiffVerdict v);  // "~", "+", "-", "A only", "B only"
std::string_view DiffVerdictName(DiffVerdict v);    // "same", "slower", "faster", "a_only", ...

struct DiffRow {
  uint32_t dev_a = 0;  // the side's device; paired by number, or by --map
  uint32_t dev_b = 0;
  std::string device_a;  // name, or "MAJ:MIN" when unknown (as the report names it)
  std::string device_b;
  std::string by;  // --by's class (LatencyGroup::by), the same on both sides; "" without --by
  uint64_t by_order = 0;
  BlockOp op = BlockOp::kOther;
  Phase phase = Phase::kD2C;
  uint64_t count_a = 0;
  uint64_t count_b = 0;
  double rate_a = 0;  // requests per second of the side's recording
  double rate_b = 0;
  std::array<DiffStat, kDiffStatCount> stats{};  // by DiffStatKind; only with both sides
  // Kolmogorov-Smirnov distance of the two bucketed CDFs (0..1), and on which side the larger
  // values lie where the CDFs differ most: +1 B is slower there, -1 faster, 0 no difference.
  double ks_d = 0;
  int direction = 0;
  double p_iid = 1;       // KS p-value if every latency were an independent draw (reference)
  double p_blocks = 1;    // KS p-value from relabelling whole intervals (the one used)
  double p_adjusted = 1;  // p_blocks after Holm's correction across the rows compared
  uint64_t blocks_a = 0;  // intervals with samples of this row, per side
  uint64_t blocks_b = 0;
  bool incomplete_a = false;  // the side's report warns that this phase missed inputs
  bool incomplete_b = false;
  DiffVerdict verdict = DiffVerdict::kSame;
  // Why the verdict is "~" ("not significant", "within the bucket width", "under --min-change",
  // "the percentiles moved against the shift"); empty otherwise.
  std::string reason;
};

// --fail-on PHASE.STAT OP VALUE: e.g. "d2c.p99>+10%", "q2c.p50>+50us", "i2c.max<-20%".
struct FailOnRule {
  std::string text;  // as given
  Phase phase = Phase::kD2C;
  DiffStatKind stat = DiffStatKind::kP99;
  bool greater = true;   // '>' (else '<')
  bool percent = true;   // value is a percent change (else a change in ns)
  double value = 0;      // signed
};

struct FailOnHit {
  std::string rule;  // FailOnRule::text
  size_t row = 0;    // index into LatencyDiff::rows
  double change = 0; // the row's change, in percent or ns as the rule's value
};

struct DiffSide {
  std::string input;
  std::string file_format;  // "perf.data", "trace.dat"
  int nr_cpus = 0;
  double duration_s = 0;
  uint64_t blocks = 0;  // intervals of block_s the recording spans
  RecordingHost recorded_on;          // the report's (LatencyReport::recorded_on)
  std::vector<std::string> warnings;  // the report's phase warnings, as it words them
};

struct LatencyDiff {
  static constexpr int kSchemaVersion = 1;
  DiffSide a;
  DiffSide b;
  double block_s = 0;           // the interval resampled as a whole
  int resamples = 0;            // relabellings of the intervals per row
  double alpha = 0.05;          // family-wise error rate of Holm's correction
  double min_change_pct = 0;
  std::vector<std::string> phases;  // --phases, as given (empty: all)
  std::string by;                   // --by's dimension (LatencyReport::by); "" without it
  std::vector<std::pair<std::string, std::string>> map;  // --map A:DEV=B:DEV pairs
  std::vector<DiffRow> rows;  // by A's device (then B's for B-only rows), op, phase
  std::vector<FailOnRule> fail_on;
  std::vector<FailOnHit> hits;
  std::vector<std::string> notes;  // what the reader should know (few intervals, ...)
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_DIFF_MODEL_H_
