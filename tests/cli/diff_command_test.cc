// `iotrace diff` as a user runs it, on the fixtures: a file against itself (every row ~, exit
// 0), perf.data against trace.dat, --map, --fail-on's exit status both ways, the usage errors.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <map>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "gtest/gtest.h"
#include "test_json.h"

namespace iotrace {
namespace {

using test::Json;
using test::JsonParser;

using test::RunResult;
using test::Slurp;

std::string Fixture(const std::string& relative) {
  std::string path = IOTRACE_FIXTURES;
  path.append("/").append(relative);
  return path;
}

const std::string kPerfMq = Fixture("golden/perf_mq.data");      // loop0 and vda, perf
const std::string kIotraceMq = Fixture("golden/iotrace_mq.data");  // loop0 read/write/flush
const std::string kTraceDat = Fixture("tracedat/dd_v6.dat");       // loop0 writes, trace-cmd

class DiffCommandTest : public test::CliTest {
 protected:
  DiffCommandTest() : CliTest("diff") {}

  RunResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), "diff");
    return RunArgs(args);
  }

  Json RunJson(std::vector<std::string> args, int expected_exit = 0) {
    args.push_back("--format");
    args.push_back("json");
    RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, expected_exit) << r.err;
    Json j;
    EXPECT_TRUE(JsonParser(r.out).Parse(&j)) << r.out;
    return j;
  }
};

TEST_F(DiffCommandTest, HelpListsTheOptionsAndTheExitStatuses) {
  RunResult r = Run({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* text : {"--dev DEV", "--map A_DEV=B_DEV", "--phases LIST", "--format",
                           "--min-change PCT", "--alpha A", "--block SECONDS", "--fail-on RULE",
                           "3 a --fail-on", "docs/diff.md", "--by DIM"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << "--help does not mention " << text;
  }
}

TEST_F(DiffCommandTest, AFileAgainstItselfIsTheSameOnEveryRow) {
  for (const std::string& file : {kPerfMq, kIotraceMq, kTraceDat}) {
    Json j = RunJson({file, file, "--fail-on", "d2c.p99>+0%"});
    ASSERT_FALSE(j["rows"].items.empty()) << file;
    for (const Json& row : j["rows"].items) {
      EXPECT_EQ(row["verdict"].text, "same") << file;
      EXPECT_EQ(row["ks_d"].num(), 0) << file;
      EXPECT_EQ(row["p_adjusted"].num(), 1) << file;
      EXPECT_EQ(row["a"]["count"].num(), row["b"]["count"].num()) << file;
    }
    EXPECT_EQ(j["fail_on"][0]["hit"].type, Json::kBool);
    EXPECT_FALSE(j["fail_on"][0]["hit"].b);
    // The text: every row's verdict ~.
    RunResult text = Run({file, file});
    EXPECT_EQ(text.exit_code, 0);
    std::istringstream lines(text.out);
    int rows = 0;
    bool in_table = false;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("DEVICE", 0) == 0) {
        in_table = line.find(" V ") != std::string::npos;
        continue;
      }
      if (line.empty()) in_table = false;
      if (!in_table) continue;
      ++rows;
      EXPECT_NE(line.find(" ~ "), std::string::npos) << line;
      EXPECT_LE(line.size(), 120u) << line;
    }
    EXPECT_EQ(rows, static_cast<int>(j["rows"].items.size())) << text.out;
  }
}

// --by: a class of A compares with the same class of B; the classes' rows add up to the rows
// without --by.
TEST_F(DiffCommandTest, ByComparesClassWithClass) {
  for (const std::string dim : {"size", "cpu"}) {
    Json j = RunJson({kIotraceMq, kIotraceMq, "--by", dim});
    EXPECT_EQ(j["by"].text, dim);
    Json plain = RunJson({kIotraceMq, kIotraceMq});
    std::map<std::string, double> split, whole;
    for (const Json& row : j["rows"].items) {
      EXPECT_EQ(row["verdict"].text, "same") << dim;
      EXPECT_FALSE(row[dim].text.empty()) << dim;
      split[row["a"]["dev"].text + " " + row["op"].text + " " + row["phase"].text] +=
          row["a"]["count"].num();
    }
    for (const Json& row : plain["rows"].items) {
      whole[row["a"]["dev"].text + " " + row["op"].text + " " + row["phase"].text] +=
          row["a"]["count"].num();
    }
    EXPECT_EQ(split, whole) << dim;
    RunResult text = Run({kIotraceMq, kIotraceMq, "--by", dim});
    EXPECT_NE(text.out.find(dim == "size" ? "SIZE" : "CPU"), std::string::npos) << text.out;
  }
}

