#include "iotrace/output/svg_diff.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/output/diff_format.h"
#include "svg_draw.h"

namespace iotrace {
namespace {

using svg::Canvas;
using svg::ColumnGrid;
using svg::kAlert;
using svg::LogAxis;
using svg::Num;
using svg::Seconds;
using svg::Series;

// A and B: Okabe and Ito's blue and orange, apart for the colour-blind and from each other in
// grey (B's lines are also dashed).
constexpr std::array<const char*, 2> kSideColour = {"#0072b2", "#e69f00"};
constexpr std::array<const char*, 2> kSideDash = {"", "5 3"};
constexpr std::array<const char*, 2> kSideName = {"A", "B"};

// Layout, in pixels. A panel: its header, the two heatmaps side by side, then the CDFs and the
// spectra.
constexpr double kWidth = 1000;
constexpr double kPageTop = 96;
constexpr double kPanelH = 500;
constexpr double kHeatTop = 74, kHeatH = 180;
constexpr std::array<double, 2> kHeatLeft = {80, 540};
constexpr double kHeatW = 380;
constexpr double kDistTop = 320, kDistH = 130;
constexpr double kCdfLeft = 80, kCdfW = 380;
constexpr double kSpecLeft = 540, kSpecW = 380;

// One side of a row: its whole-run group, and its time series.
struct Side {
  const LatencyGroup* total = nullptr;  // nullptr: the row has no samples on this side
  Series series;
};

struct Panel {
  const DiffRow* row = nullptr;
  std::array<Side, 2> sides;
  LogAxis lat;  // both sides' latencies, pixels set where drawn
};

// A side's picture: its columns' grid and how many intervals each holds.
struct SideLayout {
  const LatencyReport* report = nullptr;
  uint64_t per_column = 1;
  size_t columns = 1;
  double column_s = 0;
};

class SvgDiffWriter {
 public:
  SvgDiffWriter(const LatencyDiff& d, const LatencyReport& a, const LatencyReport& b,
                const SvgDiffOptions& o, std::ostream& out)
      : d_(d), o_(o), out_(out), canvas_(out) {
    sides_[0].report = &a;
    sides_[1].report = &b;
  }
  void Write();

 private:
  void Layout();
  void Header(double height);
  void DrawPanel(const Panel& p, double top);
  void DrawHeatmap(const Panel& p, int side, double top);
  void DrawCdfs(const Panel& p, double top);
  void DrawSpectra(const Panel& p, double top);
  // The path of one side's line: its colour and dash.
  void SideLine(int side, std::string_view cls, const std::string& d);
  ColumnGrid Grid(int side) const {
    const SideLayout& s = sides_[side];
    return {kHeatLeft[side], kHeatW, s.columns, 0, s.column_s};
  }

