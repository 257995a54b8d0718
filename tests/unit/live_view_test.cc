#include "iotrace/output/live_view.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "iotrace/output/report_format.h"
#include "test_json.h"

namespace iotrace {
namespace {

using test::Json;
using test::JsonParser;

constexpr uint32_t kLoop0 = 7u << 20;
constexpr uint32_t kVda = 254u << 20;

std::vector<std::string> Lines(const std::string& text) {
  if (text.empty()) return {};
  return absl::StrSplit(text, '\n');
}

LatencyGroup Group(uint32_t dev, std::string device, BlockOp op, Phase phase, uint64_t base) {
  LatencyGroup g;
  g.dev = dev;
  g.device = std::move(device);
  g.op = op;
  g.phase = phase;
  g.buckets = {{base, base + 64, 3}, {2 * base, 2 * base + 64, 1}};
  g.summary.count = 4;
  g.summary.min_ns = base + 5;
  g.summary.mean_ns = 1.25 * base + 10.5;
  g.summary.p50_ns = base + 32;
  g.summary.p90_ns = 2 * base + 32;
  g.summary.p99_ns = 2 * base + 33;
  g.summary.p999_ns = 2 * base + 34;
  g.summary.max_ns = 2 * base + 40;
  g.summary.sum_ns = 5 * base + 42;
  return g;
}

LiveHeader Header() {
  LiveHeader h;
  h.host = "box";
  h.backend = "ftrace";
  h.ingest = "mmap";
  h.elapsed_s = 12;
  h.interval_s = 1;
  h.total_events = 9000;
  h.total_lost = 5;
  h.total_late = 1;
  h.total_unpaired = 7;
  h.unit = TimeUnit::kUs;
  return h;
}

// loop0 read (D2C, I2C) and vda write (D2C); two processes and the others.
LiveInterval SampleInterval() {
  LiveInterval iv;
  iv.index = 11;
  iv.start_s = 11;
  iv.length_s = 0.5;
  iv.groups.push_back(Group(kLoop0, "loop0", BlockOp::kRead, Phase::kD2C, 64000));
  iv.groups.push_back(Group(kLoop0, "loop0", BlockOp::kRead, Phase::kI2C, 128000));
  iv.groups.push_back(Group(kVda, "vda", BlockOp::kWrite, Phase::kD2C, 1'024'000));
  iv.throughput.push_back({kLoop0, "loop0", "", BlockOp::kRead, 400, 1'638'400});
  iv.throughput.push_back({kVda, "vda", "", BlockOp::kWrite, 3, 12288});
  iv.processes.push_back({1234, "fio", kLoop0, "loop0", 390, 1'597'440, 150000, 290000, 70000,
                          130000});
  iv.processes.push_back({77, "jbd2/vda1-8", kVda, "vda", 3, 12288, 0, 0, 1'100'000, 2'000'000});
  iv.processes.push_back({-1, "(others)", 0, "-", 10, 40960, 160000, 300000, 80000, 140000});
  iv.counts = {.events = 1600, .lost = 2, .late = 0, .unpaired = 3, .expired = 1, .inflight = 4};
  return iv;
}

// Four devices x read, write x five phases: 40 rows, more than 24 lines hold.
LiveInterval LongInterval() {
  LiveInterval iv = SampleInterval();
  iv.groups.clear();
  for (uint32_t d = 0; d < 4; ++d) {
    for (BlockOp op : {BlockOp::kRead, BlockOp::kWrite}) {
      for (int p = 0; p < kPhaseCount; ++p) {
        iv.groups.push_back(Group((8u << 20) | (d * 16), "sd" + std::string(1, 'a' + d), op,
                                  static_cast<Phase>(p), 10000 * (p + 1)));
      }
    }
  }
  return iv;
}

void ExpectFits(const std::string& screen, int cols, int rows) {
  const std::vector<std::string> lines = Lines(screen);
  EXPECT_LE(lines.size(), static_cast<size_t>(rows)) << screen;
  EXPECT_FALSE(!screen.empty() && screen.back() == '\n') << "a newline after the last line";
  for (const std::string& line : lines) {
    EXPECT_LE(line.size(), static_cast<size_t>(cols)) << line;
    for (char c : line) EXPECT_TRUE(c >= 0x20 && c <= 0x7e) << "byte " << int(c) << " in " << line;
  }
}

TEST(LiveScreenTest, FitsEightyByTwentyFour) {
  const std::string screen = FormatLiveScreen(Header(), SampleInterval(), 80, 24);
  ExpectFits(screen, 80, 24);
  const std::vector<std::string> lines = Lines(screen);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("iotrace live  12.0 s  box  ftrace (mmap)  every 1 s  latency in us", 0),
            0u)
      << lines[0];
  // Lost events in the interval: the marker leads, and the interval's counts come first.
  EXPECT_EQ(lines[1].rfind("!! interval 11: lost 2, late 0, unpaired 3, events 1600", 0), 0u)
      << lines[1];
}

TEST(LiveScreenTest, TableRowsInTheHeadersUnit) {
  const std::vector<std::string> lines = Lines(FormatLiveScreen(Header(), SampleInterval(), 80, 24));
  ASSERT_GE(lines.size(), 7u);
  EXPECT_EQ(lines[2], "");
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(lines[3], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"DEVICE", "OP", "PHASE", "COUNT", "IOPS", "MB/s", "MIN",
                                      "P50", "P90", "P99", "P99.9", "MAX"}));
  // 400 requests and 1638400 bytes in 0.5 s; latencies in us.
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(lines[4], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"loop0", "read", "D2C", "4", "800", "3.3", "64.0", "64.0",
                                      "128.0", "128.0", "128.0", "128.0"}));
  // The same device x op's next phase leaves its throughput blank.
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(lines[5], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"loop0", "read", "I2C", "4", "128.0", "128.0", "256.0",
                                      "256.0", "256.0", "256.0"}));
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(lines[6], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"vda", "write", "D2C", "4", "6", "0.0", "1024.0", "1024.0",
                                      "2048.0", "2048.0", "2048.0", "2048.0"}));
  // Every column lines up: each row is as long as the header.
  EXPECT_EQ(lines[4].size(), lines[3].size());
  EXPECT_EQ(lines[5].size(), lines[3].size());
}

