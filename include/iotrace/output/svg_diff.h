// `iotrace diff A B --format svg`: one self-contained SVG, one panel per compared row (device x
// op x phase): the verdict and the changed percentiles in its header, the two sides' heatmaps
// side by side on one latency axis and one colour scale, and below them the two CDFs and the two
// percentile spectra overlaid. Deterministic: the same diff gives the same bytes.
#ifndef IOTRACE_OUTPUT_SVG_DIFF_H_
#define IOTRACE_OUTPUT_SVG_DIFF_H_

#include <cstddef>
#include <ostream>

#include "iotrace/analysis/diff_model.h"
#include "iotrace/analysis/report.h"

namespace iotrace {

struct SvgDiffOptions {
  // Per side, as in SvgPlotOptions: intervals past max_columns are merged into columns of
  // several, and columns are merged further while the side's heatmaps would need more than
  // max_cells rectangles. The picture says when.
  size_t max_columns = 400;
  size_t max_cells = 10000;
  // Of more rows than this, the picture draws this many, the changed ones first (smallest
  // adjusted p first), then those of one side only, then the rest by requests (A's and B's),
  // in the diff's order, and says so at the top.
  size_t max_panels = 64;
};

// `a` and `b`: the two reports the diff was made of (their intervals are the heatmaps' columns).
void WriteSvgDiff(const LatencyDiff& diff, const LatencyReport& a, const LatencyReport& b,
                  const SvgDiffOptions& options, std::ostream& out);

}  // namespace iotrace

#endif  // IOTRACE_OUTPUT_SVG_DIFF_H_
