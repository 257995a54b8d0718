// --by: rows broken down by request size, process, I/O priority or issuing CPU, in the report
// (one pass and two time ranges), and the class labels.
#include "iotrace/analysis/breakdown.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/output/report_format.h"
#include "block_trace_dat.h"
#include "iotrace/formats/trace_reader_open.h"
#include "synthetic_trace.h"

namespace iotrace {
namespace {

using synthetic::LoadFormats;
using synthetic::SyntheticTrace;

constexpr uint32_t kLoop0 = 7u << 20;
constexpr uint32_t kLoop1 = (7u << 20) | 1;

ReportOptions TestOptions(BreakdownBy by) {
  ReportOptions o;
  o.input = "synthetic.data";
  o.sysfs_root = std::string(IOTRACE_FIXTURES) + "/devices/sys";
  o.procfs_root = std::string(IOTRACE_FIXTURES) + "/devices/proc";
  o.by = by;
  o.threads = 1;
  return o;
}

LatencyReport Build(const SyntheticTrace& trace, const ReportOptions& options) {
  auto reader = trace.Reader();
  auto report = BuildLatencyReport(*reader, options);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : LatencyReport();
}

RequestSample SampleOfSize(uint32_t bytes) {
  RequestSample s;
  s.bytes = bytes;
  return s;
}

TEST(BreakdownTest, SizeClassesArePowersOfTwoLabelledByTheirLowerBound) {
  Breakdown b(BreakdownBy::kSize);
  const std::vector<std::pair<uint32_t, std::string>> cases = {
      {0, "0"},        {512, "512"},  {4095, "2K"},        {4096, "4K"},
      {8191, "4K"},    {8192, "8K"},  {1u << 20, "1M"},    {(1u << 20) + 4096, "1M"},
      {128u << 20, "128M"}, {1u << 31, "2G"},
  };
  for (const auto& [bytes, label] : cases) {
    EXPECT_EQ(b.Label(b.ClassOf(SampleOfSize(bytes))), label) << bytes;
  }
  // Classes sort by size.
  EXPECT_LT(b.Order(b.ClassOf(SampleOfSize(4096))), b.Order(b.ClassOf(SampleOfSize(8192))));
}

TEST(BreakdownTest, IoprioLabelsAreClassAndLevelWithoutHints) {
  Breakdown b(BreakdownBy::kIoprio);
  auto label = [&b](uint16_t ioprio) {
    RequestSample s;
    s.ioprio = IoprioClassLevel(ioprio);
    return b.Label(b.ClassOf(s));
  };
  EXPECT_EQ(label(0), "none");
  EXPECT_EQ(label((1 << 13) | 0), "rt/0");
  EXPECT_EQ(label((2 << 13) | 4), "be/4");
  EXPECT_EQ(label((2 << 13) | (5 << 3) | 4), "be/4");  // a hint (bits 3-12) is not a class
  EXPECT_EQ(label((3 << 13) | 7), "idle");
  b.set_ioprio_absent(true);
  EXPECT_EQ(label((2 << 13) | 4), "-");
}

TEST(BreakdownTest, CommClassesAreNamesAndTranslateBetweenBreakdowns) {
  Breakdown a(BreakdownBy::kComm), b(BreakdownBy::kComm);
  RequestSample s;
  s.insert_comm = "fio";
  s.issue_comm = "kworker/0:1";
  const uint32_t fio_a = a.ClassOf(s);
  s.insert_comm = "";  // no insert: the issuing process
  const uint32_t kworker_a = a.ClassOf(s);
  EXPECT_EQ(a.Label(fio_a), "fio");
  EXPECT_EQ(a.Label(kworker_a), "kworker/0:1");
  // b met the names in the other order: a class of b's is translated by its name.
  const uint32_t kworker_b = b.ClassOf(s);
  s.insert_comm = "fio";
  const uint32_t fio_b = b.ClassOf(s);
  EXPECT_NE(fio_a, fio_b);
  EXPECT_EQ(a.Translate(b, fio_b), fio_a);
  EXPECT_EQ(a.Translate(b, kworker_b), kworker_a);
}

// Requests of two sizes, two processes, two priorities, issued on two CPUs, on two devices;
// the generator knows how many of each.
struct Expected {
  std::map<std::tuple<uint32_t, std::string>, uint64_t> by_class;  // (dev, class) -> requests
};

SyntheticTrace MixedTrace(BreakdownBy by, Expected* expected) {
  SyntheticTrace t;
  uint64_t ts = 1'000'000;
  uint64_t sector = 0;
  for (int i = 0; i < 400; ++i) {
    const uint32_t dev = i % 5 == 0 ? kLoop1 : kLoop0;
    const uint32_t nr = (i % 3 == 0) ? 2048 : 8;  // 1 MiB or 4 KiB
    const std::string comm = (i % 4 == 0) ? "dd" : "fio";
    const uint16_t ioprio = (i % 7 == 0) ? (1 << 13) | 2 : (2 << 13) | 4;
    const uint32_t issue_cpu = static_cast<uint32_t>(i % 2);
    SyntheticTrace::Ev e;
    e.dev = dev;
    e.sector = sector;
    e.nr_sector = nr;
    e.rwbs = i % 2 == 0 ? "R" : "W";
    e.comm = comm;
    e.ioprio = ioprio;
    e.ts = ts;
    e.cpu = 0;
    t.Add("block_rq_insert", e);
    e.ts = ts + 10'000;
    e.cpu = issue_cpu;
    t.Add("block_rq_issue", e);
    e.ts = ts + 60'000 + 1000 * (i % 13);
    e.cpu = 1 - issue_cpu;  // completed on the other CPU, as an interrupt may be
    e.comm = "swapper/1";
    t.Add("block_rq_complete", e);
    ts += 100'000;
    sector += 4096;
    std::string klass;
    switch (by) {
      case BreakdownBy::kSize:
        klass = nr == 2048 ? "1M" : "4K";
        break;
      case BreakdownBy::kComm:
        klass = comm;
        break;
      case BreakdownBy::kIoprio:
        klass = ioprio == ((1 << 13) | 2) ? "rt/2" : "be/4";
        break;
      case BreakdownBy::kCpu:
        klass = std::to_string(issue_cpu);
        break;
      case BreakdownBy::kNone:
        break;
    }
    ++expected->by_class[{dev, klass}];
  }
  return t;
}

void ExpectRowsMatch(const LatencyReport& r, const Expected& expected, const std::string& by) {
  EXPECT_EQ(r.by, by);
  // Every phase's rows add up per device x class to the requests the trace holds.
  for (Phase phase : {Phase::kI2D, Phase::kD2C, Phase::kI2C}) {
    std::map<std::tuple<uint32_t, std::string>, uint64_t> got;
    for (const LatencyGroup& g : r.groups) {
      if (g.phase == phase) got[{g.dev, g.by}] += g.summary.count;
    }
    EXPECT_EQ(got, expected.by_class) << by << " " << PhaseName(phase);
  }
  // Sorted by device, class order, class, op, phase.
  for (size_t i = 1; i < r.groups.size(); ++i) {
    const LatencyGroup& a = r.groups[i - 1];
    const LatencyGroup& b = r.groups[i];
    EXPECT_LT(std::tie(a.dev, a.by_order, a.by, a.op, a.phase),
              std::tie(b.dev, b.by_order, b.by, b.op, b.phase));
  }
}

TEST(BreakdownTest, EveryDimensionSplitsTheRowsAndAddsUpToTheTrace) {
  for (BreakdownBy by :
       {BreakdownBy::kSize, BreakdownBy::kComm, BreakdownBy::kIoprio, BreakdownBy::kCpu}) {
    Expected expected;
    SyntheticTrace t = MixedTrace(by, &expected);
    const LatencyReport r = Build(t, TestOptions(by));
    ExpectRowsMatch(r, expected, std::string(BreakdownName(by)));
    // The same samples as without --by, only split: the counts per device x op x phase agree.
    const LatencyReport plain = Build(t, TestOptions(BreakdownBy::kNone));
    std::map<std::tuple<uint32_t, BlockOp, Phase>, uint64_t> split, whole;
    for (const LatencyGroup& g : r.groups) split[{g.dev, g.op, g.phase}] += g.summary.count;
    for (const LatencyGroup& g : plain.groups) {
      whole[{g.dev, g.op, g.phase}] += g.summary.count;
      EXPECT_TRUE(g.by.empty());
    }
    EXPECT_EQ(split, whole) << BreakdownName(by);
  }
}

TEST(BreakdownTest, TimeSeriesAndTwoRangesKeepTheClasses) {
  for (BreakdownBy by : {BreakdownBy::kSize, BreakdownBy::kComm}) {
    Expected expected;
    SyntheticTrace t = MixedTrace(by, &expected);
    ReportOptions series = TestOptions(by);
    series.interval_s = 0.01;
    const LatencyReport r = Build(t, series);
    ExpectRowsMatch(r, expected, std::string(BreakdownName(by)));
    std::map<std::tuple<uint32_t, std::string, BlockOp, Phase>, uint64_t> total, summed;
    for (const LatencyGroup& g : r.groups) total[{g.dev, g.by, g.op, g.phase}] = g.summary.count;
    for (const LatencyInterval& iv : r.intervals) {
      for (const LatencyGroup& g : iv.groups) {
        EXPECT_FALSE(g.by.empty());
        summed[{g.dev, g.by, g.op, g.phase}] += g.summary.count;
      }
    }
    EXPECT_EQ(summed, total) << BreakdownName(by);

  }
}

// A file read as two time ranges on two threads: each builder meets the processes in its own
// order (the earlier one fio first, the later one dd), and the sum is the one-pass report.
TEST(BreakdownTest, TwoRangesAddUpTheSameClassesAsOnePass) {
  std::vector<testing::RqEvent> events = testing::Workload(2000, 7);
  for (testing::RqEvent& e : events) e.comm = e.ts < 800 * testing::kMs ? "fio" : "dd";
  testing::BlockTraceDat f;
  const std::string path = f.Write(events);
  for (BreakdownBy by :
       {BreakdownBy::kComm, BreakdownBy::kSize, BreakdownBy::kCpu, BreakdownBy::kIoprio}) {
    auto report = [&](bool split) {
      ReportOptions o = TestOptions(by);
      o.input = path;
      o.threads = split ? 0 : 1;
      o.split_min_bytes = 1;
      o.split_on_one_cpu = true;
      auto reader = OpenTraceReader(path);
      EXPECT_TRUE(reader.ok());
      auto r = BuildLatencyReport(**reader, o);
      EXPECT_TRUE(r.ok()) << r.status();
      return r.ok() ? *std::move(r) : LatencyReport();
    };
    const LatencyReport one = report(false), two = report(true);
    // The later matcher starts in the earlier one's state though their names have other ids.
    EXPECT_EQ(two.read_plan, "two ranges");
    EXPECT_EQ(FormatReport(two, OutputFormat::kJson, TimeUnit::kUs),
              FormatReport(one, OutputFormat::kJson, TimeUnit::kUs))
        << BreakdownName(by);
    std::set<std::string> classes;
    for (const LatencyGroup& g : one.groups) classes.insert(g.by);
    if (by == BreakdownBy::kComm) EXPECT_EQ(classes, (std::set<std::string>{"dd", "fio"}));
    if (by == BreakdownBy::kCpu) EXPECT_EQ(classes, (std::set<std::string>{"0", "1"}));
  }
}

TEST(BreakdownTest, IoprioOnALayoutWithoutTheFieldIsSaid) {
  // The 6.10 layouts (before 6.11) have no ioprio.
  SyntheticTrace t(LoadFormats("6.10", {"block_rq_insert", "block_rq_issue", "block_rq_complete"}));
  t.Insert(1'000'000, 0, 8, "W", kLoop0).Issue(1'010'000, 0, 8, "W", kLoop0);
  t.Complete(1'050'000, 0, 8, "W", kLoop0);
  const LatencyReport r = Build(t, TestOptions(BreakdownBy::kIoprio));
  ASSERT_FALSE(r.groups.empty());
  EXPECT_TRUE(r.ioprio_absent);
  for (const LatencyGroup& g : r.groups) EXPECT_EQ(g.by, "-");
  bool said = false;
  for (const std::string& n : r.notes) said |= n.find("no ioprio field") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(BreakdownTest, EveryFormatNamesTheClass) {
  Expected expected;
  SyntheticTrace t = MixedTrace(BreakdownBy::kSize, &expected);
  const LatencyReport r = Build(t, TestOptions(BreakdownBy::kSize));
  const std::string text = FormatReport(r, OutputFormat::kText, TimeUnit::kUs);
  // The class heads its rows in the table, after the device.
  EXPECT_NE(text.find("\nloop0 (7:0) size 1M\n  read  I2D "), std::string::npos) << text;
  EXPECT_NE(text.find(" size 1M read D2C"), std::string::npos) << text;
  const std::string csv = FormatReport(r, OutputFormat::kCsv, TimeUnit::kUs);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "dev,device,size,op,phase,bucket_lo_ns,bucket_hi_ns,count");
  EXPECT_NE(csv.find(",4K,read,D2C,"), std::string::npos) << csv;
  const std::string json = FormatReport(r, OutputFormat::kJson, TimeUnit::kUs);
  EXPECT_NE(json.find("\"by\": \"size\""), std::string::npos);
  EXPECT_NE(json.find("\"size\": \"1M\", \"op\": \"read\""), std::string::npos);
}

TEST(BreakdownTest, ParseNamesTheChoices) {
  BreakdownBy by = BreakdownBy::kNone;
  EXPECT_TRUE(ParseBreakdown("size", &by).ok());
  EXPECT_EQ(by, BreakdownBy::kSize);
  const absl::Status bad = ParseBreakdown("disk", &by);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("'disk'"), std::string::npos);
}

}  // namespace
}  // namespace iotrace
