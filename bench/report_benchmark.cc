// End-to-end report throughput (events/s): raw records laid out by this kernel's block formats
// -> LatencyReportBuilder (decode, match, histograms) -> Finish.
#include <cstdlib>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/analysis/latency_report.h"

namespace iotrace {
namespace {

void BM_ReportEndToEnd(benchmark::State& state) {
  const bench::RawBlockStream s = bench::MakeRawBlockStream(bench::Scale(1 << 17, 1 << 10));
  ReportOptions options;
  options.sysfs_root = options.procfs_root = "/nonexistent";
  ReadStats stats;
  for (auto _ : state) {
    auto builder = LatencyReportBuilder::Create(s.formats, options);
    if (!builder.ok()) std::abort();
    for (const RawEvent& e : s.events) (*builder)->OnEvent(e);
    LatencyReport report = (*builder)->Finish(stats);
    benchmark::DoNotOptimize(report.groups.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(s.events.size()));
}
BENCHMARK(BM_ReportEndToEnd)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace iotrace