TEST(LiveScreenTest, ProcessPaneAsBiotop) {
  LiveHeader h = Header();
  h.unit = TimeUnit::kMs;
  const std::vector<std::string> lines = Lines(FormatLiveScreen(h, SampleInterval(), 80, 24));
  ASSERT_EQ(lines.size(), 13u);  // 3 + table 4 + blank, title, header, 3 processes
  EXPECT_EQ(lines[7], "");
  EXPECT_EQ(lines[8], "top processes by I/Os");
  auto words = [](const std::string& s) {
    return std::vector<std::string>(absl::StrSplit(s, ' ', absl::SkipEmpty()));
  };
  EXPECT_EQ(words(lines[9]), (std::vector<std::string>{"PID", "COMM", "DEVICE", "I/Os", "KiB",
                                                       "I2C", "P50", "I2C", "P99"}));
  EXPECT_EQ(words(lines[10]),
            (std::vector<std::string>{"1234", "fio", "loop0", "390", "1560", "0.150", "0.290"}));
  // No insert among its requests: its I2C is unknown, not 0.
  EXPECT_EQ(words(lines[11]),
            (std::vector<std::string>{"77", "jbd2/vda1-8", "vda", "3", "12", "-", "-"}));
  EXPECT_EQ(words(lines[12]),
            (std::vector<std::string>{"-", "(others)", "-", "10", "40", "0.160", "0.300"}));
}

TEST(LiveScreenTest, LongTableEndsInCountOfTheRest) {
  const LiveInterval iv = LongInterval();
  const std::string screen = FormatLiveScreen(Header(), iv, 80, 24);
  ExpectFits(screen, 80, 24);
  const std::vector<std::string> lines = Lines(screen);
  ASSERT_EQ(lines.size(), 24u);
  // 3 header lines, the table in 15 (its header, 13 rows, the count of the rest), and the
  // processes in 6 (blank, title, header and the 3 there are, of the 8 they may keep: the
  // table takes the 2 they do not need).
  EXPECT_EQ(lines[3].rfind("DEVICE", 0), 0u);
  const size_t more = 3 + 1 + 13;
  EXPECT_EQ(lines[more], "... 27 more rows (-o FILE or --format json for all)");
  // The 13th row: sda's 10 rows, then sdb read I2D, D2C, I2C.
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(lines[more - 1], ' ', absl::SkipEmpty()))[2],
            "I2C");
  EXPECT_EQ(lines[more - 1].rfind("sdb", 0), 0u) << lines[more - 1];
  EXPECT_EQ(lines[more + 2], "top processes by I/Os");
  EXPECT_EQ(lines.back().rfind("   -  (others)", 0), 0u) << lines.back();
}

