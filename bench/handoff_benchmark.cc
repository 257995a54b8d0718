// What handing work from one CPU to another costs on this machine, the figure that decides
// where `iotrace report --threads auto` pairs (docs/report.md, Threads):
//   BM_CrossCpuRoundTrip  one cache line bounced between two threads pinned to CPUs 0 and 1
//                         (items/s = round trips/s; the time per iteration is the round trip)
//   BM_DecodedEventHandOff  64-byte events written by one thread in batches of 8192 and read by
//                         another through SpscQueue, as the report's reading thread hands
//                         decoded events to its pairing thread (items/s = events/s)
// On a 2-vCPU VM both move with where the hypervisor places the vCPUs: a round trip of ~80 ns
// and ~500 ns were both seen on the same VM within an hour.
#include <pthread.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/base/spsc_queue.h"
#include "iotrace/event/block_event.h"

namespace iotrace {
namespace {

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

bool TwoCpus() { return std::thread::hardware_concurrency() >= 2; }

void BM_CrossCpuRoundTrip(benchmark::State& state) {
  if (!TwoCpus() || !PinTo(0)) {
    state.SkipWithError("needs CPUs 0 and 1");
    return;
  }
  alignas(64) std::atomic<uint64_t> ball{0};
  std::atomic<bool> stop{false};
  std::thread other([&] {
    PinTo(1);
    uint64_t expect = 1;
    while (!stop.load(std::memory_order_relaxed)) {
      if (ball.load(std::memory_order_acquire) == expect) {
        ball.store(expect + 1, std::memory_order_release);
        expect += 2;
      }
    }
  });
  uint64_t v = 0;
  for (auto _ : state) {
    ball.store(v + 1, std::memory_order_release);
    while (ball.load(std::memory_order_acquire) != v + 2) {
    }
    v += 2;
  }
  stop.store(true);
  other.join();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CrossCpuRoundTrip)->UseRealTime();

struct Batch {
  static constexpr size_t kCapacity = 8192;
  size_t size = 0;
  std::array<BlockEvent, kCapacity> events;
};

void BM_DecodedEventHandOff(benchmark::State& state) {
  if (!TwoCpus() || !PinTo(0)) {
    state.SkipWithError("needs CPUs 0 and 1");
    return;
  }
  const size_t batches = bench::Scale(256, 4);
  uint64_t events = 0;
  for (auto _ : state) {
    SpscQueue<Batch> queue(4);
    uint64_t sum = 0;
    std::thread pairing([&] {
      PinTo(1);
      while (Batch* b = queue.BeginRead()) {
        for (size_t i = 0; i < b->size; ++i) sum += b->events[i].sector ^ b->events[i].ts;
        queue.EndRead();
      }
    });
    for (size_t k = 0; k < batches; ++k) {
      Batch* b = queue.BeginWrite();
      for (size_t i = 0; i < Batch::kCapacity; ++i) {
        BlockEvent& e = b->events[i];
        e.ts = k * Batch::kCapacity + i;
        e.sector = e.ts * 8;
        e.dev = 7 << 20;
        e.nr_sector = 8;
        e.bytes = 4096;
        e.pid = 100;
      }
      b->size = Batch::kCapacity;
      queue.EndWrite();
    }
    queue.Close();
    pairing.join();
    benchmark::DoNotOptimize(sum);
    events += batches * Batch::kCapacity;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
}
BENCHMARK(BM_DecodedEventHandOff)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace iotrace
