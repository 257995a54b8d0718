// The text report as people read it, and --events as CSV, run through the binary on the
// fixtures: every line of the text fits 80 columns, its summary tables carry the numbers of
// --format json (parsed back from the text), --histograms picks the view; the CSV's columns hold
// the fields that `perf script` and `trace-cmd report` printed for the same files.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "fixtures.h"
#include "cli_test_util.h"
#include "gtest/gtest.h"
#include "report_text.h"
#include "test_json.h"

namespace iotrace {
namespace {

using test::Squeezed;

using test::Json;
using test::JsonParser;

const std::string kFixtures = IOTRACE_FIXTURES;

using test::Lines;
using test::RunResult;
using test::Slurp;

std::vector<std::string> Words(const std::string& line) {
  return absl::StrSplit(line, ' ', absl::SkipEmpty());
}

// One CSV line's cells (RFC 4180 quoting).
std::vector<std::string> CsvCells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

class ReportLayoutTest : public test::CliTest {
 protected:
  ReportLayoutTest() : CliTest("layout") {}

  // `iotrace report ARGS` in the test's folder, where the fixtures are linked under short names
  // (the header names the file: a long path would be one word longer than a line).
  RunResult Run(const std::string& args) { return RunLine("report " + args); }

  void Link(const std::string& fixture, const std::string& name) {
    std::filesystem::create_symlink(kFixtures + "/" + fixture, dir_ / name);
  }
};

// The rows of the summary table that starts at the head line `head` ("  OP  PHASE ..."): the
// heading above each device's rows (with the interval's time in a time series) + " OP PHASE"
// -> the words after them (count, min, mean, p50, p90, p99, p99.9, max, then the marks).
std::map<std::string, std::vector<std::string>> TableAt(const std::vector<std::string>& lines,
                                                        size_t head) {
  std::map<std::string, std::vector<std::string>> rows;
  std::string heading;
  for (size_t i = head + 1; i < lines.size() && !lines[i].empty(); ++i) {
    if (lines[i].rfind("  ", 0) != 0) {
      heading = lines[i];
      continue;
    }
    std::vector<std::string> w = Words(lines[i]);
    EXPECT_GE(w.size(), 10u) << lines[i];
    if (w.size() < 10) continue;
    const std::string key = heading + " " + w[0] + " " + w[1];
    EXPECT_EQ(rows.count(key), 0u) << key;
    rows[key] = std::vector<std::string>(w.begin() + 2, w.end());
  }
  return rows;
}

// What the text's table shows for a JSON group, in us: the key TableAt gives its row, and the
// row's words. `by`: --by's dimension, "" without.
std::pair<std::string, std::vector<std::string>> ExpectedRow(const Json& g, const std::string& by,
                                                             const std::string& lead) {
  const std::string dev = g["dev"].text, device = g["device"].text;
  const std::string label = (device == dev ? device : device + " (" + dev + ")") +
                            (by.empty() ? "" : " " + by + " " + g[by].text);
  auto us = [](double ns) { return absl::StrFormat("%.1f", ns / 1e3); };
  const double count = g["count"].num();
  // The mean from the exact sum (the JSON's mean_ns is rounded to 3 decimals).
  const double mean = count == 0 ? 0 : std::llround(g["sum_ns"].num() / count);
  std::vector<std::string> words = {g["count"].text,       us(g["min_ns"].num()),
                                    us(mean),              us(g["p50_ns"].num()),
                                    us(g["p90_ns"].num()), us(g["p99_ns"].num()),
                                    us(g["p999_ns"].num()), us(g["max_ns"].num())};
  if (g["partial"].b) words.push_back("partial");
  if (g["incomplete"].b) words.push_back("*");
  return {lead + label + " " + g["op"].text + " " + g["phase"].text, words};
}

// Every fixture's text report, with and without --interval (and --by), and a file cut short:
// each line fits 80 columns, and the tables hold exactly the JSON's groups and numbers; the
// warnings and notes are all there, whatever the wrapping.
TEST_F(ReportLayoutTest, TextFitsEightyColumnsAndItsTablesCarryTheJsonNumbers) {
  const std::string cut = Slurp(kFixtures + "/tracedat/dd_buffered_v6.dat");
  ASSERT_GT(cut.size(), 50000u);
  std::ofstream(dir_ / "cut.dat", std::ios::binary) << cut.substr(0, 50000);
  Link("golden/perf_mq.data", "perf_mq.data");
  Link("golden/iotrace_mq.data", "iotrace_mq.data");
  Link("golden/iotrace_none.data", "iotrace_none.data");
  Link("perf/block-callchain-mixed.data", "mixed.data");
  Link("tracedat/dd_v6.dat", "dd_v6.dat");
  Link("tracedat/dd_v7_zstd.dat", "dd_v7_zstd.dat");
  size_t tables = 0, partial_rows = 0, interval_rows = 0;
  for (const char* file : {"perf_mq.data", "iotrace_mq.data", "iotrace_none.data", "mixed.data",
                           "dd_v6.dat", "dd_v7_zstd.dat", "cut.dat"}) {
    for (const std::string options :
         {"", " --interval 0.05", " --by size", " --by comm --interval 0.05"}) {
      const std::string args = std::string("-i ") + file + options;
      const RunResult text = Run(args);
      ASSERT_EQ(text.exit_code, 0) << args << "\n" << text.err;
      const RunResult json = Run(args + " --format json");
      ASSERT_EQ(json.exit_code, 0) << args << "\n" << json.err;
      Json j;
      ASSERT_TRUE(JsonParser(json.out).Parse(&j)) << args;
      const std::vector<std::string> lines = Lines(text.out);
      for (const std::string& l : lines) EXPECT_LE(l.size(), 80u) << args << ": " << l;
      const std::string by = j["options"].Has("by") ? j["options"]["by"].text : "";
      EXPECT_EQ(by.empty(), options.find("--by") == std::string::npos) << args;

      // The tables: the file's, then the time series' (one head each).
      std::vector<size_t> heads;
      for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].rfind("  OP ", 0) == 0) heads.push_back(i);
      }
      const size_t want_heads = (j["groups"].items.empty() ? 0 : 1) +
                                (j["intervals"].items.empty() ? 0 : 1);
      ASSERT_EQ(heads.size(), want_heads) << args << "\n" << text.out;
      if (!j["groups"].items.empty()) {
        const auto rows = TableAt(lines, heads[0]);
        EXPECT_EQ(rows.size(), j["groups"].items.size()) << args;
        for (const Json& g : j["groups"].items) {
          const auto [key, words] = ExpectedRow(g, by, "");
          ASSERT_EQ(rows.count(key), 1u) << args << ": no row " << key << "\n" << text.out;
          EXPECT_EQ(rows.at(key), words) << args << ": " << key;
          partial_rows += words.back() == "partial" || words.back() == "*";
        }
        ++tables;
      }
      if (!j["intervals"].items.empty()) {
        const auto rows = TableAt(lines, heads.back());
        size_t groups = 0;
        for (const Json& iv : j["intervals"].items) {
          for (const Json& g : iv["groups"].items) {
            ++groups;
            const auto [key, words] =
                ExpectedRow(g, by, "[" + iv["interval_start_s"].text + " s] ");
            ASSERT_EQ(rows.count(key), 1u) << args << ": no row " << key << "\n" << text.out;
            EXPECT_EQ(rows.at(key), words) << args << ": " << key;
          }
        }
        EXPECT_EQ(rows.size(), groups) << args;
        interval_rows += groups;
      }
      const std::string squeezed = Squeezed(text.out);
      for (const Json& w : j["warnings"].items) {
        EXPECT_NE(squeezed.find("WARNING: " + Squeezed(w["message"].text)), std::string::npos)
            << args << ": " << w["message"].text;
      }
      for (const Json& n : j["notes"].items) {
        EXPECT_NE(squeezed.find(Squeezed(n.text)), std::string::npos) << args << ": " << n.text;
      }
    }
  }
  EXPECT_EQ(tables, 28u);
  EXPECT_GT(partial_rows, 0u);  // the cut file's rows are marked
  EXPECT_GT(interval_rows, 0u);
}

