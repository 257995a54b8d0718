// What `iotrace live --listen` costs: MetricsTap::OnSample per request (items/s), and per scrape
// a snapshot of ~100 latency series and its text and protobuf forms (issue 23 asks /metrics to
// answer in under 10 ms with ~100 series).
#include <memory>
#include <random>
#include <vector>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/analysis/metrics_tap.h"
#include "iotrace/output/prometheus_format.h"

namespace iotrace {
namespace {

constexpr unsigned kCompletion =
    PhaseBit(Phase::kD2C) | PhaseBit(Phase::kI2C) | PhaseBit(Phase::kQ2C);

// Completions on `devices` disks, read and write, latencies lognormal (~60 us median).
std::vector<RequestSample> Samples(size_t n, uint32_t devices) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> latency(11, 1.5);
  std::vector<RequestSample> v(n);
  for (size_t i = 0; i < n; ++i) {
    RequestSample& s = v[i];
    s.dev = (259u << 20) | static_cast<uint32_t>(i % devices);
    s.op = i % 3 == 0 ? BlockOp::kWrite : BlockOp::kRead;
    s.phases = kCompletion;
    s.queue_ts = 1'000'000;
    s.insert_ts = s.queue_ts + 200;
    s.issue_ts = s.insert_ts + static_cast<uint64_t>(latency(rng) / 8);
    s.complete_ts = s.issue_ts + static_cast<uint64_t>(latency(rng));
    s.bytes = 4096;
  }
  return v;
}

void BM_MetricsTapOnSample(benchmark::State& state) {
  const std::vector<RequestSample> samples = Samples(bench::Scale(1 << 16, 1 << 10), 4);
  DeviceNames names("/nonexistent", "/nonexistent");
  MetricsTap tap({.native_schema = static_cast<int>(state.range(0)), .max_series = 1000}, &names);
  for (auto _ : state) {
    for (const RequestSample& s : samples) tap.OnSample(s, s.phases);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(samples.size()));
}
BENCHMARK(BM_MetricsTapOnSample)->Arg(3)->Arg(8);

// 17 disks x read, write x 3 phases: 102 latency series.
std::unique_ptr<MetricsTap> FilledTap(DeviceNames* names, int schema) {
  static const std::vector<RequestSample> samples = Samples(bench::Scale(1 << 18, 1 << 12), 17);
  auto tap = std::make_unique<MetricsTap>(
      MetricsTapOptions{.native_schema = schema, .max_series = 1000}, names);
  for (const RequestSample& s : samples) tap->OnSample(s, s.phases);
  return tap;
}

void BM_MetricsSnapshot(benchmark::State& state) {
  DeviceNames names("/nonexistent", "/nonexistent");
  std::unique_ptr<MetricsTap> tap = FilledTap(&names, static_cast<int>(state.range(0)));
  MetricsSnapshot snapshot;
  for (auto _ : state) {
    tap->Snapshot(&snapshot);
    benchmark::DoNotOptimize(snapshot.latency.data());
  }
  state.counters["series"] = static_cast<double>(snapshot.latency.size());
}
BENCHMARK(BM_MetricsSnapshot)->Arg(3)->Arg(8)->Unit(benchmark::kMicrosecond);

void BM_PrometheusText(benchmark::State& state) {
  DeviceNames names("/nonexistent", "/nonexistent");
  std::unique_ptr<MetricsTap> tap = FilledTap(&names, 3);
  MetricsSnapshot snapshot;
  tap->Snapshot(&snapshot);
  size_t bytes = 0;
  for (auto _ : state) bytes = PrometheusText(snapshot).size();
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_PrometheusText)->Unit(benchmark::kMicrosecond);

void BM_PrometheusProtobuf(benchmark::State& state) {
  DeviceNames names("/nonexistent", "/nonexistent");
  std::unique_ptr<MetricsTap> tap = FilledTap(&names, static_cast<int>(state.range(0)));
  MetricsSnapshot snapshot;
  tap->Snapshot(&snapshot);
  size_t bytes = 0;
  for (auto _ : state) bytes = PrometheusProtobuf(snapshot).size();
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_PrometheusProtobuf)->Arg(3)->Arg(8)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace iotrace
