// `iotrace report --format svg` and `iotrace diff --format svg`: golden pictures of fixture
// files (same file, same bytes), the numbers in the picture against the JSON (cells add up to
// the phase's count, or to each side's in a diff; the p99 line is the intervals' p99; the
// unpaired marks add up to the report's unpaired events), and the picture as a real renderer
// (rsvg-convert) draws it: its size, not blank, the heatmaps' cells coloured where the data is.
// The goldens are rewritten by scripts/update-svg-goldens.sh (IOTRACE_UPDATE_GOLDEN=1).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli_test_util.h"
#include "gtest/gtest.h"
#include "iotrace/analysis/latency_diff.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/analysis/report.h"
#include "iotrace/cli/report_runner.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/output/svg_diff.h"
#include "svg_test_util.h"
#include "synth_recording.h"
#include "test_json.h"

namespace iotrace {
namespace {

using test::Attr;
using test::IsWhite;
using test::Png;
using test::ReadPng;
using test::Tags;

const std::string kFixtures = IOTRACE_FIXTURES;

using test::Slurp;

class ReportSvgTest : public test::CliTest {
 protected:
  ReportSvgTest() : CliTest("svg") {}

  // The binary, as a user runs it (`iotrace ARGS`, `iotrace report ARGS`); the exit status.
  int Iotrace(const std::string& args) { return RunLine(args).exit_code; }
  int Run(const std::string& args) { return Iotrace("report " + args); }

  // The library, with device names from the fixture tree, so that the picture is the same on
  // any machine; the fixture folder's path shown as FIXTURES.
  std::string Svg(const std::string& input, unsigned phases, double interval_s) {
    ReportOptions o;
    o.input = kFixtures + "/" + input;
    o.format = OutputFormat::kSvg;
    o.phases = phases;
    o.interval_s = interval_s;
    o.sysfs_root = kFixtures + "/devices/sys";
    o.procfs_root = kFixtures + "/devices/proc";
    std::ostringstream out, err;
    absl::Status s = RunReport(o, out, err);
    EXPECT_TRUE(s.ok()) << s;
    return HideFixtures(out.str());
  }

  // `iotrace diff A B --phases D2C,I2C --map 254:0=7:0 --block 0.02 --format svg`, through the
  // library with the fixture tree's device names as above.
  std::string DiffSvg(const std::string& a_input, const std::string& b_input) {
    constexpr double kBlock = 0.02;
    const LatencyReport a = Side(a_input, kBlock), b = Side(b_input, kBlock);
    DiffOptions options;
    options.map = {{"254:0", "7:0"}};
    options.phases = {Phase::kD2C, Phase::kI2C};
    absl::StatusOr<LatencyDiff> diff = DiffLatencyReports(a, b, kBlock, options);
    EXPECT_TRUE(diff.ok()) << diff.status();
    if (!diff.ok()) return "";
    std::ostringstream out;
    WriteSvgDiff(*diff, a, b, SvgDiffOptions{}, out);
    return HideFixtures(out.str());
  }

