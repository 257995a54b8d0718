#include "iotrace/output/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "iotrace/event/block_dev.h"
#include "svg_draw.h"

namespace iotrace {
namespace {

using svg::Canvas;
using svg::Column;
using svg::ColumnGrid;
using svg::kAlert;
using svg::kUnpaired;
using svg::LogAxis;
using svg::Ns;
using svg::Num;
using svg::Percent;
using svg::Rows;
using svg::Seconds;
using svg::Series;
using svg::Viridis;

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

struct Panel {
  const LatencyGroup* total = nullptr;
  Series series;
  LogAxis lat;  // the latency axis (decades), pixels set where drawn
};

class SvgWriter {
 public:
  SvgWriter(const LatencyReport& r, const SvgPlotOptions& o, std::ostream& out)
      : r_(r), o_(o), out_(out), canvas_(out) {}
  void Write();

 private:
  void Layout();
  void Header(double height);
  void DrawPanel(const Panel& p, double top);
  void DrawHeatmap(const Panel& p, double top);
  void DrawDistribution(const Panel& p, double top);
  void DrawSpectrum(const Panel& p, double top);
  void Text(double x, double y, std::string_view text, std::string_view attrs = "") {
    canvas_.Text(x, y, text, attrs);
  }

  const LatencyReport& r_;
  const SvgPlotOptions& o_;
  std::ostream& out_;
  Canvas canvas_;
  std::vector<Panel> panels_;
  ColumnGrid grid_;  // the heatmaps' columns, across the plot's width
  uint64_t per_column_ = 1;  // intervals per column
  uint64_t cell_max_ = 1;  // the colour scale's top: the largest count in one cell
  std::vector<bool> gap_columns_;  // a gap of the data (losses placed in time) touches it
  std::vector<uint64_t> lost_;      // per column (live's intervals count them)
  std::vector<uint64_t> unpaired_;  // per column
  uint64_t lost_total_ = 0;
};

void SvgWriter::Layout() {
  std::map<std::tuple<uint32_t, std::string, BlockOp, Phase>, size_t> index;
  for (const LatencyGroup& g : r_.groups) {
    index[{g.dev, g.by, g.op, g.phase}] = panels_.size();
    panels_.emplace_back().total = &g;
  }
  for (const LatencyInterval& iv : r_.intervals) {
    for (const LatencyGroup& g : iv.groups) {
      auto it = index.find({g.dev, g.by, g.op, g.phase});
      if (it == index.end()) continue;
      panels_[it->second].series.intervals.push_back(&iv);
      panels_[it->second].series.groups.push_back(&g);
    }
  }
  const double interval_s = r_.interval_s > 0 ? r_.interval_s : std::max(r_.duration_s(), 1e-9);
  std::vector<Series*> series;
  for (Panel& p : panels_) series.push_back(&p.series);
  size_t columns = 1;
  per_column_ = svg::ChooseColumns(series, svg::IntervalCount(r_), o_.max_columns, o_.max_cells,
                                   &columns);
  grid_ = {kLeft, kPlotW, columns, o_.start_s, interval_s * per_column_};
  const double column_s = grid_.column_s;
  lost_.assign(columns, 0);
  unpaired_.assign(columns, 0);
  for (const LossSummary& l : r_.completeness.losses) lost_total_ += l.count;
  for (const LatencyInterval& iv : r_.intervals) {
    const size_t c = std::min<size_t>(iv.index / per_column_, columns - 1);
    lost_[c] += iv.lost;
    unpaired_[c] += iv.unpaired;
    lost_total_ += iv.lost;
  }
  for (const auto& [index, n] : r_.unpaired_idle) {
    unpaired_[std::min<size_t>(index / per_column_, columns - 1)] += n;
  }
  gap_columns_.assign(columns, false);
  for (const DataGap& g : r_.coverage.gaps) {
    const double from = (static_cast<double>(g.after_ts) - r_.first_ts_ns) / 1e9;
    const double to = g.open_end() ? r_.duration_s()
                                   : (static_cast<double>(g.before_ts) - r_.first_ts_ns) / 1e9;
    for (size_t c = 0; c < columns; ++c) {
      if (from < (c + 1) * column_s && to >= c * column_s) gap_columns_[c] = true;
    }
  }
  for (Panel& p : panels_) {
    cell_max_ = std::max(cell_max_, svg::CellMax(p.series));
    const LatencyGroup& g = *p.total;
    if (g.buckets.empty()) continue;
    p.lat = svg::LatencyDecades(g.buckets.front().lo_ns, g.buckets.back().lo_ns);
  }
}

void SvgWriter::Header(double height) {
  canvas_.Begin(kWidth, height);
  Text(10, 18,
       o_.title.empty() ? "iotrace report: " + r_.input + " (" + r_.file_format + ")" : o_.title,
       "font-size=\"14\" font-weight=\"bold\"");
  std::string line = absl::StrFormat("host %s, %.6g s", o_.host.empty() ? "unknown" : o_.host,
                                     r_.duration_s());
  if (r_.interval_s > 0) {
    line += absl::StrFormat(", %zu column%s of %s s", grid_.columns,
                            grid_.columns == 1 ? "" : "s", Seconds(grid_.column_s));
  }
  Text(10, 34, line);
  if (per_column_ > 1) {
    Text(10, 50,
         absl::StrFormat("columns coarsened: each holds %u intervals of %s s (at most %zu "
                         "columns and %zu heatmap rectangles)",
                         per_column_, Seconds(r_.interval_s), o_.max_columns, o_.max_cells),
         absl::StrFormat("fill=\"%s\"", kAlert));
  }
  if (!o_.note.empty()) Text(10, 82, o_.note, absl::StrFormat("fill=\"%s\"", kAlert));
  if (!r_.warnings.empty() || !r_.coverage.complete) {
    Text(10, 66, "the data is incomplete: see iotrace report's warnings; marked columns lost "
                 "events or had samples left out", absl::StrFormat("fill=\"%s\"", kAlert));
  }
  // The colour scale, shared by every heatmap: requests in one cell, log scale.
  const double bar_x = 640, bar_w = 280, bar_y = 26;
  canvas_.ColourScale(bar_x, bar_y, bar_w, cell_max_);
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
  Text(x + 14, ly + 14, "unpaired events");
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
  const std::vector<Column>& columns = p.series.columns;
  const double column_s = grid_.column_s;
  // IOPS strip: requests of this phase ended per second in each column.
  double iops_max = 0;
  for (const Column& c : columns) iops_max = std::max(iops_max, c.count / column_s);
  const double strip = top + kIopsTop;
  Text(10, strip + 12, "IOPS");
  Text(10, strip + 26, iops_max < 1e4 ? absl::StrFormat("max %.0f", iops_max)
                                       : absl::StrFormat("max %.0fk", iops_max / 1e3));
  out_ << "<g class=\"iops\" fill=\"#777777\">\n";
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].count == 0) continue;
    const double h = kIopsH * (columns[i].count / column_s) / iops_max;
    out_ << "<rect x=\"" << Num(grid_.X(i)) << "\" y=\"" << Num(strip + kIopsH - h)
         << "\" width=\"" << Num(grid_.X(i + 1) - grid_.X(i)) << "\" height=\"" << Num(h)
         << "\"><title>" << grid_.Time(i)
         << absl::StrFormat(": %u requests, %.6g/s", columns[i].count,
                            columns[i].count / column_s)
         << "</title></rect>\n";
  }
  out_ << "</g>\n";

  const double y0 = top + kHeatTop;
  LogAxis lat = p.lat;
  lat.a = y0 + kHeatH;
  lat.b = y0;
  canvas_.Frame(kLeft, y0, kPlotW, kHeatH);
  canvas_.LatencyTicksY(lat, kLeft);
  canvas_.TimeTicks(grid_, y0 + kHeatH);
  // Columns that lost events or had samples left out: a mark above the column.
  for (size_t i = 0; i < columns.size(); ++i) {
    const double w = std::max(grid_.X(i + 1) - grid_.X(i), 1.0);
    if (columns[i].lossy || gap_columns_[i] || lost_[i] != 0) {
      std::string why = grid_.Time(i) + ":";
      if (columns[i].lossy || gap_columns_[i]) {
        why += " events were lost or samples left out here (gaps in the data);";
      }
      if (lost_[i] != 0) why += absl::StrFormat(" %u events lost;", lost_[i]);
      why.pop_back();
      out_ << "<rect class=\"lost\" x=\"" << Num(grid_.X(i)) << "\" y=\"" << Num(y0 - 5)
           << "\" width=\"" << Num(w) << "\" height=\"4\" fill=\"" << kAlert << "\"><title>"
           << why << "</title></rect>\n";
    }
    if (unpaired_[i] != 0) {
      out_ << "<rect class=\"unpaired\" x=\"" << Num(grid_.X(i)) << "\" y=\"" << Num(y0 - 9)
           << "\" width=\"" << Num(w) << "\" height=\"3\" fill=\"" << kUnpaired << "\"><title>"
           << grid_.Time(i)
           << absl::StrFormat(": %u events unpaired (issues without an insert, completions "
                              "without an issue, requeues of requests not seen issued)",
                              unpaired_[i])
           << "</title></rect>\n";
    }
  }
  canvas_.HeatmapCells(columns, grid_, lat, cell_max_);
  canvas_.PercentileLines(columns, grid_, lat);
}