// --histograms: log2 by default, the report's own buckets (the CSV's rows), or none; an unknown
// view is a usage error naming the choices.
TEST_F(ReportLayoutTest, HistogramsChoosesTheView) {
  Link("golden/perf_mq.data", "perf_mq.data");
  const RunResult log2 = Run("-i perf_mq.data");
  ASSERT_EQ(log2.exit_code, 0) << log2.err;
  EXPECT_EQ(Run("-i perf_mq.data --histograms log2").out, log2.out);
  const RunResult none = Run("-i perf_mq.data --histograms none");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out.find("distribution"), std::string::npos) << none.out;
  EXPECT_NE(none.out.find("\ncompleteness\n"), std::string::npos) << none.out;
  const RunResult full = Run("-i perf_mq.data --histograms full");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  // One bar row per line of the bucket CSV, with its count; each histogram's counts add up to
  // its group's.
  const RunResult csv = Run("-i perf_mq.data --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::vector<std::string> csv_counts;
  for (const std::string& line : Lines(csv.out)) {
    if (line.rfind("dev,", 0) != 0) csv_counts.push_back(CsvCells(line).back());
  }
  std::vector<std::string> bar_counts;
  const std::regex bar(R"(^ *[0-9.]+ -> [0-9.]+ *: (\d+) +\|\**\s*\|$)");
  for (const std::string& line : Lines(full.out)) {
    std::smatch m;
    if (std::regex_match(line, m, bar)) bar_counts.push_back(m[1]);
  }
  ASSERT_FALSE(csv_counts.empty());
  EXPECT_EQ(bar_counts, csv_counts);
  const RunResult bad = Run("-i perf_mq.data --histograms fine");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "iotrace: error: --histograms 'fine': unknown view\n"
            "hint: use --histograms log2, --histograms full or --histograms none\n");
  EXPECT_EQ(bad.out, "");
}

