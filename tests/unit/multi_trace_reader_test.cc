// Several files read as one recording (MultiTraceReader): a trace.dat cut by time into two
// (or three, overlapping) files gives the report of the whole file, byte for byte past the
// input's name, requests crossing a cut paired across files; a perf.data followed by a trace.dat
// whose event ids differ; files that lay out an event differently refused; the coverage at the
// seams between files.
#include "iotrace/formats/multi_trace_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "block_trace_dat.h"
#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/formats/perf_data_writer.h"
#include "iotrace/formats/trace_reader_open.h"
#include "iotrace/output/report_format.h"
#include "perf_data_test_builder.h"
#include "synthetic_trace.h"
#include "test_files.h"

namespace iotrace {
namespace {

using Ev = testing::RqEvent;
using testing::BlockTraceDat;
using testing::kMs;
using testing::Workload;

// The JSON report of `paths` read as one recording, the input's names left out.
std::string JsonOf(const std::vector<std::string>& paths, LatencyReport* out = nullptr) {
  ReportOptions options;
  options.input = "x";
  options.sysfs_root = options.procfs_root = "/nonexistent";
  options.threads = 1;
  auto reader = OpenTraceReaders(paths);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return "";
  auto report = BuildLatencyReport(**reader, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return "";
  if (out != nullptr) *out = *report;
  report->files.clear();
  report->input = "x";
  std::ostringstream json;
  WriteJsonReport(*report, json);
  return json.str();
}

std::vector<Ev> Where(const std::vector<Ev>& ev, bool (*keep)(const Ev&)) {
  std::vector<Ev> out;
  for (const Ev& e : ev) {
    if (keep(e)) out.push_back(e);
  }
  return out;
}

uint64_t Sum(const LatencyReport& r) {
  uint64_t n = 0;
  for (const LatencyGroup& g : r.groups) n += g.summary.count;
  return n;
}

TEST(MultiTraceReaderTest, ATraceDatCutInTwoByTimeReportsAsTheWholeFile) {
  BlockTraceDat f;
  const std::vector<Ev> ev = Workload(2000, 1);
  const std::string whole = f.Write(ev);
  const std::string early = f.Write(Where(ev, [](const Ev& e) { return e.ts < 1000 * kMs; }));
  const std::string late = f.Write(Where(ev, [](const Ev& e) { return e.ts >= 1000 * kMs; }));
  // Requests insert or issue before the cut and complete after it: paired across the files.
  int crossing = 0;
  for (const Ev& e : ev) {
    crossing += e.kind == testing::kComplete && e.ts >= 1000 * kMs && e.ts < 1003 * kMs;
  }
  ASSERT_GT(crossing, 0);
  LatencyReport one, two;
  const std::string expected = JsonOf({whole}, &one);
  ASSERT_GT(Sum(one), 1000u);
  EXPECT_EQ(JsonOf({early, late}, &two), expected);
  EXPECT_EQ(JsonOf({late, early}), expected);  // given in any order: merged by time
  EXPECT_EQ(Sum(two), Sum(one));
  EXPECT_EQ(two.files, (std::vector<std::string>{early, late}));
  EXPECT_EQ(two.input, early + ", " + late);
  EXPECT_EQ(two.completeness.match.paired, one.completeness.match.paired);
  EXPECT_EQ(two.completeness.match.completes_without_issue, 0u);
}

// Rotated files may overlap: CPU 0's data of the first file runs past CPU 1's switch.
TEST(MultiTraceReaderTest, OverlappingFilesAreMergedByTime) {
  BlockTraceDat f;
  const std::vector<Ev> ev = Workload(2000, 5);
  const std::string whole = f.Write(ev);
  auto in_first = [](const Ev& e) { return e.ts < (e.cpu == 0 ? 800 : 600) * kMs; };
  auto in_second = [](const Ev& e) {
    return !(e.ts < (e.cpu == 0 ? 800 : 600) * kMs) && e.ts < (e.cpu == 0 ? 1300 : 1500) * kMs;
  };
  auto in_third = [](const Ev& e) { return e.ts >= (e.cpu == 0 ? 1300 : 1500) * kMs; };
  const std::string a = f.Write(Where(ev, in_first));
  const std::string b = f.Write(Where(ev, in_second));
  const std::string c = f.Write(Where(ev, in_third));
  EXPECT_EQ(JsonOf({b, c, a}), JsonOf({whole}));
}

// perf.data, then a trace.dat: the perf.data's event ids (shifted by 1000 here) are mapped onto
// the trace.dat's; the report equals that of the whole run as one trace.dat.
TEST(MultiTraceReaderTest, APerfDataAndATraceDatReadAsOneRecording) {
  BlockTraceDat f;
  const std::vector<Ev> ev = Workload(2000, 7, 0, false, /*requeues=*/false);
  const std::string whole = f.Write(ev);
  const std::string late = f.Write(Where(ev, [](const Ev& e) { return e.ts >= 1000 * kMs; }));

  test::BlockSetup setup = test::LoadBlockSetup();  // issue, complete, insert
  ASSERT_EQ(setup.formats.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const std::string id = "ID: " + std::to_string(setup.formats[i].id) + "\n";
    std::string& text = setup.meta.event_formats[i].text;
    text.replace(text.find(id), id.size(), "ID: " + std::to_string(setup.formats[i].id + 1000) +
                                               "\n");
    auto parsed = ParseEventFormat("block", text);
    ASSERT_TRUE(parsed.ok());
    setup.formats[i] = *parsed;
  }
  auto specs = test::BlockSpecs(setup, 2, 3);
  const std::string early = test::TmpPath("iotrace_multi", ".data");
  auto w = PerfDataWriter::Create(early, specs, setup.meta, test::TestHost());
  ASSERT_TRUE(w.ok()) << w.status();
  const int index_of[] = {2, 0, 1};  // insert, issue, complete (RqEvent::kind)
  // Written as perf record drains: each CPU's samples of 10 ms, then a round mark.
  std::vector<Ev> sorted = Where(ev, [](const Ev& e) { return e.ts < 1000 * kMs; });
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
  test::PerfRecordBuilder cpus[2];
  uint64_t round_end = 10 * kMs;
  auto drain = [&] {
    for (test::PerfRecordBuilder& c : cpus) {
      ASSERT_TRUE((*w)->AppendData(c.view()).ok());
      c = test::PerfRecordBuilder();
    }
    ASSERT_TRUE((*w)->AppendFinishedRound().ok());
  };
  for (const Ev& e : sorted) {
    while (e.ts >= round_end) {
      drain();
      round_end += 10 * kMs;
    }
    const int k = index_of[e.kind];
    test::SampleFields s;
    s.id = test::SyntheticId(k, e.cpu, 2);
    s.pid = s.tid = e.pid;
    s.time = e.ts;
    s.cpu = e.cpu;
    test::BlockRq rq;
    rq.common_pid = e.pid;
    rq.dev = e.dev;
    rq.sector = e.sector;
    rq.nr_sector = e.nr;
    rq.bytes = e.nr * 512;
    rq.rwbs = e.rwbs;
    s.raw = test::EncodeBlockRq(setup.formats[k], rq);
    cpus[e.cpu].AddSample(specs[0].attr, s);
  }
  drain();
  ASSERT_TRUE((*w)->Finish().ok());

  LatencyReport mixed, one;
  const std::string expected = JsonOf({whole}, &one);
  std::string got = JsonOf({early, late}, &mixed);
  EXPECT_EQ(mixed.file_format, "perf.data+trace.dat");
  EXPECT_EQ(Sum(mixed), Sum(one));
  // The input line names the formats, and the perf.data's records include its round marks (one
  // per 10 ms: 100); the rest is the whole file's report.
  auto body = [](std::string json) {
    const size_t reader = json.find("\"reader\": {\"records\": ");
    const size_t records_end = json.find(',', reader);
    EXPECT_NE(reader, std::string::npos);
    json.erase(reader, records_end - reader);
    return json.substr(json.find("\"options\""));
  };
  EXPECT_NE(got.find("\"reader\": {\"records\": 60583, \"events\": 60483,"), std::string::npos);
  EXPECT_EQ(body(got), body(expected));
  unlink(early.c_str());
}

// A file cut short (a disk that filled) followed by the next one: its problem carries over, and
// its CPU whose data ends early has a gap up to the next file's first record of that CPU, not to
// the end: the next file's requests are all reported.
TEST(MultiTraceReaderTest, AFileCutShortLeavesAGapUpToTheNextFileOnly) {
  BlockTraceDat f;
  const std::vector<Ev> ev = Workload(2000, 1);
  const std::string early = f.Write(Where(ev, [](const Ev& e) { return e.ts < 1000 * kMs; }));
  const std::string late = f.Write(Where(ev, [](const Ev& e) { return e.ts >= 1000 * kMs; }));
  std::string bytes;
  {
    std::ifstream in(early, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string cut = early + ".cut";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() * 6 / 10);
  uint64_t late_cpu1_first = ~uint64_t{0};
  for (const Ev& e : ev) {
    if (e.cpu == 1 && e.ts >= 1000 * kMs) late_cpu1_first = std::min(late_cpu1_first, e.ts);
  }
  LatencyReport both, late_alone;
  const std::string json = JsonOf({cut, late}, &both);
  JsonOf({late}, &late_alone);
  EXPECT_NE(json.find("\"file_cut_short\": 1"), std::string::npos);
  // trace.dat holds CPU 1's stream after CPU 0's: the cut falls in CPU 1's.
  ASSERT_EQ(both.coverage.gaps.size(), 1u);
  EXPECT_EQ(both.coverage.gaps[0].cpu, 1);
  EXPECT_EQ(both.coverage.gaps[0].cause, GapCause::kCut);
  EXPECT_LT(both.coverage.gaps[0].after_ts, 1000 * kMs);
  EXPECT_EQ(both.coverage.gaps[0].before_ts, late_cpu1_first);
  EXPECT_GT(Sum(both), Sum(late_alone));
}

TEST(MultiTraceReaderTest, FilesThatLayOutAnEventDifferentlyAreRefusedInOneLine) {
  using synthetic::FakeTraceReader;
  std::vector<std::unique_ptr<TraceReader>> readers;
  readers.push_back(std::make_unique<FakeTraceReader>(
      synthetic::LoadFormats("6.18", {"block_rq_issue"}), std::vector<FakeTraceReader::Item>{},
      ReadStats{}));
  readers.push_back(std::make_unique<FakeTraceReader>(
      synthetic::LoadFormats("6.10", {"block_rq_issue"}), std::vector<FakeTraceReader::Item>{},
      ReadStats{}));
  auto m = MultiTraceReader::Create({"new.dat", "old.dat"}, std::move(readers));
  ASSERT_FALSE(m.ok());
  const std::string message(m.status().message());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.rfind("new.dat and old.dat cannot be read as one recording: they lay out "
                          "block:block_rq_issue differently (",
                          0),
            0u)
      << message;
}

TEST(MultiTraceReaderTest, AMissingFileIsAnErrorNamingIt) {
  BlockTraceDat f;
  const std::string a = f.Write(Workload(200, 1));
  auto r = OpenTraceReaders({a, "/nonexistent/b.dat"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/b.dat"), std::string::npos)
      << r.status();
}

// Gaps at the seams: a file whose data ends early on a CPU has that gap end at the next file's
// first record of the CPU; the time between two files is no gap of its own.
TEST(CombineCoverageTest, AnOpenEndIsBoundedByTheNextFileAndSeamsAreNoGaps) {
  Coverage first, second, third;
  first.AddSpan({0, 100, 900, 10});
  first.AddSpan({1, 150, 950, 10});
  first.gaps.push_back({0, 900, DataGap::kOpenEnd, GapCause::kUnfinished, 0});
  second.AddSpan({0, 1000, 1900, 10});
  second.AddSpan({1, 1100, 1950, 10});
  second.gaps.push_back({1, 0, 1100, GapCause::kRingLost, 3});  // missing before its first
  third.AddSpan({0, 2000, 2900, 10});
  Coverage c = CombineCoverage({first, second, third});
  ASSERT_EQ(c.gaps.size(), 2u);
  EXPECT_EQ(c.gaps[0].cpu, 0);
  EXPECT_EQ(c.gaps[0].after_ts, 900u);
  EXPECT_EQ(c.gaps[0].before_ts, 1000u);
  EXPECT_EQ(c.gaps[0].cause, GapCause::kUnfinished);
  EXPECT_EQ(c.gaps[1].cpu, 1);
  EXPECT_EQ(c.gaps[1].after_ts, 950u);
  EXPECT_EQ(c.gaps[1].before_ts, 1100u);
  ASSERT_EQ(c.cpus.size(), 2u);
  EXPECT_EQ(c.cpus[0].first_ts, 100u);
  EXPECT_EQ(c.cpus[0].last_ts, 2900u);
  EXPECT_EQ(c.cpus[0].records, 30u);
  // Without a gap in any file, the seams (900..1000, 1900..2000 on CPU 0) are not gaps.
  first.gaps.clear();
  second.gaps.clear();
  EXPECT_TRUE(CombineCoverage({first, second, third}).complete());
}

}  // namespace
}  // namespace iotrace
