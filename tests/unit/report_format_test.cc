#include "iotrace/output/report_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "test_json.h"

namespace iotrace {
namespace {

using test::Json;
using test::JsonParser;

constexpr uint32_t kLoop0 = 7u << 20;
constexpr uint32_t kVda = 254u << 20;

LatencyGroup Group(uint32_t dev, std::string device, BlockOp op, Phase phase,
                   std::vector<LatencyBucket> buckets) {
  LatencyGroup g;
  g.dev = dev;
  g.device = std::move(device);
  g.op = op;
  g.phase = phase;
  g.buckets.assign(buckets.begin(), buckets.end());
  for (const LatencyBucket& b : g.buckets) g.summary.count += b.count;
  g.summary.min_ns = g.buckets.front().lo_ns;
  g.summary.max_ns = g.buckets.back().hi_ns - 1;
  g.summary.sum_ns = 123456;
  g.summary.mean_ns = 1234.5;
  g.summary.p50_ns = 1500;
  g.summary.p90_ns = 2500;
  g.summary.p99_ns = 40000;
  g.summary.p999_ns = 41000;
  return g;
}

LatencyReport SampleReport() {
  LatencyReport r;
  r.input = "run.data";
  r.file_format = "perf.data";
  r.nr_cpus = 2;
  r.first_ts_ns = 1'000'000'000;
  r.last_ts_ns = 3'500'000'000;
  r.expiry_s = 30;
  r.max_inflight = 131072;
  r.groups.push_back(Group(kLoop0, "loop0", BlockOp::kRead, Phase::kD2C,
                           {{1000, 1016, 3}, {2048, 2080, 5}, {40960, 41472, 1}}));
  r.groups.push_back(Group(kVda, "vda", BlockOp::kWrite, Phase::kI2D, {{100, 101, 2}}));
  r.groups[0].incomplete = true;
  Completeness& c = r.completeness;
  c.recorded[static_cast<int>(BlockEventKind::kIssue)] = true;
  c.recorded[static_cast<int>(BlockEventKind::kComplete)] = true;
  c.events[static_cast<int>(BlockEventKind::kIssue)] = 11;
  c.events[static_cast<int>(BlockEventKind::kComplete)] = 9;
  c.match.paired[static_cast<int>(Phase::kD2C)] = 9;
  c.match.issues_without_insert[static_cast<int>(NoInsertReason::kNoInsertOnDevice)] = 9;
  c.match.flushes = 4;
  c.match.in_flight_at_end[static_cast<int>(RequestState::kIssued)] = 2;
  c.match.stale_at_end[static_cast<int>(RequestState::kIssued)] = 1;
  LossSummary loss;
  loss.kind = LossRecord::Kind::kSilentDrop;
  loss.cpu = 1;
  loss.event_id = 2107;
  loss.event = "block:block_rq_complete";
  loss.count = 2;
  c.losses.push_back(loss);
  c.reader_records = 25;
  c.reader_events = 20;
  c.reader_problems.emplace_back("short_sample", 1);
  DeviceSummary d;
  d.dev = kLoop0;
  d.device = "loop0";
  d.events[static_cast<int>(BlockEventKind::kIssue)] = 11;
  d.issues_without_insert = 9;
  d.no_insert_reason = NoInsertReason::kNoInsertOnDevice;
  c.devices.push_back(d);
  r.warnings.push_back({Phase::kD2C, "D2C is incomplete: 2 block_rq_complete events lost"});
  r.notes.push_back("loop0 (7:0): no I2D/I2C: \"quoted\"\tand tabbed");
  return r;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

TEST(ReportFormatTest, BucketCsvHasOneRowPerNonEmptyBucket) {
  std::vector<std::string> lines = Lines(FormatReport(SampleReport(), OutputFormat::kCsv,
                                                      TimeUnit::kUs));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "dev,device,op,phase,bucket_lo_ns,bucket_hi_ns,count");
  EXPECT_EQ(lines[1], "7:0,loop0,read,D2C,1000,1016,3");
  EXPECT_EQ(lines[2], "7:0,loop0,read,D2C,2048,2080,5");
  EXPECT_EQ(lines[3], "7:0,loop0,read,D2C,40960,41472,1");
  EXPECT_EQ(lines[4], "254:0,vda,write,I2D,100,101,2");
}

TEST(ReportFormatTest, SummaryCsvHasOneRowPerGroupFieldByField) {
  std::ostringstream out;
  WriteSummaryCsv(SampleReport(), out);
  std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "dev,device,op,phase,count,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns");
  std::vector<std::string> f = absl::StrSplit(lines[1], ',');
  ASSERT_EQ(f.size(), 12u);
  EXPECT_EQ(f[0], "7:0");
  EXPECT_EQ(f[1], "loop0");
  EXPECT_EQ(f[2], "read");
  EXPECT_EQ(f[3], "D2C");
  EXPECT_EQ(f[4], "9");
  EXPECT_EQ(f[5], "1000");
  EXPECT_EQ(f[6], "1234.5");
  EXPECT_EQ(f[7], "1500");
  EXPECT_EQ(f[8], "2500");
  EXPECT_EQ(f[9], "40000");
  EXPECT_EQ(f[10], "41000");
  EXPECT_EQ(f[11], "41471");
}

TEST(ReportFormatTest, IntervalCsvsCarryOneBlockPerIntervalWithItsStart) {
  LatencyReport r = SampleReport();
  r.interval_s = 0.5;
  LatencyInterval a;
  a.index = 0;
  a.start_s = 0;
  a.groups.push_back(Group(kLoop0, "loop0", BlockOp::kRead, Phase::kD2C, {{1000, 1016, 3}}));
  LatencyInterval b;
  b.index = 3;
  b.start_s = 1.5;
  b.groups.push_back(Group(kLoop0, "loop0", BlockOp::kRead, Phase::kD2C, {{2048, 2080, 5}}));
  b.groups.push_back(Group(kVda, "vda", BlockOp::kWrite, Phase::kI2D, {{100, 101, 2}}));
  r.intervals = {a, b};
  std::vector<std::string> lines = Lines(FormatReport(r, OutputFormat::kCsv, TimeUnit::kUs));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "interval_start_s,dev,device,op,phase,bucket_lo_ns,bucket_hi_ns,count");
  EXPECT_EQ(lines[1], "0,7:0,loop0,read,D2C,1000,1016,3");
  EXPECT_EQ(lines[2], "1.5,7:0,loop0,read,D2C,2048,2080,5");
  EXPECT_EQ(lines[3], "1.5,254:0,vda,write,I2D,100,101,2");
  std::ostringstream summary;
  WriteSummaryCsv(r, summary);
  lines = Lines(summary.str());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("interval_start_s,dev,device,op,phase,count,", 0), 0u);
  EXPECT_EQ(lines[3].rfind("1.5,254:0,vda,write,I2D,2,", 0), 0u);
}

