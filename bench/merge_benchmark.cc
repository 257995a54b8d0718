// SortedRunMerger throughput (records/s): the per-CPU merge of the perf.data reader on its own,
// over an in-memory stream laid out as `perf record -a` writes one: in each round, every CPU's
// ring drain (a sorted run) one after another, then a round mark; the CPUs' times interleave
// record by record. Without round marks the merger falls back to its window. Scales to millions
// of records (4 M; 20 k in smoke mode). The reader's own costs (parsing, the ring) are in
// perf_data_reader_benchmark.
//
// BM_MergeWholeStreams: the same records laid out as a trace.dat holds them (each CPU's stream
// whole, one after another), merged by SortedRunMerger and by a loser tree over the streams
// as TraceDatReader::Read merges them: why trace.dat keeps its own merge (docs/architecture.md).
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/base/loser_tree.h"
#include "iotrace/formats/sorted_run_merger.h"

namespace iotrace {
namespace {

struct Record {
  uint64_t time = 0;
  uint32_t cpu = 0;
  uint32_t round_end = 0;  // 1: a round mark, untimed
};
constexpr uint64_t kRecordBytes = sizeof(Record);

// `records` timed records on `cpus` CPUs, each event ~700 ns after the one before on a random
// CPU, drained every `round_ns` of time.
std::vector<Record> MakeStream(size_t records, uint32_t cpus, bool rounds, uint64_t round_ns) {
  std::mt19937_64 rng(11);
  std::vector<std::vector<Record>> pending(cpus);
  std::vector<Record> out;
  out.reserve(records + records / 16);
  uint64_t t = 0;
  uint64_t round_end = round_ns;
  auto drain = [&] {
    for (auto& p : pending) {
      out.insert(out.end(), p.begin(), p.end());
      p.clear();
    }
    if (rounds) out.push_back(Record{0, 0, 1});
  };
  for (size_t i = 0; i < records; ++i) {
    t += 300 + rng() % 800;
    if (t >= round_end) {
      drain();
      round_end = t + round_ns;
    }
    const uint32_t cpu = static_cast<uint32_t>(rng() % cpus);
    pending[cpu].push_back(Record{t, cpu, 0});
  }
  drain();
  return out;
}

class VectorSource {
 public:
  struct Item {
    uint64_t time = 0;
    uint32_t cpu = 0;
  };

  explicit VectorSource(const std::vector<Record>& records) : r_(records) {}
  uint64_t end() const { return r_.size() * kRecordBytes; }

  ScanKind Scan(uint64_t pos, uint64_t* next, uint64_t* time) {
    const Record& r = r_[pos / kRecordBytes];
    *next = pos + kRecordBytes;
    if (r.round_end != 0) return ScanKind::kRoundEnd;
    *time = r.time;
    return ScanKind::kTimed;
  }
  bool Peek(uint64_t pos, uint64_t* next, Item* item) {
    const Record& r = r_[pos / kRecordBytes];
    *next = pos + kRecordBytes;
    item->time = r.time;
    item->cpu = r.cpu;
    return r.round_end == 0;
  }
  void PeekTimed(uint64_t pos, uint64_t* next, Item* item) { Peek(pos, next, item); }
  void Emit(const Item& item, bool out_of_order) {
    sum += item.time ^ item.cpu;
    late += out_of_order ? 1 : 0;
  }
  void Release(uint64_t below) {}

  uint64_t sum = 0;
  uint64_t late = 0;  // emitted flagged out of order

