// `iotrace diff A B --format svg`: a golden picture of two fixtures of different formats paired
// with --map (same files, same bytes), each row's two heatmaps adding up to that side's count in
// the JSON diff, and the picture as rsvg-convert draws it: its size, not blank, both heatmaps'
// cells in their colours. The golden is rewritten by scripts/update-svg-goldens.sh.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/analysis/latency_diff.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/cli/report_runner.h"
#include "iotrace/output/svg_diff.h"
#include "svg_test_util.h"
#include "test_json.h"

namespace iotrace {
namespace {

using test::Attr;
using test::Tags;

const std::string kFixtures = IOTRACE_FIXTURES;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class DiffSvgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("iotrace-diff-svg-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `iotrace diff A B args`, as a user runs it; the exit status.
  int Run(const std::string& args) {
    const std::string cmd = std::string(IOTRACE_BINARY) + " diff " + args + " 2>" +
                            (dir_ / "stderr").string();
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // One side as diff builds it, with device names from the fixture tree so that the picture is
  // the same on any machine.
  static LatencyReport Side(const std::string& input, double block_s) {
    ReportOptions o;
    o.input = kFixtures + "/" + input;
    o.interval_s = block_s;
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

  std::filesystem::path dir_;
};

TEST_F(DiffSvgTest, PerfDataAgainstTraceDatWithMapMatchesGolden) {
  constexpr double kBlock = 0.02;
  auto draw = [&]() {
    const LatencyReport a = Side("golden/perf_mq.data", kBlock);
    const LatencyReport b = Side("tracedat/dd_v6.dat", kBlock);
    DiffOptions options;
    options.map = {{"254:0", "7:0"}};
    options.phases = {Phase::kD2C, Phase::kI2C};
    absl::StatusOr<LatencyDiff> diff = DiffLatencyReports(a, b, kBlock, options);
    EXPECT_TRUE(diff.ok()) << diff.status();
    if (!diff.ok()) return std::string();
    std::ostringstream out;
    WriteSvgDiff(*diff, a, b, SvgDiffOptions{}, out);
    std::string svg = out.str();
    for (size_t p = svg.find(kFixtures); p != std::string::npos; p = svg.find(kFixtures, p)) {
      svg.replace(p, kFixtures.size(), "FIXTURES");
    }
    return svg;
  };
  const std::string svg = draw();
  EXPECT_EQ(svg, draw()) << "the same files drew two pictures";
  const std::string path = kFixtures + "/golden/perf_mq-dd_v6.diff.expected.svg";
  if (std::getenv("IOTRACE_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << svg;
  }
  EXPECT_TRUE(svg == Slurp(path))
      << path << " differs from the picture drawn now (" << svg.size()
      << " bytes); if the change is meant, run scripts/update-svg-goldens.sh and look at it";
  // Both sides of the mapped pair are drawn, and the rows of one side only are there too.
  EXPECT_NE(svg.find("data-dev-a=\"254:0\" data-dev-b=\"7:0\""), std::string::npos);
  EXPECT_NE(svg.find("data-verdict=\"a_only\""), std::string::npos);
}

// Each row: its verdict and counts are the JSON diff's, and each side's heatmap cells add up to
// that side's count.
TEST_F(DiffSvgTest, EachHeatmapAddsUpToItsSidesCount) {
  const std::string a = kFixtures + "/golden/perf_mq.data";
  const std::string b = kFixtures + "/golden/iotrace_mq.data";
  const std::string svg_path = (dir_ / "d.svg").string(), json_path = (dir_ / "d.json").string();
  ASSERT_EQ(Run(a + " " + b + " --format svg -o " + svg_path), 0);
  ASSERT_EQ(Run(a + " " + b + " --format json -o " + json_path), 0);
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

TEST_F(DiffSvgTest, RsvgConvertDrawsBothHeatmapsWhereTheDataIs) {
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "rsvg-convert is not installed (Debian's librsvg2-bin; "
                    "scripts/test.sh installs it)";
  }
  const std::string svg_path = (dir_ / "d.svg").string(), png_path = (dir_ / "d.png").string();
  ASSERT_EQ(Run(kFixtures + "/golden/perf_mq.data " + kFixtures +
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