TEST(LiveScreenTest, TinyAndWideWindows) {
  for (int rows : {1, 2, 3, 4, 5, 6, 8, 10}) {
    for (int cols : {1, 20, 40}) {
      const std::string screen = FormatLiveScreen(Header(), LongInterval(), cols, rows);
      ExpectFits(screen, cols, rows);
      // In 3 rows the third is the blank line below the header, which is left out.
      EXPECT_EQ(Lines(screen).size(), static_cast<size_t>(rows == 3 ? 2 : rows))
          << rows << "x" << cols;
    }
  }
  EXPECT_EQ(FormatLiveScreen(Header(), LongInterval(), 0, 24), "");
  EXPECT_EQ(FormatLiveScreen(Header(), LongInterval(), 80, 0), "");
  // A wide and tall window shows every row, and no count of the rest.
  const std::string all = FormatLiveScreen(Header(), LongInterval(), 200, 60);
  EXPECT_EQ(Lines(all).size(), 3u + 41u + 6u);
  EXPECT_EQ(all.find("more rows"), std::string::npos);
}

TEST(LiveScreenTest, EmptyIntervalSaysSo) {
  LiveInterval iv;
  iv.index = 3;
  iv.length_s = 1;
  const std::vector<std::string> lines = Lines(FormatLiveScreen(Header(), iv, 80, 24));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1].rfind("interval 3: lost 0, late 0", 0), 0u) << lines[1];
  EXPECT_EQ(lines[3], "no block I/O completed in this interval");
}

TEST(LiveScreenTest, NamesCannotMoveTheCursor) {
  LiveInterval iv = SampleInterval();
  iv.processes[0].comm = "evil\x1b[2J\n";
  iv.groups[0].device = "d\xc3\xa9v";
  const std::string screen = FormatLiveScreen(Header(), iv, 80, 24);
  ExpectFits(screen, 80, 24);
  EXPECT_NE(screen.find("evil?[2J?"), std::string::npos);
  EXPECT_NE(screen.find("d??v"), std::string::npos);
}

TEST(LiveTerminalTest, FrameOverwritesInPlaceWithoutNewline) {
  const std::string screen = FormatLiveScreen(Header(), LongInterval(), 80, 24);
  const std::string frame = LiveTerminal::Frame(screen, 80, 24);
  EXPECT_EQ(frame.find('\n'), std::string::npos);
  EXPECT_EQ(frame.rfind("\x1b[H", 0), 0u);
  EXPECT_NE(frame.find("\x1b[24;1H"), std::string::npos);
  EXPECT_EQ(frame.find("\x1b[25;1H"), std::string::npos);
  // A full window: nothing below to clear.
  EXPECT_EQ(frame.find("\x1b[J"), std::string::npos);

  const std::string frame2 = LiveTerminal::Frame("ab\n\nabcd", 4, 24);
  // "abcd" fills the row: ESC[K would erase its last character.
  EXPECT_EQ(frame2, "\x1b[Hab\x1b[K\x1b[2;1H\x1b[K\x1b[3;1Habcd\x1b[4;1H\x1b[J");
  EXPECT_EQ(LiveTerminal::Frame("", 80, 24), "\x1b[H\x1b[1;1H\x1b[J");
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, n);
  return out;
}

TEST(LiveTerminalTest, AlternateScreenAndCursorAroundTheFrames) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  // A pipe is no terminal: 80x24.
  int cols = 0, rows = 0;
  LiveTerminal::WindowSize(fds[1], &cols, &rows);
  EXPECT_EQ(cols, 80);
  EXPECT_EQ(rows, 24);
  const std::string screen = FormatLiveScreen(Header(), SampleInterval(), 80, 24);
  {
    LiveTerminal term(fds[1]);
    ASSERT_TRUE(term.Draw(Header(), SampleInterval()).ok());
    ASSERT_TRUE(term.Draw(Header(), SampleInterval()).ok());
  }
  close(fds[1]);
  const std::string bytes = ReadAll(fds[0]);
  close(fds[0]);
  const std::string frame = LiveTerminal::Frame(screen, 80, 24);
  EXPECT_EQ(bytes, "\x1b[?1049h\x1b[?25l" + frame + frame + "\x1b[?25h\x1b[?1049l");
  EXPECT_EQ(bytes.find('\n'), std::string::npos);
}

TEST(LiveTerminalTest, NothingWrittenWithoutADraw) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  {
    LiveTerminal term(fds[1]);
    term.Close();
  }
  close(fds[1]);
  EXPECT_EQ(ReadAll(fds[0]), "");
  close(fds[0]);
}

