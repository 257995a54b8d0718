// End-to-end report throughput (events/s): raw records laid out by this kernel's block formats
// -> LatencyReportBuilder (decode, match, histograms) -> Finish.
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/latency_report.h"

namespace iotrace {
namespace {

EventFormat LoadFormat(const std::string& name) {
  std::ifstream in(std::string(IOTRACE_FIXTURES) + "/formats/" + name + ".format");
  std::stringstream ss;
  ss << in.rdbuf();
  auto f = ParseEventFormat("block", ss.str());
  if (!f.ok()) std::abort();
  return *f;
}

struct Stream {
  std::vector<EventFormat> formats;
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<RawEvent> events;
};

Stream MakeStream(size_t requests) {
  Stream s;
  for (const char* n : {"block_rq_insert", "block_rq_issue", "block_rq_complete"}) {
    s.formats.push_back(LoadFormat(n));
  }
  auto layout = [&s](int which, uint32_t dev, uint64_t sector, uint32_t nr, const char* rwbs) {
    const EventFormat& f = s.formats[which];
    size_t size = 0;
    for (const FieldInfo& fi : f.fields) size = std::max<size_t>(size, fi.offset + fi.size);
    std::vector<uint8_t> rec(size, 0);
    auto put = [&](const char* name, const void* v, size_t n) {
      const FieldInfo* fi = f.FindField(name);
      if (fi != nullptr) std::memcpy(rec.data() + fi->offset, v, std::min<size_t>(n, fi->size));
    };
    uint16_t id = static_cast<uint16_t>(f.id);
    put("common_type", &id, 2);
    put("dev", &dev, 4);
    put("sector", &sector, 8);
    put("nr_sector", &nr, 4);
    put("rwbs", rwbs, std::strlen(rwbs));
    put("comm", "fio", 3);
    return rec;
  };
  std::mt19937_64 rng(3);
  std::vector<std::pair<uint64_t, uint32_t>> inflight;
  uint64_t ts = 0;
  auto add = [&](int which, uint32_t dev, uint64_t sector) {
    s.payloads.push_back(layout(which, dev, sector, 8, "R"));
    RawEvent e;
    e.ts = ts += 700;
    e.cpu = which == 2 ? 1 : 0;
    e.pid = 100;
    e.type = static_cast<uint16_t>(s.formats[which].id);
    s.events.push_back(e);
  };
  for (size_t i = 0; i < requests; ++i) {
    const uint32_t dev = MakeDev(7, static_cast<uint32_t>(i % 2));
    const uint64_t sector = (rng() % (1ull << 30)) & ~7ull;
    add(0, dev, sector);
    add(1, dev, sector);
    inflight.emplace_back(sector, dev);
    if (inflight.size() == 32) {
      size_t k = rng() % inflight.size();
      add(2, inflight[k].second, inflight[k].first);
      inflight[k] = inflight.back();
      inflight.pop_back();
    }
  }
  for (size_t i = 0; i < s.events.size(); ++i) {
    s.events[i].payload = ByteView(s.payloads[i].data(), s.payloads[i].size());
  }
  return s;
}

void BM_ReportEndToEnd(benchmark::State& state) {
  const Stream s = MakeStream(bench::Scale(1 << 17, 1 << 10));
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
