// Shared helpers for the Google Benchmark programs: a --iotrace_smoke flag (tiny inputs, one
// short run each, used by CI so the benchmarks keep building and running).
#ifndef IOTRACE_BENCH_SUPPORT_H_
#define IOTRACE_BENCH_SUPPORT_H_

#include <cstddef>

namespace iotrace::bench {

// True when the program was started with --iotrace_smoke.
bool Smoke();
// `full` normally, `tiny` in smoke mode.
inline size_t Scale(size_t full, size_t tiny) { return Smoke() ? tiny : full; }

}  // namespace iotrace::bench

#endif  // IOTRACE_BENCH_SUPPORT_H_