TEST(ReportFormatTest, CsvQuotesFieldsThatNeedIt) {
  LatencyReport r;
  r.groups.push_back(Group(kLoop0, "odd,\"name\"", BlockOp::kRead, Phase::kD2C, {{5, 6, 1}}));
  std::vector<std::string> lines = Lines(FormatReport(r, OutputFormat::kCsv, TimeUnit::kUs));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "7:0,\"odd,\"\"name\"\"\",read,D2C,5,6,1");
}

TEST(ReportFormatTest, JsonCarriesTheSameContentWithASchemaVersion) {
  LatencyReport r = SampleReport();
  std::string text = FormatReport(r, OutputFormat::kJson, TimeUnit::kUs);
  Json j;
  ASSERT_TRUE(JsonParser(text).Parse(&j)) << text;
  EXPECT_EQ(j["schema_version"].text, "1");
  EXPECT_EQ(j["input"]["path"].text, "run.data");
  EXPECT_EQ(j["input"]["format"].text, "perf.data");
  EXPECT_EQ(j["input"]["cpus"].text, "2");
  EXPECT_EQ(j["input"]["duration_s"].num(), 2.5);
  ASSERT_EQ(j["groups"].items.size(), 2u);
  const Json& g = j["groups"][0];
  EXPECT_EQ(g["dev"].text, "7:0");
  EXPECT_EQ(g["device"].text, "loop0");
  EXPECT_EQ(g["op"].text, "read");
  EXPECT_EQ(g["phase"].text, "D2C");
  EXPECT_TRUE(g["incomplete"].b);
  EXPECT_EQ(g["count"].text, "9");
  EXPECT_EQ(g["min_ns"].text, "1000");
  EXPECT_EQ(g["mean_ns"].num(), 1234.5);
  EXPECT_EQ(g["p50_ns"].text, "1500");
  EXPECT_EQ(g["p90_ns"].text, "2500");
  EXPECT_EQ(g["p99_ns"].text, "40000");
  EXPECT_EQ(g["p999_ns"].text, "41000");
  EXPECT_EQ(g["max_ns"].text, "41471");
  EXPECT_EQ(g["sum_ns"].text, "123456");
  ASSERT_EQ(g["buckets"].items.size(), 3u);
  EXPECT_EQ(g["buckets"][1]["lo_ns"].text, "2048");
  EXPECT_EQ(g["buckets"][1]["hi_ns"].text, "2080");
  EXPECT_EQ(g["buckets"][1]["count"].text, "5");
  EXPECT_FALSE(j["groups"][1]["incomplete"].b);
  EXPECT_EQ(j["intervals"].items.size(), 0u);
  const Json& c = j["completeness"];
  EXPECT_EQ(c["events"]["block_rq_issue"].text, "11");
  EXPECT_EQ(c["events"]["block_rq_complete"].text, "9");
  EXPECT_FALSE(c["events"].Has("block_rq_insert"));  // not recorded, none seen
  EXPECT_EQ(c["paired"]["D2C"].text, "9");
  EXPECT_EQ(c["paired"]["I2D"].text, "0");
  EXPECT_EQ(c["issues_without_insert"]["no_insert_on_device"].text, "9");
  EXPECT_EQ(c["flushes"].text, "4");
  EXPECT_EQ(c["in_flight_at_end"]["issued"].text, "2");
  EXPECT_EQ(c["stale_at_end"]["issued"].text, "1");
  EXPECT_EQ(c["stale_at_end"]["inserted"].text, "0");
  EXPECT_EQ(c["expired"]["queued"].text, "0");
  ASSERT_EQ(c["losses"].items.size(), 1u);
  EXPECT_EQ(c["losses"][0]["kind"].text, "silent_drop");
  EXPECT_EQ(c["losses"][0]["cpu"].text, "1");
  EXPECT_EQ(c["losses"][0]["event"].text, "block:block_rq_complete");
  EXPECT_EQ(c["losses"][0]["count"].text, "2");
  EXPECT_EQ(c["reader"]["records"].text, "25");
  EXPECT_EQ(c["reader"]["problems"]["short_sample"].text, "1");
  EXPECT_EQ(c["decoder_problems"]["short_record"].text, "0");
  ASSERT_EQ(c["devices"].items.size(), 1u);
  EXPECT_EQ(c["devices"][0]["no_insert_reason"].text, "no_insert_on_device");
  ASSERT_EQ(j["warnings"].items.size(), 1u);
  EXPECT_EQ(j["warnings"][0]["phase"].text, "D2C");
  ASSERT_EQ(j["notes"].items.size(), 1u);
  EXPECT_EQ(j["notes"][0].text, "loop0 (7:0): no I2D/I2C: \"quoted\"\tand tabbed");
}

