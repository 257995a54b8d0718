// `iotrace report` as a user runs it: the binary's exit codes, messages and hints for argument
// errors, its output for filters, cut files and --formats-from.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <tuple>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "fixtures.h"
#include "test_json.h"
#include "cli_test_util.h"
#include "gtest/gtest.h"
#include "report_text.h"
#include "iotrace/sys/device_names.h"

namespace iotrace {
namespace {

using test::Squeezed;

using test::Lines;
using test::RunResult;
using test::Slurp;

class ReportCommandTest : public test::CliTest {
 protected:
  ReportCommandTest() : CliTest("reportcore") {}

  RunResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), "report");
    return RunArgs(args);
  }
};

TEST_F(ReportCommandTest, HelpListsEveryOptionAndExitsZero) {
  RunResult r = Run({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  for (const char* option :
       {"-i, --input FILE", "-o, --output FILE", "--format", "--summary-csv FILE", "--unit",
        "--interval SECONDS", "--dev DEV", "--op OP", "--comm NAME", "--pid PID",
        "--since SECONDS", "--until SECONDS", "--expiry SECONDS", "--max-inflight N", "--by DIM",
        "--histograms VIEW", "log2", "full", "none",
        "-h, --help", "./iotrace.data", "I2D", "D2C", "I2C", "Q2D"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << "--help does not mention " << option;
  }
  EXPECT_EQ(Run({"-h"}).exit_code, 0);
}

TEST_F(ReportCommandTest, ArgumentErrorsExitTwoWithAnErrorAndAHint) {
  const std::vector<std::vector<std::string>> cases = {
      {"--bogus"},
      {"--format", "xml"},
      {"--format"},
      {"--format="},
      {"--unit", "s"},
      {"--op", "write,bogus"},
      {"--interval", "0"},
      {"--interval", "soon"},
      {"--since", "-1"},
      {"--since", "5", "--until", "2"},
      {"--until", "nan"},
      {"--pid", "x"},
      {"--pid", "-3"},
      {"--expiry=0"},
      {"--max-inflight", "3"},
      {"--max-inflight", "lots"},
      {"--comm", "a-name-longer-than-15"},
      {"-i"},
  };
  for (const auto& args : cases) {
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << shown << r.err;
    EXPECT_EQ(r.err.rfind("iotrace: error: ", 0), 0u) << shown << r.err;
    EXPECT_NE(r.err.find("\nhint: "), std::string::npos) << shown << r.err;
    EXPECT_EQ(r.out, "") << shown;
  }
  // A file after the options is read as -i would read it.
  RunResult r = Run({"stray.data"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("iotrace: error: open stray.data: No such file or directory", 0), 0u)
      << r.err;
}

// Every spelling the parser refuses, with the exact lines it prints: scripts match on them.
TEST_F(ReportCommandTest, EachArgumentErrorPrintsItsExactMessageAndHint) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"--bogus=3"}, 2,
       "iotrace: error: unknown option '--bogus=3'\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"-ifile"}, 2,
       "iotrace: error: unknown option '-ifile'\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"-i=foo"}, 2,
       "iotrace: error: unknown option '-i=foo'\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"-"}, 2,
       "iotrace: error: unknown option '-'\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--"}, 2,
       "iotrace: error: unknown option '--'\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--", "-i", "x"}, 2,
       "iotrace: error: unknown option '--'\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{""}, 2,
       "iotrace: error: unexpected argument ''\n"
       "hint: to read a file, give it with -i: iotrace report -i \n"},
      {{"stray.data", "--format", "xml"}, 2,
       "iotrace: error: --format 'xml': unknown format\n"
       "hint: use --format text, --format csv, --format json or --format svg\n"},
      {{"-i"}, 2,
       "iotrace: error: option -i needs a value\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--input"}, 2,
       "iotrace: error: option --input needs a value\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--format="}, 2,
       "iotrace: error: option --format: empty value\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--format", ""}, 2,
       "iotrace: error: option --format: empty value\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"-i", ""}, 2,
       "iotrace: error: option -i: empty value\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"-o", ""}, 2,
       "iotrace: error: option -o: empty value\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--input", "a", "--input=a"}, 2,
       "iotrace: error: a given twice: its events would count twice\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"-i", "a.dat", "b.dat", "a.dat"}, 2,
       "iotrace: error: a.dat given twice: its events would count twice\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"-hx"}, 2,
       "iotrace: error: unknown option '-hx'\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--h"}, 2,
       "iotrace: error: unknown option '--h'\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--events", "-i"}, 2,
       "iotrace: error: option -i needs a value\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--bogus", "-h"}, 2,
       "iotrace: error: unknown option '--bogus'\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--threads", "4"}, 2,
       "iotrace: error: --threads '4': expected 1, 2, 3 or auto\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--threads", "0"}, 2,
       "iotrace: error: --threads '0': expected 1, 2, 3 or auto\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--max-inflight", "lots"}, 2,
       "iotrace: error: --max-inflight 'lots': expected a count\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--max-inflight", "3"}, 2,
       "iotrace: error: --max-inflight 3: must be between 16 and 67108864\n"
       "hint: the default, 131072, is far above any device queue depth\n"},
      {{"--interval", "0"}, 2,
       "iotrace: error: --interval 0: the interval must be longer than 0 s\n"
       "hint: for example --interval 1 for one block per second\n"},
      {{"--interval", "1e-9"}, 2,
       "iotrace: error: --interval 1e-09: must be at least 0.000001 seconds\n"
       "hint: for example --interval 1 for one block per second\n"},
      {{"--since", "5", "--until", "2"}, 2,
       "iotrace: error: --until 2 is before --since 5\n"
       "hint: give a window with since <= until\n"},
      {{"--op", "write,bogus"}, 2,
       "iotrace: error: --op 'bogus': unknown operation\n"
       "hint: operations are read, write, flush, discard and other\n"},
      {{"--pid", "1,x"}, 2,
       "iotrace: error: --pid 'x': expected a process id\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--unit"}, 2,
       "iotrace: error: option --unit needs a value\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--format", "csv", "--unit"}, 2,
       "iotrace: error: option --unit needs a value\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--bogus", "--format", "xml"}, 2,
       "iotrace: error: unknown option '--bogus'\n"
       "hint: run 'iotrace report --help' for the options\n"},
      {{"--by", "disk"}, 2,
       "iotrace: error: --by: unknown dimension 'disk'\n"
       "hint: --by takes size, comm, ioprio or cpu\n"},
      {{"--format", "xml", "--bogus"}, 2,
       "iotrace: error: --format 'xml': unknown format\n"
       "hint: use --format text, --format csv, --format json or --format svg\n"},
  };
  for (const Case& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += "'" + a + "' ";
    RunResult r = Run(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << shown;
    EXPECT_EQ(r.err, c.err) << shown;
    EXPECT_EQ(r.out, "") << shown;
  }
}

