// Reading one file as two time ranges on two threads (ReportOptions::split_min_bytes) gives the
// report of one pass, byte for byte, whichever way the split ends: added up ("two ranges"), the
// first range reading on when the later matcher did not start in the earlier one's state
// (requests older than its priming), or one pass when the ranges cannot stand for it (losses
// placed in the data, damaged pages). Files are synthetic trace.dat with requests that cross
// the cut in every state, requeues, partial completions, flushes and lost completions.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "allocation_counter.h"
#include "block_trace_dat.h"
#include "ftrace_page_builder.h"
#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/cli/report_runner.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/perf_data_writer.h"
#include "iotrace/formats/trace_dat_reader.h"
#include "iotrace/formats/trace_dat_writer.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "iotrace/output/report_format.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

namespace iotrace {
namespace {

using testing::BlockTraceDat;
using Ev = testing::RqEvent;
using testing::kComplete;
using testing::kDev;
using testing::kDev2;
using testing::kInsert;
using testing::kIssue;
using testing::kMs;
using testing::kRequeue;
using testing::Workload;

struct Built {
  std::string json;
  std::string plan;
};

Built Report(const std::string& path, ReportOptions options, bool split) {
  options.input = path;
  options.sysfs_root = options.procfs_root = "/nonexistent";
  options.threads = split ? 0 : 1;
  options.split_min_bytes = 1;
  options.split_on_one_cpu = true;
  auto reader = OpenTraceReader(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  auto report = BuildLatencyReport(**reader, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return {};
  std::ostringstream out;
  WriteJsonReport(*report, out);
  return {out.str(), report->read_plan};
}

// The split report, checked against one pass; returns how the file was read.
std::string ExpectSameAsOnePass(const std::string& path, const ReportOptions& options = {}) {
  const Built one = Report(path, options, false);
  const Built split = Report(path, options, true);
  EXPECT_EQ(one.plan, "one pass");
  EXPECT_GT(one.json.size(), 1000u);
  EXPECT_EQ(split.json, one.json) << split.plan;
  return split.plan;
}

TEST(SplitReportTest, RequestsAcrossTheCutAreAddedUpAsInOnePass) {
  BlockTraceDat f;
  const std::string path = f.Write(Workload(2000, 1));
  EXPECT_EQ(ExpectSameAsOnePass(path), "two ranges");
  ReportOptions filtered;  // samples one per stage (no combined samples), some filtered out
  filtered.ops = {BlockOp::kRead};
  filtered.max_inflight = 64;
  EXPECT_EQ(ExpectSameAsOnePass(path, filtered), "two ranges");
}

TEST(SplitReportTest, ARequestOlderThanThePrimingMakesTheFirstRangeReadOn) {
  BlockTraceDat f;
  std::vector<Ev> ev = Workload(2000, 2);
  // Inserted at 10 ms and issued at 1.99 s (the cut is near 1 s, priming 31 ms): the later
  // matcher never saw the insert.
  ev.push_back({10 * kMs, 0, kInsert, kDev, 999'999, 8, "W"});
  ev.push_back({1990 * kMs, 0, kIssue, kDev, 999'999, 8, "W"});
  ev.push_back({1992 * kMs, 1, kComplete, kDev, 999'999, 8, "W"});
  EXPECT_EQ(ExpectSameAsOnePass(f.Write(ev)), "two ranges, the first read on");
}

TEST(SplitReportTest, RequestsLeftBehindMakeTheFirstRangeReadOn) {
  BlockTraceDat f;
  // Requests that met another at their sector while in flight, some left behind for good.
  EXPECT_EQ(ExpectSameAsOnePass(f.Write(Workload(2000, 8, 0, /*overlap=*/true))),
            "two ranges, the first read on");
  const std::string path = f.Write(Workload(2000, 3, /*lost=*/5));
  EXPECT_EQ(ExpectSameAsOnePass(path), "two ranges, the first read on");
  // The same with a long expiry and with one short enough that the stale requests expire.
  ReportOptions quick;
  quick.expiry_s = 0.2;
  ExpectSameAsOnePass(path, quick);
}

// Requests whose completion was lost before the priming began, at sectors no later event
// touches: the later matcher takes them in, as if it had tracked them all along (in flight at
// the end, stale; or, with a short expiry, expired during the later range).
TEST(SplitReportTest, OlderRequestsNoLaterEventTouchesAreCarriedOver) {
  BlockTraceDat f;
  std::vector<Ev> ev = Workload(2000, 9);
  for (uint64_t i = 0; i < 3; ++i) {
    const uint64_t sector = 5'000'000 + 64 * i;
    ev.push_back({(100 + 10 * i) * kMs, 0, kInsert, kDev, sector, 8, "R"});
    ev.push_back({(101 + 10 * i) * kMs, 0, kIssue, kDev, sector, 8, "R"});
  }
  const std::string path = f.Write(ev);
  EXPECT_EQ(ExpectSameAsOnePass(path), "two ranges, 3 older requests carried over");
  ReportOptions quick;  // idle since ~0.1 s: they expire at 1.3 s, after the cut (~1.03 s)
  quick.expiry_s = 1.2;
  EXPECT_EQ(ExpectSameAsOnePass(path, quick), "two ranges, 3 older requests carried over");
  EXPECT_NE(Report(path, quick, true).json.find("\"expired\": {\"queued\": 0, \"inserted\": 0, \"issued\": 3"),
            std::string::npos);
  ReportOptions apart;  // samples at each stage: the issue phases were sent already
  apart.ops = {BlockOp::kRead, BlockOp::kWrite};
  EXPECT_EQ(ExpectSameAsOnePass(path, apart), "two ranges, 3 older requests carried over");
}

// At most 255 older requests are carried over (Resolve: fewer than the 256 that may be kept
// apart); with more, the earlier range reads on, and the comparison stops copying them.
TEST(SplitReportTest, OlderRequestsPastWhatCanBeKeptApartMakeTheFirstRangeReadOn) {
  BlockTraceDat f;
  auto with_older = [](int n) {
    std::vector<Ev> ev = Workload(2000, 9);
    for (int i = 0; i < n; ++i) {
      const uint64_t sector = 5'000'000 + 64 * static_cast<uint64_t>(i);
      const uint64_t at = 100 * kMs + static_cast<uint64_t>(i) * 100'000;
      ev.push_back({at, 0, kInsert, kDev, sector, 8, "R"});
      ev.push_back({at + 50'000, 0, kIssue, kDev, sector, 8, "R"});
    }
    return ev;
  };
  EXPECT_EQ(ExpectSameAsOnePass(f.Write(with_older(255))),
            "two ranges, 255 older requests carried over");
  EXPECT_EQ(ExpectSameAsOnePass(f.Write(with_older(256))), "two ranges, the first read on");
  EXPECT_EQ(ExpectSameAsOnePass(f.Write(with_older(3000))), "two ranges, the first read on");
}

// An older request whose sector comes back after the cut meets the new request there in one
// pass: an issued one is kept apart (and stays so while completions fit the new request), an
// inserted one is given up. The later matcher logs the keys it looks up and does not find, and
// accounts for both as one pass would.
TEST(SplitReportTest, OlderRequestsMetByAnInsertAreKeptApartOrGivenUpAsInOnePass) {
  BlockTraceDat f;
  std::vector<Ev> ev = Workload(2000, 10);
  const uint64_t issued = 6'000'000, inserted = 6'100'000;
  ev.push_back({100 * kMs, 0, kInsert, kDev, issued, 8, "R"});
  ev.push_back({101 * kMs, 0, kIssue, kDev, issued, 8, "R"});   // its completion is lost
  ev.push_back({102 * kMs, 0, kInsert, kDev, inserted, 8, "W"});  // never issued
  for (uint64_t sector : {issued, inserted}) {
    ev.push_back({1800 * kMs, 1, kInsert, kDev, sector, 8, "R"});
    ev.push_back({1801 * kMs, 1, kIssue, kDev, sector, 8, "R"});
    ev.push_back({1802 * kMs, 0, kComplete, kDev, sector, 8, "R"});
  }
  const std::string path = f.Write(ev);
  EXPECT_EQ(ExpectSameAsOnePass(path), "two ranges, 2 older requests carried over");
  const std::string json = Report(path, {}, true).json;
  EXPECT_NE(json.find("\"overlapping\": 1,"), std::string::npos);
  EXPECT_NE(json.find("\"collisions\": 1,"), std::string::npos);
}

// Met first by anything else (here a completion of a request never seen issued): the earlier
// range reads on.
TEST(SplitReportTest, OlderRequestsMetOtherwiseMakeTheFirstRangeReadOn) {
  BlockTraceDat f;
  std::vector<Ev> ev = Workload(2000, 10);
  const uint64_t sector = 6'000'000;
  ev.push_back({100 * kMs, 0, kInsert, kDev, sector, 8, "R"});
  ev.push_back({101 * kMs, 0, kIssue, kDev, sector, 8, "R"});
  ev.push_back({1802 * kMs, 0, kComplete, kDev, sector, 8, "R"});
  EXPECT_EQ(ExpectSameAsOnePass(f.Write(ev)), "two ranges, the first read on");
}

// A request kept apart before the priming (its completion lost, another request came to its
// sector): carried over while completions at that sector fit the request in the table there;
// one that does not would have looked among those kept apart, so the earlier range reads on.
TEST(SplitReportTest, RequestsKeptApartAreCarriedOverUnlessACompletionLooksForThem) {
  BlockTraceDat f;
  std::vector<Ev> ev = Workload(2000, 11);
  const uint64_t sector = 7'000'000;
  ev.push_back({100 * kMs, 0, kInsert, kDev, sector, 8, "R"});
  ev.push_back({101 * kMs, 0, kIssue, kDev, sector, 8, "R"});  // its completion is lost
  ev.push_back({200 * kMs, 0, kInsert, kDev, sector, 8, "R"});
  ev.push_back({201 * kMs, 0, kIssue, kDev, sector, 8, "R"});  // keeps the first apart
  ev.push_back({202 * kMs, 1, kComplete, kDev, sector, 8, "R"});
  std::vector<Ev> fits = ev;
  fits.push_back({1800 * kMs, 1, kInsert, kDev, sector, 16, "R"});
  fits.push_back({1801 * kMs, 1, kIssue, kDev, sector, 16, "R"});
  fits.push_back({1802 * kMs, 0, kComplete, kDev, sector, 16, "R"});
  EXPECT_EQ(ExpectSameAsOnePass(f.Write(fits)), "two ranges, 1 older requests carried over");
  std::vector<Ev> looks = ev;
  looks.push_back({1802 * kMs, 0, kComplete, kDev, sector, 8, "R"});  // fits the one apart
  EXPECT_EQ(ExpectSameAsOnePass(f.Write(looks)), "two ranges, the first read on");
}

// Deep queues: `per_ms` requests inserted and issued each millisecond over `span_ms`, each
// completed `lifetime_ms` later, on two CPUs.
std::vector<Ev> DeepQueue(uint64_t span_ms, uint64_t per_ms, uint64_t lifetime_ms) {
  std::vector<Ev> ev;
  uint64_t n = 0;
  for (uint64_t t = kMs; t + lifetime_ms * kMs + kMs < span_ms * kMs; t += kMs / per_ms, ++n) {
    const int cpu = static_cast<int>(n % 2);
    const uint64_t sector = n * 8;
    ev.push_back({t, cpu, kInsert, kDev, sector, 8, "R"});
    ev.push_back({t + 1000, cpu, kIssue, kDev, sector, 8, "R"});
    ev.push_back({t + lifetime_ms * kMs, 1 - cpu, kComplete, kDev, sector, 8, "R"});
  }
  return ev;
}

// Requests in flight for longer than the later range's priming (it starts half of the plan's 31
// ms priming, ~15.6 ms, before the cut of a 2 s file): its matcher meets their completions
// without having seen them issued, at the end of its priming as after the cut. It stops there, the
// earlier range with it, and the file is read in one pass (no second range's work wasted beside the
// first reading on). Requests that live a few milliseconds split as ever.
TEST(SplitReportTest, RequestsOutlivingThePrimingMeanOnePass) {
  BlockTraceDat f;
  const std::string plan = ExpectSameAsOnePass(f.Write(DeepQueue(2000, 10, 300)));
  EXPECT_EQ(plan.rfind("one pass: requests outlive the priming (", 0), 0u) << plan;
  EXPECT_EQ(ExpectSameAsOnePass(f.Write(DeepQueue(2000, 10, 2))), "two ranges");
  // A few such requests at the end of the priming (~4, fewer than kMinUnseen) are not taken
  // for a deep queue: the later range reads on, and the earlier one reads on after it.
  EXPECT_EQ(ExpectSameAsOnePass(f.Write(DeepQueue(2000, 1, 300))), "two ranges, the first read on");
}

// A sink that asks a time range's read to stop gets no further record (the later range that
// finds its priming too short, and the earlier one it stops with it).
struct StoppingSink : EventSink {
  void OnEvent(const RawEvent&) override {
    if (++seen == stop_at) RequestStop();
  }
  uint64_t seen = 0;
  uint64_t stop_at = 100;
};
void ExpectReadRangeStops(const std::string& path) {
  auto reader = OpenTraceReader(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  StoppingSink sink;
  RangeReadResult result;
  ASSERT_TRUE((*reader)->ReadRange(&sink, TimeRange{}, &result).ok());
  EXPECT_EQ(sink.seen, sink.stop_at);
  StoppingSink never;  // (the file holds far more)
  never.stop_at = 0;
  ASSERT_TRUE((*reader)->ReadRange(&never, TimeRange{}, &result).ok());
  EXPECT_GT(never.seen, 10 * sink.stop_at);
}

TEST(SplitReportTest, AReadOfATimeRangeStopsWhenItsSinkAsks) {
  BlockTraceDat f;
  ExpectReadRangeStops(f.Write(Workload(2000, 1)));
}

TEST(SplitReportTest, LossesPlacedInTheDataMeanOnePass) {
  BlockTraceDat f;
  const std::string path = f.Write(Workload(2000, 4), /*missed_page=*/3);
  EXPECT_EQ(ExpectSameAsOnePass(path), "one pass: losses placed in the data");
}

TEST(SplitReportTest, DamagedPagesMeanOnePass) {
  BlockTraceDat f;
  const std::string path = f.Write(Workload(2000, 5), -1, /*backwards_page=*/100);
  EXPECT_NE(Report(path, {}, false).json.find("ftrace_time_backwards"), std::string::npos);
  EXPECT_EQ(ExpectSameAsOnePass(path), "one pass: problems in the data");
}

// Found by trace_file_fuzzer: a damaged trace.dat whose two ranges did not add up to its
// one-pass report.
TEST(SplitReportTest, ADamagedTraceDatTheFuzzerFoundReadsAsInOnePass) {
  ReportOptions options;
  options.max_inflight = 4096;  // as the fuzzer's pipeline
  const std::string path = std::string(IOTRACE_FIXTURES) + "/tracedat/fuzz_split_damaged.dat";
  const Built one = Report(path, options, false);
  const Built split = Report(path, options, true);
  EXPECT_EQ(split.plan.rfind("two ranges", 0), 0u) << split.plan;  // Absorb ran
  EXPECT_EQ(split.json, one.json) << split.plan;
}

TEST(SplitReportTest, OnlyAutoOnALargeEnoughUnwindowedReportSplits) {
  BlockTraceDat f;
  const std::string path = f.Write(Workload(2000, 6));
  ReportOptions o;
  o.input = path;
  o.sysfs_root = o.procfs_root = "/nonexistent";
  o.split_on_one_cpu = true;
  auto plan = [&](ReportOptions options) {
    auto reader = OpenTraceReader(path);
    EXPECT_TRUE(reader.ok());
    auto report = BuildLatencyReport(**reader, options);
    EXPECT_TRUE(report.ok());
    return report.ok() ? report->read_plan : "";
  };
  o.split_min_bytes = 1;
  EXPECT_EQ(plan(o), "two ranges");
  for (int threads : {1, 2, 3}) {
    ReportOptions t = o;
    t.threads = threads;
    EXPECT_EQ(plan(t), "one pass");
  }
  ReportOptions windowed = o;
  windowed.interval_s = 0.1;
  EXPECT_EQ(plan(windowed), "one pass");
  ReportOptions big = o;
  big.split_min_bytes = uint64_t{1} << 40;
  EXPECT_EQ(plan(big), "one pass: a small file");
}

// Reading two ranges allocates per file, not per event: a file three times as long costs the
// same number of allocations (a few more for the vectors of rare things, within the margin).
TEST(SplitReportTest, TwoRangesAllocateNothingPerEvent) {
  IOTRACE_REQUIRE_ALLOCATION_COUNTER();
  BlockTraceDat f;
  auto allocations = [&](uint64_t span_ms) {
    const std::string path = f.Write(Workload(span_ms, 13));
    ReportOptions o;
    o.input = path;
    o.sysfs_root = o.procfs_root = "/nonexistent";
    o.split_min_bytes = 1;
    o.split_on_one_cpu = true;
    auto reader = OpenTraceReader(path);
    EXPECT_TRUE(reader.ok());
    test::ScopedAllocationCount counter;
    auto report = BuildLatencyReport(**reader, o);
    const uint64_t n = counter.count();
    EXPECT_TRUE(report.ok());
    EXPECT_EQ(report->read_plan, "two ranges");
    EXPECT_GT(report->completeness.reader_events, span_ms * 20);
    return n;
  };
  const uint64_t short_file = allocations(2000);
  const uint64_t long_file = allocations(6000);
  EXPECT_LE(long_file, short_file + 16) << short_file;
}

// Keeps (time, CPU) of the events from `from` on, and counts those before.
struct RangeSink : EventSink {
  void OnEvent(const RawEvent& e) override {
    if (e.ts >= from) seen.push_back({e.ts, e.cpu}); else ++before;
  }
  void OnLoss(const LossRecord& loss) override { lost += loss.count; }
  uint64_t from = 0;
  uint64_t before = 0;
  uint64_t lost = 0;
  std::vector<std::pair<uint64_t, uint32_t>> seen;
};

// Opens `path`, reads it all into `all`, and takes its time span (which it must have).
void OpenReadAllAndSpan(const std::string& path, std::unique_ptr<TraceReader>* reader,
                        RangeSink* all, std::optional<TraceTimeSpan>* span) {
  auto opened = OpenTraceReader(path);
  ASSERT_TRUE(opened.ok()) << opened.status();
  *reader = *std::move(opened);
  ASSERT_TRUE((*reader)->ReadAll(all).ok());
  *span = (*reader)->TimeSpan();
  ASSERT_TRUE(span->has_value());
}

// IOTRACE_REPORT_PLAN=1 says on the error stream how the file was read, and nothing else
// changes.
TEST(SplitReportTest, ThePlanIsPrintedWhenAskedFor) {
  BlockTraceDat f;
  const std::string path = f.Write(Workload(2000, 12));
  ReportOptions o;
  o.input = path;
  o.format = OutputFormat::kJson;
  o.sysfs_root = o.procfs_root = "/nonexistent";
  o.split_min_bytes = 1;
  o.split_on_one_cpu = true;
  auto run = [&](bool ask) {
    if (ask) setenv("IOTRACE_REPORT_PLAN", "1", 1); else unsetenv("IOTRACE_REPORT_PLAN");
    auto reader = OpenTraceReader(path);
    EXPECT_TRUE(reader.ok());
    std::ostringstream out, err;
    EXPECT_TRUE(RunReportOn(**reader, o, out, err).ok());
    return std::make_pair(out.str(), err.str());
  };
  const auto [plain_out, plain_err] = run(false);
  const auto [asked_out, asked_err] = run(true);
  unsetenv("IOTRACE_REPORT_PLAN");
  EXPECT_EQ(asked_out, plain_out);
  EXPECT_EQ(asked_err, plain_err + "iotrace: read plan: two ranges\n");
}

// Two ranges read apart deliver every record once: the first up to the cut, the second counted
// from it, meeting where each stream stops; and together, what ReadAll delivers.
TEST(SplitReportTest, RangesMeetAtTheCutAndTogetherAreReadAll) {
  BlockTraceDat f;
  const std::string path = f.Write(Workload(2000, 7));
  std::unique_ptr<TraceReader> reader;
  RangeSink all;
  std::optional<TraceTimeSpan> span;
  ASSERT_NO_FATAL_FAILURE(OpenReadAllAndSpan(path, &reader, &all, &span));
  EXPECT_LT(span->first_ts, span->middle_ts);
  EXPECT_LT(span->middle_ts, span->last_ts);
  const uint64_t cut = span->middle_ts + 12345;
  RangeSink early, late;
  late.from = cut;
  RangeReadResult ra, rb;
  TimeRange a;
  a.end_ts = cut;
  TimeRange b;
  b.start_ts = cut - 40 * kMs;
  b.count_from_ts = cut;
  ASSERT_TRUE(reader->ReadRange(&early, a, &ra).ok());
  ASSERT_TRUE(reader->ReadRange(&late, b, &rb).ok());
  EXPECT_EQ(ra.stopped_at, rb.first_counted);
  EXPECT_EQ(ra.stopped_at.size(), 2u);
  EXPECT_NE(ra.stopped_at[0], RangeReadResult::kNoPosition);
  EXPECT_EQ(ra.out_of_order + rb.out_of_order + ra.problems + rb.problems, 0u);
  EXPECT_GT(ra.stats.events, 1000u);
  EXPECT_GT(rb.stats.events, 1000u);
  EXPECT_EQ(ra.stats.events + rb.stats.events, all.seen.size());
  EXPECT_EQ(ra.stats.records + rb.stats.records, reader->stats().records);
  std::vector<std::pair<uint64_t, uint32_t>> joined = early.seen;
  joined.insert(joined.end(), late.seen.begin(), late.seen.end());
  EXPECT_EQ(joined, all.seen);
  // The later range started before the cut (priming) and delivered those records too.
  EXPECT_GT(late.before, 100u);
  EXPECT_EQ(early.before, 0u);
}

// The same events as a `perf record -a` file: each CPU's ring drained in turn every `drain_ns`,
// a round mark after each full drain (so a drain holds samples older than the other CPU's drain
// before it), and every `repeat_every`-th drain of a CPU starting with the last sample of its
// drain before written again, as perf record 6.1 does here (0: never). The fixtures' perf
// setup has no requeue format: workloads for it have no requeues (PerfWorkload).
std::string WritePerfData(const std::string& path, std::vector<Ev> events, uint64_t drain_ns = kMs,
                          uint32_t repeat_every = 0, std::vector<uint64_t> drain_times = {},
                          bool final_mark = true, uint64_t lost_at = ~uint64_t{0}) {
  std::stable_sort(events.begin(), events.end(),
                   [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
  test::BlockSetup setup = test::LoadBlockSetup();
  EXPECT_EQ(setup.formats.size(), 3u);
  const std::vector<PerfEventSpec> specs = test::BlockSpecs(setup, 2, 3);
  auto writer = PerfDataWriter::Create(path, specs, setup.meta, test::TestHost());
  EXPECT_TRUE(writer.ok()) << writer.status();
  const int format_of[] = {2, 0, 1};  // kInsert, kIssue, kComplete -> setup.formats index
  std::string ring[2];
  std::string last[2];
  uint64_t drains[2] = {0, 0};
  auto drain = [&](int cpu) {
    if (ring[cpu].empty()) return;
    std::string bytes = ring[cpu];
    if (repeat_every != 0 && ++drains[cpu] % repeat_every == 0) bytes = last[cpu] + bytes;
    EXPECT_TRUE((*writer)->AppendData(ByteView(bytes.data(), bytes.size())).ok());
    ring[cpu].clear();
  };
  // The drains at `drain_times` when given (ascending), else every drain_ns.
  size_t next_time = 0;
  uint64_t next_drain = drain_times.empty() ? drain_ns : drain_times[0];
  test::PerfRecordBuilder b;
  for (const Ev& e : events) {
    EXPECT_NE(e.kind, kRequeue);
    if (e.ts >= lost_at) {
      // A LOST record in the CPU's ring, timed as the sample after it (sample_id_all).
      perf::SampleId sid;
      sid.pid = sid.tid = e.pid;
      sid.time = e.ts;
      sid.cpu = e.cpu;
      sid.id = test::SyntheticId(0, e.cpu, 2);
      b.Clear();
      b.AddLost(specs[0].attr, sid.id, 5, sid);
      ring[e.cpu] += b.bytes();
      lost_at = ~uint64_t{0};
    }
    while (e.ts >= next_drain) {
      drain(0);
      drain(1);
      EXPECT_TRUE((*writer)->AppendFinishedRound().ok());
      if (drain_times.empty()) {
        next_drain += drain_ns;
      } else {
        next_drain = ++next_time < drain_times.size() ? drain_times[next_time] : ~uint64_t{0};
      }
    }
    const int f = format_of[e.kind];
    test::BlockRq rq;
    rq.common_pid = e.pid;
    rq.dev = e.dev;
    rq.sector = e.sector;
    rq.nr_sector = e.nr;
    rq.bytes = e.nr * 512;
    rq.rwbs = e.rwbs;
    test::SampleFields s;
    s.id = test::SyntheticId(f, e.cpu, 2);
    s.pid = s.tid = e.pid;
    s.time = e.ts;
    s.cpu = e.cpu;
    s.raw = test::EncodeBlockRq(setup.formats[f], rq);
    b.Clear();
    b.AddSample(specs[0].attr, s);
    ring[e.cpu] += b.bytes();
    last[e.cpu] = b.bytes();
  }
  drain(0);
  drain(1);
  if (final_mark) EXPECT_TRUE((*writer)->AppendFinishedRound().ok());
  EXPECT_TRUE((*writer)->Finish().ok());
  return path;
}

std::vector<Ev> PerfWorkload(uint32_t seed) {
  return Workload(2000, seed, 0, false, /*requeues=*/false);
}

class SplitPerfDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::MakeTempDir("iotrace_split_perf_test.");
    if (dir_.empty()) ADD_FAILURE() << "mkdtemp in " << test::TestTmpDir();
  }
  void TearDown() override { test::RemoveTree(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(SplitPerfDataTest, RequestsAcrossTheCutAreAddedUpAsInOnePass) {
  const std::string path = WritePerfData(Path("a.data"), PerfWorkload(21), kMs, 7);
  EXPECT_EQ(ExpectSameAsOnePass(path), "two ranges");
  // The copies perf writes are counted once, whichever range they fall in.
  EXPECT_NE(Report(path, {}, true).json.find("\"duplicate_record\": "), std::string::npos);
  ReportOptions reads;
  reads.ops = {BlockOp::kRead};
  EXPECT_EQ(ExpectSameAsOnePass(path, reads), "two ranges");
}

TEST_F(SplitPerfDataTest, OlderRequestsAreCarriedOverOrReadOnAsWithTraceDat) {
  std::vector<Ev> ev = PerfWorkload(22);
  for (uint64_t i = 0; i < 2; ++i) {  // completions lost, sectors never seen again
    ev.push_back({(100 + i) * kMs, 0, kInsert, kDev, 5'000'000 + 64 * i, 8, "R"});
    ev.push_back({(101 + i) * kMs, 0, kIssue, kDev, 5'000'000 + 64 * i, 8, "R"});
  }
  EXPECT_EQ(ExpectSameAsOnePass(WritePerfData(Path("b.data"), ev)),
            "two ranges, 2 older requests carried over");
  ev.push_back({1900 * kMs, 1, kComplete, kDev, 5'000'000, 8, "R"});  // completed after all
  EXPECT_EQ(ExpectSameAsOnePass(WritePerfData(Path("c.data"), ev)),
            "two ranges, the first read on");
}

TEST_F(SplitPerfDataTest, AReadOfATimeRangeStopsWhenItsSinkAsks) {
  ExpectReadRangeStops(WritePerfData(Path("stop.data"), PerfWorkload(23)));
}

TEST_F(SplitPerfDataTest, RequestsOutlivingThePrimingMeanOnePassAsWithTraceDat) {
  const std::string plan =
      ExpectSameAsOnePass(WritePerfData(Path("deep.data"), DeepQueue(2000, 10, 300)));
  EXPECT_EQ(plan.rfind("one pass: requests outlive the priming (", 0), 0u) << plan;
  EXPECT_EQ(ExpectSameAsOnePass(WritePerfData(Path("shallow.data"), DeepQueue(2000, 10, 2))),
            "two ranges");
  // Fewer than kMinUnseen such completions at the end of the priming: the later range reads on.
  EXPECT_EQ(ExpectSameAsOnePass(WritePerfData(Path("few.data"), DeepQueue(2000, 2, 300))),
            "two ranges, the first read on");
}

// Two ranges of a perf.data as the split plan makes them from `span`, cut 30 ms after its
// middle, read and checked for fit.
struct TwoRanges {
  uint64_t cut = 0;
  TimeRange a, b;
  RangeSink early, late;
  RangeReadResult ra, rb;
  std::string unfit;
  // The events of both, in order.
  std::vector<std::pair<uint64_t, uint32_t>> Joined() const {
    std::vector<std::pair<uint64_t, uint32_t>> joined = early.seen;
    joined.insert(joined.end(), late.seen.begin(), late.seen.end());
    return joined;
  }
};
void ReadTwoRanges(TraceReader* reader, const TraceTimeSpan& span, TwoRanges* r) {
  r->cut = span.middle_ts + 30 * kMs;
  r->a.end_ts = r->cut;
  r->a.end_position = span.split_position;
  r->b.start_ts = span.middle_ts;
  r->b.count_from_ts = r->cut;
  r->b.start_position = span.split_position;
  r->late.from = r->cut;
  ASSERT_TRUE(reader->ReadRange(&r->early, r->a, &r->ra).ok());
  ASSERT_TRUE(reader->ReadRange(&r->late, r->b, &r->rb).ok());
  r->unfit = reader->RangesUnfit(r->a, r->ra, r->rb);
}

// Drains an hour apart hold samples of both halves, with no round mark between them: records
// before a later range's start position would belong after the cut. Nor are both ranges read
// from the start of the data: the one round interleaves two CPUs' drains, too few for each
// range's half of the merge to pay for a second scan of every record. The reader has no span
// to offer, and the report reads it in one pass.
TEST_F(SplitPerfDataTest, RecordsWrittenLateAcrossTheCutMeanOnePass) {
  const std::string path =
      WritePerfData(Path("d.data"), PerfWorkload(23), /*drain_ns=*/3'600'000 * kMs);
  EXPECT_EQ(ExpectSameAsOnePass(path), "one pass: the reader cannot read time ranges");
}

// The same file, with the reader told to read from the start of the data whatever the
// interleave (PerfReadOptions::min_interleave_from_start 0, as SynthRecordingTest's 64 CPUs
// are read by default): both ranges read from the start, the later one leaving what lies
// before its time out of the merge, and together they are what ReadAll delivers and counts.
// With windows small enough that the earlier range emits its end while the later CPU's drain,
// which holds records before the cut, is still ahead of its scan, the ranges are found unfit.
TEST_F(SplitPerfDataTest, RangesFromTheStartTogetherAreReadAllOrFoundUnfit) {
  const std::string path =
      WritePerfData(Path("f.data"), PerfWorkload(25), /*drain_ns=*/3'600'000 * kMs);
  PerfReadOptions options;
  options.min_interleave_from_start = 0;
  auto opened = OpenPerfData(path, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<TraceReader> reader = *std::move(opened);
  RangeSink all;
  ASSERT_TRUE(reader->ReadAll(&all).ok());
  const std::optional<TraceTimeSpan> span = reader->TimeSpan();
  ASSERT_TRUE(span.has_value());
  EXPECT_TRUE(span->starts_anywhere);
  // The middle is the looks' median time: about half of the events lie before it.
  const auto before_middle = std::count_if(
      all.seen.begin(), all.seen.end(), [&](const auto& e) { return e.first < span->middle_ts; });
  EXPECT_NEAR(static_cast<double>(before_middle) / static_cast<double>(all.seen.size()), 0.5, 0.1);
  TwoRanges r;
  ASSERT_NO_FATAL_FAILURE(ReadTwoRanges(reader.get(), *span, &r));
  EXPECT_EQ(r.unfit, "");
  EXPECT_EQ(r.ra.stats.events + r.rb.stats.events, all.seen.size());
  EXPECT_EQ(r.ra.stats.records, 0u);  // the later range counts every record: it scans them all
  EXPECT_EQ(r.rb.stats.records, reader->stats().records);
  EXPECT_EQ(r.Joined(), all.seen);
  // Delivered uncounted from its start to the cut, and nothing before its start.
  const auto primed = std::count_if(all.seen.begin(), all.seen.end(), [&](const auto& e) {
    return e.first >= span->middle_ts && e.first < r.cut;
  });
  EXPECT_EQ(r.late.before, static_cast<uint64_t>(primed));
  EXPECT_GT(primed, 10);

  PerfReadOptions small = options;
  small.merge.window_bytes = small.merge.far_window_bytes = 16 << 10;
  small.merge.window_records = 64;
  auto hasty = OpenPerfData(path, small);
  ASSERT_TRUE(hasty.ok()) << hasty.status();
  RangeSink early2;
  RangeReadResult ra2;
  ASSERT_TRUE((*hasty)->ReadRange(&early2, r.a, &ra2).ok());
  EXPECT_EQ(ra2.out_of_order, 0u);
  EXPECT_LT(ra2.scan_end, r.rb.scan_end);  // it stopped before the end of the data
  EXPECT_EQ(reader->RangesUnfit(r.a, ra2, r.rb), "records late across the cut");
}

// Where a perf.data's data section begins (its file header's data.offset).
uint64_t PerfDataBegin(const std::string& path) {
  perf::FileHeader h{};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(&h), sizeof(h));
  EXPECT_TRUE(in.good());
  return h.data.offset;
}

// Both ranges read from the start of the data, read alone one after the other and read at once
// sharing one walk (ShareRanges): the same records delivered, counted and checked, whichever
// way; `shared`: whether the reads merged what the walk found or fell back to a scan each.
void ExpectSharedWalkAsAlone(const std::string& path, const PerfReadOptions& options, uint64_t cut,
                             uint64_t later_start, bool shared, uint64_t end_position = 0) {
  const uint64_t data = PerfDataBegin(path);
  TimeRange a, b;
  a.end_ts = cut;
  a.end_position = end_position != 0 ? end_position : data;
  b.start_ts = later_start;
  b.count_from_ts = cut;
  b.start_position = data;
  auto alone_reader = OpenPerfData(path, options);
  ASSERT_TRUE(alone_reader.ok()) << alone_reader.status();
  RangeSink alone_a, alone_b;
  alone_b.from = cut;
  RangeReadResult ra, rb;
  ASSERT_TRUE((*alone_reader)->ReadRange(&alone_a, a, &ra).ok());
  ASSERT_TRUE((*alone_reader)->ReadRange(&alone_b, b, &rb).ok());

  auto reader = OpenPerfData(path, options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  if (!(*reader)->ShareRanges(a, b)) {
    EXPECT_FALSE(shared) << "declined before any walk";
    return;
  }
  TimeRange sa = a, sb = b;
  sa.shared_part = 0;
  sb.shared_part = 1;
  RangeSink shared_a, shared_b;
  shared_b.from = cut;
  RangeReadResult qa, qb;
  absl::Status status_b;
  std::thread later([&] { status_b = (*reader)->ReadRange(&shared_b, sb, &qb); });
  const absl::Status status_a = (*reader)->ReadRange(&shared_a, sa, &qa);
  later.join();
  ASSERT_TRUE(status_a.ok()) << status_a;
  ASSERT_TRUE(status_b.ok()) << status_b;
  EXPECT_EQ(qa.shared_walk, shared);
  EXPECT_EQ(qb.shared_walk, shared);
  EXPECT_EQ(shared_a.seen, alone_a.seen);
  EXPECT_EQ(shared_b.seen, alone_b.seen);
  EXPECT_EQ(shared_b.before, alone_b.before);
  EXPECT_EQ(shared_a.lost, alone_a.lost);
  EXPECT_EQ(shared_b.lost, alone_b.lost);
  for (const auto& [q, r] : {std::pair{&qa, &ra}, std::pair{&qb, &rb}}) {
    EXPECT_EQ(q->stats.records, r->stats.records);
    EXPECT_EQ(q->stats.events, r->stats.events);
    EXPECT_EQ(q->stats.problems, r->stats.problems);
    EXPECT_EQ(q->stats.coverage.complete(), r->stats.coverage.complete());
    EXPECT_EQ(q->stats.coverage.gaps.size(), r->stats.coverage.gaps.size());
    EXPECT_EQ(q->out_of_order, r->out_of_order);
    EXPECT_EQ(q->problems, r->problems);
    EXPECT_EQ(q->scan_end, r->scan_end);
    EXPECT_EQ(q->met_end_position, r->met_end_position);
    EXPECT_EQ(q->latest_before_end_position, r->latest_before_end_position);
    EXPECT_EQ(q->last_position_before_count, r->last_position_before_count);
  }
  EXPECT_EQ((*reader)->RangesUnfit(a, qa, qb), (*alone_reader)->RangesUnfit(a, ra, rb));
  // The reader reads on as before: a part asked for again is read alone (without waiting for a
  // walk that is over), and the whole file as one pass.
  RangeSink again;
  RangeReadResult qa2;
  ASSERT_TRUE((*reader)->ReadRange(&again, sa, &qa2).ok());
  EXPECT_FALSE(qa2.shared_walk);
  EXPECT_EQ(again.seen, alone_a.seen);
  RangeSink all, alone_all;
  ASSERT_TRUE((*reader)->ReadAll(&all).ok());
  ASSERT_TRUE((*alone_reader)->ReadAll(&alone_all).ok());
  EXPECT_EQ(all.seen, alone_all.seen);
}

// A file with no more round marks than the merge's round lag, or one more as its last record,
// is one merge from start to end: two ranges that both read from the start share one walk of it,
// each thread walking half the data, and deliver and count what each range read alone does;
// with more marks (records final before the end), or a damaged record, each range scans for
// itself as before.
TEST_F(SplitPerfDataTest, RangesSharingOneWalkReadWhatEachReadsAlone) {
  const std::vector<Ev> events = PerfWorkload(26);
  uint64_t last = 0;
  for (const Ev& e : events) last = std::max(last, e.ts);
  const uint64_t cut = last / 2 + 7 * kMs;
  const uint64_t later_start = last / 2 - 20 * kMs;
  PerfReadOptions options;
  options.min_interleave_from_start = 0;
  options.share_walk_by_looks = false;  // the walk's own checks, whatever the looks saw
  // One mark (after the last drain, at the end), two (one drain between), three (the last of
  // them the last record).
  const std::string one = WritePerfData(Path("one.data"), events, 3'600'000 * kMs);
  ExpectSharedWalkAsAlone(one, options, cut, later_start, true);
  // Every drain after the first starts with its CPU's last record again: copies dropped the
  // same way in both.
  const std::string two = WritePerfData(Path("two.data"), events, last * 6 / 10, 1);
  ExpectSharedWalkAsAlone(two, options, cut, later_start, true);
  const std::string three = WritePerfData(Path("three.data"), events, last * 4 / 10, 1);
  ExpectSharedWalkAsAlone(three, options, cut, later_start, true);
  // Three marks before the last record: the merge emits before it has met every record.
  // With rounds of a third of the data, both walks stop at the first mark (the data is longer
  // than the lag + 1 rounds); with a long first round, at the fourth mark; without a mark
  // after the last drain, once both halves were walked.
  const std::string four = WritePerfData(Path("four.data"), events, last * 3 / 10, 1);
  ExpectSharedWalkAsAlone(four, options, cut, later_start, false);
  const std::vector<uint64_t> late = {last * 55 / 100, last * 7 / 10, last * 8 / 10};
  ExpectSharedWalkAsAlone(WritePerfData(Path("late.data"), events, 0, 1, late), options, cut,
                          later_start, false);
  ExpectSharedWalkAsAlone(WritePerfData(Path("late_unmarked.data"), events, 0, 1, late, false),
                          options, cut, later_start, false);
  // Without it, two marks are still as many as the lag.
  ExpectSharedWalkAsAlone(WritePerfData(Path("two_unmarked.data"), events, 0, 1,
                                        {last * 55 / 100, last * 8 / 10}, false),
                          options, cut, later_start, true);
  // With a lag of 1: two marks, the second the last record, and three.
  PerfReadOptions lag1 = options;
  lag1.merge.round_lag = 1;
  ExpectSharedWalkAsAlone(two, lag1, cut, later_start, true);
  ExpectSharedWalkAsAlone(three, lag1, cut, later_start, false);
  // The merge's caps: as many runs as it may hold, and a window of records that makes some
  // final before the end.
  PerfReadOptions capped = options;
  capped.merge.max_runs = 2;
  ExpectSharedWalkAsAlone(one, capped, cut, later_start, false);
  PerfReadOptions windowed = options;
  windowed.merge.window_bytes = uint64_t{64} << 20;
  windowed.merge.far_window_bytes = 1024;
  windowed.merge.window_records = 64;
  ExpectSharedWalkAsAlone(one, windowed, cut, later_start, false);
  // A loss with a time (placed in its CPU's coverage) in each half, delivered alike.
  for (const auto& [name, lost_at] :
       {std::pair{"lost_early.data", last / 4}, std::pair{"lost_late.data", last * 3 / 4}}) {
    const std::string path = WritePerfData(Path(name), events, last * 6 / 10, 1, {}, true, lost_at);
    auto check = OpenPerfData(path, options);
    ASSERT_TRUE(check.ok()) << check.status();
    RangeSink all;
    ASSERT_TRUE((*check)->ReadAll(&all).ok());
    EXPECT_EQ(all.lost, 5u) << name;
    ExpectSharedWalkAsAlone(path, options, cut, later_start, true);
  }
  // The cut before every record, and after every one.
  ExpectSharedWalkAsAlone(one, options, 1, 0, true);
  ExpectSharedWalkAsAlone(one, options, last + 1, last, true);

  // A record in the later half whose size runs past the data: each range scans alone.
  std::string bytes;
  {
    std::ifstream in(one, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  perf::FileHeader h{};
  std::memcpy(&h, bytes.data(), sizeof(h));
  uint64_t pos = h.data.offset;
  const uint64_t three_quarters = h.data.offset + h.data.size * 3 / 4;
  while (pos < three_quarters) {
    perf::EventHeader e{};
    std::memcpy(&e, bytes.data() + pos, sizeof(e));
    pos += e.size;
  }
  // (An earlier range that counts the records up to here: its end position in the later half.)
  ExpectSharedWalkAsAlone(one, options, cut, later_start, true, pos);
  const uint16_t huge = 0xfff8;
  std::memcpy(bytes.data() + pos + 6, &huge, sizeof(huge));
  const std::string damaged = Path("damaged.data");
  {
    std::ofstream out(damaged, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ExpectSharedWalkAsAlone(damaged, options, cut, later_start, false);
}

// Whether to walk at all is first asked of the looks that chose reading from the start: a round
// drains the rings in CPU order, so a look that meets a lower CPU than the one before it lies in
// a later round. One round, and three (two marks before the middle and the one after the last
// drain): shared; five rounds, four of them in the first 40% of the data: declined before any
// walk.
TEST_F(SplitPerfDataTest, TheLooksDeclineAWalkOfMoreRoundsThanTheLag) {
  const std::vector<Ev> events = PerfWorkload(28);
  uint64_t last = 0;
  for (const Ev& e : events) last = std::max(last, e.ts);
  PerfReadOptions options;
  options.min_interleave_from_start = 0;
  TimeRange a, b;
  a.end_ts = last / 2;
  b.start_ts = last / 2 - 20 * kMs;
  b.count_from_ts = last / 2;
  for (const auto& [name, drains, shared] :
       {std::tuple{"one.data", std::vector<uint64_t>{}, true},
        std::tuple{"three.data", std::vector<uint64_t>{last / 5, last * 45 / 100}, true},
        std::tuple{"many.data",
                   std::vector<uint64_t>{last / 10, last * 2 / 10, last * 3 / 10, last * 4 / 10},
                   false}}) {
    const std::string path = WritePerfData(Path(name), events, 3'600'000 * kMs, 0, drains);
    auto reader = OpenPerfData(path, options);
    ASSERT_TRUE(reader.ok()) << reader.status();
    const std::optional<TraceTimeSpan> span = (*reader)->TimeSpan();
    ASSERT_TRUE(span.has_value()) << name;
    ASSERT_TRUE(span->starts_anywhere) << name;
    a.end_position = b.start_position = a.start_position = span->split_position;
    EXPECT_EQ((*reader)->ShareRanges(a, b), shared) << name;
  }
}

// perf.data ranges: together, what ReadAll delivers and counts.
TEST_F(SplitPerfDataTest, RangesTogetherAreReadAll) {
  const std::string path = WritePerfData(Path("e.data"), PerfWorkload(24), kMs, 5);
  std::unique_ptr<TraceReader> reader;
  RangeSink all;
  std::optional<TraceTimeSpan> span;
  ASSERT_NO_FATAL_FAILURE(OpenReadAllAndSpan(path, &reader, &all, &span));
  ASSERT_GT(span->split_position, 0u);
  TwoRanges r;
  ASSERT_NO_FATAL_FAILURE(ReadTwoRanges(reader.get(), *span, &r));
  TimeRange& a = r.a;
  RangeSink& early = r.early;
  RangeReadResult& ra = r.ra;
  const RangeReadResult& rb = r.rb;
  EXPECT_EQ(r.unfit, "");
  EXPECT_EQ(ra.stats.events + rb.stats.events, all.seen.size());
  EXPECT_EQ(ra.stats.records + rb.stats.records, reader->stats().records);
  EXPECT_EQ(ra.stats.Problem("duplicate_record") + rb.stats.Problem("duplicate_record"),
            reader->stats().Problem("duplicate_record"));
  EXPECT_GT(reader->stats().Problem("duplicate_record"), 10u);
  EXPECT_EQ(r.Joined(), all.seen);
  EXPECT_GT(r.late.before, 100u);
  // A later range that starts one record boundary too late misses records: caught.
  TimeRange shifted = r.b;
  shifted.start_position += 8;
  RangeReadResult rs;
  RangeSink other;
  ASSERT_TRUE(reader->ReadRange(&other, shifted, &rs).ok());
  a.end_position = shifted.start_position;
  ASSERT_TRUE(reader->ReadRange(&early, a, &ra).ok());
  EXPECT_NE(reader->RangesUnfit(a, ra, rs), "");
}

// Many devices: 20000 requests spread at random over 300 devices (the event lag from 64
// devices, deferred samples from 256 groups, the report's rows made on two threads from 512:
// here 1800), many in flight at once, written as a trace.dat, with each group's latencies as
// the test made them (sorted).
struct ManyDevices {
  using Key = std::tuple<uint32_t, BlockOp, Phase>;
  uint64_t requests;
  BlockTraceDat file;
  std::string path;
  std::map<Key, std::vector<uint64_t>> want;

  explicit ManyDevices(uint64_t seed, uint64_t requests = 20000, uint32_t devices = 300)
      : requests(requests) {
    std::mt19937_64 rng(seed);
    std::vector<Ev> events;
    uint64_t t = 1000;
    for (uint64_t i = 0; i < requests; ++i, t += 5000 + rng() % 20000) {
      const uint32_t dev = (8u << 20) | static_cast<uint32_t>(rng() % devices);
      const bool read = rng() % 2 == 0;
      const uint64_t queue_ns = 100 + rng() % 200000;
      const uint64_t device_ns = 1000 + rng() % 3000000;
      const int cpu = static_cast<int>(rng() % 2);
      const std::string rwbs = read ? "R" : "W";
      events.push_back({t, cpu, kInsert, dev, 8 * i, 8, rwbs});
      events.push_back({t + queue_ns, cpu, kIssue, dev, 8 * i, 8, rwbs});
      events.push_back({t + queue_ns + device_ns, 1 - cpu, kComplete, dev, 8 * i, 8, rwbs});
      const BlockOp op = read ? BlockOp::kRead : BlockOp::kWrite;
      want[{dev, op, Phase::kI2D}].push_back(queue_ns);
      want[{dev, op, Phase::kD2C}].push_back(device_ns);
      want[{dev, op, Phase::kI2C}].push_back(queue_ns + device_ns);
    }
    for (auto& [key, lat] : want) std::sort(lat.begin(), lat.end());
    path = file.Write(events);
  }
  ReportOptions Options() const {
    ReportOptions o;
    o.input = path;
    o.sysfs_root = o.procfs_root = "/nonexistent";
    return o;
  }
  // The report of the file with `o` (a reader of its own).
  absl::StatusOr<LatencyReport> Build(const ReportOptions& o) const {
    absl::StatusOr<std::unique_ptr<TraceReader>> reader = OpenTraceReader(path);
    if (!reader.ok()) return reader.status();
    return BuildLatencyReport(**reader, o);
  }
  // Every group of `r` against the latencies made: count, sum, min, max, and each bucket's
  // count that of the latencies in its range.
  void Check(const LatencyReport& r, const std::string& how) const {
    SCOPED_TRACE(how);
    ASSERT_EQ(r.groups.size(), want.size());
    for (const LatencyGroup& g : r.groups) {
      auto it = want.find({g.dev, g.op, g.phase});
      ASSERT_NE(it, want.end());
      const std::vector<uint64_t>& lat = it->second;
      uint64_t sum = 0;
      for (uint64_t v : lat) sum += v;
      EXPECT_EQ(g.summary.count, lat.size());
      EXPECT_EQ(g.summary.sum_ns, sum);
      EXPECT_EQ(g.summary.min_ns, lat.front());
      EXPECT_EQ(g.summary.max_ns, lat.back());
      uint64_t in_buckets = 0;
      for (const LatencyBucket& b : g.buckets) {
        const auto lo = std::lower_bound(lat.begin(), lat.end(), b.lo_ns);
        const auto hi = std::lower_bound(lat.begin(), lat.end(), b.hi_ns);
        EXPECT_EQ(b.count, static_cast<uint64_t>(hi - lo)) << "[" << b.lo_ns << ", " << b.hi_ns;
        in_buckets += b.count;
      }
      EXPECT_EQ(in_buckets, lat.size());
    }
    EXPECT_EQ(r.completeness.match.paired[static_cast<int>(Phase::kD2C)], requests);
  }
};

// With many devices the builder hands events to the matcher a few events after it decoded them
// (the event lag) and records samples a few samples after they came (Defer). Every sample must
// still land in its group, in its bucket, the last ones too (held when the file ends), on every
// way of reading: one thread, pairing on a thread of its own, and two time ranges.
// Checked against the latencies the test made, not against another report.
TEST(SplitReportTest, ManyDevicesEveryReadingPutsEverySampleInItsBucket) {
  const ManyDevices m(99);
  for (int threads : {1, 3, 0}) {
    ReportOptions o = m.Options();
    o.threads = threads;
    o.split_min_bytes = 1;  // threads 0: two time ranges
    o.split_on_one_cpu = true;
    absl::StatusOr<LatencyReport> r = m.Build(o);
    ASSERT_TRUE(r.ok()) << r.status();
    if (threads == 0) EXPECT_EQ(r->read_plan.rfind("two ranges", 0), 0u) << r->read_plan;
    m.Check(*r, "threads " + std::to_string(threads));
  }
}

// 1,100 devices and 85,000 requests: devices met for the first time long after samples are
// deferred; with --by (slots of devices x classes) and with a filter on (each sample's slot
// found before it is deferred). Every sample in its bucket, as above; the ops the filter
// removes in none.
TEST(SplitReportTest, ManyDevicesWithByOrFiltersEverySampleInItsBucket) {
  const ManyDevices m(11, /*requests=*/85000, /*devices=*/1100);
  for (int threads : {1, 0}) {
    for (BreakdownBy by : {BreakdownBy::kNone, BreakdownBy::kSize}) {  // one size: one class
      ReportOptions o = m.Options();
      o.threads = threads;
      o.by = by;
      o.split_min_bytes = 1;
      o.split_on_one_cpu = true;
      absl::StatusOr<LatencyReport> r = m.Build(o);
      ASSERT_TRUE(r.ok()) << r.status();
      if (threads == 0 && by == BreakdownBy::kNone) {
        EXPECT_EQ(r->read_plan.rfind("two ranges", 0), 0u) << r->read_plan;
      }
      m.Check(*r, "threads " + std::to_string(threads) + " by " + std::string(BreakdownName(by)));
    }
  }
  // --op read: the write groups filtered out, the read ones whole.
  ReportOptions o = m.Options();
  o.threads = 1;
  o.ops = {BlockOp::kRead};
  absl::StatusOr<LatencyReport> r = m.Build(o);
  ASSERT_TRUE(r.ok()) << r.status();
  size_t read_groups = 0;
  for (const auto& [key, lat] : m.want) read_groups += std::get<1>(key) == BlockOp::kRead;
  ASSERT_EQ(r->groups.size(), read_groups);
  for (const LatencyGroup& g : r->groups) {
    ASSERT_EQ(g.op, BlockOp::kRead);
    const std::vector<uint64_t>& lat = m.want.at({g.dev, g.op, g.phase});
    EXPECT_EQ(g.summary.count, lat.size());
    EXPECT_EQ(g.summary.min_ns, lat.front());
    EXPECT_EQ(g.summary.max_ns, lat.back());
  }
}

// With intervals and more groups than ReportOptions::max_interval_groups: the intervals made
// before the limit go, none are made after it, and the whole run's histograms hold every
// sample all the same; below the limit, the intervals stay.
TEST(SplitReportTest, IntervalsDroppedPastTheGroupLimitLeaveTheTotalsWhole) {
  const ManyDevices m(5, /*requests=*/6000, /*devices=*/50);
  for (size_t limit : {size_t{20}, size_t{1000}}) {
    ReportOptions o = m.Options();
    o.interval_s = 0.01;
    o.max_interval_groups = limit;
    absl::StatusOr<LatencyReport> r = m.Build(o);
    ASSERT_TRUE(r.ok()) << r.status();
    const bool dropped = limit < m.want.size();
    EXPECT_EQ(r->intervals_dropped, dropped);
    EXPECT_EQ(r->intervals.empty(), dropped);
    if (dropped) EXPECT_TRUE(r->unpaired_idle.empty());
    EXPECT_EQ(r->interval_s, dropped ? 0 : 0.01);
    m.Check(*r, "limit " + std::to_string(limit));
  }
}

// Auto's one pass, with stretches so short that pairing moves between the reading thread
// (where the event lag is on) and the pairing thread every few dozen events, at odd lengths so
// that stretches end with events held. Every sample in its bucket, as above.
TEST(SplitReportTest, ManyDevicesAutoPlacementHandsOverWithTheLag) {
  const ManyDevices m(7);
  for (uint64_t probe : {37u, 1001u}) {
    ReportOptions o = m.Options();
    o.threads = 0;
    o.placement_on_one_cpu = true;
    o.placement_probe_events = probe;
    o.placement_hold_events = probe + 2;
    o.placement_max_hold_events = 4 * probe + 1;
    auto reader = OpenTraceReader(m.path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    auto made = LatencyReportBuilder::Create((*reader)->formats(), o);
    ASSERT_TRUE(made.ok()) << made.status();
    LatencyReportBuilder& b = **made;
    ASSERT_TRUE(b.ReadAll(**reader).ok());
    ASSERT_NE(b.placement(), nullptr);
    EXPECT_GT(b.placement()->switches(), 10u);
    m.Check(b.Finish((*reader)->stats()), "probe " + std::to_string(probe));
  }
}

}  // namespace
}  // namespace iotrace