  static LatencyReport Side(const std::string& input, double interval_s) {
    ReportOptions o;
    o.input = kFixtures + "/" + input;
    o.interval_s = interval_s;
    o.sysfs_root = kFixtures + "/devices/sys";
    o.procfs_root = kFixtures + "/devices/proc";
    std::ostringstream err;
    absl::StatusOr<std::unique_ptr<TraceReader>> reader = OpenReportInput(o, err);
    EXPECT_TRUE(reader.ok()) << reader.status();
    if (!reader.ok()) return LatencyReport();
    absl::StatusOr<LatencyReport> r = BuildLatencyReport(**reader, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : LatencyReport();
  }

  static std::string HideFixtures(std::string svg) {
    for (size_t p = svg.find(kFixtures); p != std::string::npos; p = svg.find(kFixtures, p)) {
      svg.replace(p, kFixtures.size(), "FIXTURES");
    }
    return svg;
  }

  void CheckGolden(const std::string& input, unsigned phases, double interval_s,
                   const std::string& golden) {
    const std::string svg = Svg(input, phases, interval_s);
    EXPECT_EQ(svg, Svg(input, phases, interval_s)) << "the same file drew two pictures";
    ExpectGolden(svg, golden);
  }

  static void ExpectGolden(const std::string& svg, const std::string& golden) {
    const std::string path = kFixtures + "/" + golden;
    if (std::getenv("IOTRACE_UPDATE_GOLDEN") != nullptr) {
      std::ofstream(path, std::ios::binary) << svg;
    }
    EXPECT_TRUE(svg == Slurp(path))
        << golden << " differs from the picture drawn now (" << svg.size()
        << " bytes); if the change is meant, run scripts/update-svg-goldens.sh and look at it";
  }
};

TEST_F(ReportSvgTest, PerfDataPictureMatchesGolden) {
  CheckGolden("golden/iotrace_mq.data", PhaseBit(Phase::kD2C), 0.002,
              "golden/iotrace_mq.d2c.expected.svg");
}

TEST_F(ReportSvgTest, TraceDatPictureWithChosenIntervalMatchesGolden) {
  CheckGolden("tracedat/dd_v7_none.dat", PhaseBit(Phase::kD2C) | PhaseBit(Phase::kI2C), 0,
              "tracedat/dd_v7_none.expected.svg");
}

// The heatmap cells of each panel add up to that phase's count in the report, and the p99
// line's values are the interval report's p99 of each column (one interval a column here).
TEST_F(ReportSvgTest, PictureAgreesWithIntervalReport) {
  const std::string input = kFixtures + "/golden/perf_mq.data";
  const std::string svg_path = (dir_ / "r.svg").string(), json_path = (dir_ / "r.json").string();
  ASSERT_EQ(Run("-i " + input + " --interval 0.002 --format svg -o " + svg_path), 0);
  ASSERT_EQ(Run("-i " + input + " --interval 0.002 --format json -o " + json_path), 0);
  const std::string svg = Slurp(svg_path);
  test::Json report;
  ASSERT_TRUE(test::JsonParser(Slurp(json_path)).Parse(&report));

  // The JSON's counts, and p99 per interval index, by "dev op phase".
  std::map<std::string, uint64_t> counts;
  std::map<std::string, std::map<uint64_t, std::string>> p99;
  for (const test::Json& g : report["groups"].items) {
    counts[g["dev"].text + " " + g["op"].text + " " + g["phase"].text] =
        static_cast<uint64_t>(g["count"].num());
  }
  for (const test::Json& iv : report["intervals"].items) {
    const uint64_t index = std::llround(iv["interval_start_s"].num() / 0.002);
    for (const test::Json& g : iv["groups"].items) {
      if (g["count"].num() == 0) continue;
      p99[g["dev"].text + " " + g["op"].text + " " + g["phase"].text][index] = g["p99_ns"].text;
    }
  }
  const std::vector<size_t> panels = Tags(svg, "<g class=\"panel\"");
  ASSERT_EQ(panels.size(), counts.size());
  size_t lines_checked = 0;
  for (size_t i = 0; i < panels.size(); ++i) {
    const size_t end = i + 1 < panels.size() ? panels[i + 1] : svg.size();
    const std::string key = Attr(svg, panels[i], "data-dev") + " " +
                            Attr(svg, panels[i], "data-op") + " " +
                            Attr(svg, panels[i], "data-phase");
    ASSERT_TRUE(counts.count(key)) << key;
    EXPECT_EQ(std::stoull(Attr(svg, panels[i], "data-count")), counts[key]) << key;
    const size_t heatmap = svg.find("<g class=\"heatmap\">", panels[i]);
    ASSERT_LT(heatmap, end) << key;
    EXPECT_EQ(test::HeatmapCount(svg, heatmap), counts[key]) << key << ": the heatmap's cells do not add up";
    if (counts[key] == 0) continue;
    const size_t line = svg.find("<path class=\"p99\"", panels[i]);
    ASSERT_LT(line, end) << key;
    std::istringstream values(Attr(svg, line, "data-ns"));
    std::map<uint64_t, std::string> drawn;
    uint64_t column = 0;
    for (std::string v; values >> v; ++column) {
      if (v != "-") drawn[column] = v;
    }
    EXPECT_EQ(column, 102u) << key << ": 0.2026 s in columns of 2 ms";
    EXPECT_EQ(drawn, p99[key]) << key << ": the p99 line is not the intervals' p99";
    ++lines_checked;
  }
  EXPECT_GE(lines_checked, 6u);
}

// The grey marks of a file's picture: the unpaired events of each column (every panel marks
// the same columns) add up to those the JSON report counts (issues without an insert,
// completions without an issue, unmatched requeues).
TEST_F(ReportSvgTest, UnpairedMarksAddUpToTheReportsUnpairedEvents) {
  for (const char* fixture : {"golden/iotrace_mq.data", "golden/iotrace_none.data"}) {
    const std::string input = kFixtures + "/" + fixture;
    const std::string svg_path = (dir_ / "u.svg").string();
    const std::string json_path = (dir_ / "u.json").string();
    ASSERT_EQ(Run("-i " + input + " --interval 0.005 --format svg -o " + svg_path), 0);
    ASSERT_EQ(Run("-i " + input + " --format json -o " + json_path), 0);
    const std::string svg = Slurp(svg_path);
    test::Json report;
    ASSERT_TRUE(test::JsonParser(Slurp(json_path)).Parse(&report));
    const test::Json& c = report["completeness"];
    uint64_t unpaired = std::llround(c["completes_without_issue"].num() +
                                     c["requeues_unmatched"].num());
    for (const auto& [reason, n] : c["issues_without_insert"].fields) {
      unpaired += std::llround(n.num());
    }
    const std::vector<size_t> panels = Tags(svg, "<g class=\"panel\"");
    ASSERT_GE(panels.size(), 1u);
    const size_t end = panels.size() > 1 ? panels[1] : svg.size();
    uint64_t marked = 0;
    size_t columns = 0;
    for (size_t mark : Tags(svg, "<rect class=\"unpaired\"", panels[0], end)) {
      const size_t title = svg.find("<title>", mark) + 7;
      const size_t colon = svg.find(": ", title) + 2;
      marked += std::stoull(svg.substr(colon, svg.find(' ', colon) - colon));
      ++columns;
    }
    EXPECT_EQ(marked, unpaired) << fixture;
    EXPECT_GT(unpaired, 0u) << fixture << ": a fixture with unpaired events is needed here";
    EXPECT_GE(columns, 1u) << fixture;
  }
}

TEST_F(ReportSvgTest, ColumnsPastTheLimitAreMergedAndSaidSo) {
  const std::string path = (dir_ / "fine.svg").string();
  // 0.2 s at 10 us: 20260 intervals, more than 1000 columns.
  ASSERT_EQ(Run("-i " + kFixtures + "/golden/perf_mq.data --interval 0.00001 --format svg -o " +
                path),
            0);
  const std::string svg = Slurp(path);
  EXPECT_NE(svg.find("columns coarsened: each holds "), std::string::npos);
  const size_t line = svg.find("<path class=\"p99\"");
  ASSERT_NE(line, std::string::npos);
  std::istringstream values(Attr(svg, line, "data-ns"));
  size_t columns = 0;
  for (std::string v; values >> v;) ++columns;
  EXPECT_LE(columns, 1000u);
  EXPECT_GT(columns, 100u);
}

// A file of 40 devices (240 panels, more than the 64 a picture draws): the binary draws the
// 10 devices with the most requests (6 panels each), every panel with its device's count as
// the generator made it, and says so at the top; --dev of three devices draws those, no note;
// --phases d2c --op read: 40 panels, all drawn.
TEST_F(ReportSvgTest, ManyDevicesDrawTheBusiestAndSaySo) {
  bench::SynthOptions o;
  o.trace_dat = true;
  o.cpus = 2;
  o.devices = 40;
  o.in_flight = 16;
  o.events = 60'000;
  o.formats_dir = kFixtures + "/formats/6.18";
  bench::SynthExpected expected;
  const std::string file = (dir_ / "many.dat").string();
  ASSERT_TRUE(bench::WriteSynthRecording(file, o, &expected).ok());
  // The devices by requests (reads + writes), most first, ties to the lower index.
  std::vector<uint32_t> order(o.devices);
  std::iota(order.begin(), order.end(), 0u);
  auto requests = [&](uint32_t i) { return expected.requests[i][0] + expected.requests[i][1]; };
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return requests(a) > requests(b); });
  // dev -> each panel's count; and each panel's heatmap (its intervals) adds up to its count.
  auto panels_of = [&](const std::string& svg) {
    std::map<std::string, std::vector<uint64_t>> by_dev;
    for (size_t at : Tags(svg, "<g class=\"panel\"")) {
      const uint64_t count = std::stoull(Attr(svg, at, "data-count"));
      by_dev[Attr(svg, at, "data-dev")].push_back(count);
      const size_t heatmap = svg.find("<g class=\"heatmap\">", at);
      EXPECT_NE(heatmap, std::string::npos);
      if (heatmap != std::string::npos) EXPECT_EQ(test::HeatmapCount(svg, heatmap), count);
    }
    return by_dev;
  };
  const std::string path = (dir_ / "many.svg").string();
  ASSERT_EQ(Run("-i " + file + " --format svg -o " + path), 0);
  std::string svg = Slurp(path);
  EXPECT_NE(svg.find("40 devices: the 10 with the most requests drawn, 60 of 240 panels; --dev "
                     "picks others"),
            std::string::npos);
  auto drawn = panels_of(svg);
  ASSERT_EQ(drawn.size(), 10u);
  for (size_t k = 0; k < 10; ++k) {
    const uint32_t i = order[k];
    const auto it = drawn.find(DevString(bench::SynthDev(i)));
    ASSERT_NE(it, drawn.end()) << "device " << i << " of the 10 busiest not drawn";
    ASSERT_EQ(it->second.size(), 6u);
    // Reads' three phases, then writes' (the report's order).
    for (size_t p = 0; p < 6; ++p) EXPECT_EQ(it->second[p], expected.requests[i][p / 3]);
  }
  // The summary CSV beside the picture is the whole file's: every device's rows.
  const std::string csv = (dir_ / "many.csv").string();
  ASSERT_EQ(Run("-i " + file + " --format svg -o " + path + " --summary-csv " + csv), 0);
  std::istringstream lines(Slurp(csv));
  size_t csv_rows = 0;
  for (std::string line; std::getline(lines, line);) csv_rows += !line.empty();
  EXPECT_EQ(csv_rows, 1 + 240u);  // the header, then the rows
  // A --dev that names nothing is still said, beside the devices it named that are drawn.
  const auto bogus =
      RunLine("report -i " + file + " --dev bogus --dev 259:1 --format svg -o " + path);
  EXPECT_EQ(bogus.exit_code, 0);
  EXPECT_NE(bogus.err.find("bogus"), std::string::npos) << bogus.err;
  ASSERT_EQ(Run("-i " + file + " --dev 259:3 --dev 259:7 --dev 259:39 --format svg -o " + path), 0);
  svg = Slurp(path);
  EXPECT_EQ(svg.find("with the most requests drawn"), std::string::npos);
  drawn = panels_of(svg);
  EXPECT_EQ(drawn.size(), 3u);
  EXPECT_EQ(drawn.count("259:39"), 1u);
  ASSERT_EQ(Run("-i " + file + " --phases d2c --op read --format svg -o " + path), 0);
  svg = Slurp(path);
  EXPECT_EQ(Tags(svg, "<g class=\"panel\"").size(), 40u);  // 40 panels: all fit
  EXPECT_EQ(svg.find("with the most requests drawn"), std::string::npos);
}

TEST_F(ReportSvgTest, PhasesSelectTheHistogramsOfEveryFormat) {
  const std::string json = (dir_ / "r.json").string();
  ASSERT_EQ(Run("-i " + kFixtures + "/golden/perf_mq.data --phases I2C,d2c --interval 0.05 "
                "--format json -o " + json),
            0);
  test::Json report;
  ASSERT_TRUE(test::JsonParser(Slurp(json)).Parse(&report));
  std::map<std::string, size_t> phases;
  for (const test::Json& g : report["groups"].items) ++phases[g["phase"].text];
  for (const test::Json& iv : report["intervals"].items) {
    for (const test::Json& g : iv["groups"].items) ++phases[g["phase"].text];
  }
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_GT(phases["D2C"], 3u);
  EXPECT_GT(phases["I2C"], 3u);
}

TEST_F(ReportSvgTest, RefusesSvgEventDumpAndUnknownPhases) {
  EXPECT_EQ(Run("-i " + kFixtures + "/golden/perf_mq.data --events --format svg"), 2);
  EXPECT_NE(Slurp((dir_ / "stderr").string()).find("--events --format svg"), std::string::npos);
  EXPECT_EQ(Run("-i " + kFixtures + "/golden/perf_mq.data --phases x2y --format svg"), 2);
  EXPECT_NE(Slurp((dir_ / "stderr").string()).find("unknown phase 'x2y'"), std::string::npos);
}

TEST_F(ReportSvgTest, RsvgConvertDrawsTheHeatmapWhereTheDataIs) {
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "rsvg-convert is not installed (Debian's librsvg2-bin; "
                    "scripts/test.sh installs it)";
  }
  const std::string svg_path = (dir_ / "r.svg").string(), png_path = (dir_ / "r.png").string();
  ASSERT_EQ(Run("-i " + kFixtures +
                "/golden/perf_mq.data --phases d2c --interval 0.01 --format svg -o " + svg_path),
            0);
  const std::string render = "rsvg-convert -o " + png_path + " " + svg_path;
  ASSERT_EQ(std::system(render.c_str()), 0) << render;
  Png png;
  std::string why;
  ASSERT_TRUE(ReadPng(Slurp(png_path), &png, &why)) << why;
  const std::string svg = Slurp(svg_path);
  const size_t panels = Tags(svg, "<g class=\"panel\"").size();
  ASSERT_GE(panels, 1u);
  EXPECT_EQ(png.width, 1000u);
  EXPECT_EQ(png.height, 96 + 540 * panels) << "the SVG's size, as rendered";

