// BlockDecoder::Decode throughput (records/s): raw block tracepoint records -> BlockEvent, as
// the report decodes them (comm only when asked). Inputs: the synthetic generator (insert,
// issue, complete of 4 KiB reads) and the records of recorded fixtures (perf record -a on this
// kernel, and a trace-cmd trace.dat), every record offered, block events or not.
#include <string>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/event/block_event.h"

namespace iotrace {
namespace {

// `expected`: block events among the records (-1: not checked).
void DecodeAll(benchmark::State& state, const bench::RawBlockStream& s, int64_t expected) {
  BlockDecoder decoder(s.formats);
  decoder.set_decode_comm(state.range(0) != 0);
  BlockEvent out;
  uint64_t decoded = 0;
  for (auto _ : state) {
    uint64_t n = 0;
    for (const RawEvent& e : s.events) {
      if (decoder.Decode(e, &out)) ++n;
      benchmark::DoNotOptimize(out);
    }
    if (expected >= 0 && n != static_cast<uint64_t>(expected)) {
      bench::Fail(state, "decoded " + std::to_string(n) + " block events, expected " +
                             std::to_string(expected));
      return;
    }
    decoded += n;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(s.events.size()));
  state.counters["decoded/record"] =
      static_cast<double>(decoded) / static_cast<double>(state.iterations() * s.events.size());
}

void BM_DecodeSynthetic(benchmark::State& state) {
  static const bench::RawBlockStream s = bench::MakeRawBlockStream(bench::Scale(1 << 20, 1 << 10));
  DecodeAll(state, s, static_cast<int64_t>(s.events.size()));  // every record is one
}
BENCHMARK(BM_DecodeSynthetic)->ArgName("comm")->Arg(0)->Arg(1);

void BM_DecodeFixturePerfData(benchmark::State& state) {
  static const bench::RawBlockStream s = bench::LoadRecordedStream("golden/perf_mq.data");
  DecodeAll(state, s, -1);
}
BENCHMARK(BM_DecodeFixturePerfData)->ArgName("comm")->Arg(0)->Arg(1);

void BM_DecodeFixtureTraceDat(benchmark::State& state) {
  static const bench::RawBlockStream s = bench::LoadRecordedStream("tracedat/dd_buffered_v6.dat");
  DecodeAll(state, s, -1);
}
BENCHMARK(BM_DecodeFixtureTraceDat)->ArgName("comm")->Arg(0)->Arg(1);

}  // namespace
}  // namespace iotrace