  const LatencyDiff& d_;
  const SvgDiffOptions& o_;
  std::ostream& out_;
  Canvas canvas_;
  std::array<SideLayout, 2> sides_;
  std::vector<Panel> panels_;
  std::string note_;       // which rows are drawn, when not all
  uint64_t cell_max_ = 1;  // the colour scale's top, over both sides
};

// The group of a row on one side: its device, --by's class ("" without it), op and phase.
const LatencyGroup* FindGroup(const std::vector<LatencyGroup>& groups, uint32_t dev,
                              const std::string& by, BlockOp op, Phase phase) {
  for (const LatencyGroup& g : groups) {
    if (g.dev == dev && g.by == by && g.op == op && g.phase == phase) return &g;
  }
  return nullptr;
}

// The rows drawn (indexes into `rows`, increasing): all, or max_panels of them as
// SvgDiffOptions says.
std::vector<size_t> RowsDrawn(const std::vector<DiffRow>& rows, size_t max_panels) {
  std::vector<size_t> drawn(rows.size());
  std::iota(drawn.begin(), drawn.end(), size_t{0});
  if (rows.size() <= max_panels) return drawn;
  auto rank = [&rows](size_t i) {
    const DiffRow& r = rows[i];
    const bool changed = DiffChanged(r.verdict);
    const bool one_side = r.verdict == DiffVerdict::kOnlyA || r.verdict == DiffVerdict::kOnlyB;
    return std::make_tuple(changed    ? 0
                           : one_side ? 1
                                      : 2,
                           changed ? r.p_adjusted : 0.0, ~(r.count_a + r.count_b));
  };
  std::stable_sort(drawn.begin(), drawn.end(),
                   [&rank](size_t x, size_t y) { return rank(x) < rank(y); });
  drawn.resize(max_panels);
  std::sort(drawn.begin(), drawn.end());
  return drawn;
}

void SvgDiffWriter::Layout() {
  const std::vector<size_t> drawn = RowsDrawn(d_.rows, std::max<size_t>(o_.max_panels, 1));
  if (drawn.size() < d_.rows.size()) {
    size_t changed = 0;
    for (const DiffRow& r : d_.rows) {
      changed += DiffChanged(r.verdict);
    }
    note_ = absl::StrFormat(
        "%u rows (%u changed): %u drawn, the changed first, then one side's, then by requests; "
        "--dev picks others",
        d_.rows.size(), changed, drawn.size());
  }
  panels_.resize(drawn.size());
  std::array<std::vector<Series*>, 2> series;
  for (size_t k = 0; k < drawn.size(); ++k) {
    const DiffRow& r = d_.rows[drawn[k]];
    Panel& p = panels_[k];
    p.row = &r;
    uint64_t lo = ~uint64_t{0}, hi = 0;
    for (int s = 0; s < 2; ++s) {
      const LatencyReport& report = *sides_[s].report;
      const uint32_t dev = s == 0 ? r.dev_a : r.dev_b;
      if ((s == 0 ? r.count_a : r.count_b) == 0) continue;
      Side& side = p.sides[s];
      side.total = FindGroup(report.groups, dev, r.by, r.op, r.phase);
      if (side.total == nullptr) continue;
      for (const LatencyInterval& iv : report.intervals) {
        const LatencyGroup* g = FindGroup(iv.groups, dev, r.by, r.op, r.phase);
        if (g == nullptr) continue;
        side.series.intervals.push_back(&iv);
        side.series.groups.push_back(g);
      }
      series[s].push_back(&side.series);
      if (!side.total->buckets.empty()) {
        lo = std::min(lo, side.total->buckets.front().lo_ns);
        hi = std::max(hi, side.total->buckets.back().lo_ns);
      }
    }
    if (lo != ~uint64_t{0}) p.lat = svg::LatencyDecades(lo, hi);
  }
  for (int s = 0; s < 2; ++s) {
    SideLayout& side = sides_[s];
    const LatencyReport& r = *side.report;
    side.per_column = svg::ChooseColumns(series[s], svg::IntervalCount(r), o_.max_columns,
                                         o_.max_cells, &side.columns);
    const double interval_s = r.interval_s > 0 ? r.interval_s : std::max(r.duration_s(), 1e-9);
    side.column_s = interval_s * side.per_column;
    for (const Series* x : series[s]) cell_max_ = std::max(cell_max_, svg::CellMax(*x));
  }
}

void SvgDiffWriter::Header(double height) {
  canvas_.Begin(kWidth, height);
  canvas_.Text(10, 18, "iotrace diff: B against A", "font-size=\"14\" font-weight=\"bold\"");
  for (int s = 0; s < 2; ++s) {
    const DiffSide& side = s == 0 ? d_.a : d_.b;
    const double y = 34 + 16 * s;
    out_ << "<path d=\"M10 " << Num(y - 4) << "h24\" stroke=\"" << kSideColour[s]
         << "\" stroke-width=\"2\"" << (*kSideDash[s] ? " stroke-dasharray=\"" : "")
         << kSideDash[s] << (*kSideDash[s] ? "\"" : "") << "/>\n";
    canvas_.Text(40, y, absl::StrFormat("%s: %s (%s, %s s)", kSideName[s], side.input,
                                        side.file_format, Seconds(side.duration_s)),
                 absl::StrFormat("class=\"side-%c\"", s == 0 ? 'a' : 'b'));
  }
  size_t compared = 0;
  for (const DiffRow& r : d_.rows) compared += r.count_a != 0 && r.count_b != 0;
  canvas_.Text(10, 66,
               absl::StrFormat("Kolmogorov-Smirnov, p from %d relabellings of whole %s s "
                               "intervals, Holm across %u rows (alpha %g); --min-change %g%%",
                               d_.resamples, Seconds(d_.block_s), compared, d_.alpha,
                               d_.min_change_pct));
  std::vector<std::string> coarse;
  for (int s = 0; s < 2; ++s) {
    if (sides_[s].per_column > 1) {
      coarse.push_back(absl::StrFormat("%s's columns hold %u intervals each", kSideName[s],
                                       sides_[s].per_column));
    }
  }
  // The orange lines: which rows are drawn, then the columns coarsened, each on a line of its
  // own (the panels start a line lower when both are there: Write).
  double y = 82;
  if (!note_.empty()) {
    canvas_.Text(10, y, note_, absl::StrFormat("fill=\"%s\"", kAlert));
    y += 16;
  }
  if (!coarse.empty()) {
    canvas_.Text(10, y,
                 absl::StrFormat("columns coarsened (at most %zu columns and %zu heatmap "
                                 "rectangles a side): %s",
                                 o_.max_columns, o_.max_cells, absl::StrJoin(coarse, "; ")),
                 absl::StrFormat("fill=\"%s\"", kAlert));
  }
  // One colour scale for every heatmap of both sides.
  canvas_.ColourScale(640, 26, 280, cell_max_);
}

std::string VerdictText(const DiffRow& r) {
  switch (r.verdict) {
    case DiffVerdict::kSlower: return "+ slower in B";
    case DiffVerdict::kFaster: return "- faster in B";
    case DiffVerdict::kSame: return "~ no change shown (" + r.reason + ")";
    case DiffVerdict::kOnlyA: return "in A only";
    case DiffVerdict::kOnlyB: return "in B only";
  }
  return "";
}

void SvgDiffWriter::DrawPanel(const Panel& p, double top) {
  const DiffRow& r = *p.row;
  out_ << absl::StrFormat(
      "<g class=\"row\" data-dev-a=\"%s\" data-dev-b=\"%s\" data-op=\"%s\" data-phase=\"%s\" "
      "data-verdict=\"%s\" data-count-a=\"%u\" data-count-b=\"%u\">\n",
      DevString(r.dev_a), DevString(r.dev_b), BlockOpName(r.op), PhaseName(r.phase),
      DiffVerdictName(r.verdict), r.count_a, r.count_b);
  out_ << "<path d=\"M10 " << Num(top) << "H" << Num(kWidth - 10) << "\" stroke=\"#999\"/>\n";
  const bool changed = DiffChanged(r.verdict);
  canvas_.Text(10, top + 18,
               absl::StrFormat("%s%s %s %s: %s", DiffRowDevice(r),
                               d_.by.empty() ? "" : absl::StrCat(" ", d_.by, " ", r.by),
                               BlockOpName(r.op), PhaseName(r.phase), VerdictText(r)),
               changed ? absl::StrFormat("font-size=\"13\" font-weight=\"bold\" fill=\"%s\"",
                                         kAlert)
                       : std::string("font-size=\"13\" font-weight=\"bold\""));
  std::string facts = absl::StrFormat("requests A %u, B %u", r.count_a, r.count_b);
  const bool both = r.count_a != 0 && r.count_b != 0;
  if (both) absl::StrAppend(&facts, absl::StrFormat("; KS D %.3f, p %.4g after Holm", r.ks_d,
                                                    r.p_adjusted));
  if (r.incomplete_a || r.incomplete_b) {
    absl::StrAppend(&facts, "; the phase is incomplete in ",
                    r.incomplete_a && r.incomplete_b ? "both" : r.incomplete_a ? "A" : "B",
                    " (see the text's notes)");
  }
  canvas_.Text(10, top + 34, facts);
  if (both) {
    std::vector<std::string> cells;
    for (DiffStatKind k : {DiffStatKind::kP50, DiffStatKind::kP90, DiffStatKind::kP99,
                           DiffStatKind::kP999}) {
      cells.push_back(absl::StrFormat("%s %s", DiffStatName(k),
                                      DiffPercentCell(r.stats[static_cast<int>(k)])));
    }
    canvas_.Text(10, top + 48,
                 absl::StrCat("B against A: ", absl::StrJoin(cells, ", "),
                              " (in parentheses: within the bucket width)"));
  }
  for (int s = 0; s < 2; ++s) DrawHeatmap(p, s, top);
  DrawCdfs(p, top);
  DrawSpectra(p, top);
  out_ << "</g>\n";
}

void SvgDiffWriter::DrawHeatmap(const Panel& p, int s, double top) {
  const Side& side = p.sides[s];
  const ColumnGrid grid = Grid(s);
  const double y0 = top + kHeatTop;
  LogAxis lat = p.lat;
  lat.a = y0 + kHeatH;
  lat.b = y0;
  const uint64_t count = s == 0 ? p.row->count_a : p.row->count_b;
  canvas_.Text(grid.x0, y0 - 6,
               count == 0 ? absl::StrFormat("%s: no requests", kSideName[s])
                          : absl::StrFormat("%s: %s, %u requests", kSideName[s],
                                            s == 0 ? p.row->device_a : p.row->device_b, count),
               absl::StrFormat("fill=\"%s\" font-weight=\"bold\"", kSideColour[s]));
  canvas_.Frame(grid.x0, y0, grid.w, kHeatH);
  canvas_.LatencyTicksY(lat, grid.x0);
  if (side.total == nullptr) {
    canvas_.Text(grid.x0 + 10, y0 + 20, absl::StrFormat("no samples in %s", kSideName[s]));
    return;
  }
  canvas_.TimeTicks(grid, y0 + kHeatH);
  out_ << "<g class=\"side\" data-side=\"" << (s == 0 ? "a" : "b") << "\">\n";
  canvas_.HeatmapCells(side.series.columns, grid, lat, cell_max_);
  canvas_.PercentileLines(side.series.columns, grid, lat);
  out_ << "</g>\n";
}

void SvgDiffWriter::SideLine(int s, std::string_view cls, const std::string& d) {
  out_ << "<path class=\"" << cls << "-" << (s == 0 ? "a" : "b") << "\" d=\"" << d
       << "\" fill=\"none\" stroke=\"" << kSideColour[s] << "\" stroke-width=\"1.5\""
       << (*kSideDash[s] ? " stroke-dasharray=\"" : "") << kSideDash[s]
       << (*kSideDash[s] ? "\"" : "") << "/>\n";
}

void SvgDiffWriter::DrawCdfs(const Panel& p, double top) {
  const double y0 = top + kDistTop, y1 = y0 + kDistH;
  LogAxis lat = p.lat;
  lat.a = kCdfLeft;
  lat.b = kCdfLeft + kCdfW;
  canvas_.Frame(kCdfLeft, y0, kCdfW, kDistH);
  canvas_.Text(kCdfLeft, y0 - 6, "CDF: share of the requests at most this slow (0-100%)");
  for (int s = 0; s < 2; ++s) {
    const LatencyGroup* g = p.sides[s].total;
    if (g == nullptr || g->summary.count == 0) continue;
    SideLine(s, "cdf",
             svg::CdfPath(svg::RowsOf(g->buckets.ToVector()), g->summary.count, lat, y1, kDistH));
  }
  canvas_.Text(kCdfLeft - 4, y0 + 4, "100%", "text-anchor=\"end\"");
  canvas_.Text(kCdfLeft - 4, y1, "0", "text-anchor=\"end\"");
  canvas_.LatencyTicksX(lat, y1);
  canvas_.Text(kCdfLeft + kCdfW, y1 + 30, "latency", "text-anchor=\"end\"");
}

void SvgDiffWriter::DrawSpectra(const Panel& p, double top) {
  const double y0 = top + kDistTop, y1 = y0 + kDistH;
  LogAxis lat = p.lat;
  lat.a = y1;
  lat.b = y0;
  // The axis reaches as far as the larger side's count; each line as far as its own.
  int decades = 1;
  for (const Side& side : p.sides) {
    if (side.total != nullptr) {
      decades = std::max(decades, svg::SpectrumDecades(side.total->summary.count));
    }
  }
  const LogAxis x_axis{0, decades, kSpecLeft, kSpecLeft + kSpecW};
  canvas_.Frame(kSpecLeft, y0, kSpecW, kDistH);
  canvas_.Text(kSpecLeft, y0 - 6, "percentile spectrum: latency at percentile p");
  for (int s = 0; s < 2; ++s) {
    const LatencyGroup* g = p.sides[s].total;
    if (g == nullptr || g->summary.count == 0) continue;
    SideLine(s, "spectrum",
             svg::SpectrumPath(*g, svg::SpectrumDecades(g->summary.count), x_axis, lat));
  }
  canvas_.SpectrumTicks(x_axis, y1, kSpecLeft + kSpecW);
  canvas_.LatencyTicksY(lat, kSpecLeft);
}

void SvgDiffWriter::Write() {
  Layout();
  bool coarse = false;
  for (const SideLayout& side : sides_) coarse |= side.per_column > 1;
  const double top = kPageTop + (!note_.empty() && coarse ? 16 : 0);
  Header(top + std::max<size_t>(panels_.size(), 1) * kPanelH);
  for (size_t i = 0; i < panels_.size(); ++i) DrawPanel(panels_[i], top + i * kPanelH);
  if (panels_.empty()) {
    canvas_.Text(10, top + 20,
                 "no rows: neither file has samples of the devices and phases asked for");
  }
  out_ << "</svg>\n";
}

}  // namespace

void WriteSvgDiff(const LatencyDiff& diff, const LatencyReport& a, const LatencyReport& b,
                  const SvgDiffOptions& options, std::ostream& out) {
  SvgDiffWriter(diff, a, b, options, out).Write();
}

}  // namespace iotrace
