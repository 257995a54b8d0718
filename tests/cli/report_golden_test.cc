// Golden tests: `iotrace report` on fixture files recorded on this kernel (by iotrace record and
// by perf record; scripts/capture-report-fixtures.sh) against numbers computed independently by
// scripts/reference_pairing.py from `perf script` text. Counts, min and max must be equal; the
// percentiles within the histogram's bucket bound of the exact values.
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

const std::string kGolden = std::string(IOTRACE_FIXTURES) + "/golden/";

struct Row {
  uint64_t count = 0, min = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
  double mean = 0;
};
using Key = std::tuple<std::string, std::string, std::string>;  // dev, op, phase

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string field;
  while (std::getline(ss, field, ',')) out.push_back(field);
  return out;
}

// Reads summary CSV rows (header dev,device,op,phase,count,min_ns,mean_ns,p50..max_ns);
// "# name=value" lines go to *counters.
std::map<Key, Row> ReadSummary(const std::string& text, std::map<std::string, uint64_t>* counters) {
  std::map<Key, Row> rows;
  std::stringstream in(text);
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      size_t eq = line.find('=');
      if (counters && eq != std::string::npos) {
        (*counters)[line.substr(2, eq - 2)] = std::stoull(line.substr(eq + 1));
      }
      continue;
    }
    if (header) {
      EXPECT_EQ(line, "dev,device,op,phase,count,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns");
      header = false;
      continue;
    }
    std::vector<std::string> f = Split(line);
    EXPECT_EQ(f.size(), 12u) << line;
    if (f.size() != 12) continue;
    Row r;
    r.count = std::stoull(f[4]);
    r.min = std::stoull(f[5]);
    r.mean = std::stod(f[6]);
    r.p50 = std::stoull(f[7]);
    r.p90 = std::stoull(f[8]);
    r.p99 = std::stoull(f[9]);
    r.p999 = std::stoull(f[10]);
    r.max = std::stoull(f[11]);
    rows[{f[0], f[2], f[3]}] = r;
  }
  return rows;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Output {
  int exit_code = -1;
  std::string text;
};