TEST(ReportFormatTest, JsonTimeSeriesHasIntervalStarts) {
  LatencyReport r = SampleReport();
  r.interval_s = 2;
  LatencyInterval iv;
  iv.index = 1;
  iv.start_s = 2;
  iv.groups.push_back(Group(kLoop0, "loop0", BlockOp::kRead, Phase::kD2C, {{1000, 1016, 3}}));
  r.intervals.push_back(iv);
  Json j;
  std::string text = FormatReport(r, OutputFormat::kJson, TimeUnit::kUs);
  ASSERT_TRUE(JsonParser(text).Parse(&j)) << text;
  EXPECT_EQ(j["options"]["interval_s"].num(), 2);
  ASSERT_EQ(j["intervals"].items.size(), 1u);
  EXPECT_EQ(j["intervals"][0]["interval_start_s"].num(), 2);
  EXPECT_EQ(j["intervals"][0]["groups"][0]["count"].text, "3");
}

// A report of many buckets is written by two threads, every other piece of the groups each (see
// WriteJsonGroups): parsed back, every group and bucket is there, in order, with its values, and
// the text is byte for byte one thread's. 2,100 groups make an even number of pieces (the
// second thread writes the last), 2,030 an odd one.
TEST(ReportFormatTest, JsonOfManyBucketsHasEveryGroupAndBucketInOrder) {
  for (const uint32_t groups : {2100u, 2030u}) {
    SCOPED_TRACE(groups);
    LatencyReport r;
    constexpr uint64_t kBuckets = 100;  // 203,000 buckets or more: past the two-thread threshold
    for (uint32_t i = 0; i < groups; ++i) {
      std::vector<LatencyBucket> buckets;
      for (uint64_t k = 0; k < kBuckets; ++k) buckets.push_back({1000 * k, 1000 * k + 7, i + k});
      r.groups.push_back(Group(i << 20, "d" + std::to_string(i), BlockOp::kRead, Phase::kD2C,
                               std::move(buckets)));
    }
    const std::string text = FormatReport(r, OutputFormat::kJson, TimeUnit::kUs);
    Json j;
    ASSERT_TRUE(JsonParser(text).Parse(&j));
    ASSERT_EQ(j["groups"].items.size(), groups);
    for (uint32_t i = 0; i < groups; ++i) {
      const Json& g = j["groups"][i];
      ASSERT_EQ(g["device"].text, "d" + std::to_string(i));
      ASSERT_EQ(g["buckets"].items.size(), kBuckets);
      for (uint64_t k = 0; k < kBuckets; k += 33) {
        ASSERT_EQ(g["buckets"][k]["lo_ns"].text, std::to_string(1000 * k));
        ASSERT_EQ(g["buckets"][k]["hi_ns"].text, std::to_string(1000 * k + 7));
        ASSERT_EQ(g["buckets"][k]["count"].text, std::to_string(i + k));
      }
    }
    // Byte for byte what one thread writes: each group written alone (one group is far below
    // the two-thread threshold), joined as the list joins them.
    auto groups_text = [](const std::string& json) {
      const std::string open = "\"groups\": [\n", close = "\n  ],\n  \"intervals\"";
      const size_t from = json.find(open) + open.size();
      return json.substr(from, json.find(close) - from);
    };
    std::string alone;
    for (uint32_t i = 0; i < groups; ++i) {
      LatencyReport one;
      one.groups.push_back(r.groups[i]);
      alone += (i == 0 ? "" : ",\n") + groups_text(FormatReport(one, OutputFormat::kJson,
                                                                 TimeUnit::kUs));
    }
    EXPECT_TRUE(groups_text(text) == alone) << "the two threads' text differs from one thread's";
  }
}