  EXPECT_GT(test::InkedPixels(png), png.pixels.size() / png.channels / 50)
      << "the picture is (nearly) blank";

  // Each heatmap cell at least 3 px square: the pixel at its centre has the cell's colour (the
  // lines drawn over the cells may cover some; most must show).
  const test::CellsSeen seen =
      test::CellsInTheirColour(svg, svg.find("<g class=\"heatmap\">"), png);
  ASSERT_GE(seen.cells, 10u);
  EXPECT_GE(seen.matching * 10, seen.cells * 8)
      << seen.matching << " of " << seen.cells << " cells drawn as filled";
  // And where no request was, the heatmap stays white: its top left corner (the panel's
  // latency axis runs a decade past the longest D2C).
  EXPECT_TRUE(IsWhite(png.At(81, 96 + 90 + 2)));
}

TEST_F(ReportSvgTest, DiffOfPerfDataAgainstTraceDatWithMapMatchesGolden) {
  const std::string svg = DiffSvg("golden/perf_mq.data", "tracedat/dd_v6.dat");
  EXPECT_EQ(svg, DiffSvg("golden/perf_mq.data", "tracedat/dd_v6.dat"))
      << "the same files drew two pictures";
  ExpectGolden(svg, "golden/perf_mq-dd_v6.diff.expected.svg");
  // Both sides of the mapped pair are drawn, and the rows of one side only are there too.
  EXPECT_NE(svg.find("data-dev-a=\"254:0\" data-dev-b=\"7:0\""), std::string::npos);
  EXPECT_NE(svg.find("data-verdict=\"a_only\""), std::string::npos);
}