TEST_F(DiffCommandTest, PerfDataAgainstTraceDatComparesTheDevicesTheyShare) {
  // perf_mq (perf) has loop0 writes with Q2D/Q2C and vda; dd_v6 (trace-cmd) has loop0 writes
  // without bio events. D2C of the loop0 writes is slower in dd_v6 past its buckets (p99 177 us
  // against 528 us in their reports).
  Json j = RunJson({kPerfMq, kTraceDat});
  EXPECT_EQ(j["a"]["format"].text, "perf.data");
  EXPECT_EQ(j["b"]["format"].text, "trace.dat");
  // Each side's machine and tool, as perf report --header-only and trace-cmd report --uname /
  // --version print them for these files; in the text under each side's line.
  EXPECT_EQ(j["a"]["recorded_on"]["recorder"].text, "perf 6.1.187");
  EXPECT_EQ(j["b"]["recorded_on"]["recorder"].text, "trace-cmd 3.1.6 not-a-git-repo");
  for (const char* side : {"a", "b"}) {
    EXPECT_EQ(j[side]["recorded_on"]["host"].text, "vm");
    EXPECT_EQ(j[side]["recorded_on"]["kernel"].text, "6.18.44-fc-v1045");
    EXPECT_EQ(j[side]["recorded_on"]["arch"].text, "x86_64");
  }
  const std::string text = Run({kPerfMq, kTraceDat}).out;
  EXPECT_NE(text.find("dd_v6.dat (trace.dat, 2 CPUs, 0.042 s)\n     recorded on vm (Linux "
                      "6.18.44-fc-v1045 x86_64) by trace-cmd 3.1.6 not-a-git-repo\n"),
            std::string::npos)
      << text;
  int both = 0, only_a = 0;
  for (const Json& row : j["rows"].items) {
    if (row["verdict"].text == "a_only") {
      ++only_a;
      EXPECT_EQ(row["b"].type, Json::kNull);
      continue;
    }
    ASSERT_NE(row["verdict"].text, "b_only");
    ++both;
    EXPECT_EQ(row["a"]["dev"].text, "7:0");
    EXPECT_EQ(row["b"]["dev"].text, "7:0");
    EXPECT_EQ(row["op"].text, "write");
    if (row["phase"].text == "D2C") {
      EXPECT_EQ(row["verdict"].text, "slower");
      EXPECT_EQ(row["stats"]["p99"]["a_ns"].num(), 177151);
      EXPECT_EQ(row["stats"]["p99"]["b_ns"].num(), 528383);
      EXPECT_TRUE(row["stats"]["p99"]["beyond_buckets"].b);
    }
  }
  EXPECT_EQ(both, 3);     // write I2D, D2C, I2C
  EXPECT_EQ(only_a, 12);  // loop0's Q2D, Q2C; vda's write and discard phases
}

TEST_F(DiffCommandTest, MapPairsDevicesOfDifferentNumbers) {
  Json j = RunJson({kPerfMq, kTraceDat, "--map", "254:0=7:0", "--phases", "D2C"});
  ASSERT_EQ(j["map"].items.size(), 1u);
  bool paired = false;
  for (const Json& row : j["rows"].items) {
    EXPECT_EQ(row["phase"].text, "D2C");
    if (row["verdict"].text == "a_only" || row["verdict"].text == "b_only") continue;
    EXPECT_EQ(row["a"]["dev"].text, "254:0");
    EXPECT_EQ(row["b"]["dev"].text, "7:0");
    paired = true;
  }
  EXPECT_TRUE(paired);
  // A's 7:0 is not compared with B's 7:0 any more: B's is 254:0's partner.
  for (const Json& row : j["rows"].items) {
    if (row["a"].type != Json::kNull && row["a"]["dev"].text == "7:0") {
      EXPECT_EQ(row["verdict"].text, "a_only");
    }
  }
}

TEST_F(DiffCommandTest, FailOnSetsExitStatusThreeOnlyWhenARuleIsHit) {
  RunResult hit = Run({kPerfMq, kTraceDat, "--fail-on", "d2c.p99>+10%"});
  EXPECT_EQ(hit.exit_code, 3) << hit.err;
  EXPECT_NE(hit.err.find("iotrace: --fail-on d2c.p99>+10% hit by 1 row\n"), std::string::npos)
      << hit.err;
  EXPECT_NE(hit.out.find("d2c.p99>+10%: HIT by "), std::string::npos) << hit.out;
  EXPECT_NE(hit.out.find("write D2C (+198.3%)"), std::string::npos) << hit.out;
  RunResult missed = Run({kPerfMq, kTraceDat, "--fail-on", "d2c.p99>+500%", "--fail-on",
                          "i2c.p50>+1ms"});
  EXPECT_EQ(missed.exit_code, 0) << missed.err;
  EXPECT_NE(missed.out.find("d2c.p99>+500%: not hit"), std::string::npos) << missed.out;
  // An absolute rule: D2C's p99 went up by 351 us.
  EXPECT_EQ(Run({kPerfMq, kTraceDat, "--fail-on", "d2c.p99>+300us"}).exit_code, 3);
  EXPECT_EQ(Run({kPerfMq, kTraceDat, "--fail-on", "d2c.p99>+400us"}).exit_code, 0);
}

