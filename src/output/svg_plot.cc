#include "iotrace/output/svg_plot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "iotrace/event/block_dev.h"

namespace iotrace {
namespace {

// Viridis (van der Walt and Smith, matplotlib's default map; its data are CC0), every 16th of
// its 256 points and the last: perceptually uniform, readable in grey and by the colour-blind.
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

// Okabe and Ito's vermillion: apart from every viridis colour, for the p99 line and losses.
constexpr char kAlert[] = "#d55e00";
// Unpaired events are often no fault (issues without an insert on a disk without a scheduler,
// flushes): a grey mark, apart from the losses'.
constexpr char kUnpaired[] = "#888888";

// Layout, in pixels. A panel: its header, the IOPS strip, the heatmap, then the histogram and
// the spectrum side by side.
constexpr double kWidth = 1000;
constexpr double kLeft = 80;
constexpr double kPlotW = 840;
constexpr double kRight = kLeft + kPlotW;
constexpr double kPageTop = 96;
constexpr double kPanelH = 540;
constexpr double kIopsTop = 44, kIopsH = 36;
constexpr double kHeatTop = 90, kHeatH = 200;
constexpr double kDistTop = 340, kDistH = 150;
constexpr double kHistW = 400;
constexpr double kSpecLeft = kLeft + 460, kSpecW = kRight - kSpecLeft;

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

// 1, 2 or 5 times a power of ten, at least `v`.
double NiceStep(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v * (1 - 1e-9)) return m * p;
  }
  return 10 * p;
}

// A log10 axis over whole decades [lo, hi], drawn over [a, b] pixels.
struct LogAxis {
  int lo = 0, hi = 1;
  double a = 0, b = 1;
  double At(double v) const {
    const double x = std::log10(std::max(v, 1.0));
    return a + (b - a) * (x - lo) / (hi - lo);
  }
};

std::string DecadeLabel(int d) { return Ns(std::pow(10.0, d)); }

// Heatmap rows of buckets (sorted by latency): (row, count), by row.
using Rows = std::vector<std::pair<int, uint64_t>>;