// The text's histograms of a report of many rows are formatted by two threads, each half of
// the rows: byte for byte what one thread writes (each row written alone, far below the
// two-thread threshold), in order.
TEST(ReportFormatTest, TextHistogramsOfManyRowsAreOneThreadsInOrder) {
  LatencyReport r;
  constexpr uint32_t kGroups = 1100;
  for (uint32_t i = 0; i < kGroups; ++i) {
    std::vector<LatencyBucket> buckets;
    for (uint64_t k = 1; k < 12; ++k) buckets.push_back({1000 * k * k, 1000 * k * k + 64, i + k});
    r.groups.push_back(
        Group(i << 20, "d" + std::to_string(i), BlockOp::kRead, Phase::kD2C, std::move(buckets)));
  }
  // The histograms: from the first one's title (its device's label `first`) to the
  // completeness.
  auto histograms = [](const std::string& text, const std::string& first) {
    const size_t from = text.find("\n" + first + " read D2C:");
    const size_t to = text.find("\ncompleteness");
    EXPECT_NE(from, std::string::npos) << first;
    EXPECT_NE(to, std::string::npos);
    return text.substr(from + 1, to - from);  // (its last line's end too)
  };
  const std::string all =
      histograms(FormatReport(r, OutputFormat::kText, TimeUnit::kUs), "d0 (0:0)");
  ASSERT_NE(all.find("\nd1099 (1099:0) read D2C:"), std::string::npos);
  std::string alone;
  for (uint32_t i = 0; i < kGroups; ++i) {
    LatencyReport one;
    one.groups.push_back(r.groups[i]);
    const std::string d = absl::StrCat("d", i, " (", i, ":0)");
    alone += histograms(FormatReport(one, OutputFormat::kText, TimeUnit::kUs), d);
  }
  EXPECT_TRUE(all == alone) << "the two threads' histograms differ from one thread's";
}