// A diff of more rows than the picture draws (SvgDiffOptions::max_panels, lowered here): the
// rows drawn are the changed ones first (smallest adjusted p first), then those of one side,
// then the most requests, in the diff's order, and the picture says how many of how many; with
// room for every row, no note and the same picture as by default.
TEST_F(ReportSvgTest, DiffOfMoreRowsThanDrawnDrawsTheChangedFirstAndSaysSo) {
  constexpr double kBlock = 0.02;
  const LatencyReport a = Side("golden/perf_mq.data", kBlock);
  const LatencyReport b = Side("tracedat/dd_v6.dat", kBlock);
  DiffOptions options;
  options.map = {{"254:0", "7:0"}};
  absl::StatusOr<LatencyDiff> diff = DiffLatencyReports(a, b, kBlock, options);
  ASSERT_TRUE(diff.ok()) << diff.status();
  // Rows both sides have, the largest first: all made "same" but the second largest, "slower"
  // at p 0.04, and the third, "faster" at p 0.001, so that neither requests nor the diff's order
  // give the ranking (the writer draws what the rows say).
  std::vector<size_t> both, one_side;
  for (size_t i = 0; i < diff->rows.size(); ++i) {
    const DiffRow& r = diff->rows[i];
    (r.count_a != 0 && r.count_b != 0 ? both : one_side).push_back(i);
  }
  ASSERT_GE(both.size(), 3u);
  ASSERT_GE(one_side.size(), 1u);
  auto more_requests = [&](size_t x, size_t y) {
    return diff->rows[x].count_a + diff->rows[x].count_b >
           diff->rows[y].count_a + diff->rows[y].count_b;
  };
  std::stable_sort(both.begin(), both.end(), more_requests);
  std::stable_sort(one_side.begin(), one_side.end(), more_requests);
  for (size_t i : both) {
    diff->rows[i].verdict = DiffVerdict::kSame;
    diff->rows[i].p_adjusted = 1;
  }
  diff->rows[both[1]].verdict = DiffVerdict::kSlower;
  diff->rows[both[1]].p_adjusted = 0.04;
  diff->rows[both[2]].verdict = DiffVerdict::kFaster;
  diff->rows[both[2]].p_adjusted = 0.001;
  const std::vector<DiffRow>& rows = diff->rows;
  // The order they are drawn in, by construction: the faster row (smaller p), the slower, the
  // rows of one side, then the other rows of both, each by requests.
  std::vector<size_t> by_rank = {both[2], both[1]};
  by_rank.insert(by_rank.end(), one_side.begin(), one_side.end());
  by_rank.push_back(both[0]);
  by_rank.insert(by_rank.end(), both.begin() + 3, both.end());
  ASSERT_EQ(by_rank.size(), rows.size());
  std::ostringstream all;
  WriteSvgDiff(*diff, a, b, SvgDiffOptions{}, all);
  for (size_t k = 1; k <= rows.size(); ++k) {
    SCOPED_TRACE(k);
    SvgDiffOptions o;
    o.max_panels = k;
    std::ostringstream out;
    WriteSvgDiff(*diff, a, b, o, out);
    const std::string svg = out.str();
    std::vector<size_t> want(by_rank.begin(), by_rank.begin() + k);
    std::sort(want.begin(), want.end());
    const std::vector<size_t> drawn = Tags(svg, "<g class=\"row\"");
    ASSERT_EQ(drawn.size(), k);
    for (size_t j = 0; j < k; ++j) {
      const DiffRow& r = rows[want[j]];
      EXPECT_EQ(Attr(svg, drawn[j], "data-op"), BlockOpName(r.op));
      EXPECT_EQ(Attr(svg, drawn[j], "data-phase"), PhaseName(r.phase));
      EXPECT_EQ(Attr(svg, drawn[j], "data-verdict"), DiffVerdictName(r.verdict));
      EXPECT_EQ(Attr(svg, drawn[j], "data-count-a"), std::to_string(r.count_a));
      EXPECT_EQ(Attr(svg, drawn[j], "data-count-b"), std::to_string(r.count_b));
    }
    const std::string note = absl::StrFormat("%u rows (", rows.size());
    if (k < rows.size()) {
      EXPECT_NE(svg.find(note), std::string::npos);
      EXPECT_NE(svg.find(absl::StrFormat(": %u drawn, the changed first, then one side's", k)),
                std::string::npos);
    } else {
      EXPECT_EQ(svg.find("drawn, the changed first"), std::string::npos);
      EXPECT_EQ(svg, all.str());
    }
  }
}