Rows RowsOf(const std::vector<LatencyBucket>& buckets) {
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

// One heatmap column: the intervals merged into it.
struct Column {
  uint64_t count = 0;
  uint64_t min_ns = ~uint64_t{0};
  uint64_t max_ns = 0;
  uint64_t p50_ns = 0, p99_ns = 0;
  bool lossy = false;
  Rows rows;
};

struct Panel {
  const LatencyGroup* total = nullptr;
  std::vector<const LatencyInterval*> intervals;  // those holding this group
  std::vector<const LatencyGroup*> groups;        // its group in each
  std::vector<Column> columns;
  size_t rects = 0;
  LogAxis lat;  // the latency axis (decades), pixels set where drawn
};

// A run of rows of one column with the same count: one rectangle.
struct Run {
  int first = 0, last = 0;
  uint64_t each = 0;
};

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

// The columns of `per_column` intervals each. The intervals come in time order, so a column's
// are consecutive: their buckets are gathered, sorted and added up once per column.
void FillColumns(Panel& p, size_t n_columns, uint64_t per_column) {
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
      c.rows = RowsOf(g.buckets);
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

class SvgWriter {
 public:
  SvgWriter(const LatencyReport& r, const SvgPlotOptions& o, std::ostream& out)
      : r_(r), o_(o), out_(out) {}
  void Write();

 private:
  void Layout();
  void Header(double height);
  void DrawPanel(const Panel& p, double top);
  void DrawHeatmap(const Panel& p, double top);
  void DrawDistribution(const Panel& p, double top);
  void DrawSpectrum(const Panel& p, double top);
  void LatencyTicksY(const LogAxis& axis, double x);
  void LatencyTicksX(const LogAxis& axis, double y);
  void TimeTicks(double y);
  void Text(double x, double y, std::string_view text, std::string_view attrs = "");
  double ColumnX(size_t c) const { return kLeft + kPlotW * c / columns_; }
  std::string ColumnTime(size_t c) const {
    return Seconds(o_.start_s + c * column_s_) + "-" + Seconds(o_.start_s + (c + 1) * column_s_) +
           " s";
  }

  const LatencyReport& r_;
  const SvgPlotOptions& o_;
  std::ostream& out_;
  std::vector<Panel> panels_;
  size_t columns_ = 1;
  uint64_t per_column_ = 1;  // intervals per column
  double column_s_ = 0;
  uint64_t cell_max_ = 1;  // the colour scale's top: the largest count in one cell
  std::vector<bool> gap_columns_;  // a gap of the data (losses placed in time) touches it
  std::vector<uint64_t> lost_, unpaired_;  // per column (live's intervals count them)
  uint64_t lost_total_ = 0;
};

void SvgWriter::Layout() {
  std::map<std::tuple<uint32_t, std::string, BlockOp, Phase>, size_t> index;
  for (const LatencyGroup& g : r_.groups) {
    index[{g.dev, g.by, g.op, g.phase}] = panels_.size();
    panels_.emplace_back().total = &g;
  }
  uint64_t intervals = 1;
  for (const LatencyInterval& iv : r_.intervals) {
    intervals = std::max(intervals, iv.index + 1);
    for (const LatencyGroup& g : iv.groups) {
      auto it = index.find({g.dev, g.by, g.op, g.phase});
      if (it == index.end()) continue;
      panels_[it->second].intervals.push_back(&iv);
      panels_[it->second].groups.push_back(&g);
    }
  }
  const double interval_s = r_.interval_s > 0 ? r_.interval_s : std::max(r_.duration_s(), 1e-9);
  if (r_.interval_s > 0) {
    intervals = std::max<uint64_t>(intervals, r_.duration_s() / r_.interval_s + 1);
  }
  const size_t max_columns = std::max<size_t>(o_.max_columns, 1);
  per_column_ = (intervals + max_columns - 1) / max_columns;
  while (true) {
    columns_ = (intervals + per_column_ - 1) / per_column_;
    size_t rects = 0;
    for (Panel& p : panels_) {
      FillColumns(p, columns_, per_column_);
      rects += p.rects;
    }
    if (rects <= o_.max_cells || columns_ == 1) break;
    per_column_ *= 2;
  }
  column_s_ = interval_s * per_column_;
  lost_.assign(columns_, 0);
  unpaired_.assign(columns_, 0);
  for (const LossSummary& l : r_.completeness.losses) lost_total_ += l.count;
  for (const LatencyInterval& iv : r_.intervals) {
    const size_t c = std::min<size_t>(iv.index / per_column_, columns_ - 1);
    lost_[c] += iv.lost;
    unpaired_[c] += iv.unpaired;
    lost_total_ += iv.lost;
  }
  gap_columns_.assign(columns_, false);
  for (const DataGap& g : r_.coverage.gaps) {
    const double from = (static_cast<double>(g.after_ts) - r_.first_ts_ns) / 1e9;
    const double to = g.open_end() ? r_.duration_s()
                                   : (static_cast<double>(g.before_ts) - r_.first_ts_ns) / 1e9;
    for (size_t c = 0; c < columns_; ++c) {
      if (from < (c + 1) * column_s_ && to >= c * column_s_) gap_columns_[c] = true;
    }
  }
  for (Panel& p : panels_) {
    for (const Column& c : p.columns) {
      for (const auto& [key, n] : c.rows) cell_max_ = std::max(cell_max_, n);
    }
    const LatencyGroup& g = *p.total;
    if (g.buckets.empty()) continue;
    const double lo = std::max<double>(1, SvgRowLow(SvgRowOf(g.buckets.front().lo_ns)));
    const double hi = SvgRowLow(SvgRowOf(g.buckets.back().lo_ns) + 1);
    p.lat.lo = static_cast<int>(std::floor(std::log10(lo)));
    p.lat.hi = std::max(p.lat.lo + 1, static_cast<int>(std::ceil(std::log10(hi) - 1e-9)));
  }
}

void SvgWriter::Text(double x, double y, std::string_view text, std::string_view attrs) {
  out_ << "<text x=\"" << Num(x) << "\" y=\"" << Num(y) << "\"" << (attrs.empty() ? "" : " ")
       << attrs << ">" << Escape(text) << "</text>\n";
}

void SvgWriter::Header(double height) {
  out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
       << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Num(kWidth) << "\" height=\""
       << Num(height) << "\" viewBox=\"0 0 " << Num(kWidth) << " " << Num(height)
       << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
       << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  Text(10, 18,
       o_.title.empty() ? "iotrace report: " + r_.input + " (" + r_.file_format + ")" : o_.title,
       "font-size=\"14\" font-weight=\"bold\"");
  std::string line = absl::StrFormat("host %s, %.6g s", o_.host.empty() ? "unknown" : o_.host,
                                     r_.duration_s());
  if (r_.interval_s > 0) {
    line += absl::StrFormat(", %zu column%s of %s s", columns_, columns_ == 1 ? "" : "s",
                            Seconds(column_s_));
  }
  Text(10, 34, line);
  if (per_column_ > 1) {
    Text(10, 50,
         absl::StrFormat("columns coarsened: each holds %u intervals of %s s (at most %zu "
                         "columns and %zu heatmap rectangles)",
                         per_column_, Seconds(r_.interval_s), o_.max_columns, o_.max_cells),
         absl::StrFormat("fill=\"%s\"", kAlert));
  }
  if (!r_.warnings.empty() || !r_.coverage.complete) {
    Text(10, 66, "the data is incomplete: see iotrace report's warnings; marked columns lost "
                 "events or had samples left out", absl::StrFormat("fill=\"%s\"", kAlert));
  }
  // The colour scale, shared by every heatmap: requests in one cell, log scale.
  const double bar_x = 640, bar_w = 280, bar_y = 26;
  Text(bar_x, bar_y - 6, "requests in a cell (log scale)");
  constexpr int kSteps = 56;
  for (int i = 0; i < kSteps; ++i) {
    out_ << "<rect x=\"" << Num(bar_x + bar_w * i / kSteps) << "\" y=\"" << Num(bar_y)
         << "\" width=\"" << Num(bar_w / kSteps + 0.3) << "\" height=\"10\" fill=\""
         << Viridis(i / (kSteps - 1.0)) << "\"/>\n";
  }
  const double top = std::log10(static_cast<double>(cell_max_));
  for (uint64_t v = 1; v <= cell_max_; v *= 10) {
    const double x = top > 0 ? bar_x + bar_w * std::log10(static_cast<double>(v)) / top : bar_x;
    if (v != 1 && x > bar_x + bar_w - 60) break;  // room for the "max" label
    out_ << "<path d=\"M" << Num(x) << " " << Num(bar_y + 10) << "v4\" stroke=\"#000\"/>\n";
    Text(x, bar_y + 24, absl::StrFormat("%u", v), "text-anchor=\"middle\"");
  }
  Text(bar_x + bar_w, bar_y + 24, absl::StrFormat("max %u", cell_max_), "text-anchor=\"end\"");
  const double ly = bar_y + 44;
  struct Key {
    const char* name;
    const char* colour;
    const char* dash;
  };
  double x = bar_x;
  for (const Key& k : {Key{"p50", "#000000", ""}, Key{"p99", kAlert, ""},
                       Key{"max", "#000000", "2 2"}}) {
    out_ << "<path d=\"M" << Num(x) << " " << Num(ly - 4) << "h18\" stroke=\"" << k.colour
         << "\" stroke-width=\"1.5\"" << (*k.dash ? " stroke-dasharray=\"" : "") << k.dash
         << (*k.dash ? "\"" : "") << "/>\n";
    Text(x + 22, ly, k.name);
    x += 60;
  }
  out_ << "<rect x=\"" << Num(x) << "\" y=\"" << Num(ly - 8) << "\" width=\"10\" height=\"4\" "
       << "fill=\"" << kAlert << "\"/>\n";
  Text(x + 14, ly, "lost events or data missing");
  out_ << "<rect x=\"" << Num(x) << "\" y=\"" << Num(ly + 6) << "\" width=\"10\" height=\"3\" "
       << "fill=\"" << kUnpaired << "\"/>\n";
  Text(x + 14, ly + 14, "unpaired events (live)");
}

void SvgWriter::LatencyTicksY(const LogAxis& axis, double x) {
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

void SvgWriter::LatencyTicksX(const LogAxis& axis, double y) {
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

void SvgWriter::TimeTicks(double y) {
  const double total = columns_ * column_s_;
  const double step = NiceStep(total / 8);
  for (double t = std::ceil(o_.start_s / step - 1e-9) * step;
       t <= o_.start_s + total * (1 + 1e-9); t += step) {
    const double x = kLeft + kPlotW * (t - o_.start_s) / total;
    out_ << "<path d=\"M" << Num(x) << " " << Num(y) << "v5\" stroke=\"#000\"/>\n";
    Text(x, y + 16, Seconds(std::abs(t) < step * 1e-9 ? 0 : t), "text-anchor=\"middle\"");
  }
  Text(kRight, y + 30, "time since the first event (s)", "text-anchor=\"end\"");
}

void SvgWriter::DrawPanel(const Panel& p, double top) {
  const LatencyGroup& g = *p.total;
  std::string device = g.device + " (" + DevString(g.dev) + ")";
  for (const auto& [dev, model] : o_.models) {
    if (dev == g.dev && !model.empty()) device += ", " + model;
  }
  if (!r_.by.empty()) device += absl::StrCat(" ", r_.by, " ", g.by);
  out_ << absl::StrFormat(
      "<g class=\"panel\" data-dev=\"%s\" data-op=\"%s\" data-phase=\"%s\" data-count=\"%u\">\n",
      DevString(g.dev), BlockOpName(g.op), PhaseName(g.phase), g.summary.count);
  out_ << "<path d=\"M10 " << Num(top) << "H" << Num(kWidth - 10) << "\" stroke=\"#999\"/>\n";
  Text(10, top + 18,
       absl::StrFormat("%s %s %s", device, BlockOpName(g.op), PhaseName(g.phase)),
       "font-size=\"13\" font-weight=\"bold\"");
  std::string facts = absl::StrFormat(
      "host %s; %s-%s s; %u requests; p50 %s, p99 %s, max %s; lost events %u",
      o_.host.empty() ? "unknown" : o_.host, Seconds(o_.start_s),
      Seconds(o_.start_s + r_.duration_s()), g.summary.count, Ns(g.summary.p50_ns),
      Ns(g.summary.p99_ns), Ns(g.summary.max_ns), lost_total_);
  if (g.outside_coverage != 0) {
    facts += absl::StrFormat("; %u left out (gaps in the data)", g.outside_coverage);
  }
  Text(10, top + 34, facts, g.incomplete || g.partial
                                ? absl::StrFormat("fill=\"%s\"", kAlert)
                                : std::string());
  if (g.summary.count == 0) {
    Text(kLeft, top + kHeatTop, "no samples of this phase in the data covered");
    out_ << "</g>\n";
    return;
  }
  DrawHeatmap(p, top);
  DrawDistribution(p, top);
  DrawSpectrum(p, top);
  out_ << "</g>\n";
}

void SvgWriter::DrawHeatmap(const Panel& p, double top) {
  // IOPS strip: requests of this phase ended per second in each column.
  double iops_max = 0;
  for (const Column& c : p.columns) iops_max = std::max(iops_max, c.count / column_s_);
  const double strip = top + kIopsTop;
  Text(10, strip + 12, "IOPS");
  Text(10, strip + 26, iops_max < 1e4 ? absl::StrFormat("max %.0f", iops_max)
                                       : absl::StrFormat("max %.0fk", iops_max / 1e3));
  out_ << "<g class=\"iops\" fill=\"#777777\">\n";
  for (size_t i = 0; i < p.columns.size(); ++i) {
    if (p.columns[i].count == 0) continue;
    const double h = kIopsH * (p.columns[i].count / column_s_) / iops_max;
    out_ << "<rect x=\"" << Num(ColumnX(i)) << "\" y=\"" << Num(strip + kIopsH - h)
         << "\" width=\"" << Num(ColumnX(i + 1) - ColumnX(i)) << "\" height=\"" << Num(h)
         << "\"><title>" << ColumnTime(i)
         << absl::StrFormat(": %u requests, %.6g/s", p.columns[i].count,
                            p.columns[i].count / column_s_)
         << "</title></rect>\n";
  }
  out_ << "</g>\n";

  const double y0 = top + kHeatTop;
  LogAxis lat = p.lat;
  lat.a = y0 + kHeatH;
  lat.b = y0;
  out_ << "<rect x=\"" << Num(kLeft) << "\" y=\"" << Num(y0) << "\" width=\"" << Num(kPlotW)
       << "\" height=\"" << Num(kHeatH) << "\" fill=\"none\" stroke=\"#000\"/>\n";
  LatencyTicksY(lat, kLeft);
  TimeTicks(y0 + kHeatH);
  // Columns that lost events or had samples left out: a mark above the column.
  for (size_t i = 0; i < p.columns.size(); ++i) {
    const double w = std::max(ColumnX(i + 1) - ColumnX(i), 1.0);
    if (p.columns[i].lossy || gap_columns_[i] || lost_[i] != 0) {
      std::string why = ColumnTime(i) + ":";
      if (p.columns[i].lossy || gap_columns_[i]) {
        why += " events were lost or samples left out here (gaps in the data);";
      }
      if (lost_[i] != 0) why += absl::StrFormat(" %u events lost;", lost_[i]);
      why.pop_back();
      out_ << "<rect class=\"lost\" x=\"" << Num(ColumnX(i)) << "\" y=\"" << Num(y0 - 5)
           << "\" width=\"" << Num(w) << "\" height=\"4\" fill=\"" << kAlert << "\"><title>"
           << why << "</title></rect>\n";
    }
    if (unpaired_[i] != 0) {
      out_ << "<rect class=\"unpaired\" x=\"" << Num(ColumnX(i)) << "\" y=\"" << Num(y0 - 9)
           << "\" width=\"" << Num(w) << "\" height=\"3\" fill=\"" << kUnpaired << "\"><title>"
           << ColumnTime(i)
           << absl::StrFormat(": %u events unpaired (issues without an insert, completions "
                              "without an issue, requeues of requests not seen issued)",
                              unpaired_[i])
           << "</title></rect>\n";
    }
  }
  const double log_max = std::log10(static_cast<double>(cell_max_));
  out_ << "<g class=\"heatmap\">\n";
  for (size_t i = 0; i < p.columns.size(); ++i) {
    const Column& c = p.columns[i];
    uint64_t below = 0;
    for (const Run& run : RunsOf(c)) {
      const uint64_t lo = SvgRowLow(run.first), hi = SvgRowLow(run.last + 1);
      const uint64_t rows = run.last - run.first + 1;
      const double ya = lat.At(static_cast<double>(hi)), yb = lat.At(static_cast<double>(lo));
      const double t = log_max > 0 ? std::log10(static_cast<double>(run.each)) / log_max : 1;
      std::string title = ColumnTime(i) + ", " + Ns(lo) + "-" + Ns(hi);
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
      out_ << "<rect x=\"" << Num(ColumnX(i)) << "\" y=\"" << Num(ya) << "\" width=\""
           << Num(ColumnX(i + 1) - ColumnX(i)) << "\" height=\"" << Num(yb - ya)
           << "\" fill=\"" << Viridis(t) << "\" data-n=\"" << run.each * rows << "\"><title>"
           << Escape(title) << "</title></rect>\n";
    }
  }
  out_ << "</g>\n";
  // p50, p99 and max per column as steps (a white casing keeps them visible on any colour);
  // data-ns holds the values, "-" for a column without requests.
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
    for (size_t i = 0; i < p.columns.size(); ++i) {
      const Column& c = p.columns[i];
      values += (i == 0 ? "" : " ");
      if (c.count == 0) {
        values += "-";
        open = false;
        continue;
      }
      const uint64_t v = c.*(l.value);
      values += absl::StrFormat("%u", v);
      const std::string y = Num(lat.At(static_cast<double>(v)));
      absl::StrAppend(&d, open ? "V" : absl::StrCat("M", Num(ColumnX(i)), " "), y, "H",
                      Num(ColumnX(i + 1)));
      open = true;
    }
    out_ << "<path d=\"" << d << "\" fill=\"none\" stroke=\"#ffffff\" stroke-width=\"3\"/>\n";
    out_ << "<path class=\"" << l.name << "\" d=\"" << d << "\" fill=\"none\" stroke=\""
         << l.colour << "\" stroke-width=\"1.5\"" << (*l.dash ? " stroke-dasharray=\"" : "")
         << l.dash << (*l.dash ? "\"" : "") << " data-ns=\"" << values << "\"><title>"
         << l.name << " per column</title></path>\n";
  }
}

void SvgWriter::DrawDistribution(const Panel& p, double top) {
  const LatencyGroup& g = *p.total;
  const double y0 = top + kDistTop, y1 = y0 + kDistH;
  LogAxis lat = p.lat;
  lat.a = kLeft;
  lat.b = kLeft + kHistW;
  const Rows rows = RowsOf(g.buckets);
  uint64_t most = 1;
  for (const auto& [key, n] : rows) most = std::max(most, n);
  out_ << "<rect x=\"" << Num(kLeft) << "\" y=\"" << Num(y0) << "\" width=\"" << Num(kHistW)
       << "\" height=\"" << Num(kDistH) << "\" fill=\"none\" stroke=\"#000\"/>\n";
  Text(kLeft, y0 - 6, "histogram (bars, linear) and CDF (line, 0-100%)");
  out_ << "<g class=\"histogram\" fill=\"" << Viridis(0.5) << "\">\n";
  uint64_t below = 0;
  std::string cdf;
  for (const auto& [key, n] : rows) {
    const uint64_t lo = SvgRowLow(key), hi = SvgRowLow(key + 1);
    const double xa = lat.At(static_cast<double>(lo)), xb = lat.At(static_cast<double>(hi));
    const double h = kDistH * n / most;
    const double cdf_from = y1 - kDistH * below / g.summary.count;
    below += n;
    const double cdf_to = y1 - kDistH * below / g.summary.count;
    absl::StrAppend(&cdf, cdf.empty() ? absl::StrCat("M", Num(xa), " ", Num(cdf_from))
                                      : absl::StrCat("H", Num(xa)),
                    "V", Num(cdf_to));
    out_ << "<rect x=\"" << Num(xa) << "\" y=\"" << Num(y1 - h) << "\" width=\""
         << Num(xb - xa) << "\" height=\"" << Num(h) << "\"><title>"
         << Escape(absl::StrFormat("%s-%s: %u requests, %s, %s cumulative", Ns(lo), Ns(hi), n,
                                   Percent(n, g.summary.count),
                                   Percent(below, g.summary.count)))
         << "</title></rect>\n";
  }
  out_ << "</g>\n";
  absl::StrAppend(&cdf, "H", Num(lat.b));
  out_ << "<path class=\"cdf\" d=\"" << cdf
       << "\" fill=\"none\" stroke=\"#000000\" stroke-width=\"1.2\"/>\n";
  struct Mark {
    const char* name;
    uint64_t ns;
  };
  const Mark marks[] = {{"p50", g.summary.p50_ns}, {"p90", g.summary.p90_ns},
                        {"p99", g.summary.p99_ns}, {"p99.9", g.summary.p999_ns},
                        {"max", g.summary.max_ns}};
  for (size_t i = 0; i < std::size(marks); ++i) {
    const double x = lat.At(static_cast<double>(marks[i].ns));
    out_ << "<path d=\"M" << Num(x) << " " << Num(y0) << "V" << Num(y1) << "\" stroke=\""
         << kAlert << "\" stroke-dasharray=\"3 2\"><title>" << marks[i].name << " "
         << Ns(marks[i].ns) << "</title></path>\n";
    Text(x + 2, y0 + 12 + 11 * i, std::string(marks[i].name) + " " + Ns(marks[i].ns),
         "font-size=\"9\"");
  }
  LatencyTicksX(lat, y1);
  Text(kLeft + kHistW, y1 + 30, "latency", "text-anchor=\"end\"");
}

void SvgWriter::DrawSpectrum(const Panel& p, double top) {
  const LatencyGroup& g = *p.total;
  const double y0 = top + kDistTop, y1 = y0 + kDistH;
  LogAxis lat = p.lat;
  lat.a = y1;
  lat.b = y0;
  // x = 1/(1-p): p50 at 2, p99 at 100; as far as the count reaches (p99.99 needs 10^4).
  const int decades = std::clamp(
      static_cast<int>(std::ceil(std::log10(static_cast<double>(g.summary.count)))), 1, 6);
  LogAxis x_axis{0, decades, kSpecLeft, kSpecLeft + kSpecW};
  out_ << "<rect x=\"" << Num(kSpecLeft) << "\" y=\"" << Num(y0) << "\" width=\""
       << Num(kSpecW) << "\" height=\"" << Num(kDistH) << "\" fill=\"none\" stroke=\"#000\"/>\n";
  Text(kSpecLeft, y0 - 6, "percentile spectrum: latency at percentile p");
  std::string d;
  for (int j = 0; j <= decades * 10; ++j) {
    const double tail = std::pow(10.0, -j / 10.0);
    const uint64_t v = BucketPercentile(g.buckets, g.summary.count, g.summary.min_ns,
                                        g.summary.max_ns, 100 * (1 - tail));
    absl::StrAppend(&d, j == 0 ? "M" : "L", Num(x_axis.At(1 / tail)), " ", Num(lat.At(v)));
  }
  out_ << "<path class=\"spectrum\" d=\"" << d << "\" fill=\"none\" stroke=\""
       << Viridis(0.0) << "\" stroke-width=\"1.5\"/>\n";
  for (int i = 0; i <= decades; ++i) {
    const double x = x_axis.At(std::pow(10.0, i));
    out_ << "<path d=\"M" << Num(x) << " " << Num(y1) << "v5\" stroke=\"#000\"/>\n";
    // 10^i is the percentile 100 (1 - 10^-i): p0, p90, p99, p99.9, ...
    std::string label = i == 0 ? "p0" : "p90";
    if (i >= 2) label = absl::StrFormat("p%.*f", i - 2, 100 * (1 - std::pow(10.0, -i)));
    Text(x, y1 + 16, label, "text-anchor=\"middle\"");
  }
  Text(kRight, y1 + 30, "percentile (x = 1/(1-p), log scale)", "text-anchor=\"end\"");
  LatencyTicksY(lat, kSpecLeft);
}

void SvgWriter::Write() {
  Layout();
  const double height = kPageTop + std::max<size_t>(panels_.size(), 1) * kPanelH;
  Header(height);
  if (panels_.empty()) {
    Text(10, kPageTop + 20, r_.empty_reason.empty() ? "no requests in the data"
                                                    : r_.empty_reason);
  }
  for (size_t i = 0; i < panels_.size(); ++i) DrawPanel(panels_[i], kPageTop + i * kPanelH);
  out_ << "</svg>\n";
}

}  // namespace

int SvgRowOf(uint64_t ns) {
  if (ns < 4) return ns < 2 ? 0 : 1;
  const int e = 63 - __builtin_clzll(ns);
  const uint64_t q = ((ns - (uint64_t{1} << e)) << 2) >> e;
  return 2 + (e - 2) * 4 + static_cast<int>(q);
}

uint64_t SvgRowLow(int key) {
  if (key < 2) return key == 0 ? 0 : 2;
  const int e = 2 + (key - 2) / 4;
  const uint64_t q = (key - 2) % 4;
  return (uint64_t{1} << e) + (q << (e - 2));
}

uint64_t BucketPercentile(const std::vector<LatencyBucket>& buckets, uint64_t count,
                          uint64_t min_ns, uint64_t max_ns, double p) {
  if (count == 0) return 0;
  if (!(p > 0)) return min_ns;
  if (p >= 100) return max_ns;
  uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count)));
  rank = std::clamp<uint64_t>(rank, 1, count);
  uint64_t seen = 0;
  for (const LatencyBucket& b : buckets) {
    seen += b.count;
    if (seen >= rank) return std::clamp(b.lo_ns + (b.hi_ns - b.lo_ns - 1) / 2, min_ns, max_ns);
  }
  return max_ns;
}