void SvgWriter::DrawDistribution(const Panel& p, double top) {
  const LatencyGroup& g = *p.total;
  const double y0 = top + kDistTop, y1 = y0 + kDistH;
  LogAxis lat = p.lat;
  lat.a = kLeft;
  lat.b = kLeft + kHistW;
  const Rows rows = svg::RowsOf(g.buckets.ToVector());
  uint64_t most = 1;
  for (const auto& [key, n] : rows) most = std::max(most, n);
  canvas_.Frame(kLeft, y0, kHistW, kDistH);
  Text(kLeft, y0 - 6, "histogram (bars, linear) and CDF (line, 0-100%)");
  out_ << "<g class=\"histogram\" fill=\"" << Viridis(0.5) << "\">\n";
  uint64_t below = 0;
  for (const auto& [key, n] : rows) {
    const uint64_t lo = SvgRowLow(key), hi = SvgRowLow(key + 1);
    const double xa = lat.At(static_cast<double>(lo)), xb = lat.At(static_cast<double>(hi));
    const double h = kDistH * n / most;
    below += n;
    out_ << "<rect x=\"" << Num(xa) << "\" y=\"" << Num(y1 - h) << "\" width=\""
         << Num(xb - xa) << "\" height=\"" << Num(h) << "\"><title>"
         << svg::Escape(absl::StrFormat("%s-%s: %u requests, %s, %s cumulative", Ns(lo),
                                        Ns(hi), n, Percent(n, g.summary.count),
                                        Percent(below, g.summary.count)))
         << "</title></rect>\n";
  }
  out_ << "</g>\n";
  out_ << "<path class=\"cdf\" d=\"" << svg::CdfPath(rows, g.summary.count, lat, y1, kDistH)
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
  canvas_.LatencyTicksX(lat, y1);
  Text(kLeft + kHistW, y1 + 30, "latency", "text-anchor=\"end\"");
}