 private:
  const std::vector<Record>& r_;
};

void BM_MergeRuns(benchmark::State& state) {
  const uint32_t cpus = static_cast<uint32_t>(state.range(0));
  const bool rounds = state.range(1) != 0;
  // ~27 KB rounds of 120-byte samples in the 2-CPU recordings of bench/results/README.md:
  // ~150 us here.
  const std::vector<Record> records =
      MakeStream(bench::Scale(4 << 20, 20000), cpus, rounds, 150000);
  // What a correct merge delivers: every timed record once, in time order (the order is checked
  // by the merger's own out_of_order count: each record against the one emitted before it).
  uint64_t timed = 0;
  uint64_t timed_sum = 0;
  for (const Record& r : records) {
    if (r.round_end == 0) {
      ++timed;
      timed_sum += r.time ^ r.cpu;
    }
  }
  uint64_t emitted = 0;
  MergeCounters last;
  for (auto _ : state) {
    VectorSource source(records);
    SortedRunMerger<VectorSource> merger(&source, 0, source.end());
    merger.Run();
    benchmark::DoNotOptimize(source.sum);
    last = merger.counters();
    emitted += last.emitted;
    if (last.emitted != timed || source.sum != timed_sum || last.out_of_order != 0 ||
        source.late != 0) {
      bench::Fail(state, "the merge lost, repeated or misordered records");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(emitted));
  state.counters["runs"] = static_cast<double>(last.runs);
  state.counters["max_live_runs"] = static_cast<double>(last.max_live_runs);
}
BENCHMARK(BM_MergeRuns)
    ->ArgNames({"cpus", "rounds"})
    ->Args({2, 1})
    ->Args({8, 1})
    ->Args({2, 0})
    ->Args({8, 0})
    ->Unit(benchmark::kMillisecond);

// The timed records of a MakeStream layout regrouped by CPU, each CPU's in time order, the CPUs'
// one after another: a trace.dat's per-CPU streams, minus the pages.
std::vector<Record> WholeStreams(const std::vector<Record>& stream, uint32_t cpus) {
  std::vector<Record> out;
  out.reserve(stream.size());
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    for (const Record& r : stream) {
      if (r.round_end == 0 && r.cpu == cpu) out.push_back(r);
    }
  }
  return out;
}

// The merge of TraceDatReader::Read (its LoserTree) on in-memory streams: one cursor per stream
// on (time, stream order), the top delivered and moved on, every record final at once.
uint64_t TreeMergeStreams(const std::vector<Record>& records, uint32_t cpus, uint64_t* late) {
  struct Cursor {
    const Record* at;
    const Record* end;
  };
  std::vector<Cursor> cursors;
  const Record* p = records.data();
  const Record* const end = p + records.size();
  LoserTree tree;
  tree.Reset(cpus);
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    const Record* begin = p;
    while (p != end && p->cpu == cpu) ++p;
    cursors.push_back(Cursor{begin, p});
    if (begin != p) tree.Set(cpu, begin->time);
  }
  tree.Build();
  uint64_t sum = 0;
  uint64_t last = 0;
  while (!tree.empty()) {
    Cursor& c = cursors[tree.top()];
    sum += c.at->time ^ c.at->cpu;
    *late += c.at->time < last ? 1 : 0;
    last = c.at->time;
    if (++c.at != c.end) {
      tree.ReplaceTop(c.at->time);
    } else {
      tree.PopTop();
    }
  }
  return sum;
}

// merger 0: SortedRunMerger with its default limits; 1: with its window and memory caps lifted
// (what time order takes on this layout: the whole stream held); 2: trace.dat's loser tree.
void BM_MergeWholeStreams(benchmark::State& state) {
  const uint32_t cpus = static_cast<uint32_t>(state.range(0));
  const int how = static_cast<int>(state.range(1));
  const std::vector<Record> records =
      WholeStreams(MakeStream(bench::Scale(4 << 20, 20000), cpus, false, 150000), cpus);
  uint64_t timed_sum = 0;
  for (const Record& r : records) timed_sum += r.time ^ r.cpu;
  uint64_t emitted = 0;
  uint64_t late = 0;
  MergeCounters last;
  for (auto _ : state) {
    uint64_t sum = 0;
    late = 0;
    if (how == 2) {
      sum = TreeMergeStreams(records, cpus, &late);
      emitted += records.size();
    } else {
      MergeLimits limits;
      if (how == 1) {
        limits.window_bytes = limits.window_records = ~uint64_t{0};
        limits.max_span_bytes = ~uint64_t{0};
      }
      VectorSource source(records);
      SortedRunMerger<VectorSource> merger(&source, 0, source.end(), limits);
      merger.Run();
      sum = source.sum;
      late = source.late;
      last = merger.counters();
      emitted += last.emitted;
    }
    benchmark::DoNotOptimize(sum);
    // Every record once; in time order except with the default limits, which cannot hold a
    // stream this long (they say how many came out late).
    if (sum != timed_sum || (how != 0 && late != 0)) {
      bench::Fail(state, "the merge lost, repeated or misordered records");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(emitted));
  state.counters["out_of_order"] = static_cast<double>(late);
  state.counters["held_MiB"] =
      how == 1 ? static_cast<double>(records.size() * kRecordBytes) / (1 << 20) : 0;
}
BENCHMARK(BM_MergeWholeStreams)
    ->ArgNames({"cpus", "merger"})
    ->Args({2, 0})
    ->Args({2, 1})
    ->Args({2, 2})
    ->Args({8, 0})
    ->Args({8, 1})
    ->Args({8, 2})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace iotrace