// A bucket's log2 row is that of its middle value, whether the bucket is one of the scale's
// (looked up) or not: every bucket of the scale, in every unit, against the formula.
TEST(ReportFormatTest, Log2RowsOfEveryBucketOfTheScaleAreThoseOfTheirMiddles) {
  for (const TimeUnit unit : {TimeUnit::kNs, TimeUnit::kUs, TimeUnit::kMs}) {
    const double div = unit == TimeUnit::kNs ? 1 : unit == TimeUnit::kUs ? 1e3 : 1e6;
    for (size_t i = 0; i < LatencyBuckets::kScaleBuckets; ++i) {
      const LatencyBucket own = LatencyBuckets::ScaleBucket(i);
      ASSERT_EQ(LatencyBuckets::ScaleIndex(own.lo_ns, own.hi_ns), i);
      const double mid =
          (static_cast<double>(own.lo_ns) + static_cast<double>(own.hi_ns - 1)) / 2 / div;
      const int row = mid < 2 ? 0 : static_cast<int>(std::floor(std::log2(mid)));
      const std::string want = row == 0 ? "0" : std::to_string(uint64_t{1} << row);
      LatencyReport r;
      r.groups.push_back(
          Group(kLoop0, "loop0", BlockOp::kRead, Phase::kD2C, {{own.lo_ns, own.hi_ns, 5}}));
      const std::string text = FormatReport(r, OutputFormat::kText, unit);
      // The one bar row: "<lo> -> <hi> : 5 |***...|".
      const size_t bar = text.find(" : 5 ");
      ASSERT_NE(bar, std::string::npos) << text;
      const size_t line = text.rfind('\n', bar) + 1;
      const std::string lo = std::string(
          absl::StripAsciiWhitespace(text.substr(line, text.find(" -> ", line) - line)));
      ASSERT_EQ(lo, want) << "bucket " << i << " [" << own.lo_ns << ", " << own.hi_ns << ") in "
                          << TimeUnitName(unit);
    }
  }
}

TEST(ReportFormatTest, EmptyReportIsValidJson) {
  Json j;
  std::string text = FormatReport(LatencyReport(), OutputFormat::kJson, TimeUnit::kUs);
  ASSERT_TRUE(JsonParser(text).Parse(&j)) << text;
  EXPECT_EQ(j["groups"].items.size(), 0u);
}

