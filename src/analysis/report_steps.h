// What the report builder's files share (latency_report.cc: the builder and one pass;
// report_notes.cc: the English of warnings and notes; two_range_report.cc: the read as two time
// ranges). Private to src/analysis.
#ifndef IOTRACE_SRC_ANALYSIS_REPORT_STEPS_H_
#define IOTRACE_SRC_ANALYSIS_REPORT_STEPS_H_

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/analysis/report.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/sys/cpus.h"

namespace iotrace {

constexpr int kLossKindCount = 4;  // LossRecord::Kind's values

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

inline uint64_t SecondsToNs(double s) {
  if (!(s > 0)) return 0;
  double ns = std::round(s * 1e9);
  return ns >= 1.8e19 ? ~uint64_t{0} : static_cast<uint64_t>(ns);
}

// Unplaced losses per block event and per kind (FinishCompleteness), for the warnings.
struct LossTally {
  std::array<std::array<uint64_t, kLossKindCount>, kBlockEventKindCount> lost_by{};
  std::array<uint64_t, kLossKindCount> unknown_by{};
};

// Memory for the counts of histograms' buckets (LatencyBuckets views), taken in order: sized
// for a set of histograms (Add each, then Allocate), then Take each of them.
class CountsBlock {
 public:
  void Add(const Histogram& h) {
    low_bytes_ += LowBytes(h);
    high_words_ += h.carried() ? LowBytes(h) : 0;
  }
  void Allocate();
  // A view of `h`'s buckets, its counts copied here (one of the histograms added).
  LatencyBuckets Take(const Histogram& h);

 private:
  static size_t LowBytes(const Histogram& h) {
    return h.empty() ? 0 : h.LastBucket() - h.FirstBucket() + 1;
  }
  size_t low_bytes_ = 0;
  size_t high_words_ = 0;
  std::shared_ptr<uint64_t[]> mem_;
  uint64_t* high_ = nullptr;  // the carries, then
  uint8_t* low_ = nullptr;    // the low bytes
};

// The summary and buckets of one histogram (the builder's groups, LiveWindow's): the buckets a
// view of counts in `block` (one of the histograms it was sized for), or in memory of their own.
LatencyGroup MakeGroup(const Histogram& h, uint32_t dev, const std::string& device, BlockOp op,
                       Phase phase, CountsBlock* block = nullptr);

// The builder's report, with what the reader knows of the file.
LatencyReport FinishReport(LatencyReportBuilder& builder, const TraceReader& reader,
                           const ReadStats& stats, const ReportOptions& options);

// Finish's warnings (report_notes.cc): phases whose inputs were lost or whose requests were
// given up are incomplete; phases the data does not wholly cover are partial.
void AddIncompleteWarnings(const ReadStats& reader_stats, const LossTally& losses,
                           LatencyReport& r);
void AddPartialWarnings(LatencyReport& r);

// Reads the file as two time ranges on two threads (see ReportOptions::split_min_bytes),
// two_range_report.cc. nullopt when that cannot stand for one pass (`why_not` says why): the
// caller reads it in one pass.
std::optional<absl::StatusOr<LatencyReport>> BuildSplit(TraceReader& reader,
                                                        const ReportOptions& options,
                                                        std::string* why_not);

}  // namespace iotrace

#endif  // IOTRACE_SRC_ANALYSIS_REPORT_STEPS_H_
