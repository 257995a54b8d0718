// Writes that go around the writer's caches (non-temporal stores), for data that one thread
// writes once and another thread reads: the decoded events handed to the pairing thread. A
// plain store first takes the cache line into the writer's cache, and on a line the other CPU
// read last time round (the hand-off's batches are reused) that costs a cross-CPU round trip
// per line, 100-450 ns on this VM (bench/handoff_benchmark.cc). A streaming store writes the
// whole line to memory instead, and the reader's sequential loads are prefetched from there.
// `report --threads 3` on 3.18 M events, medians of interleaved runs with the round trip at
// ~450 ns: perf.data 0.15-0.20 s -> 0.12-0.16 s, trace.dat 0.18-0.20 s -> 0.15 s (bench/README.md).
//
// Streaming stores are weakly ordered: StreamFence() must come between them and the release
// that publishes what they wrote.
#ifndef IOTRACE_BASE_NON_TEMPORAL_STORE_H_
#define IOTRACE_BASE_NON_TEMPORAL_STORE_H_

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace iotrace {

// Copies the 64 bytes at `src` to `dst`, which must be 64-byte aligned (one whole cache line,
// so that the write-combining buffer fills and goes out without reading the line).
inline void StreamStore64(const void* src, void* dst) {
#if defined(__SSE2__)
  const auto* s = static_cast<const __m128i*>(src);
  auto* d = static_cast<__m128i*>(dst);
  const __m128i a = _mm_loadu_si128(s);
  const __m128i b = _mm_loadu_si128(s + 1);
  const __m128i c = _mm_loadu_si128(s + 2);
  const __m128i e = _mm_loadu_si128(s + 3);
  _mm_stream_si128(d, a);
  _mm_stream_si128(d + 1, b);
  _mm_stream_si128(d + 2, c);
  _mm_stream_si128(d + 3, e);
#else
  std::memcpy(dst, src, 64);
#endif
}

// Orders the streaming stores before it ahead of every store after it (an atomic release
// does not, for streaming stores).
inline void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace iotrace

#endif  // IOTRACE_BASE_NON_TEMPORAL_STORE_H_