// The CSV of --events against what perf script printed for the same file: every block field in
// its column (perf script's text parsed here, its dev "7,2" as the CSV's "7:2", its ioprio
// "0x2,0,4" as the number it stands for), the other events' fields in the last column.
TEST_F(ReportLayoutTest, EventsCsvColumnsHoldWhatPerfScriptPrints) {
  for (const std::string name : {"block-callchain-mixed", "block-mq-deadline"}) {
    Link("perf/" + name + ".data", name + ".data");
    const RunResult r = Run("-i " + name + ".data --events --format csv");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> lines = Lines(r.out);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines[0],
              "time,cpu,pid,tid,comm,event,dev,sector,nr_sector,bytes,rwbs,event_comm,error,"
              "ioprio,cmd,problem,fields");
    const std::vector<std::string> header = CsvCells(lines[0]);
    // Tracepoint records only: --events dumps those (perf script also prints the mixed file's
    // cpu-clock samples, "cpu-clock/period=10000000/:").
    std::vector<std::string> script;
    for (const std::string& line : Lines(test::ReadFixture("perf/" + name + ".script.txt"))) {
      if (line.find("cpu-clock/") == std::string::npos) script.push_back(line);
    }
    ASSERT_EQ(lines.size() - 1, script.size()) << name;
    const std::regex line_re(
        R"(^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{6})\d*:\s+(\S+):\s+(.*)$)");
    // "7,2 WS 4096 () 0 + 8 0x2,0,4 [dd]" (insert, issue), "7,2 WS () 0 + 8 0x2,0,4 [0]"
    // (complete).
    const std::regex rq_re(R"(^(\d+),(\d+) (\S+) (?:(\d+) )?\((.*)\) (\d+) \+ (\d+) )"
                           R"(0x([0-9a-f]+),(\d+),(\d+) \[(.*)\]$)");
    // iotrace names a process by its last comm in the file (sh that became dd by exec is dd
    // throughout); perf script by the comm of the moment.
    std::map<std::string, std::string> last_comm;
    for (const std::string& line : script) {
      std::smatch m;
      ASSERT_TRUE(std::regex_match(line, m, line_re)) << line;
      last_comm[m[2]] = m[1];
    }
    size_t block = 0, other = 0;
    for (size_t i = 0; i < script.size(); ++i) {
      std::smatch m;
      ASSERT_TRUE(std::regex_match(script[i], m, line_re)) << script[i];
      std::map<std::string, std::string> want = {
          {"time", m[5].str() + "." + m[6].str()}, {"cpu", std::to_string(std::stoi(m[4]))},
          {"pid", m[2]}, {"tid", m[3]}, {"comm", last_comm[m[2]]}, {"event", m[7]},
          {"problem", ""}};
      const std::string fields = m[8];
      if (want["event"].rfind("block:", 0) == 0) {
        ASSERT_TRUE(std::regex_match(fields, m, rq_re)) << script[i];
        const bool complete = want["event"] == "block:block_rq_complete";
        want["dev"] = m[1].str() + ":" + m[2].str();
        want["rwbs"] = m[3];
        want["bytes"] = m[4];
        want["cmd"] = m[5];
        want["sector"] = m[6];
        want["nr_sector"] = m[7];
        want["ioprio"] = std::to_string(std::stoi(m[8], nullptr, 16) << 13 |
                                        std::stoi(m[9]) << 3 | std::stoi(m[10]));
        want[complete ? "error" : "event_comm"] = m[11];
        want["fields"] = "";
        ++block;
      } else {
        want["fields"] = fields;
        ++other;
      }
      const std::vector<std::string> cells = CsvCells(lines[i + 1]);
      ASSERT_EQ(cells.size(), header.size()) << lines[i + 1];
      for (size_t c = 0; c < header.size(); ++c) {
        const auto it = want.find(header[c]);
        EXPECT_EQ(cells[c], it == want.end() ? "" : it->second)
            << header[c] << " of\n" << script[i] << "\n" << lines[i + 1];
      }
    }
    EXPECT_GT(block, 0u);
    if (name == "block-callchain-mixed") EXPECT_EQ(other, 4u);  // sched_process_exec
  }
}