// Each row: its verdict and counts are the JSON diff's, and each side's heatmap cells add up to
// that side's count.
TEST_F(ReportSvgTest, DiffHeatmapsAddUpToEachSidesCount) {
  const std::string a = kFixtures + "/golden/perf_mq.data";
  const std::string b = kFixtures + "/golden/iotrace_mq.data";
  const std::string svg_path = (dir_ / "d.svg").string(), json_path = (dir_ / "d.json").string();
  ASSERT_EQ(Iotrace("diff " + a + " " + b + " --format svg -o " + svg_path), 0);
  ASSERT_EQ(Iotrace("diff " + a + " " + b + " --format json -o " + json_path), 0);
  const std::string svg = Slurp(svg_path);
  test::Json diff;
  ASSERT_TRUE(test::JsonParser(Slurp(json_path)).Parse(&diff));
  const std::vector<size_t> rows = Tags(svg, "<g class=\"row\"");
  ASSERT_EQ(rows.size(), diff["rows"].items.size());
  size_t both = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const test::Json& row = diff["rows"].items[i];
    const size_t end = i + 1 < rows.size() ? rows[i + 1] : svg.size();
    EXPECT_EQ(Attr(svg, rows[i], "data-op"), row["op"].text) << i;
    EXPECT_EQ(Attr(svg, rows[i], "data-phase"), row["phase"].text) << i;
    EXPECT_EQ(Attr(svg, rows[i], "data-verdict"), row["verdict"].text) << i;
    const std::vector<size_t> heatmaps = Tags(svg, "<g class=\"heatmap\">", rows[i], end);
    size_t drawn = 0;
    for (const char* side : {"a", "b"}) {
      const uint64_t count =
          row[side].type == test::Json::kNull ? 0 : std::llround(row[side]["count"].num());
      EXPECT_EQ(std::stoull(Attr(svg, rows[i], std::string("data-count-") + side)), count);
      if (count == 0) continue;
      ASSERT_LT(drawn, heatmaps.size()) << i << side;
      EXPECT_EQ(test::HeatmapCount(svg, heatmaps[drawn]), count)
          << "row " << i << " side " << side << ": the heatmap's cells do not add up";
      ++drawn;
    }
    EXPECT_EQ(drawn, heatmaps.size()) << i;
    both += drawn == 2;
  }
  EXPECT_GE(both, 3u);
}