// The recording's host and tool come from the file's header, whatever bytes it holds: printable
// on the terminal, escaped in JSON, and the line left out when the file says nothing.
TEST(ReportFormatTest, RecordedOnIsPrintableInTextEscapedInJsonAndOnlyWhereKnown) {
  LatencyReport r = SampleReport();
  r.recorded_on = {"db\x1b[2J7", "6.1.0", "", "perf 6.1\n"};
  const std::string text = FormatReport(r, OutputFormat::kText, TimeUnit::kUs);
  EXPECT_EQ(Lines(text)[1], "recorded on db?[2J7 (Linux 6.1.0) by perf 6.1?") << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  Json j;
  const std::string json = FormatReport(r, OutputFormat::kJson, TimeUnit::kUs);
  ASSERT_TRUE(JsonParser(json).Parse(&j)) << json;
  EXPECT_EQ(j["input"]["recorded_on"]["host"].text, "db\x1b[2J7");
  EXPECT_EQ(j["input"]["recorded_on"]["arch"].type, Json::kNull);
  EXPECT_EQ(j["input"]["recorded_on"]["recorder"].text, "perf 6.1\n");
  r.recorded_on = RecordingHost();
  EXPECT_EQ(FormatReport(r, OutputFormat::kText, TimeUnit::kUs).find("\nrecorded "),
            std::string::npos);
  Json unknown;
  ASSERT_TRUE(JsonParser(FormatReport(r, OutputFormat::kJson, TimeUnit::kUs)).Parse(&unknown));
  for (const char* key : {"host", "kernel", "arch", "recorder"}) {
    EXPECT_EQ(unknown["input"]["recorded_on"][key].type, Json::kNull) << key;
  }
}

TEST(ReportFormatTest, TextShowsTableHistogramsCompletenessAndWarnings) {
  std::string text = FormatReport(SampleReport(), OutputFormat::kText, TimeUnit::kUs);
  std::vector<std::string> lines = Lines(text);
  auto find_line = [&lines](const std::string& needle) -> std::string {
    for (const std::string& l : lines) {
      if (l.find(needle) != std::string::npos) return l;
    }
    return "";
  };
  EXPECT_NE(find_line("iotrace report: run.data (perf.data, 2 CPUs), 2.500 s of trace"), "");
  std::string header = find_line("  OP ");
  ASSERT_NE(header, "");
  std::vector<std::string> cols = absl::StrSplit(header, ' ', absl::SkipEmpty());
  EXPECT_EQ(cols, (std::vector<std::string>{"OP", "PHASE", "COUNT", "MIN", "MEAN", "P50", "P90",
                                            "P99", "P99.9", "MAX"}));
  // The device heads its rows.
  const auto heading = std::find(lines.begin(), lines.end(), "loop0 (7:0)");
  ASSERT_NE(heading, lines.end()) << text;
  ASSERT_NE(heading + 1, lines.end());
  std::vector<std::string> row = absl::StrSplit(heading[1], ' ', absl::SkipEmpty());
  EXPECT_EQ(row, (std::vector<std::string>{"read", "D2C", "9", "1.0", "1.2", "1.5", "2.5", "40.0",
                                           "41.0", "41.5", "*"}));
  EXPECT_NE(std::find(lines.begin(), lines.end(), "vda (254:0)"), lines.end()) << text;
  // biolatency-style rows in us: 1.0-1.016 us -> row 0..1, 2.048-2.08 -> 2..3, 40.96 -> 32..63.
  EXPECT_NE(find_line("loop0 (7:0) read D2C (INCOMPLETE): 9 requests"), "");
  std::vector<std::string> r0 = absl::StrSplit(find_line("0 -> 1 "), ' ', absl::SkipEmpty());
  ASSERT_GE(r0.size(), 5u);
  EXPECT_EQ(r0[4], "3");
  std::string r2 = find_line("2 -> 3 ");
  EXPECT_NE(r2.find("|****************************************|"), std::string::npos) << r2;
  std::string r32 = find_line("32 -> 63 ");
  EXPECT_NE(r32.find(": 1 "), std::string::npos) << r32;
  EXPECT_NE(r32.find("|********  "), std::string::npos) << r32;  // 1/5 of 40 = 8 stars
  // Completeness: always present.
  EXPECT_NE(find_line("events:").find("block_rq_issue 11, block_rq_complete 9, other 0"),
            std::string::npos);
  EXPECT_NE(find_line("paired:").find("I2D 0, D2C 9, I2C 0, Q2D 0, Q2C 0"), std::string::npos);
  EXPECT_NE(find_line("issues without insert:").find("no_insert_on_device 9"), std::string::npos);
  EXPECT_NE(find_line("in flight at end:").find("issued 2"), std::string::npos);
  EXPECT_NE(find_line("of which stale:").find("issued 1"), std::string::npos);
  EXPECT_NE(find_line("silent_drop").find("block:block_rq_complete"), std::string::npos);
  EXPECT_NE(find_line("reader:").find("problems: short_sample 1"), std::string::npos);
  EXPECT_NE(find_line("WARNING: D2C is incomplete"), "");
  EXPECT_NE(find_line("loop0 (7:0): no I2D/I2C"), "");
  for (const std::string& l : lines) EXPECT_LE(l.size(), 80u) << l;
}