// The same against trace-cmd report, which prints every field as name=value (dev as the
// kernel's dev_t number): each value in the column of its name.
TEST_F(ReportLayoutTest, EventsCsvColumnsHoldWhatTraceCmdReportPrints) {
  Link("tracedat/dd_v6.dat", "dd_v6.dat");
  const RunResult r = Run("-i dd_v6.dat --events --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_FALSE(lines.empty());
  const std::vector<std::string> header = CsvCells(lines[0]);
  std::vector<std::string> report = Lines(test::ReadFixture("tracedat/dd_v6.report.txt"));
  ASSERT_FALSE(report.empty());
  ASSERT_EQ(report[0].rfind("cpus=", 0), 0u);
  report.erase(report.begin());
  ASSERT_EQ(lines.size() - 1, report.size());
  const std::regex line_re(
      R"(^\S+:\s+(.+)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{6})\d*:\s+(\w+):\s+(.*)$)");
  for (size_t i = 0; i < report.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(report[i], m, line_re)) << report[i];
    std::map<std::string, std::string> want = {
        {"time", m[4].str() + "." + m[5].str()}, {"cpu", std::to_string(std::stoi(m[3]))},
        {"pid", m[2]}, {"comm", m[1]}, {"event", "block:" + m[6].str()}};
    for (const std::string& pair : Words(m[7])) {
      const size_t eq = pair.find('=');
      ASSERT_NE(eq, std::string::npos) << report[i];
      std::string key = pair.substr(0, eq), value = pair.substr(eq + 1);
      if (key == "dev") {
        const uint64_t dev = std::stoull(value);
        value = std::to_string(dev >> 20) + ":" + std::to_string(dev & ((1u << 20) - 1));
      }
      want[key == "comm" ? "event_comm" : key] = value;
    }
    const std::vector<std::string> cells = CsvCells(lines[i + 1]);
    ASSERT_EQ(cells.size(), header.size()) << lines[i + 1];
    for (size_t c = 0; c < header.size(); ++c) {
      if (header[c] == "tid") continue;  // trace-cmd prints no tid
      const auto it = want.find(header[c]);
      EXPECT_EQ(cells[c], it == want.end() ? "" : it->second)
          << header[c] << " of\n" << report[i] << "\n" << lines[i + 1];
    }
  }
}

}  // namespace
}  // namespace iotrace
