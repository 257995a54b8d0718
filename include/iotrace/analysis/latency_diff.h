// The statistics of `iotrace diff`: two LatencyReports (built with intervals of the block
// length) compared per device x op x phase into the LatencyDiff model (diff_model.h). The test
// is Kolmogorov-Smirnov on the bucketed CDFs, its p-value from relabelling whole intervals
// between the sides (I/O latencies close in time are not independent draws), corrected for the
// many rows by Holm's method; docs/diff.md says why.
#ifndef IOTRACE_ANALYSIS_LATENCY_DIFF_H_
#define IOTRACE_ANALYSIS_LATENCY_DIFF_H_

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/analysis/diff_model.h"
#include "iotrace/analysis/report.h"

namespace iotrace {

struct DiffOptions {
  double alpha = 0.05;
  double min_change_pct = 5;
  int resamples = 4999;
  uint64_t seed = 1;  // the relabellings are drawn from a fixed stream: same files, same output
  // Pairs of devices to compare, (A's, B's), each "MAJ:MIN" or a name as the report shows it;
  // devices not named pair by number.
  std::vector<std::pair<std::string, std::string>> map;
  std::vector<std::string> devices;  // rows whose A or B device is one of these (empty: all)
  std::vector<Phase> phases;         // empty: all
  std::vector<FailOnRule> fail_on;
};

// Without a --block: 1 s, or a tenth of the shorter recording when that is under 10 s, so that
// each side has about ten intervals to relabel; past kMaxAutoBlocks seconds, whole seconds
// enough for at most kMaxAutoBlocks blocks (the test's cost grows with the blocks: each
// relabelling adds up the histograms of one side's blocks).
inline constexpr double kMaxAutoBlocks = 100;
double ChooseBlockSeconds(double duration_a_s, double duration_b_s);

// Compares `a` and `b`, built with interval_s `block_s` or a whole fraction of it (their
// intervals are then merged into blocks of `block_s`). Fails (usage) when a --map device names
// no device of its side.
absl::StatusOr<LatencyDiff> DiffLatencyReports(const LatencyReport& a, const LatencyReport& b,
                                               double block_s, const DiffOptions& options);

// "d2c.p99>+10%", "q2c.p50>+50us" (units ns, us, ms, s); a usage error with a hint otherwise.
absl::StatusOr<FailOnRule> ParseFailOn(const std::string& text);

// The pieces, for tests.
struct KsResult {
  double d = 0;
  int direction = 0;  // +1: B's values are larger where the CDFs differ most
};
// Over the buckets' upper bounds (both histograms share Histogram's bucket bounds).
KsResult KsStatistic(std::span<const LatencyBucket> a, std::span<const LatencyBucket> b);
// The asymptotic two-sample KS p-value (Kolmogorov's series with Stephens' small-sample
// correction), for samples of na and nb independent draws.
double KsPValueIid(double d, uint64_t na, uint64_t nb);
// p-value of KsStatistic(a, b) when the sides' blocks (one bucket list each) are relabelled at
// random, keeping how many blocks each side has: (1 + relabellings with D >= observed) /
// (1 + resamples).
double KsPValueBlocks(const std::vector<std::vector<LatencyBucket>>& blocks_a,
                      const std::vector<std::vector<LatencyBucket>>& blocks_b, int resamples,
                      uint64_t seed);
// Holm's step-down adjustment of p-values (same order out as in).
std::vector<double> HolmAdjust(const std::vector<double>& p);

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_LATENCY_DIFF_H_