TEST_F(ReportSvgTest, RsvgConvertDrawsBothHeatmapsOfADiff) {
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "rsvg-convert is not installed (Debian's librsvg2-bin; "
                    "scripts/test.sh installs it)";
  }
  const std::string svg_path = (dir_ / "d.svg").string(), png_path = (dir_ / "d.png").string();
  ASSERT_EQ(Iotrace("diff " + kFixtures + "/golden/perf_mq.data " + kFixtures +
                "/golden/iotrace_mq.data --phases d2c --block 0.01 --format svg -o " + svg_path),
            0);
  const std::string render = "rsvg-convert -o " + png_path + " " + svg_path;
  ASSERT_EQ(std::system(render.c_str()), 0) << render;
  test::Png png;
  std::string why;
  ASSERT_TRUE(test::ReadPng(Slurp(png_path), &png, &why)) << why;
  const std::string svg = Slurp(svg_path);
  const std::vector<size_t> rows = Tags(svg, "<g class=\"row\"");
  ASSERT_GE(rows.size(), 1u);
  EXPECT_EQ(png.width, 1000u);
  EXPECT_EQ(png.height, 96 + 500 * rows.size()) << "the SVG's size, as rendered";
  EXPECT_GT(test::InkedPixels(png), png.pixels.size() / png.channels / 50)
      << "the picture is (nearly) blank";
  // In every row compared, both heatmaps show most of their cells in their colours.
  size_t compared = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t end = i + 1 < rows.size() ? rows[i + 1] : svg.size();
    const std::vector<size_t> heatmaps = Tags(svg, "<g class=\"heatmap\">", rows[i], end);
    if (heatmaps.size() != 2) continue;
    ++compared;
    for (size_t at : heatmaps) {
      const test::CellsSeen seen = test::CellsInTheirColour(svg, at, png);
      ASSERT_GE(seen.cells, 5u) << "row " << i;
      EXPECT_GE(seen.matching * 10, seen.cells * 8)
          << "row " << i << ": " << seen.matching << " of " << seen.cells
          << " cells drawn as filled";
    }
  }
  EXPECT_GE(compared, 1u);
}

}  // namespace
}  // namespace iotrace