TEST_F(DiffCommandTest, CsvHasOneLinePerRow) {
  RunResult csv = Run({kPerfMq, kTraceDat, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  Json j = RunJson({kPerfMq, kTraceDat});
  std::istringstream lines(csv.out);
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header.rfind("dev_a,device_a,dev_b,device_b,op,phase,verdict,reason,", 0), 0u);
  size_t rows = 0;
  for (std::string line; std::getline(lines, line);) ++rows;
  EXPECT_EQ(rows, j["rows"].items.size());
  // Warnings of a side go to stderr when the output is not text.
  EXPECT_NE(csv.err.find("iotrace: warning: A: D2C is incomplete"), std::string::npos);
}

// Every key the JSON has (with a one-sided row, a --map, a --fail-on hit and warnings) is
// named in docs/diff.md's JSON section, so that the document cannot fall behind the output.
TEST_F(DiffCommandTest, EveryJsonKeyIsDocumented) {
  const std::string doc = Slurp(Fixture("../../docs/diff.md"));
  const size_t section = doc.find("## JSON");
  ASSERT_NE(section, std::string::npos);
  const std::string json_doc = doc.substr(section);
  Json j = RunJson({kPerfMq, kTraceDat, "--map", "7:0=7:0", "--phases", "D2C,Q2D", "--fail-on",
                    "d2c.p99>+10%"},
                   3);
  std::vector<const Json*> todo = {&j};
  std::set<std::string> keys;
  while (!todo.empty()) {
    const Json* v = todo.back();
    todo.pop_back();
    for (const auto& [key, value] : v->fields) {
      keys.insert(key);
      todo.push_back(&value);
    }
    for (const Json& item : v->items) todo.push_back(&item);
  }
  EXPECT_GT(keys.size(), 40u);
  for (const std::string& key : keys) {
    EXPECT_NE(json_doc.find("\"" + key + "\""), std::string::npos) << key << " not in docs/diff.md";
  }
}

TEST_F(DiffCommandTest, UsageErrorsAreOneLineWithAHintAndExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {kPerfMq},
      {kPerfMq, kPerfMq, kPerfMq},
      {kPerfMq, kPerfMq, "--map", "7:0"},
      {kPerfMq, kPerfMq, "--map", "7:9=7:0"},
      {kPerfMq, kPerfMq, "--fail-on", "d2c.p99>10"},
      {kPerfMq, kPerfMq, "--phases", "D2X"},
      {kPerfMq, kPerfMq, "--format", "xml"},
      {kPerfMq, kPerfMq, "--alpha", "2"},
      {kPerfMq, kPerfMq, "--block", "0"},
      {kPerfMq, kPerfMq, "--min-change", "-1"},
      {kPerfMq, kPerfMq, "--bogus"},
  };
  for (const auto& args : cases) {
    RunResult r = Run(args);
    std::string shown;
    for (const std::string& a : args) shown += a + " ";
    EXPECT_EQ(r.exit_code, 2) << shown << r.err;
    EXPECT_EQ(r.out, "") << shown;
    EXPECT_EQ(r.err.rfind("iotrace: error: ", 0), 0u) << shown << r.err;
    const size_t first_end = r.err.find('\n');
    ASSERT_NE(first_end, std::string::npos) << shown;
    EXPECT_EQ(r.err.substr(first_end + 1, 6), "hint: ") << shown << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << shown << r.err;
  }
  // The devices' names are the running machine's: the numbers are what every machine shows.
  const std::string err = Run({kPerfMq, kPerfMq, "--map", "7:9=7:0"}).err;
  EXPECT_EQ(err.rfind("iotrace: error: --map 7:9=7:0: A (" + kPerfMq + ") has no device 7:9\n"
                      "hint: A holds ",
                      0),
            0u)
      << err;
  EXPECT_NE(err.find("7:0"), std::string::npos) << err;
  EXPECT_NE(err.find("254:0"), std::string::npos) << err;
  // A file that is not there is a runtime error.
  RunResult missing = Run({kPerfMq, "/nonexistent/b.data"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/b.data"), std::string::npos);
}

}  // namespace
}  // namespace iotrace