// The order people read in: the table, what qualifies it (warnings, then the notes that explain
// a missing phase), the histograms, the details of completeness.
TEST(ReportFormatTest, TextLeadsWithTheTableThenWarningsAndNotesThenHistograms) {
  const std::string text = FormatReport(SampleReport(), OutputFormat::kText, TimeUnit::kUs);
  const size_t table = text.find("\n  OP ");
  const size_t warnings = text.find("\nwarnings\n  WARNING: D2C is incomplete");
  const size_t notes = text.find("\nnotes\n  loop0 (7:0): no I2D/I2C");
  const size_t histogram = text.find("\nloop0 (7:0) read D2C (INCOMPLETE): 9 requests\n");
  const size_t completeness = text.find("\ncompleteness\n");
  ASSERT_NE(table, std::string::npos) << text;
  ASSERT_NE(warnings, std::string::npos) << text;
  ASSERT_NE(notes, std::string::npos) << text;
  ASSERT_NE(histogram, std::string::npos) << text;
  ASSERT_NE(completeness, std::string::npos) << text;
  EXPECT_LT(table, warnings);
  EXPECT_LT(warnings, notes);
  EXPECT_LT(notes, histogram);
  EXPECT_LT(histogram, completeness);
}

TEST(ReportFormatTest, HistogramViewsNoneAndFull) {
  const LatencyReport r = SampleReport();
  std::ostringstream none;
  WriteTextReport(r, TimeUnit::kUs, none, HistogramView::kNone);
  EXPECT_EQ(none.str().find("distribution"), std::string::npos) << none.str();
  EXPECT_NE(none.str().find("\ncompleteness\n"), std::string::npos);
  std::ostringstream full;
  WriteTextReport(r, TimeUnit::kUs, full, HistogramView::kFull);
  // One row per bucket of the model, from its first to its last nanosecond.
  EXPECT_NE(full.str().find("     1.000 -> 1.015      : 3          |************************"
                            "                |\n"),
            std::string::npos)
      << full.str();
  EXPECT_NE(full.str().find("     2.048 -> 2.079      : 5          |*****************************"
                            "***********|\n"),
            std::string::npos)
      << full.str();
  EXPECT_NE(full.str().find("    40.960 -> 41.471     : 1          |********"),
            std::string::npos)
      << full.str();
  EXPECT_NE(full.str().find("     0.100 -> 0.100      : 2 "), std::string::npos) << full.str();
  std::ostringstream ns;
  WriteTextReport(r, TimeUnit::kNs, ns, HistogramView::kFull);
  EXPECT_NE(ns.str().find("     40960 -> 41471      : 1 "), std::string::npos) << ns.str();
  std::ostringstream ms;
  WriteTextReport(r, TimeUnit::kMs, ms, HistogramView::kFull);
  EXPECT_NE(ms.str().find("  0.040960 -> 0.041471   : 1 "), std::string::npos) << ms.str();
  std::ostringstream log2;
  WriteTextReport(r, TimeUnit::kUs, log2, HistogramView::kLog2);
  EXPECT_EQ(log2.str(), FormatReport(r, OutputFormat::kText, TimeUnit::kUs));
}