// The spellings of one request give one report: --name=VALUE or --name VALUE, -i or --input,
// a repeated filter or a comma-separated list (empty items skipped); a switch ignores "=VALUE".
TEST_F(ReportCommandTest, EverySpellingOfTheSameOptionsGivesTheSameReport) {
  const std::string file = std::string(IOTRACE_FIXTURES) + "/golden/iotrace_mq.data";
  const std::vector<std::vector<std::vector<std::string>>> groups = {
      {{"-i", file, "--format", "csv"}, {"--input=" + file, "--format=csv"},
       {"--input", file, "--format=csv"}},
      {{"-i", file, "--op", "read", "--op", "write", "--dev", "7:0", "--dev", "loop0"},
       {"-i", file, "--op", "read,write", "--dev", "7:0,loop0"},
       {"-i", file, "--op=read,,write", "--dev=7:0,,loop0"}},
      {{"-i", file, "--pid", "1", "--pid", "2,3", "--comm", "fio", "--format", "json"},
       {"-i", file, "--pid=1,2,3", "--comm=fio", "--format", "json"}},
      {{"-i", file, "--since", "0.001", "--until", "0.01", "--unit", "ms", "--interval", "0.01"},
       {"-i", file, "--since=0.001", "--until=0.01", "--unit=ms", "--interval=0.01"}},
      {{"-i", file, "--threads", "1", "--expiry", "1", "--max-inflight", "16"},
       {"-i", file, "--threads=1", "--expiry=1", "--max-inflight=16"}},
      {{"-i", file, "--events"}, {"-i", file, "--events=yes"}, {"-i", file, "--events="}},
  };
  for (const auto& group : groups) {
    RunResult first = Run(group[0]);
    ASSERT_EQ(first.exit_code, 0) << group[0][2] << first.err;
    ASSERT_NE(first.out, "");
    for (size_t i = 1; i < group.size(); ++i) {
      RunResult r = Run(group[i]);
      EXPECT_EQ(r.exit_code, 0) << group[i][1] << r.err;
      EXPECT_EQ(r.out, first.out) << group[i][1];
      EXPECT_EQ(r.err, first.err) << group[i][1];
    }
  }
  // --help wins over whatever follows it (and ignores "=VALUE"), not over an error before it.
  const std::string usage = Run({"--help"}).out;
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"-h", "--bogus"}, {"--help=x"}, {"--help", "--format"}, {"-h", "-i", "a", "-i", "b"}}) {
    RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << args[0];
    EXPECT_EQ(r.out, usage) << args[0];
    EXPECT_EQ(r.err, "") << args[0];
  }
}

