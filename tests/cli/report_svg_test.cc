// `iotrace report --format svg`: golden pictures of fixture files (same file, same bytes), the
// numbers in the picture against the interval report's JSON (cells add up to the phase's count,
// the p99 line is the intervals' p99), and the picture as a real renderer (rsvg-convert) draws
// it: its size, not blank, the heatmap's cells coloured where the data is.
// The goldens are rewritten by scripts/update-svg-goldens.sh (IOTRACE_UPDATE_GOLDEN=1).
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

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
#include "test_json.h"

namespace iotrace {
namespace {

const std::string kFixtures = IOTRACE_FIXTURES;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value of attribute `name` in the tag that starts at `tag`, "" when absent.
std::string Attr(const std::string& svg, size_t tag, const std::string& name) {
  const size_t end = svg.find('>', tag);
  const size_t at = svg.find(" " + name + "=\"", tag);
  if (at == std::string::npos || at > end) return "";
  const size_t from = at + name.size() + 3;
  return svg.substr(from, svg.find('"', from) - from);
}

// Every tag of `svg` that starts with `start` ("<g class=\"panel\""), by position.
std::vector<size_t> Tags(const std::string& svg, const std::string& start, size_t from = 0,
                         size_t to = std::string::npos) {
  std::vector<size_t> at;
  for (size_t p = svg.find(start, from); p != std::string::npos && p < to;
       p = svg.find(start, p + 1)) {
    at.push_back(p);
  }
  return at;
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
    uint64_t cells = 0;
    for (size_t rect : Tags(svg, "<rect ", heatmap, svg.find("</g>", heatmap))) {
      cells += std::stoull(Attr(svg, rect, "data-n"));
    }
    EXPECT_EQ(cells, counts[key]) << key << ": the heatmap's cells do not add up";
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

// A PNG as rsvg-convert writes it: 8 bits per channel, RGB or RGBA, not interlaced.
struct Png {
  uint32_t width = 0, height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // rows of width * channels bytes
  const uint8_t* At(uint32_t x, uint32_t y) const {
    return &pixels[(static_cast<size_t>(y) * width + x) * channels];
  }
};

uint32_t Be32(const std::string& s, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 2])) << 8 |
         static_cast<uint8_t>(s[at + 3]);
}

bool ReadPng(const std::string& file, Png* png, std::string* why) {
  if (file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return *why = "not a PNG", false;
  std::string idat;
  for (size_t at = 8; at + 12 <= file.size();) {
    const uint32_t n = Be32(file, at);
    const std::string type = file.substr(at + 4, 4);
    if (type == "IHDR") {
      png->width = Be32(file, at + 8);
      png->height = Be32(file, at + 12);
      const int depth = file[at + 16], colour = file[at + 17], interlace = file[at + 20];
      if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0) {
        return *why = "unexpected PNG layout", false;
      }
      png->channels = colour == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat += file.substr(at + 8, n);
    }
    at += 12 + n;
  }
  const size_t stride = static_cast<size_t>(png->width) * png->channels;
  std::vector<uint8_t> raw((stride + 1) * png->height);
  uLongf size = raw.size();
  if (uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      size != raw.size()) {
    return *why = "bad image data", false;
  }
  png->pixels.assign(stride * png->height, 0);
  const int bpp = png->channels;
  for (size_t y = 0; y < png->height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* out = &png->pixels[y * stride];
    const uint8_t* up = y == 0 ? nullptr : out - stride;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<size_t>(bpp) ? out[x - bpp] : 0;
      const int b = up ? up[x] : 0;
      const int c = up && x >= static_cast<size_t>(bpp) ? up[x - bpp] : 0;
      int pred = 0;
      switch (filter) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: return *why = "unknown PNG filter", false;
      }
      out[x] = static_cast<uint8_t>(in[x] + pred);
    }
  }
  return true;
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

  auto white = [](const uint8_t* p) { return p[0] > 250 && p[1] > 250 && p[2] > 250; };
  size_t inked = 0;
  for (uint32_t y = 0; y < png.height; ++y) {
    for (uint32_t x = 0; x < png.width; ++x) inked += !white(png.At(x, y));
  }
  EXPECT_GT(inked, png.pixels.size() / png.channels / 50) << "the picture is (nearly) blank";

  // Each heatmap cell at least 3 px square: the pixel at its centre has the cell's colour (the
  // lines drawn over the cells may cover some; most must show).
  const size_t heatmap = svg.find("<g class=\"heatmap\">");
  size_t cells = 0, matching = 0;
  for (size_t rect : Tags(svg, "<rect ", heatmap, svg.find("</g>", heatmap))) {
    const double x = std::stod(Attr(svg, rect, "x")), y = std::stod(Attr(svg, rect, "y"));
    const double w = std::stod(Attr(svg, rect, "width")), h = std::stod(Attr(svg, rect, "height"));
    if (w < 3 || h < 3) continue;
    const uint32_t fill = std::stoul(Attr(svg, rect, "fill").substr(1), nullptr, 16);
    const uint8_t* p = png.At(static_cast<uint32_t>(x + w / 2), static_cast<uint32_t>(y + h / 2));
    ++cells;
    matching += std::abs(p[0] - static_cast<int>(fill >> 16)) < 8 &&
                std::abs(p[1] - static_cast<int>((fill >> 8) & 0xff)) < 8 &&
                std::abs(p[2] - static_cast<int>(fill & 0xff)) < 8;
  }
  ASSERT_GE(cells, 10u);
  EXPECT_GE(matching * 10, cells * 8) << matching << " of " << cells << " cells drawn as filled";
  // And where no request was, the heatmap stays white: its top left corner (the panel's
  // latency axis runs a decade past the longest D2C).
  EXPECT_TRUE(white(png.At(81, 96 + 90 + 2)));
}

}  // namespace
}  // namespace iotrace
