// trace.dat reading speed (events/s) and memory: the page walker alone, the whole reader on a
// large synthetic file written by TraceDatWriter (2 and 4 CPUs), and on the recorded fixture.
// Targets: >= 20 M events/s, peak RSS < 64 MiB while reading a file larger than that.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../tests/unit/ftrace_page_builder.h"
#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/formats/trace_dat_reader.h"
#include "iotrace/formats/trace_dat_writer.h"

namespace iotrace {
namespace {

class CountingSink : public EventSink {
 public:
  void OnEvent(const RawEvent& ev) override {
    ++events;
    sum += ev.ts + ev.payload.size;
  }
  void OnLoss(const LossRecord& loss) override { ++losses; }
  uint64_t events = 0, losses = 0, sum = 0;
};

// Peak RSS since the last ResetPeakRss(), from /proc/self/status (VmHWM).
void ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}
double PeakRssMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return 0;
}

// A file of `events_per_cpu` block_rq_issue events on each of `cpus` CPUs, interleaved in time,
// written page by page (so building it needs little memory). Kept for the process' lifetime.
const std::string& SyntheticFile(int cpus, uint64_t events_per_cpu) {
  static std::vector<std::pair<std::string, std::string>> made;  // key -> path
  std::string key = std::to_string(cpus) + "x" + std::to_string(events_per_cpu);
  for (const auto& [k, p] : made) {
    if (k == key) return p;
  }
  TracingMetadata meta;
  meta.header_page = testing::HeaderPageText(4096);
  meta.header_event = testing::ReadFixtureFile("formats/6.18/events/header_event");
  meta.event_formats.push_back({"block", iotrace::test::ReadBlockFormat("block_rq_issue")});
  EventFormat issue = *ParseEventFormat("block", meta.event_formats[0].text);
  std::string path = "/tmp/iotrace_tracedat_bench_" + std::to_string(getpid()) + "_" + key + ".dat";
  TraceDatWriterOptions o;
  o.meta = meta;
  o.nr_cpus = cpus;
  auto w = TraceDatWriter::Create(path, o);
  if (!w.ok()) std::abort();
  for (int cpu = 0; cpu < cpus; ++cpu) {
    testing::FtracePageBuilder page(0);
    bool open = false;
    for (uint64_t i = 0; i < events_per_cpu; ++i) {
      uint64_t ts = 1'000'000'000ull + i * 1000 + uint64_t(cpu) * 7;
      std::string payload = testing::BlockPayload(issue, {1000 + cpu, 7u << 20, i * 8, 8, "W"});
      if (!open) page = testing::FtracePageBuilder(ts), open = true;
      if (!page.AddEvent(ts, payload)) {
        std::string p = page.Build();
        if (!(*w)->AppendPages(cpu, ByteView(p.data(), p.size())).ok()) std::abort();
        page = testing::FtracePageBuilder(ts);
        page.AddEvent(ts, payload);
      }
    }
    std::string p = page.Build();
    if (!(*w)->AppendPages(cpu, ByteView(p.data(), p.size())).ok()) std::abort();
  }
  if (!(*w)->Finish().ok()) std::abort();
  made.emplace_back(key, path);
  std::atexit([] {
    for (const auto& [k, p] : made) std::remove(p.c_str());
  });
  return made.back().second;
}

void BM_PageWalker(benchmark::State& state) {
  EventFormat issue = *ParseEventFormat("block", iotrace::test::ReadBlockFormat("block_rq_issue"));
  testing::FtracePageBuilder b(0);
  int n = 0;
  while (b.AddEvent(n * 100, testing::BlockPayload(issue, {1, 1, uint64_t(n), 8, "W"}))) ++n;
  std::string page = b.Build();
  auto layout = ParseHeaderPage(testing::HeaderPageText(4096), 4096);
  FtracePageWalker w(*layout);
  uint64_t sum = 0, events = 0;
  for (auto _ : state) {
    w.Reset(ByteView(page.data(), page.size()));
    FtraceRecord rec;
    while (w.Next(&rec)) {
      sum += rec.ts + rec.payload.size;
      ++events;
    }
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<int64_t>(events));
}
BENCHMARK(BM_PageWalker);

void BM_ReadAllSynthetic(benchmark::State& state) {
  const int cpus = static_cast<int>(state.range(0));
  const uint64_t per_cpu = bench::Scale(2'000'000, 5'000) / cpus * 2;
  const std::string& path = SyntheticFile(cpus, per_cpu);
  uint64_t events = 0;
  double peak = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ResetPeakRss();
    state.ResumeTiming();
    auto reader = OpenTraceDat(path);
    if (!reader.ok()) {
      bench::Fail(state, std::string(reader.status().message()));
      return;
    }
    CountingSink sink;
    if (!(*reader)->ReadAll(&sink).ok()) std::abort();
    events += sink.events;
    benchmark::DoNotOptimize(sink.sum);
    peak = std::max(peak, PeakRssMiB());
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["peak_rss_MiB"] = peak;
  std::ifstream f(path, std::ios::ate | std::ios::binary);
  state.counters["file_MiB"] = static_cast<double>(f.tellg()) / (1 << 20);
}
BENCHMARK(BM_ReadAllSynthetic)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);

void BM_ReadAllFixture(benchmark::State& state) {
  const std::string path = std::string(IOTRACE_FIXTURES) + "/tracedat/dd_v6.dat";
  uint64_t events = 0;
  for (auto _ : state) {
    auto reader = OpenTraceDat(path);
    if (!reader.ok()) {
      bench::Fail(state, std::string(reader.status().message()));
      return;
    }
    CountingSink sink;
    if (!(*reader)->ReadAll(&sink).ok()) std::abort();
    events += sink.events;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
}
BENCHMARK(BM_ReadAllFixture);

}  // namespace
}  // namespace iotrace