TEST_F(ReportCommandTest, MissingDefaultInputIsARuntimeErrorNamingIt) {
  RunResult r = Run({});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("iotrace: error: open iotrace.data: No such file"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hint: "), std::string::npos);
}

TEST_F(ReportCommandTest, FileThatIsNotATraceIsARuntimeError) {
  std::ofstream(dir_ / "junk.data") << "definitely not a perf.data file";
  RunResult r = Run({"-i", "junk.data", "--format=json", "--op", "read,write"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the flags parsed; the file is what is wrong
  EXPECT_NE(r.err.find("not a perf.data or trace.dat file"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// A trace.dat cut short (a copy that stopped early, a full disk): what it holds is reported,
// and every phase says that events are missing and why, in the JSON and on stderr.
// A file cut short: what it holds is read, and the report says which part of the recording
// every CPU's data covers; the histograms hold only requests wholly inside it (partial), and the
// cut is not counted as lost events (it is placed in time).
TEST_F(ReportCommandTest, FileCutShortIsReportedAsPartial) {
  std::ifstream in(std::string(IOTRACE_FIXTURES) + "/tracedat/dd_buffered_v6.dat",
                   std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 50000u);
  std::ofstream(dir_ / "cut.dat", std::ios::binary) << bytes.substr(0, 50000);
  RunResult r = Run({"-i", "cut.dat", "--format=json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"file_cut_short\": 1"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("\"coverage\": {\"complete\": false, \"has_window\": true"),
            std::string::npos)
      << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("\"ends_early\": true, \"end_cause\": \"cut\""), std::string::npos)
      << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("\"partial\": true"), std::string::npos);
  EXPECT_EQ(r.out.find("\"partial\": false"), std::string::npos);
  EXPECT_EQ(r.out.find("parts of the file could not be read"), std::string::npos)
      << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("D2C is partial: it holds only requests wholly inside 0.000-"),
            std::string::npos)
      << r.out.substr(0, 2000);
  EXPECT_NE(r.err.find("iotrace: warning: D2C is partial: it holds only requests wholly inside"),
            std::string::npos)
      << r.err;
  // The text report says so in its header, in the table rows, and warns above the histograms.
  RunResult t = Run({"-i", "cut.dat"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("\ncoverage: PARTIAL: every CPU's data covers 0.000-"), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("(the file is cut short)\n"), std::string::npos) << t.out;
  // A table row: "  OP D2C COUNT MIN MEAN P50 P90 P99 P99.9 MAX partial".
  std::vector<std::string> row;
  for (const std::string& line : Lines(t.out)) {
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (line.rfind("  ", 0) == 0 && words.size() >= 10 && words[1] == "D2C") {
      row = words;
      break;
    }
  }
  ASSERT_GE(row.size(), 11u) << t.out;
  EXPECT_EQ(row[10], "partial") << t.out;
  const size_t warning = t.out.find("WARNING: D2C is partial");
  const size_t histogram = t.out.find("distribution");
  ASSERT_NE(warning, std::string::npos) << t.out;
  ASSERT_NE(histogram, std::string::npos) << t.out;
  EXPECT_LT(warning, histogram);
}

// The golden fixture holds loop0 (7:0) only; the name is looked up on this machine.
std::string Loop0Label() {
  DeviceNames names;
  const std::string name = names.Label(7u << 20);
  return name == "7:0" ? name : name + " (7:0)";
}

// Several files are one recording: each must open, and the first that does not is named in a
// one-line error (with its hint), before anything is read.
TEST_F(ReportCommandTest, SeveralInputsNameTheFileThatDoesNotOpen) {
  const std::string file = std::string(IOTRACE_FIXTURES) + "/golden/iotrace_mq.data";
  RunResult r = Run({"-i", file, "-i", "b.dat"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "iotrace: error: open b.dat: No such file or directory (errno 2)\n"
            "hint: record one first: iotrace record -d 10 -o b.dat\n");
  RunResult g = Run({file, "-i", "/nonexistent/rec-*.dat"});
  EXPECT_EQ(g.exit_code, 1);
  EXPECT_EQ(g.err,
            "iotrace: error: -i '/nonexistent/rec-*.dat' matches no file\n"
            "hint: check the pattern, quoted so that iotrace expands it: -i 'rec-*.dat'\n");
}

// A glob is expanded by iotrace and its files ordered by their first records (here the reverse
// of their names): two recordings of dd, one after the other, read as one give each group the
// sum of the two files' counts.
TEST_F(ReportCommandTest, AGlobIsReadAsOneRecordingInTimeOrder) {
  using test::Json;
  using test::JsonParser;
  const std::string fixtures = std::string(IOTRACE_FIXTURES) + "/tracedat/";
  std::filesystem::copy_file(fixtures + "dd_v7_none.dat", dir_ / "rec-a.dat");
  std::filesystem::copy_file(fixtures + "dd_v6.dat", dir_ / "rec-b.dat");
  auto json = [&](const std::vector<std::string>& args) {
    std::vector<std::string> all = args;
    all.insert(all.end(), {"--format", "json"});
    RunResult r = Run(all);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Json j;
    EXPECT_TRUE(JsonParser(r.out).Parse(&j)) << r.out;
    return j;
  };
  const Json both = json({"-i", "rec-*.dat"});
  EXPECT_EQ(both["input"]["path"].text, "rec-b.dat, rec-a.dat");
  ASSERT_EQ(both["input"]["files"].items.size(), 2u);
  EXPECT_EQ(both["input"]["files"][0].text, "rec-b.dat");
  EXPECT_EQ(both["input"]["files"][1].text, "rec-a.dat");
  const Json a = json({"-i", "rec-a.dat"}), b = json({"rec-b.dat"});
  EXPECT_FALSE(a["input"].Has("files"));
  std::map<std::string, double> sum;
  for (const Json* one : {&a, &b}) {
    for (const Json& g : (*one)["groups"].items) {
      sum[g["dev"].text + " " + g["op"].text + " " + g["phase"].text] += g["count"].num();
    }
  }
  ASSERT_EQ(both["groups"].items.size(), sum.size());
  double total = 0;
  for (const Json& g : both["groups"].items) {
    EXPECT_EQ(g["count"].num(), sum[g["dev"].text + " " + g["op"].text + " " + g["phase"].text]);
    total += g["count"].num();
  }
  EXPECT_EQ(total, 1220);
  // Files after the options, in any order, are the same recording.
  const Json given = json({"rec-a.dat", "rec-b.dat"});
  EXPECT_EQ(given["input"]["path"].text, "rec-b.dat, rec-a.dat");
}

// --events with a filter keeps the events that match and says how many, instead of ignoring it.
TEST_F(ReportCommandTest, EventsKeepOnlyWhatTheFiltersMatch) {
  const std::string file = std::string(IOTRACE_FIXTURES) + "/golden/iotrace_mq.data";
  RunResult all = Run({"-i", file, "--events"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.err, "");
  const size_t total = std::count(all.out.begin(), all.out.end(), '\n');
  ASSERT_EQ(total, 2145u);
  RunResult writes = Run({"-i", file, "--events", "--op", "write"});
  ASSERT_EQ(writes.exit_code, 0) << writes.err;
  EXPECT_EQ(writes.err, "iotrace: --op write kept 1113 of 2145 events (--dev and --op keep block "
                        "events only)\n");
  std::istringstream lines(writes.out);
  size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    EXPECT_NE(line.find(" rwbs=W"), std::string::npos) << line;
  }
  EXPECT_EQ(n, 1113u);
  RunResult none = Run({"-i", file, "--events", "--pid", "1", "--format", "csv"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.err, "iotrace: --pid 1 kept 0 of 2145 events\n");
}

TEST_F(ReportCommandTest, DevThatMatchesNoDeviceIsAnErrorNamingTheDevicesHeld) {
  const std::string file = std::string(IOTRACE_FIXTURES) + "/golden/iotrace_mq.data";
  for (const char* format : {"text", "json", "csv"}) {
    RunResult r = Run({"-i", file, "--dev", "sdz", "--format", format});
    EXPECT_EQ(r.exit_code, 1) << format;
    EXPECT_EQ(r.err, "iotrace: error: --dev sdz matches no device in " + file + "; it holds " +
                         Loop0Label() +
                         "\nhint: give --dev one of the devices the file holds, as MAJ:MIN or by "
                         "name (names are those of the machine running the report)\n")
        << format;
    EXPECT_EQ(r.out, "") << format;
  }
  RunResult r = Run({"-i", file, "--dev", "sdz,8:3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("iotrace: error: --dev sdz, --dev 8:3 match no device in " + file +
                            "; it holds " + Loop0Label() + "\n",
                        0),
            0u)
      << r.err;
}

TEST_F(ReportCommandTest, DevOfWhichSomeMatchNothingWarnsOnStderrAndInTheNotes) {
  const std::string file = std::string(IOTRACE_FIXTURES) + "/golden/iotrace_mq.data";
  const std::string warning =
      "--dev sdz matches no device in " + file + "; it holds " + Loop0Label();
  RunResult r = Run({"-i", file, "--dev", "sdz", "--dev", "7:0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "iotrace: warning: " + warning + "\n");
  EXPECT_NE(Squeezed(r.out).find(" notes " + warning + " "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" D2C "), std::string::npos) << r.out;  // loop0's table is there
  r = Run({"-i", file, "--dev", "sdz", "--dev", "7:0", "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "iotrace: warning: " + warning + "\n");
  EXPECT_NE(r.out.find("\"notes\": [\n    \"" + warning + "\""), std::string::npos) << r.out;
}

TEST_F(ReportCommandTest, AReportLeftEmptyByAFilterSaysWhichRemovedWhat) {
  const std::string file = std::string(IOTRACE_FIXTURES) + "/golden/iotrace_mq.data";
  RunResult r = Run({"-i", file, "--op", "discard"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(Squeezed(r.out).find(" no request latencies to show: --op discard removed all 715 "
                                 "requests (the file holds read 334, write 366, flush 15) "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  filtered out:            requests by --op 715\n"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.err, "iotrace: warning: --op discard matches no request in " + file +
                       " (it holds read 334, write 366, flush 15)\n");
  r = Run({"-i", file, "--since", "1", "--until", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(Squeezed(r.out).find(" no request latencies to show: --since 1 removed all 2115 "
                                 "phase samples (the trace spans 0.024 s) "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  filtered out:            phase samples by --since 2115, --until 0\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err, "");
  r = Run({"-i", file, "--op", "read,write", "--comm", "nobody", "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"requests_filtered\": {\"dev\": 0, \"op\": 15, \"comm\": 700, "
                       "\"pid\": 0}"),
            std::string::npos)
      << r.out;
  EXPECT_NE(Squeezed(r.out).find("no request latencies to show: --op read, --op write removed 15 "
                                 "requests (the file holds read 334, write 366, flush 15), --comm "
                                 "nobody removed 700 requests"),
            std::string::npos)
      << r.out;
}

// A perf.data cut short before its formats (at 50%), read with the formats of another recording.
TEST_F(ReportCommandTest, FormatsFromAnotherRecordingThroughTheCommandLine) {
  const std::string kFixtures = IOTRACE_FIXTURES;
  const std::string bytes = test::ReadFixture("golden/perf_mq.data");
  ASSERT_GT(bytes.size(), 807316u);
  const std::string path = (dir_ / "cut").string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), 807316);
  const std::string from = kFixtures + "/golden/perf_mq.data";
  RunResult r = Run({"-i", path, "--formats-from", from});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // The header, then the warning (each wrapped at 80 columns).
  EXPECT_EQ(Squeezed(r.out).rfind("iotrace report: " + path +
                                      " (perf.data, 2 CPUs), 0.137 s of trace WARNING: event "
                                      "formats taken from " + from +
                                      ": the file is cut short, and its tracing data "
                                      "(HEADER_TRACING_DATA, the event formats), which perf "
                                      "writes after the data, is lost with its end; check that "
                                      "they are the recording kernel's, or give --formats-from "
                                      "FILE ",
                                  0),
            0u)
      << r.out;

  r = Run({"-i", path, "--formats-from", from, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"formats_source\": \"" + from + "\""), std::string::npos);

  // A trace.dat of the same kernel whose formats lack the file's other events.
  r = Run({"-i", path, "--formats-from", kFixtures + "/tracedat/dd_v6.dat"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the formats of " + kFixtures +
                       "/tracedat/dd_v6.dat do not match: the file's event id "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hint: give the formats of a recording made on the kernel that recorded "
                       "this one: iotrace report --formats-from FILE"),
            std::string::npos)
      << r.err;

  // A file that has its own formats does not use them, and says so.
  r = Run({"-i", from, "--formats-from", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.err).front(), "iotrace: warning: --formats-from " + path +
                                      " not used: the file carries its own event formats");
}

// --by against an independent pairing of the file's own events (--events --format json): each
// read/write request, paired insert -> issue -> complete by device and sector, lands in the class
// its events say (the issue's size, the inserting process, the issue's priority and CPU).
TEST_F(ReportCommandTest, ByClassesMatchAPairingOfTheEvents) {
  using test::Json;
  using test::JsonParser;
  for (const std::string fixture : {"/golden/iotrace_mq.data", "/tracedat/dd_v7_none.dat"}) {
    const std::string file = std::string(IOTRACE_FIXTURES) + fixture;
    RunResult events = Run({"-i", file, "--events", "--format", "json"});
    ASSERT_EQ(events.exit_code, 0) << events.err;
    struct Open {
      Json insert, issue;
      bool inserted = false, issued = false;
    };
    std::map<std::string, Open> open;  // "dev sector"
    // (dimension, dev, class, phase) -> requests
    std::map<std::tuple<std::string, std::string, std::string, std::string>, double> expected;
    for (const std::string& line : Lines(events.out)) {
      Json e;
      ASSERT_TRUE(JsonParser(line).Parse(&e)) << line;
      const std::string name = e["event"].text;
      if (name.rfind("block:block_rq_", 0) != 0) continue;
      const Json& f = e["fields"];
      const std::string rwbs = f["rwbs"].text;
      const bool rw = rwbs.find('R') != std::string::npos || rwbs.find('W') != std::string::npos;
      if (!rw || rwbs[0] == 'F' || f["nr_sector"].num() == 0) continue;
      // dev as report's JSON prints it: "7:0" (the events print "7,0").
      std::string dev = f["dev"].text;
      std::replace(dev.begin(), dev.end(), ',', ':');
      const std::string key = dev + " " + f["sector"].text;
      if (name == "block:block_rq_insert") {
        open[key] = Open{e, Json(), true, false};
      } else if (name == "block:block_rq_issue") {
        Open& o = open[key];
        o.issue = e;
        o.issued = true;
      } else if (name == "block:block_rq_complete") {
        auto it = open.find(key);
        if (it == open.end() || !it->second.issued) continue;
        const Open& o = it->second;
        const Json& issue = o.issue["fields"];
        const uint64_t bytes = static_cast<uint64_t>(issue["bytes"].num());
        int width = 0;
        while ((bytes >> width) != 0) ++width;
        const uint64_t lo = width == 0 ? 0 : uint64_t{1} << (width - 1);
        const std::string size = lo >= (1u << 20)   ? std::to_string(lo >> 20) + "M"
                                 : lo >= (1u << 10) ? std::to_string(lo >> 10) + "K"
                                                    : std::to_string(lo);
        const std::string comm = o.inserted ? o.insert["fields"]["comm"].text : issue["comm"].text;
        const unsigned prio = static_cast<unsigned>(issue["ioprio"].num());
        const unsigned cls = prio >> 13, level = prio & 7;
        const std::string ioprio = cls == 0   ? "none"
                                   : cls == 1 ? "rt/" + std::to_string(level)
                                   : cls == 2 ? "be/" + std::to_string(level)
                                              : "idle";
        const std::string cpu = o.issue["cpu"].text;
        for (const auto& [dim, klass] : std::vector<std::pair<std::string, std::string>>{
                 {"size", size}, {"comm", comm}, {"ioprio", ioprio}, {"cpu", cpu}}) {
          expected[{dim, dev, klass, "D2C"}] += 1;
          if (o.inserted) expected[{dim, dev, klass, "I2D"}] += 1;
        }
        open.erase(it);
      }
    }
    ASSERT_FALSE(expected.empty()) << fixture;
    for (const std::string dim : {"size", "comm", "ioprio", "cpu"}) {
      RunResult r = Run({"-i", file, "--by", dim, "--format", "json"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      Json j;
      ASSERT_TRUE(JsonParser(r.out).Parse(&j)) << r.out;
      EXPECT_EQ(j["options"]["by"].text, dim);
      std::map<std::tuple<std::string, std::string, std::string, std::string>, double> got, want;
      for (const Json& g : j["groups"].items) {
        const std::string op = g["op"].text, phase = g["phase"].text;
        if ((op != "read" && op != "write") || (phase != "D2C" && phase != "I2D")) continue;
        got[{dim, g["dev"].text, g[dim].text, phase}] += g["count"].num();
      }
      for (const auto& [k, n] : expected) {
        if (std::get<0>(k) == dim) want[k] = n;
      }
      EXPECT_EQ(got, want) << fixture << " --by " << dim;
    }
  }
}

}  // namespace
}  // namespace iotrace
