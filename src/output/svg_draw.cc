#include "svg_draw.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "iotrace/output/svg_plot.h"

namespace iotrace::svg {
namespace {

// Viridis (van der Walt and Smith, matplotlib's default map; its data are CC0), every 16th of
// its 256 points and the last.
constexpr std::array<std::array<double, 3>, 17> kViridis = {{
    {0.267004, 0.004874, 0.329415}, {0.282327, 0.094955, 0.417331},
    {0.278826, 0.175490, 0.483397}, {0.258965, 0.251537, 0.524736},
    {0.229739, 0.322361, 0.545706}, {0.199430, 0.387607, 0.554642},
    {0.172719, 0.448791, 0.557885}, {0.149039, 0.508051, 0.557250},
    {0.127568, 0.566949, 0.550556}, {0.120638, 0.625828, 0.533488},
    {0.157851, 0.683765, 0.501686}, {0.246070, 0.738910, 0.452024},
    {0.369214, 0.788888, 0.382914}, {0.515992, 0.831158, 0.294279},
    {0.678489, 0.863742, 0.189503}, {0.845561, 0.887322, 0.099702},
    {0.993248, 0.906157, 0.143936},
}};
// The points above sit at 0, 16/255, ..., 240/255 and 1.
double ViridisAt(size_t i) { return i + 1 == kViridis.size() ? 1.0 : i * 16 / 255.0; }

}  // namespace

std::string Viridis(double t) {
  t = std::clamp(t, 0.0, 1.0);
  size_t i = 0;
  while (i + 2 < kViridis.size() && t > ViridisAt(i + 1)) ++i;
  const double f = (t - ViridisAt(i)) / (ViridisAt(i + 1) - ViridisAt(i));
  int rgb[3];
  for (int c = 0; c < 3; ++c) {
    const double v = kViridis[i][c] + (kViridis[i + 1][c] - kViridis[i][c]) * f;
    rgb[c] = static_cast<int>(std::lround(v * 255));
  }
  return absl::StrFormat("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

std::string Num(double v) { return absl::StrFormat("%.1f", v); }

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Ns(double ns) {
  if (ns < 1e3) return absl::StrFormat("%.4g ns", ns);
  if (ns < 1e6) return absl::StrFormat("%.4g us", ns / 1e3);
  if (ns < 1e9) return absl::StrFormat("%.4g ms", ns / 1e6);
  return absl::StrFormat("%.4g s", ns / 1e9);
}

std::string Seconds(double s) { return absl::StrFormat("%.6g", s); }

std::string Percent(double part, double whole) {
  return absl::StrFormat("%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
}

double NiceStep(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v * (1 - 1e-9)) return m * p;
  }
  return 10 * p;
}

std::string DecadeLabel(int d) { return Ns(std::pow(10.0, d)); }

LogAxis LatencyDecades(uint64_t lo_ns, uint64_t hi_ns) {
  LogAxis axis;
  const double lo = std::max<double>(1, SvgRowLow(SvgRowOf(lo_ns)));
  const double hi = SvgRowLow(SvgRowOf(hi_ns) + 1);
  axis.lo = static_cast<int>(std::floor(std::log10(lo)));
  axis.hi = std::max(axis.lo + 1, static_cast<int>(std::ceil(std::log10(hi) - 1e-9)));
  return axis;
}

Rows RowsOf(std::span<const LatencyBucket> buckets) {
  Rows rows;
  for (const LatencyBucket& b : buckets) {
    const int row = SvgRowOf(b.lo_ns);
    if (!rows.empty() && rows.back().first == row) {
      rows.back().second += b.count;
    } else {
      rows.emplace_back(row, b.count);
    }
  }
  return rows;
}

std::vector<Run> RunsOf(const Column& c) {
  std::vector<Run> runs;
  for (const auto& [key, n] : c.rows) {
    if (!runs.empty() && runs.back().last + 1 == key && runs.back().each == n) {
      runs.back().last = key;
    } else {
      runs.push_back({key, key, n});
    }
  }
  return runs;
}

// The intervals come in time order, so a column's are consecutive: their buckets are gathered,
// sorted and added up once per column.
void FillColumns(Series& p, size_t n_columns, uint64_t per_column) {
  p.columns.assign(n_columns, Column{});
  std::vector<LatencyBucket> merged;
  size_t open = n_columns;  // the column `merged` holds
  auto close = [&]() {
    if (open == n_columns) return;
    Column& c = p.columns[open];
    std::sort(merged.begin(), merged.end(),
              [](const LatencyBucket& a, const LatencyBucket& b) { return a.lo_ns < b.lo_ns; });
    size_t kept = 0;
    for (const LatencyBucket& b : merged) {
      if (kept != 0 && merged[kept - 1].lo_ns == b.lo_ns) {
        merged[kept - 1].count += b.count;
      } else {
        merged[kept++] = b;
      }
    }
    merged.resize(kept);
    c.rows = RowsOf(merged);
    if (c.count != 0) {
      c.p50_ns = BucketPercentile(merged, c.count, c.min_ns, c.max_ns, 50);
      c.p99_ns = BucketPercentile(merged, c.count, c.min_ns, c.max_ns, 99);
    }
    merged.clear();
  };
  for (size_t i = 0; i < p.intervals.size(); ++i) {
    const LatencyGroup& g = *p.groups[i];
    const size_t at = std::min<size_t>(p.intervals[i]->index / per_column, n_columns - 1);
    Column& c = p.columns[at];
    c.lossy |= g.outside_coverage != 0 || g.partial;
    if (g.summary.count == 0) continue;
    c.count += g.summary.count;
    c.min_ns = std::min(c.min_ns, g.summary.min_ns);
    c.max_ns = std::max(c.max_ns, g.summary.max_ns);
    if (per_column == 1) {  // the interval's own numbers
      c.p50_ns = g.summary.p50_ns;
      c.p99_ns = g.summary.p99_ns;
      c.rows = RowsOf(g.buckets.ToVector());
      continue;
    }
    if (at != open) close();
    open = at;
    merged.insert(merged.end(), g.buckets.begin(), g.buckets.end());
  }
  close();
  p.rects = 0;
  for (const Column& c : p.columns) p.rects += RunsOf(c).size();
}

uint64_t IntervalCount(const LatencyReport& r) {
  uint64_t intervals = 1;
  for (const LatencyInterval& iv : r.intervals) intervals = std::max(intervals, iv.index + 1);
  if (r.interval_s > 0) {
    intervals = std::max<uint64_t>(intervals, r.duration_s() / r.interval_s + 1);
  }
  return intervals;
}

uint64_t ChooseColumns(const std::vector<Series*>& series, uint64_t intervals,
                       size_t max_columns, size_t max_cells, size_t* columns) {
  max_columns = std::max<size_t>(max_columns, 1);
  uint64_t per_column = (intervals + max_columns - 1) / max_columns;
  while (true) {
    *columns = (intervals + per_column - 1) / per_column;
    size_t rects = 0;
    for (Series* s : series) {
      FillColumns(*s, *columns, per_column);
      rects += s->rects;
    }
    if (rects <= max_cells || *columns == 1) return per_column;
    per_column *= 2;
  }
}

uint64_t CellMax(const Series& s) {
  uint64_t most = 1;
  for (const Column& c : s.columns) {
    for (const auto& [key, n] : c.rows) most = std::max(most, n);
  }
  return most;
}

void Canvas::Begin(double width, double height) {
  out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
       << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Num(width) << "\" height=\""
       << Num(height) << "\" viewBox=\"0 0 " << Num(width) << " " << Num(height)
       << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
       << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
}

void Canvas::Text(double x, double y, std::string_view text, std::string_view attrs) {
  out_ << "<text x=\"" << Num(x) << "\" y=\"" << Num(y) << "\"" << (attrs.empty() ? "" : " ")
       << attrs << ">" << Escape(text) << "</text>\n";
}

void Canvas::Frame(double x, double y, double w, double h) {
  out_ << "<rect x=\"" << Num(x) << "\" y=\"" << Num(y) << "\" width=\"" << Num(w)
       << "\" height=\"" << Num(h) << "\" fill=\"none\" stroke=\"#000\"/>\n";
}

void Canvas::LatencyTicksY(const LogAxis& axis, double x) {
  for (int d = axis.lo; d <= axis.hi; ++d) {
    const double y = axis.At(std::pow(10.0, d));
    out_ << "<path d=\"M" << Num(x - 5) << " " << Num(y) << "h5\" stroke=\"#000\"/>\n";
    Text(x - 7, y + 4, DecadeLabel(d), "text-anchor=\"end\"");
    if (d == axis.hi) break;
    for (int m = 2; m <= 9; ++m) {
      out_ << "<path d=\"M" << Num(x - 3) << " " << Num(axis.At(m * std::pow(10.0, d)))
           << "h3\" stroke=\"#000\"/>\n";
    }
  }
}

void Canvas::LatencyTicksX(const LogAxis& axis, double y) {
  for (int d = axis.lo; d <= axis.hi; ++d) {
    const double x = axis.At(std::pow(10.0, d));
    out_ << "<path d=\"M" << Num(x) << " " << Num(y) << "v5\" stroke=\"#000\"/>\n";
    Text(x, y + 16, DecadeLabel(d), "text-anchor=\"middle\"");
    if (d == axis.hi) break;
    for (int m = 2; m <= 9; ++m) {
      out_ << "<path d=\"M" << Num(axis.At(m * std::pow(10.0, d))) << " " << Num(y)
           << "v3\" stroke=\"#000\"/>\n";
    }
  }
}

void Canvas::TimeTicks(const ColumnGrid& grid, double y) {
  const double total = grid.columns * grid.column_s;
  const double step = NiceStep(total / 8);
  for (double t = std::ceil(grid.start_s / step - 1e-9) * step;
       t <= grid.start_s + total * (1 + 1e-9); t += step) {
    const double x = grid.x0 + grid.w * (t - grid.start_s) / total;
    out_ << "<path d=\"M" << Num(x) << " " << Num(y) << "v5\" stroke=\"#000\"/>\n";
    Text(x, y + 16, Seconds(std::abs(t) < step * 1e-9 ? 0 : t), "text-anchor=\"middle\"");
  }
  Text(grid.x0 + grid.w, y + 30, "time since the first event (s)", "text-anchor=\"end\"");
}

void Canvas::ColourScale(double bar_x, double bar_y, double bar_w, uint64_t cell_max) {
  Text(bar_x, bar_y - 6, "requests in a cell (log scale)");
  constexpr int kSteps = 56;
  for (int i = 0; i < kSteps; ++i) {
    out_ << "<rect x=\"" << Num(bar_x + bar_w * i / kSteps) << "\" y=\"" << Num(bar_y)
         << "\" width=\"" << Num(bar_w / kSteps + 0.3) << "\" height=\"10\" fill=\""
         << Viridis(i / (kSteps - 1.0)) << "\"/>\n";
  }
  const double top = std::log10(static_cast<double>(cell_max));
  for (uint64_t v = 1; v <= cell_max; v *= 10) {
    const double x = top > 0 ? bar_x + bar_w * std::log10(static_cast<double>(v)) / top : bar_x;
    if (v != 1 && x > bar_x + bar_w - 60) break;  // room for the "max" label
    out_ << "<path d=\"M" << Num(x) << " " << Num(bar_y + 10) << "v4\" stroke=\"#000\"/>\n";
    Text(x, bar_y + 24, absl::StrFormat("%u", v), "text-anchor=\"middle\"");
  }
  Text(bar_x + bar_w, bar_y + 24, absl::StrFormat("max %u", cell_max), "text-anchor=\"end\"");
}

void Canvas::HeatmapCells(const std::vector<Column>& columns, const ColumnGrid& grid,
                          const LogAxis& lat, uint64_t cell_max) {
  const double log_max = std::log10(static_cast<double>(cell_max));
  out_ << "<g class=\"heatmap\">\n";
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& c = columns[i];
    uint64_t below = 0;
    for (const Run& run : RunsOf(c)) {
      const uint64_t lo = SvgRowLow(run.first), hi = SvgRowLow(run.last + 1);
      const uint64_t rows = run.last - run.first + 1;
      const double ya = lat.At(static_cast<double>(hi)), yb = lat.At(static_cast<double>(lo));
      const double t = log_max > 0 ? std::log10(static_cast<double>(run.each)) / log_max : 1;
      std::string title = grid.Time(i) + ", " + Ns(lo) + "-" + Ns(hi);
      if (rows == 1) {
        title += absl::StrFormat(": %u requests, %s of the column, %s cumulative", run.each,
                                 Percent(run.each, c.count),
                                 Percent(below + run.each, c.count));
      } else {
        title += absl::StrFormat(
            " (%u rows): %u requests each, %u in all, %s of the column each, %s-%s cumulative",
            rows, run.each, run.each * rows, Percent(run.each, c.count),
            Percent(below + run.each, c.count), Percent(below + run.each * rows, c.count));
      }
      below += run.each * rows;
      out_ << "<rect x=\"" << Num(grid.X(i)) << "\" y=\"" << Num(ya) << "\" width=\""
           << Num(grid.X(i + 1) - grid.X(i)) << "\" height=\"" << Num(yb - ya)
           << "\" fill=\"" << Viridis(t) << "\" data-n=\"" << run.each * rows << "\"><title>"
           << Escape(title) << "</title></rect>\n";
    }
  }
  out_ << "</g>\n";
}

void Canvas::PercentileLines(const std::vector<Column>& columns, const ColumnGrid& grid,
                             const LogAxis& lat) {
  // A white casing keeps the lines visible on any colour; data-ns holds the values, "-" for a
  // column without requests.
  struct Line {
    const char* name;
    uint64_t Column::*value;
    const char* colour;
    const char* dash;
  };
  for (const Line& l : {Line{"p50", &Column::p50_ns, "#000000", ""},
                        Line{"p99", &Column::p99_ns, kAlert, ""},
                        Line{"max", &Column::max_ns, "#000000", "2 2"}}) {
    std::string d, values;
    bool open = false;
    for (size_t i = 0; i < columns.size(); ++i) {
      const Column& c = columns[i];
      values += (i == 0 ? "" : " ");
      if (c.count == 0) {
        values += "-";
        open = false;
        continue;
      }
      const uint64_t v = c.*(l.value);
      values += absl::StrFormat("%u", v);
      const std::string y = Num(lat.At(static_cast<double>(v)));
      absl::StrAppend(&d, open ? "V" : absl::StrCat("M", Num(grid.X(i)), " "), y, "H",
                      Num(grid.X(i + 1)));
      open = true;
    }
    out_ << "<path d=\"" << d << "\" fill=\"none\" stroke=\"#ffffff\" stroke-width=\"3\"/>\n";
    out_ << "<path class=\"" << l.name << "\" d=\"" << d << "\" fill=\"none\" stroke=\""
         << l.colour << "\" stroke-width=\"1.5\"" << (*l.dash ? " stroke-dasharray=\"" : "")
         << l.dash << (*l.dash ? "\"" : "") << " data-ns=\"" << values << "\"><title>"
         << l.name << " per column</title></path>\n";
  }
}

void Canvas::SpectrumTicks(const LogAxis& x_axis, double y1, double right) {
  for (int i = x_axis.lo; i <= x_axis.hi; ++i) {
    const double x = x_axis.At(std::pow(10.0, i));
    out_ << "<path d=\"M" << Num(x) << " " << Num(y1) << "v5\" stroke=\"#000\"/>\n";
    // 10^i is the percentile 100 (1 - 10^-i): p0, p90, p99, p99.9, ...
    std::string label = i == 0 ? "p0" : "p90";
    if (i >= 2) label = absl::StrFormat("p%.*f", i - 2, 100 * (1 - std::pow(10.0, -i)));
    Text(x, y1 + 16, label, "text-anchor=\"middle\"");
  }
  Text(right, y1 + 30, "percentile (x = 1/(1-p), log scale)", "text-anchor=\"end\"");
}

std::string CdfPath(const Rows& rows, uint64_t count, const LogAxis& lat, double y1, double h) {
  uint64_t below = 0;
  std::string cdf;
  for (const auto& [key, n] : rows) {
    const double xa = lat.At(static_cast<double>(SvgRowLow(key)));
    const double cdf_from = y1 - h * below / count;
    below += n;
    const double cdf_to = y1 - h * below / count;
    absl::StrAppend(&cdf, cdf.empty() ? absl::StrCat("M", Num(xa), " ", Num(cdf_from))
                                      : absl::StrCat("H", Num(xa)),
                    "V", Num(cdf_to));
  }
  absl::StrAppend(&cdf, "H", Num(lat.b));
  return cdf;
}

int SpectrumDecades(uint64_t count) {
  return std::clamp(static_cast<int>(std::ceil(std::log10(static_cast<double>(count)))), 1, 6);
}

std::string SpectrumPath(const LatencyGroup& g, int decades, const LogAxis& x_axis,
                         const LogAxis& lat) {
  std::string d;
  const std::vector<LatencyBucket> buckets = g.buckets.ToVector();
  for (int j = 0; j <= decades * 10; ++j) {
    const double tail = std::pow(10.0, -j / 10.0);
    const uint64_t v = BucketPercentile(buckets, g.summary.count, g.summary.min_ns,
                                        g.summary.max_ns, 100 * (1 - tail));
    absl::StrAppend(&d, j == 0 ? "M" : "L", Num(x_axis.At(1 / tail)), " ", Num(lat.At(v)));
  }
  return d;
}

}  // namespace iotrace::svg
