// Shared helpers for the Google Benchmark programs: a --iotrace_smoke flag (tiny inputs, one
// short run each, used by CI so the benchmarks keep building and running), and a synthetic
// generator of raw block tracepoint records that scales to millions of events.
#ifndef IOTRACE_BENCH_SUPPORT_H_
#define IOTRACE_BENCH_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace::bench {

// True when the program was started with --iotrace_smoke.
bool Smoke();
// `full` normally, `tiny` in smoke mode.
inline size_t Scale(size_t full, size_t tiny) { return Smoke() ? tiny : full; }

// Ends the benchmark with an error that makes the program exit 1 once every benchmark has run
// (a wrong result or an unreadable input is a failure, in CI's smoke run too; a benchmark that
// this machine cannot run says so with state.SkipWithError alone).
void Fail(benchmark::State& state, const std::string& why);
// True once Fail was called.
bool Failed();

// This kernel's format of block:<name> (tests/fixtures/formats/6.18/events/block/<name>/format);
// aborts when the fixture cannot be read or parsed (a benchmark without its input measures
// nothing).
EventFormat LoadBlockFormat(const std::string& name);

// Raw records of block_rq_insert / issue / complete laid out by this kernel's formats, in time
// order: `requests` 4 KiB reads on two devices (7:0 and 7:1), a queue depth of 32, completions
// in random order. Payloads lie back to back in one buffer, each at 4 mod 8 like the raw data
// of a perf sample; `events[i].payload` points into `bytes`.
struct RawBlockStream {
  std::vector<EventFormat> formats;  // insert, issue, complete
  std::vector<uint8_t> bytes;
  std::vector<RawEvent> events;
};
RawBlockStream MakeRawBlockStream(size_t requests);

// Every record of a recorded file (tests/fixtures/<relative>: perf.data or trace.dat), in time
// order, with the file's formats (all of them, not only block ones), payloads copied the same
// way. Aborts when the fixture cannot be read.
RawBlockStream LoadRecordedStream(const std::string& relative);

}  // namespace iotrace::bench

#endif  // IOTRACE_BENCH_SUPPORT_H_
