// RequestMatcher throughput (events/s): insert -> issue -> complete with a queue depth of 32
// on two devices, completions out of submission order (bench::MakeRawBlockStream's requests).
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/analysis/request_matcher.h"
#include "iotrace/event/block_event.h"

namespace iotrace {
namespace {

class CountingSink : public RequestSampleSink {
 public:
  void OnRequestSample(const RequestSample& s) override {
    sum += s.phases;
    completed += (s.phases & (1u << static_cast<int>(Phase::kD2C))) != 0 ? 1 : 0;
  }
  uint64_t sum = 0;
  uint64_t completed = 0;  // samples with a D2C: one per request
};

// The generator's raw records, decoded once (the matcher's input is decoded events).
std::vector<BlockEvent> MakeStream(size_t requests) {
  const bench::RawBlockStream raw = bench::MakeRawBlockStream(requests);
  BlockDecoder decoder(raw.formats);
  std::vector<BlockEvent> out(raw.events.size());
  for (size_t i = 0; i < raw.events.size(); ++i) {
    if (!decoder.Decode(raw.events[i], &out[i])) std::abort();
  }
  return out;
}

void BM_MatchInsertIssueComplete(benchmark::State& state) {
  const size_t requests = bench::Scale(1 << 18, 1 << 10);
  const std::vector<BlockEvent> events = MakeStream(requests);
  for (auto _ : state) {
    CountingSink sink;
    RequestMatcher m(MatcherOptions(), &sink);
    for (const BlockEvent& e : events) m.OnEvent(e);
    m.Finish();
    benchmark::DoNotOptimize(sink.sum);
    if (sink.completed != requests) {  // every request of the stream completes
      bench::Fail(state, "completed " + std::to_string(sink.completed) + " of " +
                             std::to_string(requests) + " requests");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(events.size()));
}
BENCHMARK(BM_MatchInsertIssueComplete)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace iotrace
