// `iotrace report --format svg`: the LatencyReport drawn as one self-contained SVG, one panel
// per device x op x phase (a latency heatmap over time with an IOPS strip, the histogram with
// its CDF, the percentile spectrum). Deterministic: the same report gives the same bytes.
// `iotrace live --svg` draws the last intervals of a run the same way (LiveSvgHistory).
#ifndef IOTRACE_OUTPUT_SVG_PLOT_H_
#define IOTRACE_OUTPUT_SVG_PLOT_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "iotrace/analysis/live_model.h"
#include "iotrace/analysis/report.h"

namespace iotrace {

struct SvgPlotOptions {
  std::string host;  // the recording machine (the file's header); "" when unknown
  std::vector<std::pair<uint32_t, std::string>> models;  // device -> model, where known
  // More intervals than max_columns are merged into columns of several intervals; and while
  // the heatmaps would need more than max_cells rectangles, columns are merged further
  // (doubling), so that a long run at a fine interval stays a file of a few MB. The picture
  // says when either happened.
  size_t max_columns = 1000;
  size_t max_cells = 20000;
  // The page's first line ("" : "iotrace report: FILE (FORMAT)"), and the time of the first
  // column on the time axis (live: the oldest interval still drawn).
  std::string title;
  double start_s = 0;
  // Said at the top in orange when not empty (report: which of the file's panels are drawn).
  std::string note;
};

// Heatmap rows: every power of two of latency cut into four (the histogram's buckets, 64 to a
// power of two, added up), values below 4 ns in two rows. Row `key` holds [RowLow(key),
// RowLow(key + 1)).
int SvgRowOf(uint64_t ns);
uint64_t SvgRowLow(int key);

// The value at percentile `p` (0..100) of non-empty buckets, as Histogram::ValueAtPercentile
// reads it: the middle of the bucket holding the sample of rank ceil(p/100 * count), clamped to
// [min_ns, max_ns].
uint64_t BucketPercentile(std::span<const LatencyBucket> buckets, uint64_t count, uint64_t min_ns,
                          uint64_t max_ns, double p);

void WriteSvgReport(const LatencyReport& report, const SvgPlotOptions& options, std::ostream& out);

// `iotrace live --svg`: the last `max_intervals` intervals of a run as a report to draw, its
// groups the sums of theirs (percentiles read from the summed buckets).
class LiveSvgHistory {
 public:
  explicit LiveSvgHistory(size_t max_intervals = 1000) : max_intervals_(max_intervals) {}
  void Add(const LiveInterval& interval);
  // The intervals kept as a LatencyReport of `interval_s` columns; *start_s: the first one's
  // time since tracing started.
  LatencyReport Report(double interval_s, double* start_s) const;
  size_t size() const { return intervals_.size(); }

 private:
  size_t max_intervals_;
  std::deque<LiveInterval> intervals_;
};

}  // namespace iotrace

#endif  // IOTRACE_OUTPUT_SVG_PLOT_H_
