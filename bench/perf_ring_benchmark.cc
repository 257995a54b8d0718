// PerfRing::Drain over a fake ring (a heap buffer laid out like a perf mmap: metadata page +
// 2^n data pages), as `iotrace record` drains it: a quarter of the ring per wakeup, with and
// without the wrap inside the readable span. Records come from the golden fixture recorded on
// this kernel (tests/fixtures/golden/iotrace_mq.data, its SAMPLE records replayed in order) or
// from a synthetic generator that writes block_rq_* sized samples for any count.
//
// items/s = records drained per second. The "allocs/drain" counter counts heap allocations
// inside the timed loop (operator new is replaced in this binary): the drain path must show 0.
#include <linux/perf_event.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>
#include <string>
#include <vector>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/base/bytes.h"
#include "iotrace/capture/perf_ring.h"
#include "iotrace/formats/perf_data.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// Counting allocator for this benchmark binary only.
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace iotrace::bench {
namespace {

constexpr size_t kPage = 4096;

// Records to replay, back to back, and the ids the ring should know.
struct RecordSet {
  std::vector<uint8_t> bytes;   // whole records, concatenated
  std::vector<size_t> offsets;  // start of each record in `bytes`
  std::vector<uint64_t> ids;
};

// The SAMPLE records of an iotrace-written perf.data fixture (PERF_SAMPLE_IDENTIFIER first,
// so the id sits right after the header, as in the ring). Empty when the fixture is missing.
RecordSet FixtureSamples() {
  RecordSet set;
  std::ifstream in(std::string(IOTRACE_FIXTURES) + "/golden/iotrace_mq.data", std::ios::binary);
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ByteView view(file.data(), file.size());
  perf::FileHeader header;
  if (!LoadAt(view, 0, &header) || header.magic != perf::kMagic) return set;
  ByteView data = view.Sub(header.data.offset, header.data.size);
  for (size_t pos = 0; pos < data.size;) {
    perf::EventHeader h;
    if (!LoadAt(data, pos, &h) || h.size < sizeof(h) || !data.Contains(pos, h.size)) break;
    uint64_t id;
    if (h.type == perf::kRecordSample && LoadAt(data, pos + 8, &id)) {
      set.offsets.push_back(set.bytes.size());
      set.bytes.insert(set.bytes.end(), data.data + pos, data.data + pos + h.size);
      bool known = false;
      for (uint64_t k : set.ids) known = known || k == id;
      if (!known) set.ids.push_back(id);
    }
    pos += h.size;
  }
  return set;
}

// `count` samples shaped like iotrace's: header, IDENTIFIER, TID, TIME, CPU, RAW (u32 size +
// the block_rq_* payload: 72 bytes for insert/issue, 56 for complete, as on 6.18), padded to 8.
RecordSet SyntheticSamples(size_t count) {
  RecordSet set;
  set.ids = {101, 102, 103, 104, 105};
  for (size_t i = 0; i < count; ++i) {
    const uint32_t raw_len = (i % 3 == 2) ? 56 : 72;
    const uint16_t size = static_cast<uint16_t>((8 + 8 + 8 + 8 + 8 + 4 + raw_len + 7) & ~7u);
    std::vector<uint8_t> r(size, 0);
    perf_event_header h{PERF_RECORD_SAMPLE, 0, size};
    const uint64_t id = set.ids[i % 3];
    const uint64_t time = 1000 * i;
    std::memcpy(r.data(), &h, sizeof(h));
    std::memcpy(r.data() + 8, &id, 8);
    std::memcpy(r.data() + 24, &time, 8);
    std::memcpy(r.data() + 40, &raw_len, 4);
    set.offsets.push_back(set.bytes.size());
    set.bytes.insert(set.bytes.end(), r.begin(), r.end());
  }
  return set;
}

// A perf-mmap-shaped buffer holding `fill` bytes of whole records starting at ring position
// `start` (wrapping at the end like the kernel writes). Each Rearm() makes the same bytes
// readable again, so the timed loop measures the drain alone.
class FakeRing {
 public:
  FakeRing(size_t data_size, size_t fill, size_t start, const RecordSet& records)
      : mem_(kPage + data_size), data_size_(data_size), start_(start) {
    uint64_t pos = 0;
    for (size_t i = 0;; i = (i + 1) % records.offsets.size()) {
      const size_t off = records.offsets[i];
      const size_t len = (i + 1 < records.offsets.size() ? records.offsets[i + 1]
                                                         : records.bytes.size()) - off;
      if (pos + len > fill) break;
      for (size_t b = 0; b < len; ++b) {
        mem_[kPage + ((start_ + pos + b) & (data_size_ - 1))] = records.bytes[off + b];
      }
      pos += len;
      ++records_;
    }
    filled_ = pos;
  }
  void* base() { return mem_.data(); }
  void Rearm() {
    auto* meta = reinterpret_cast<perf_event_mmap_page*>(mem_.data());
    meta->data_tail = start_;
    __atomic_store_n(&meta->data_head, start_ + filled_, __ATOMIC_RELEASE);
  }
  size_t records() const { return records_; }
  size_t filled() const { return filled_; }

 private:
  std::vector<uint8_t> mem_;
  size_t data_size_;
  size_t start_;
  size_t filled_ = 0;
  size_t records_ = 0;
};

enum class Source { kFixture, kSynthetic };
enum class Sink { kHeadersOnly, kCopyOut };

// Args: ring pages, wrapped (0/1).
void RunDrain(benchmark::State& state, Source source, Sink sink_kind) {
  // Arguments are registered before main() sees --iotrace_smoke: shrink here.
  const size_t ring_pages =
      Smoke() ? std::min<size_t>(4, state.range(0)) : static_cast<size_t>(state.range(0));
  const bool wrapped = state.range(1) != 0;
  const size_t data_size = ring_pages * kPage;
  const size_t fill = data_size / 4;  // iotrace wakes up when a ring is a quarter full
  RecordSet records = source == Source::kFixture ? FixtureSamples()
                                                 : SyntheticSamples(Scale(100000, 64));
  if (records.offsets.empty()) {
    bench::Fail(state, "fixture tests/fixtures/golden/iotrace_mq.data has no samples");
    return;
  }
  // Wrapped: the readable span starts half a quarter before the end of the ring.
  const size_t start = wrapped ? data_size - fill / 2 : 0;
  FakeRing ring(data_size, fill, start + 7 * data_size, records);
  PerfRing pr(ring.base(), kPage, data_size, records.ids);
  std::vector<uint8_t> out(sink_kind == Sink::kCopyOut ? fill : 0);
  RingCounts counts;
  uint64_t sink_bytes = 0;
  auto sink = [&](ByteView a, ByteView b) -> absl::Status {
    if (sink_kind == Sink::kCopyOut) {  // what the page cache gets from write(2)
      std::memcpy(out.data(), a.data, a.size);
      std::memcpy(out.data() + a.size, b.data, b.size);
    }
    sink_bytes += a.size + b.size;
    return absl::OkStatus();
  };
  ring.Rearm();
  if (!pr.Drain(sink, &counts).ok() || counts.records != ring.records()) {
    bench::Fail(state, "warm-up drain did not see every record");
    return;
  }
  const uint64_t allocs_before = g_allocations.load(std::memory_order_relaxed);
  for (auto _ : state) {
    ring.Rearm();
    absl::Status s = pr.Drain(sink, &counts);
    benchmark::DoNotOptimize(s.ok());
  }
  const uint64_t allocs = g_allocations.load(std::memory_order_relaxed) - allocs_before;
  benchmark::DoNotOptimize(sink_bytes);
  if (counts.bad_headers != 0) bench::Fail(state, "drain counted bad headers");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ring.records()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * ring.filled()));
  state.counters["records/drain"] = static_cast<double>(ring.records());
  state.counters["allocs/drain"] =
      static_cast<double>(allocs) / static_cast<double>(std::max<int64_t>(state.iterations(), 1));
}

void RingArgs(benchmark::internal::Benchmark* b) {
  // The default ring (1024 pages = 4 MiB) and a small one; straight and wrapped spans.
  for (int64_t pages : {int64_t{1024}, int64_t{16}}) {
    for (int64_t wrapped : {0, 1}) b->Args({pages, wrapped});
  }
  b->ArgNames({"pages", "wrapped"});
}

void BM_PerfRingDrainFixture(benchmark::State& state) {
  RunDrain(state, Source::kFixture, Sink::kHeadersOnly);
}
void BM_PerfRingDrainSynthetic(benchmark::State& state) {
  RunDrain(state, Source::kSynthetic, Sink::kHeadersOnly);
}
void BM_PerfRingDrainSyntheticCopyOut(benchmark::State& state) {
  RunDrain(state, Source::kSynthetic, Sink::kCopyOut);
}
BENCHMARK(BM_PerfRingDrainFixture)->Apply(RingArgs);
BENCHMARK(BM_PerfRingDrainSynthetic)->Apply(RingArgs);
BENCHMARK(BM_PerfRingDrainSyntheticCopyOut)->Apply(RingArgs);

}  // namespace
}  // namespace iotrace::bench