// Columns widen for a value that needs it, and the rows stay aligned under their heads; long
// lines wrap at 80 columns under a hanging indent, at spaces, a number kept with its word.
TEST(ReportFormatTest, TextWidensColumnsAndWrapsLongLines) {
  LatencyReport r = SampleReport();
  r.groups[1].summary.max_ns = 123'456'789'012;  // 123456789.0 us
  r.groups[1].summary.count = 12'345'678;
  r.notes.push_back(std::string(100, 'x'));
  // "1.5" would end at column 80 and its unit after it: both go to the next line.
  r.notes.push_back(std::string(60, 'b') + " " + std::string(13, 'c') + " 1.5 s more");
  r.warnings.push_back({Phase::kI2D, "I2D is incomplete: 12 block_rq_insert events lost in the "
                                     "ring of CPU 3 and more"});
  const std::string text = FormatReport(r, OutputFormat::kText, TimeUnit::kUs);
  const std::vector<std::string> lines = Lines(text);
  const auto head = std::find_if(lines.begin(), lines.end(),
                                 [](const std::string& l) { return l.rfind("  OP ", 0) == 0; });
  ASSERT_NE(head, lines.end()) << text;
  const auto row = std::find_if(lines.begin(), lines.end(),
                                [](const std::string& l) { return l.rfind("  write ", 0) == 0; });
  ASSERT_NE(row, lines.end()) << text;
  EXPECT_NE(row->find(" 12345678 "), std::string::npos) << *row;
  EXPECT_EQ(row->size(), head->size()) << *head << "\n" << *row;  // MAX ends where its value does
  EXPECT_EQ(row->substr(row->size() - 11), "123456789.0") << *row;
  EXPECT_EQ(head->find(" COUNT") + 6, row->find(" 12345678") + 9) << *head << "\n" << *row;
  // The warning: cut at a space, continued under a 4-space indent, "CPU 3" kept together.
  EXPECT_NE(text.find("\n  WARNING: I2D is incomplete: 12 block_rq_insert events lost in the "
                      "ring of\n    CPU 3 and more\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  " + std::string(60, 'b') + "\n    " + std::string(13, 'c') +
                      " 1.5 s more\n"),
            std::string::npos)
      << text;
  // A word longer than a line stands alone.
  EXPECT_NE(text.find("\n  " + std::string(100, 'x') + "\n"), std::string::npos) << text;
  for (const std::string& l : lines) {
    if (l.find(std::string(100, 'x')) == std::string::npos) EXPECT_LE(l.size(), 80u) << l;
  }
}

TEST(ReportFormatTest, TextCountsTakeTheSingularForOne) {
  LatencyReport r;
  r.input = "one.dat";
  r.file_format = "trace.dat";
  r.nr_cpus = 1;
  r.groups.push_back(Group(kLoop0, "loop0", BlockOp::kRead, Phase::kD2C, {{1000, 1016, 1}}));
  r.completeness.match.flush_sequence_completions = 1;
  r.completeness.reader_records = 1;
  r.completeness.reader_events = 1;
  std::string text = FormatReport(r, OutputFormat::kText, TimeUnit::kUs);
  EXPECT_NE(text.find("iotrace report: one.dat (trace.dat, 1 CPU), 0.000 s of trace\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("loop0 (7:0) read D2C: 1 request\n"), std::string::npos) << text;
  // Wrapped at 80 columns under its value's column.
  EXPECT_NE(text.find("  completes without issue: 0 (and 1 zero-length completion by the flush\n"
                      "                           machinery)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  reader:                  1 record, 1 event; problems: none\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find(" 1 requests"), std::string::npos) << text;
}

TEST(ReportFormatTest, TextUsesTheChosenUnit) {
  std::string ms = FormatReport(SampleReport(), OutputFormat::kText, TimeUnit::kMs);
  EXPECT_NE(ms.find("latency (ms)"), std::string::npos);
  EXPECT_NE(ms.find("0.041"), std::string::npos);
  std::string ns = FormatReport(SampleReport(), OutputFormat::kText, TimeUnit::kNs);
  EXPECT_NE(ns.find("41471"), std::string::npos);
  EXPECT_EQ(FormatLatency(1500, TimeUnit::kUs), "1.5");
  EXPECT_EQ(FormatLatency(1500, TimeUnit::kNs), "1500");
  EXPECT_EQ(FormatLatency(2'500'000, TimeUnit::kMs), "2.500");
  EXPECT_EQ(FormatSeconds(0.25), "0.25");
  EXPECT_EQ(FormatSeconds(3), "3");
}

}  // namespace
}  // namespace iotrace
