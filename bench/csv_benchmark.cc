// CSV writing throughput. Per event: `iotrace report --events --format csv` (EventDumper), one
// line per record with every field decoded by its format (text and JSON lines beside it for
// comparison), records/s and bytes/s; fed by the synthetic generator and by a recorded fixture.
// Per report: the summary and bucket CSVs of a time series (1 ms intervals over the synthetic
// stream, so thousands of rows), rows/s.
#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/output/event_dump.h"
#include "iotrace/output/report_format.h"

namespace iotrace {
namespace {

constexpr DumpFormat kFormats[] = {DumpFormat::kCsv, DumpFormat::kText, DumpFormat::kJson};
constexpr const char* kFormatNames[] = {"csv", "text", "json"};

void DumpAll(benchmark::State& state, const bench::RawBlockStream& s) {
  EventDumper dumper(s.formats, kFormats[state.range(0)]);
  std::string out;
  uint64_t bytes = 0;
  for (auto _ : state) {
    out = dumper.Header();
    for (const RawEvent& e : s.events) {
      dumper.Append(e, "fio", &out);
      // Written out in pieces, as the report does: the string keeps its room.
      if (out.size() >= (1u << 16)) {
        bytes += out.size();
        benchmark::DoNotOptimize(out.data());
        out.clear();
      }
    }
    bytes += out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(s.events.size()));
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetLabel(kFormatNames[state.range(0)]);
}

void BM_EventLinesSynthetic(benchmark::State& state) {
  static const bench::RawBlockStream s = bench::MakeRawBlockStream(bench::Scale(1 << 18, 1 << 9));
  DumpAll(state, s);
}
BENCHMARK(BM_EventLinesSynthetic)->ArgName("format")->DenseRange(0, 2);

void BM_EventLinesFixturePerfData(benchmark::State& state) {
  static const bench::RawBlockStream s = bench::LoadRecordedStream("golden/perf_mq.data");
  DumpAll(state, s);
}
BENCHMARK(BM_EventLinesFixturePerfData)->ArgName("format")->DenseRange(0, 2);

// The report of the synthetic stream with 1 ms intervals, built once.
const LatencyReport& IntervalReport() {
  static const LatencyReport report = [] {
    const bench::RawBlockStream s = bench::MakeRawBlockStream(bench::Scale(1 << 17, 1 << 10));
    ReportOptions options;
    options.sysfs_root = options.procfs_root = "/nonexistent";
    options.interval_s = 0.001;
    auto builder = LatencyReportBuilder::Create(s.formats, options);
    if (!builder.ok()) std::abort();
    for (const RawEvent& e : s.events) (*builder)->OnEvent(e);
    return (*builder)->Finish(ReadStats());
  }();
  return report;
}

template <void (*Write)(const LatencyReport&, std::ostream&)>
void WriteReportCsv(benchmark::State& state) {
  const LatencyReport& report = IntervalReport();
  std::string text;
  for (auto _ : state) {
    std::ostringstream out;
    Write(report, out);
    text = std::move(out).str();
    benchmark::DoNotOptimize(text.data());
  }
  // Every iteration writes the same text: its rows counted once, outside the timed loop.
  const auto rows = static_cast<int64_t>(std::count(text.begin(), text.end(), '\n'));
  if (rows < 2) bench::Fail(state, "the report CSV has no rows");
  state.SetItemsProcessed(state.iterations() * rows);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["intervals"] = static_cast<double>(report.intervals.size());
}

void BM_SummaryCsv(benchmark::State& state) { WriteReportCsv<WriteSummaryCsv>(state); }
BENCHMARK(BM_SummaryCsv)->Unit(benchmark::kMillisecond);

void BM_BucketCsv(benchmark::State& state) { WriteReportCsv<WriteBucketCsv>(state); }
BENCHMARK(BM_BucketCsv)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace iotrace