// What `cmd` (through the shell) writes on its standard output, and its exit status.
Output RunCommand(const std::string& cmd) {
  Output out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.text.append(buf, n);
  const int status = pclose(p);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

Output RunReport(const std::string& fixture, const std::string& extra = "") {
  std::string csv = ::testing::TempDir() + "/golden_" + fixture + ".csv";
  std::string cmd = std::string(IOTRACE_BINARY) + " report -i " + kGolden + fixture +
                    ".data --summary-csv " + csv + " " + extra + " 2>&1";
  Output out = RunCommand(cmd);
  out.text += "\n---summary---\n" + ReadFile(csv);
  std::remove(csv.c_str());
  return out;
}

// Our value lies in the same log-linear bucket as the exact one: within 1/32 relative.
void ExpectWithinBucket(uint64_t ours, uint64_t exact, const std::string& what) {
  double tol = std::max(1.0, exact / 32.0);
  EXPECT_LE(std::fabs(double(ours) - double(exact)), tol)
      << what << ": ours " << ours << " exact " << exact;
}

void CompareWithReference(const std::string& fixture) {
  std::map<std::string, uint64_t> counters;
  std::map<Key, Row> expected =
      ReadSummary(ReadFile(kGolden + fixture + ".expected.csv"), &counters);
  ASSERT_FALSE(expected.empty()) << "no expected rows for " << fixture;
  Output out = RunReport(fixture);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  std::string summary = out.text.substr(out.text.find("---summary---\n") + 14);
  std::map<Key, Row> ours = ReadSummary(summary, nullptr);
  for (const auto& [key, e] : expected) {
    std::string what = fixture + " " + std::get<0>(key) + " " + std::get<1>(key) + " " +
                       std::get<2>(key);
    auto it = ours.find(key);
    ASSERT_NE(it, ours.end()) << what << " missing from iotrace's summary\n" << summary;
    const Row& o = it->second;
    EXPECT_EQ(o.count, e.count) << what;
    EXPECT_EQ(o.min, e.min) << what;
    EXPECT_EQ(o.max, e.max) << what;
    EXPECT_NEAR(o.mean, e.mean, 0.1 + e.mean * 1e-6) << what;
    ExpectWithinBucket(o.p50, e.p50, what + " p50");
    ExpectWithinBucket(o.p90, e.p90, what + " p90");
    ExpectWithinBucket(o.p99, e.p99, what + " p99");
    ExpectWithinBucket(o.p999, e.p999, what + " p99.9");
  }
  for (const auto& [key, o] : ours) {
    EXPECT_TRUE(expected.count(key)) << fixture << ": iotrace shows a row the reference has not: "
                                     << std::get<0>(key) << " " << std::get<1>(key) << " "
                                     << std::get<2>(key);
  }
}

TEST(ReportGoldenTest, IotraceRecordingWithFlushesMatchesTheReference) {
  CompareWithReference("iotrace_mq");
}

TEST(ReportGoldenTest, PerfRecordWithCallchainsBioEventsAndOtherDisksMatchesTheReference) {
  CompareWithReference("perf_mq");
}

// perf record -z: its records in zstd-compressed batches, inflated before they are read.
TEST(ReportGoldenTest, PerfRecordCompressedWithZMatchesTheReference) {
  CompareWithReference("perf_z");
  Output out = RunReport("perf_z");
  EXPECT_EQ(out.text.find("compressed_record"), std::string::npos) << out.text;
}

TEST(ReportGoldenTest, SchedulerNoneHasD2COnlyAndSaysWhy) {
  CompareWithReference("iotrace_none");
  Output out = RunReport("iotrace_none");
  EXPECT_NE(out.text.find("no I2D/I2C: the device showed no block_rq_insert at all"),
            std::string::npos)
      << out.text;
  EXPECT_NE(out.text.find("no_insert_on_device 600"), std::string::npos) << out.text;
}

// --events prints every record once, in time order, like perf script: as many lines as perf
// script printed block_rq_* events for the fixture (the reference's event counters).
TEST(ReportGoldenTest, EventDumpHasEveryRecordInTimeOrder) {
  std::map<std::string, uint64_t> counters;
  ReadSummary(ReadFile(kGolden + "iotrace_mq.expected.csv"), &counters);
  uint64_t expected = 0;
  for (const auto& [name, n] : counters) {
    if (name.rfind("events_", 0) == 0) expected += n;
  }
  ASSERT_GT(expected, 0u);
  for (const char* format : {"text", "json", "csv"}) {
    std::string cmd = std::string(IOTRACE_BINARY) + " report --events --format " + format +
                      " -i " + kGolden + "iotrace_mq.data";
    const Output run = RunCommand(cmd);
    ASSERT_EQ(run.exit_code, 0) << format;
    std::stringstream in(run.text);
    std::string line;
    uint64_t lines = 0;
    double last = 0;
    bool ordered = true;
    while (std::getline(in, line)) {
      if (std::string(format) == "csv" && lines == 0 && line.rfind("time,", 0) == 0) continue;
      ++lines;
      size_t start = std::string(format) == "json" ? line.find("\"time\":") + 7 : 0;
      double t = std::stod(line.substr(start));
      ordered = ordered && t >= last;
      last = t;
      if (std::string(format) == "text") {
        EXPECT_NE(line.find("block:block_rq_"), std::string::npos) << line;
        EXPECT_NE(line.find(" dev=7,"), std::string::npos) << line;
      }
    }
    EXPECT_EQ(lines, expected) << format;
    EXPECT_TRUE(ordered) << format;
  }
}

// Where and by what each fixture was recorded, as the peers print it from the same headers:
// `perf report --header-only` (hostname, os release, perf version, arch) for the perf.data
// files, `trace-cmd report --uname` and `--version` for the trace.dat one.
TEST(ReportGoldenTest, TheHeaderSaysWhereAndByWhatTheFileWasRecorded) {
  struct Case {
    std::string path, json, text;
  };
  const std::string fixtures = std::string(IOTRACE_FIXTURES) + "/";
  const std::vector<Case> cases = {
      {"golden/perf_mq.data",
       R"("recorded_on": {"host": "vm", "kernel": "6.18.44-fc-v1045", "arch": "x86_64", )"
       R"("recorder": "perf 6.1.187"})",
       "recorded on vm (Linux 6.18.44-fc-v1045 x86_64) by perf 6.1.187\n"},
      {"golden/iotrace_mq.data",
       R"("recorded_on": {"host": "vm", "kernel": "6.18.44-fc-v1045", "arch": "x86_64", )"
       R"("recorder": "iotrace 0.1.0"})",
       "recorded on vm (Linux 6.18.44-fc-v1045 x86_64) by iotrace 0.1.0\n"},
      {"tracedat/dd_v6.dat",
       R"("recorded_on": {"host": "vm", "kernel": "6.18.44-fc-v1045", "arch": "x86_64", )"
       R"("recorder": "trace-cmd 3.1.6 not-a-git-repo"})",
       "recorded on vm (Linux 6.18.44-fc-v1045 x86_64) by trace-cmd 3.1.6 not-a-git-repo\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    for (const char* format : {"json", "text"}) {
      const std::string cmd = std::string(IOTRACE_BINARY) + " report -i " + fixtures + c.path +
                              " --histograms none --format " + format + " 2>&1";
      const Output run = RunCommand(cmd);
      ASSERT_EQ(run.exit_code, 0) << run.text;
      const std::string& out = run.text;
      if (std::string(format) == "json") {
        EXPECT_NE(out.find(c.json), std::string::npos) << out.substr(0, 600);
      } else {
        // A line of its own in the header: after the file's (wrapped when its path is long),
        // before the phases' legend.
        const size_t at = out.find("\n" + c.text);
        ASSERT_NE(at, std::string::npos) << out.substr(0, 300);
        const size_t phases = out.find("\nphases: ");
        ASSERT_NE(phases, std::string::npos) << out.substr(0, 300);
        EXPECT_LT(at, phases) << out.substr(0, 300);
        EXPECT_EQ(out.rfind("iotrace report: ", at), 0u) << out.substr(0, 300);
      }
    }
  }
}

}  // namespace
}  // namespace iotrace
