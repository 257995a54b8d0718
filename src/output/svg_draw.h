// What the pictures of this stage share (svg_plot.cc: `report --format svg` and `live --svg`;
// svg_diff.cc: `diff --format svg`): numbers and text as SVG writes them, the viridis map, log
// latency axes, heatmap columns made of a report's intervals, and the heatmap's cells, its
// percentile lines, the CDF and the percentile spectrum drawn into a given rectangle.
#ifndef IOTRACE_SRC_OUTPUT_SVG_DRAW_H_
#define IOTRACE_SRC_OUTPUT_SVG_DRAW_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "iotrace/analysis/report.h"

namespace iotrace::svg {

// Okabe and Ito's vermillion: apart from every viridis colour, for the p99 line and losses.
inline constexpr char kAlert[] = "#d55e00";
// Unpaired events are often no fault (issues without an insert on a disk without a scheduler,
// flushes): a grey mark, apart from the losses'.
inline constexpr char kUnpaired[] = "#888888";

// Viridis at t in [0, 1]: perceptually uniform, readable in grey and by the colour-blind.
std::string Viridis(double t);

std::string Num(double v);  // a coordinate: one decimal
std::string Escape(std::string_view s);
std::string Ns(double ns);  // "12.5 us"
std::string Seconds(double s);
std::string Percent(double part, double whole);
double NiceStep(double v);  // 1, 2 or 5 times a power of ten, at least v

// A log10 axis over whole decades [lo, hi], drawn over [a, b] pixels.
struct LogAxis {
  int lo = 0, hi = 1;
  double a = 0, b = 1;
  double At(double v) const {
    const double x = std::log10(std::max(v, 1.0));
    return a + (b - a) * (x - lo) / (hi - lo);
  }
};
std::string DecadeLabel(int d);
// The decades that hold the heatmap rows of buckets from `lo_ns` to `hi_ns` (bucket lower
// bounds); pixels left to the caller.
LogAxis LatencyDecades(uint64_t lo_ns, uint64_t hi_ns);

// Heatmap rows of buckets (sorted by latency): (row, count), by row (SvgRowOf).
using Rows = std::vector<std::pair<int, uint64_t>>;
Rows RowsOf(std::span<const LatencyBucket> buckets);

// One heatmap column: the intervals merged into it.
struct Column {
  uint64_t count = 0;
  uint64_t min_ns = ~uint64_t{0};
  uint64_t max_ns = 0;
  uint64_t p50_ns = 0, p99_ns = 0;
  bool lossy = false;  // a sample was left out at a gap, or the interval is partial
  Rows rows;
};

// A run of rows of one column with the same count: one rectangle.
struct Run {
  int first = 0, last = 0;
  uint64_t each = 0;
};
std::vector<Run> RunsOf(const Column& c);

// One device x op x phase over time: its group in each interval that holds it (in time order),
// and the columns they make.
struct Series {
  std::vector<const LatencyInterval*> intervals;
  std::vector<const LatencyGroup*> groups;
  std::vector<Column> columns;
  size_t rects = 0;  // rectangles its heatmap needs
};
// The columns of `per_column` intervals each.
void FillColumns(Series& s, size_t n_columns, uint64_t per_column);
// How many intervals of `interval_s` the report spans (its interval indexes, and its length).
uint64_t IntervalCount(const LatencyReport& r);
// Fills the columns of every series, `per_column` intervals each: as few as keep the columns at
// most `max_columns`, doubled while all heatmaps together need more than `max_cells`
// rectangles. Returns per_column; *columns: how many columns.
uint64_t ChooseColumns(const std::vector<Series*>& series, uint64_t intervals,
                       size_t max_columns, size_t max_cells, size_t* columns);
uint64_t CellMax(const Series& s);  // the largest count of one cell (at least 1)

// `columns` columns across [x0, x0 + w]; column c is the time from start_s + c * column_s.
struct ColumnGrid {
  double x0 = 0, w = 0;
  size_t columns = 1;
  double start_s = 0, column_s = 0;
  double X(size_t c) const { return x0 + w * c / columns; }
  std::string Time(size_t c) const {
    return Seconds(start_s + c * column_s) + "-" + Seconds(start_s + (c + 1) * column_s) + " s";
  }
};

// An SVG document written element by element.
class Canvas {
 public:
  explicit Canvas(std::ostream& out) : out_(out) {}
  std::ostream& out() { return out_; }

  // The document's start: the XML declaration, the <svg> element, a white background.
  void Begin(double width, double height);
  void Text(double x, double y, std::string_view text, std::string_view attrs = "");
  void Frame(double x, double y, double w, double h);  // a black outline
  void LatencyTicksY(const LogAxis& axis, double x);
  void LatencyTicksX(const LogAxis& axis, double y);
  // Seconds under a time axis from grid.start_s across the grid's columns.
  void TimeTicks(const ColumnGrid& grid, double y);
  // The colour scale of the heatmaps: requests in a cell, 1 to cell_max on a log scale.
  void ColourScale(double x, double y, double w, uint64_t cell_max);
  // The cells of a heatmap (`lat` with its pixels set), coloured on the scale up to cell_max,
  // each with a title; `data-n` holds each rectangle's requests.
  void HeatmapCells(const std::vector<Column>& columns, const ColumnGrid& grid,
                    const LogAxis& lat, uint64_t cell_max);
  // p50, p99 and max of each column as steps over the heatmap.
  void PercentileLines(const std::vector<Column>& columns, const ColumnGrid& grid,
                       const LogAxis& lat);
  // The percentile axis of a spectrum under y1 (p0, p90, p99, ...), its name ending at `right`.
  void SpectrumTicks(const LogAxis& x_axis, double y1, double right);

 private:
  std::ostream& out_;
};

// The CDF of a group's rows as a path across the latency axis `lat` (pixels along x), from 0
// at `y1` to 100% at `y1 - h`.
std::string CdfPath(const Rows& rows, uint64_t count, const LogAxis& lat, double y1, double h);
// The decades of 1/(1-p) a spectrum of `count` requests reaches (p99.9 needs a thousand).
int SpectrumDecades(uint64_t count);
// The percentile spectrum of a group as a path: x = 1/(1-p) on `x_axis`, latency on `lat`
// (pixels along y), up to `decades`.
std::string SpectrumPath(const LatencyGroup& g, int decades, const LogAxis& x_axis,
                         const LogAxis& lat);

}  // namespace iotrace::svg

#endif  // IOTRACE_SRC_OUTPUT_SVG_DRAW_H_
