// `iotrace report --format svg`: golden pictures of fixture files (same file, same bytes), the
// numbers in the picture against the interval report's JSON (cells add up to the phase's count,
// the p99 line is the intervals' p99), and the picture as a real renderer (rsvg-convert) draws
// it: its size, not blank, the heatmap's cells coloured where the data is.
// The goldens are rewritten by scripts/update-svg-goldens.sh (IOTRACE_UPDATE_GOLDEN=1).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/analysis/report.h"
#include "iotrace/cli/report_runner.h"
#include "svg_test_util.h"
#include "test_json.h"

namespace iotrace {
namespace {

using test::Attr;
using test::IsWhite;
using test::Png;
using test::ReadPng;
using test::Tags;

const std::string kFixtures = IOTRACE_FIXTURES;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ReportSvgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("iotrace-svg-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The binary, as a user runs it; the exit status.
  int Run(const std::string& args) {
    const std::string cmd = std::string(IOTRACE_BINARY) + " report " + args + " 2>" +
                            (dir_ / "stderr").string();
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

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
    std::string svg = out.str();
    for (size_t p = svg.find(kFixtures); p != std::string::npos; p = svg.find(kFixtures, p)) {
      svg.replace(p, kFixtures.size(), "FIXTURES");
    }
    return svg;
  }

  void CheckGolden(const std::string& input, unsigned phases, double interval_s,
                   const std::string& golden) {
    const std::string svg = Svg(input, phases, interval_s);
    EXPECT_EQ(svg, Svg(input, phases, interval_s)) << "the same file drew two pictures";
    const std::string path = kFixtures + "/" + golden;
    if (std::getenv("IOTRACE_UPDATE_GOLDEN") != nullptr) {
      std::ofstream(path, std::ios::binary) << svg;
    }
    EXPECT_TRUE(svg == Slurp(path))
        << golden << " differs from the picture drawn now (" << svg.size()
        << " bytes); if the change is meant, run scripts/update-svg-goldens.sh and look at it";
  }

  std::filesystem::path dir_;
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

}  // namespace
}  // namespace iotrace
