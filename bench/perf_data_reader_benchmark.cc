// perf.data reader throughput (items/s = tracepoint samples delivered in time order), end to end
// from an mmapped file: validation, per-record parse, k-way run merge, sink call. The input is a
// synthetic recording written by the tests' generator through PerfDataWriter, and a recorded
// fixture.
#include <unistd.h>

#include <cstdint>
#include <string>

#include "../tests/unit/perf_data_test_builder.h"
#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/formats/perf_data_reader.h"

namespace iotrace {
namespace {

class CountingSink : public EventSink {
 public:
  void OnEvent(const RawEvent& e) override {
    ++events;
    sum += e.ts ^ e.payload.data[8];  // touch the payload, as a decoder would
  }
  uint64_t events = 0;
  uint64_t sum = 0;
};

// One file per configuration, written once per process.
std::string SyntheticFile(uint32_t cpus, bool rounds) {
  static std::string paths[2][9];
  std::string& path = paths[rounds][cpus];
  if (!path.empty()) return path;
  const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  path = std::string(dir) + "/iotrace-perfdata-bench-" + std::to_string(getpid()) + "-" +
         std::to_string(cpus) + (rounds ? "r" : "w");
  test::SyntheticOptions o;
  o.samples = bench::Scale(4000000, 20000);
  o.cpus = cpus;
  o.drain_stagger_ns = 40000 / cpus;
  o.round_marks = rounds;
  if (!test::WriteSyntheticBlockFile(path, o, nullptr).ok()) path = "";
  return path;
}

// Reads the file at `path` once per iteration; items = events delivered.
void ReadFile(benchmark::State& state, const std::string& path) {
  uint64_t events = 0;
  for (auto _ : state) {
    auto reader = OpenPerfData(path);
    if (!reader.ok()) {
      bench::Fail(state, std::string(reader.status().message()));
      return;
    }
    CountingSink sink;
    if (!(*reader)->ReadAll(&sink).ok()) {
      bench::Fail(state, "ReadAll failed");
      return;
    }
    benchmark::DoNotOptimize(sink.sum);
    events += sink.events;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
}

void BM_ReadAll(benchmark::State& state) {
  const uint32_t cpus = static_cast<uint32_t>(state.range(0));
  const bool rounds = state.range(1) != 0;
  const std::string path = SyntheticFile(cpus, rounds);
  if (path.empty()) {
    bench::Fail(state, "cannot write the synthetic perf.data");
    return;
  }
  ReadFile(state, path);
}
BENCHMARK(BM_ReadAll)
    ->ArgNames({"cpus", "rounds"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({8, 1})
    ->Args({2, 0})
    ->Unit(benchmark::kMillisecond);

// A recording by `perf record -a` on this kernel (tests/fixtures/golden/perf_mq.data: block
// events of both CPUs, round marks, non-block samples among them).
void BM_ReadAllFixture(benchmark::State& state) {
  ReadFile(state, std::string(IOTRACE_FIXTURES) + "/golden/perf_mq.data");
}
BENCHMARK(BM_ReadAllFixture);

// Removes the synthetic files when the program ends.
struct Cleanup {
  ~Cleanup() {
    for (uint32_t cpus : {1u, 2u, 8u}) {
      for (bool rounds : {false, true}) {
        const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        std::string path = std::string(dir) + "/iotrace-perfdata-bench-" +
                           std::to_string(getpid()) + "-" + std::to_string(cpus) +
                           (rounds ? "r" : "w");
        ::unlink(path.c_str());
      }
    }
  }
} cleanup;

}  // namespace
}  // namespace iotrace