void WriteSvgReport(const LatencyReport& report, const SvgPlotOptions& options,
                    std::ostream& out) {
  SvgWriter(report, options, out).Write();
}

void LiveSvgHistory::Add(const LiveInterval& interval) {
  intervals_.push_back(interval);
  // Only what the picture draws.
  intervals_.back().throughput.clear();
  intervals_.back().processes.clear();
  intervals_.back().notes.clear();
  while (intervals_.size() > max_intervals_) intervals_.pop_front();
}

LatencyReport LiveSvgHistory::Report(double interval_s, double* start_s) const {
  LatencyReport r;
  r.interval_s = interval_s;
  *start_s = intervals_.empty() ? 0 : intervals_.front().start_s;
  if (intervals_.empty()) return r;
  r.by = intervals_.back().by;
  const LiveInterval& last = intervals_.back();
  const double span_s = last.start_s + last.length_s - *start_s;
  r.last_ts_ns = static_cast<uint64_t>(std::llround(span_s * 1e9));
  // Per group: its buckets summed over the intervals, and its exact count, min, max, sum.
  std::map<std::tuple<uint32_t, uint64_t, std::string, BlockOp, Phase>,
           std::pair<LatencyGroup, std::map<uint64_t, LatencyBucket>>>
      totals;
  const uint64_t first = intervals_.front().index;
  for (const LiveInterval& iv : intervals_) {
    LatencyInterval& out = r.intervals.emplace_back();
    out.index = iv.index - first;
    out.start_s = iv.start_s - *start_s;
    out.groups = iv.groups;
    out.lost = iv.counts.lost;
    out.unpaired = iv.counts.unpaired;
    for (const LatencyGroup& g : iv.groups) {
      auto [it, added] = totals.try_emplace({g.dev, g.by_order, g.by, g.op, g.phase});
      LatencyGroup& t = it->second.first;
      if (added) {
        t.dev = g.dev;
        t.device = g.device;
        t.by = g.by;
        t.by_order = g.by_order;
        t.op = g.op;
        t.phase = g.phase;
        t.summary.min_ns = ~uint64_t{0};
      }
      if (g.summary.count == 0) continue;
      t.summary.count += g.summary.count;
      t.summary.sum_ns += g.summary.sum_ns;
      t.summary.min_ns = std::min(t.summary.min_ns, g.summary.min_ns);
      t.summary.max_ns = std::max(t.summary.max_ns, g.summary.max_ns);
      t.incomplete |= g.incomplete;
      for (const LatencyBucket& b : g.buckets) {
        LatencyBucket& m = it->second.second[b.lo_ns];
        m.lo_ns = b.lo_ns;
        m.hi_ns = b.hi_ns;
        m.count += b.count;
      }
    }
  }
  for (auto& [key, total] : totals) {
    LatencyGroup& g = total.first;
    LatencySummary& s = g.summary;
    if (s.count == 0) s.min_ns = 0;
    for (const auto& [lo, b] : total.second) g.buckets.push_back(b);
    s.mean_ns = s.count == 0 ? 0 : static_cast<double>(s.sum_ns) / s.count;
    s.p50_ns = BucketPercentile(g.buckets, s.count, s.min_ns, s.max_ns, 50);
    s.p90_ns = BucketPercentile(g.buckets, s.count, s.min_ns, s.max_ns, 90);
    s.p99_ns = BucketPercentile(g.buckets, s.count, s.min_ns, s.max_ns, 99);
    s.p999_ns = BucketPercentile(g.buckets, s.count, s.min_ns, s.max_ns, 99.9);
    r.groups.push_back(std::move(g));
  }
  return r;
}

}  // namespace iotrace