void SvgWriter::DrawSpectrum(const Panel& p, double top) {
  const LatencyGroup& g = *p.total;
  const double y0 = top + kDistTop, y1 = y0 + kDistH;
  LogAxis lat = p.lat;
  lat.a = y1;
  lat.b = y0;
  // x = 1/(1-p): p50 at 2, p99 at 100; as far as the count reaches (p99.99 needs 10^4).
  const int decades = svg::SpectrumDecades(g.summary.count);
  LogAxis x_axis{0, decades, kSpecLeft, kSpecLeft + kSpecW};
  canvas_.Frame(kSpecLeft, y0, kSpecW, kDistH);
  Text(kSpecLeft, y0 - 6, "percentile spectrum: latency at percentile p");
  out_ << "<path class=\"spectrum\" d=\"" << svg::SpectrumPath(g, decades, x_axis, lat)
       << "\" fill=\"none\" stroke=\"" << Viridis(0.0) << "\" stroke-width=\"1.5\"/>\n";
  canvas_.SpectrumTicks(x_axis, y1, kRight);
  canvas_.LatencyTicksY(lat, kSpecLeft);
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

uint64_t BucketPercentile(std::span<const LatencyBucket> buckets, uint64_t count, uint64_t min_ns,
                          uint64_t max_ns, double p) {
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
    std::vector<LatencyBucket> buckets;
    buckets.reserve(total.second.size());
    for (const auto& [lo, b] : total.second) buckets.push_back(b);
    s.mean_ns = s.count == 0 ? 0 : static_cast<double>(s.sum_ns) / s.count;
    s.p50_ns = BucketPercentile(buckets, s.count, s.min_ns, s.max_ns, 50);
    s.p90_ns = BucketPercentile(buckets, s.count, s.min_ns, s.max_ns, 90);
    s.p99_ns = BucketPercentile(buckets, s.count, s.min_ns, s.max_ns, 99);
    s.p999_ns = BucketPercentile(buckets, s.count, s.min_ns, s.max_ns, 99.9);
    g.buckets = LatencyBuckets(std::move(buckets));
    r.groups.push_back(std::move(g));
  }
  return r;
}

}  // namespace iotrace
