// Histogram::Record throughput (items/s) on latency-like values.
#include <random>
#include <vector>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/analysis/histogram.h"

namespace iotrace {
namespace {

std::vector<uint64_t> LatencyLikeValues(size_t n) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(11, 1.5);  // ~60 us median, long tail
  std::vector<uint64_t> v(n);
  for (auto& x : v) x = static_cast<uint64_t>(dist(rng));
  return v;
}

void BM_HistogramRecord(benchmark::State& state) {
  const std::vector<uint64_t> values = LatencyLikeValues(bench::Scale(1 << 16, 1 << 10));
  Histogram h;
  for (auto _ : state) {
    for (uint64_t v : values) h.Record(v);
    benchmark::DoNotOptimize(h.count());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(values.size()));
}
BENCHMARK(BM_HistogramRecord);

void BM_HistogramPercentiles(benchmark::State& state) {
  const std::vector<uint64_t> values = LatencyLikeValues(bench::Scale(1 << 16, 1 << 10));
  Histogram h;
  for (uint64_t v : values) h.Record(v);
  for (auto _ : state) {
    benchmark::DoNotOptimize(h.ValueAtPercentile(50));
    benchmark::DoNotOptimize(h.ValueAtPercentile(99.9));
  }
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_HistogramPercentiles);

}  // namespace
}  // namespace iotrace
