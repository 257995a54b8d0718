// RequestMatcher throughput (events/s): insert -> issue -> complete with a queue depth of 32
// on two devices, completions out of submission order, plus flushes.
#include <cstring>
#include <random>
#include <vector>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/request_matcher.h"

namespace iotrace {
namespace {

class CountingSink : public RequestSampleSink {
 public:
  void OnRequestSample(const RequestSample& s) override { sum += s.phases; }
  uint64_t sum = 0;
};

std::vector<BlockEvent> MakeStream(size_t requests) {
  std::vector<BlockEvent> out;
  out.reserve(requests * 3);
  std::mt19937_64 rng(7);
  const size_t kDepth = 32;
  struct Pending { uint64_t sector; uint32_t dev; };
  std::vector<Pending> inflight;
  uint64_t ts = 0;
  auto ev = [&](BlockEventKind kind, uint32_t dev, uint64_t sector, uint32_t nr, BlockOp op) {
    BlockEvent e;
    e.kind = kind;
    e.ts = ts += 500;
    e.dev = dev;
    e.sector = sector;
    e.nr_sector = nr;
    e.bytes = nr * 512;
    e.op = op;
    e.pid = 100;
    std::memcpy(e.comm, "fio", 4);
    out.push_back(e);
  };
  for (size_t i = 0; i < requests; ++i) {
    const uint32_t dev = MakeDev(i % 2 ? 254 : 7, 0);
    const uint64_t sector = (rng() % (1ull << 30)) & ~7ull;
    ev(BlockEventKind::kInsert, dev, sector, 8, BlockOp::kRead);
    ev(BlockEventKind::kIssue, dev, sector, 8, BlockOp::kRead);
    inflight.push_back({sector, dev});
    if (inflight.size() == kDepth) {
      size_t k = rng() % inflight.size();
      ev(BlockEventKind::kComplete, inflight[k].dev, inflight[k].sector, 8, BlockOp::kRead);
      inflight[k] = inflight.back();
      inflight.pop_back();
    }
  }
  for (const Pending& p : inflight) ev(BlockEventKind::kComplete, p.dev, p.sector, 8, BlockOp::kRead);
  return out;
}

void BM_MatchInsertIssueComplete(benchmark::State& state) {
  const std::vector<BlockEvent> events = MakeStream(bench::Scale(1 << 18, 1 << 10));
  for (auto _ : state) {
    CountingSink sink;
    RequestMatcher m(MatcherOptions(), &sink);
    for (const BlockEvent& e : events) m.OnEvent(e);
    m.Finish();
    benchmark::DoNotOptimize(sink.sum);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(events.size()));
}
BENCHMARK(BM_MatchInsertIssueComplete)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace iotrace