TEST(LiveCsvTest, RowsHaveTheHeadersColumns) {
  std::ostringstream out;
  WriteLiveCsvHeader("", out);
  WriteLiveCsv(SampleInterval(), out);
  LiveInterval empty;
  empty.start_s = 11.5;
  empty.length_s = 0.5;
  empty.counts.late = 9;
  WriteLiveCsv(empty, out);
  const std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 1u + 3u + 1u + 1u);  // the last split is after the final newline
  EXPECT_EQ(lines.back(), "");
  EXPECT_EQ(lines[0], std::string("interval_start_s,") + kSummaryCsvHeader +
                          ",iops,bytes_per_s,lost,late,unpaired");
  const size_t columns = std::vector<std::string>(absl::StrSplit(lines[0], ',')).size();
  EXPECT_EQ(columns, 18u);
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(std::vector<std::string>(absl::StrSplit(lines[i], ',')).size(), columns) << lines[i];
  }
  EXPECT_EQ(lines[1], "11,7:0,loop0,read,D2C,4,64005,80010.5,64032,128032,128033,128034,128040,"
                      "800,3276800,2,0,3");
  EXPECT_EQ(lines[3], "11,254:0,vda,write,D2C,4,1024005,1280010.5,1024032,2048032,2048033,"
                      "2048034,2048040,6,24576,2,0,3");
  EXPECT_EQ(lines[4], "11.5,,,,,0,,,,,,,,0,0,0,9,0");
}

TEST(LiveJsonTest, OneObjectPerLineWithTheIntervalsValues) {
  std::ostringstream out;
  LiveInterval iv = SampleInterval();
  iv.final = true;
  WriteLiveJson(iv, Header(), out);
  LiveInterval empty;
  empty.index = 12;
  empty.start_s = 11.5;
  empty.length_s = 0.25;
  WriteLiveJson(empty, Header(), out);
  const std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], "");

  Json j;
  ASSERT_TRUE(JsonParser(lines[0]).Parse(&j)) << lines[0];
  ASSERT_EQ(j.type, Json::kObject);
  EXPECT_EQ(j["type"].text, "interval");
  EXPECT_EQ(j["index"].text, "11");
  EXPECT_EQ(j["interval_start_s"].text, "11");
  EXPECT_EQ(j["length_s"].text, "0.5");
  EXPECT_TRUE(j["final"].b);
  EXPECT_EQ(j["elapsed_s"].text, "12");
  ASSERT_EQ(j["groups"].items.size(), 3u);
  const Json& g = j["groups"][2];
  EXPECT_EQ(g["dev"].text, "254:0");
  EXPECT_EQ(g["device"].text, "vda");
  EXPECT_EQ(g["op"].text, "write");
  EXPECT_EQ(g["phase"].text, "D2C");
  EXPECT_EQ(g["count"].text, "4");
  EXPECT_EQ(g["min_ns"].text, "1024005");
  EXPECT_EQ(g["mean_ns"].text, "1280010.5");
  EXPECT_EQ(g["p50_ns"].text, "1024032");
  EXPECT_EQ(g["p90_ns"].text, "2048032");
  EXPECT_EQ(g["p99_ns"].text, "2048033");
  EXPECT_EQ(g["p999_ns"].text, "2048034");
  EXPECT_EQ(g["max_ns"].text, "2048040");
  EXPECT_EQ(g["sum_ns"].text, "5120042");
  ASSERT_EQ(g["buckets"].items.size(), 2u);
  EXPECT_EQ(g["buckets"][0]["lo_ns"].text, "1024000");
  EXPECT_EQ(g["buckets"][0]["hi_ns"].text, "1024064");
  EXPECT_EQ(g["buckets"][0]["count"].text, "3");
  EXPECT_EQ(g["buckets"][1]["lo_ns"].text, "2048000");
  EXPECT_EQ(g["buckets"][1]["count"].text, "1");
  EXPECT_EQ(g.fields.size(), 14u);

  ASSERT_EQ(j["throughput"].items.size(), 2u);
  const Json& t = j["throughput"][0];
  EXPECT_EQ(t["dev"].text, "7:0");
  EXPECT_EQ(t["device"].text, "loop0");
  EXPECT_EQ(t["op"].text, "read");
  EXPECT_EQ(t["requests"].text, "400");
  EXPECT_EQ(t["bytes"].text, "1638400");

  ASSERT_EQ(j["processes"].items.size(), 3u);
  const Json& p = j["processes"][0];
  EXPECT_EQ(p["pid"].text, "1234");
  EXPECT_EQ(p["comm"].text, "fio");
  EXPECT_EQ(p["dev"].text, "7:0");
  EXPECT_EQ(p["device"].text, "loop0");
  EXPECT_EQ(p["requests"].text, "390");
  EXPECT_EQ(p["bytes"].text, "1597440");
  EXPECT_EQ(p["i2c_p50_ns"].text, "150000");
  EXPECT_EQ(p["i2c_p99_ns"].text, "290000");
  EXPECT_EQ(p["d2c_p50_ns"].text, "70000");
  EXPECT_EQ(p["d2c_p99_ns"].text, "130000");
  // The others have no device of their own.
  const Json& others = j["processes"][2];
  EXPECT_EQ(others["pid"].text, "-1");
  EXPECT_EQ(others["comm"].text, "(others)");
  EXPECT_EQ(others["dev"].type, Json::kNull);
  EXPECT_EQ(others["device"].type, Json::kNull);
  EXPECT_EQ(others["requests"].text, "10");

  const Json& c = j["counts"];
  EXPECT_EQ(c["events"].text, "1600");
  EXPECT_EQ(c["lost"].text, "2");
  EXPECT_EQ(c["late"].text, "0");
  EXPECT_EQ(c["unpaired"].text, "3");
  EXPECT_EQ(c["expired"].text, "1");
  EXPECT_EQ(c["inflight"].text, "4");
  const Json& run = j["run"];
  EXPECT_EQ(run["events"].text, "9000");
  EXPECT_EQ(run["lost"].text, "5");
  EXPECT_EQ(run["late"].text, "1");
  EXPECT_EQ(run["unpaired"].text, "7");

  Json e;
  ASSERT_TRUE(JsonParser(lines[1]).Parse(&e)) << lines[1];
  EXPECT_EQ(e["index"].text, "12");
  EXPECT_EQ(e["interval_start_s"].text, "11.5");
  EXPECT_EQ(e["length_s"].text, "0.25");
  EXPECT_FALSE(e["final"].b);
  EXPECT_TRUE(e["groups"].items.empty());
  EXPECT_TRUE(e["processes"].items.empty());
}

}  // namespace
}  // namespace iotrace

namespace iotrace {
namespace {

// Every key of a JSON line is in docs/live.md's example, and every key of the example is
// written: the document cannot drift from the output.
void CollectKeys(const Json& j, std::set<std::string>* keys) {
  if (j.type == Json::kObject) {
    for (const auto& [k, v] : j.fields) {
      keys->insert(k);
      CollectKeys(v, keys);
    }
  } else if (j.type == Json::kArray) {
    for (const Json& item : j.items) CollectKeys(item, keys);
  }
}

TEST(LiveJsonDocTest, EveryKeyWrittenIsDocumentedAndEveryDocumentedKeyWritten) {
  std::ifstream in(std::string(IOTRACE_FIXTURES) + "/../../docs/live.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t at = doc.find("```json\n{\"type\": \"interval\"");
  ASSERT_NE(at, std::string::npos) << "docs/live.md has no JSON line example";
  const std::string block = doc.substr(at, doc.find("```\n", at + 7) - at);
  std::set<std::string> documented;
  std::regex key("\"([a-z0-9_]+)\":");
  for (std::sregex_iterator it(block.begin(), block.end(), key), end; it != end; ++it) {
    documented.insert((*it)[1]);
  }
  LiveInterval iv = SampleInterval();
  iv.notes = {"--dev 7:3 (7:3) went away (no device or no medium): its rows stop"};
  std::ostringstream out;
  WriteLiveJson(iv, Header(), out);
  Json j;
  ASSERT_TRUE(JsonParser(out.str()).Parse(&j)) << out.str();
  std::set<std::string> written;
  CollectKeys(j, &written);
  for (const std::string& k : written) EXPECT_TRUE(documented.count(k)) << k << " is not in docs/live.md";
  for (const std::string& k : documented) EXPECT_TRUE(written.count(k)) << k << " is documented, not written";
  ASSERT_EQ(j["notes"].items.size(), 1u);
  EXPECT_EQ(j["notes"][0].text, iv.notes[0]);
}

TEST(LiveScreenTest, NotesStandUnderTheHeader) {
  LiveInterval iv = SampleInterval();
  iv.notes = {"--dev 7:3 (7:3) went away (no device or no medium): its rows stop"};
  const std::vector<std::string> lines = Lines(FormatLiveScreen(Header(), iv, 80, 24));
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[2].rfind("note: --dev 7:3 (7:3) went away", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3], "");
}

}  // namespace
}  // namespace iotrace
