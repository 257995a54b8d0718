// Synthetic recordings that stand for big machines, for bench/scale: block requests (insert ->
// issue -> complete, this kernel's 6.18 layouts) on 1..1024 devices from 1..256 CPUs with a
// chosen number in flight, written as `iotrace record` writes them: a perf.data through
// PerfDataWriter (each CPU's ring drained in turn, a round mark after every round of drains),
// or a trace.dat through TraceDatWriter (each CPU's sub-buffers, cut when full or at the
// flush interval). The generator knows what a correct report must count.
#ifndef IOTRACE_BENCH_SYNTH_RECORDING_H_
#define IOTRACE_BENCH_SYNTH_RECORDING_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace iotrace::bench {

struct SynthOptions {
  bool trace_dat = false;  // else perf.data
  uint32_t cpus = 2;
  uint32_t devices = 1;
  uint64_t in_flight = 32;  // requests inserted or issued, not completed, at once
  uint64_t events = 1'000'000;  // rounded down to whole requests (3 events each)
  uint32_t seed = 1;
  // Time between two events anywhere on the machine (drawn from [step/2, 3*step/2)).
  uint64_t step_ns = 100;
  // Each CPU's clock is off the true time by a constant drawn from [-skew, +skew].
  uint64_t skew_ns = 100;
  // One completion in this many runs on a CPU other than the issuing one (0: never).
  uint32_t remote_complete_every = 8;
  // perf.data, as the recorder drains: a round of drains starts once a CPU's ring holds
  // `wake_bytes` (its wake-up watermark, a quarter of the default 4 MiB ring) or the flush
  // interval passed since the last round; CPU c's ring is drained c * drain_ns after the round
  // starts (the others keep filling meanwhile), and a round mark follows the last drain.
  // trace.dat: a CPU's sub-buffer is stored when full, or at the flush interval after its
  // first event.
  uint64_t wake_bytes = uint64_t{1} << 20;
  uint64_t drain_ns = 5'000;
  uint64_t flush_interval_ns = 1'000'000'000;
  std::string formats_dir;  // tests/fixtures/formats/6.18
};

// What a correct report of the file counts.
struct SynthExpected {
  uint64_t events = 0;
  std::array<uint64_t, 3> kinds{};  // insert, issue, complete
  uint64_t remote_completes = 0;  // completions recorded on another CPU than their issue
  uint64_t max_in_flight = 0;
  uint64_t first_ts = 0, last_ts = 0;  // as recorded (skew included)
  // Per device (SynthDev(i)): completed requests, reads and writes; each gives one I2D, one
  // D2C and one I2C sample.
  std::vector<std::array<uint64_t, 2>> requests;
  // Per device: its events of each kind (insert, issue, complete).
  std::vector<std::array<uint64_t, 3>> device_events;
};

// The kernel's dev_t of synthetic device `i` (NVMe's block major, 259).
uint32_t SynthDev(uint32_t i);

// Writes the recording at `path` and fills `expected`.
absl::Status WriteSynthRecording(const std::string& path, const SynthOptions& options,
                                 SynthExpected* expected);

// `expected` as JSON (what bench/scale compares the report's --format json with).
std::string SynthExpectedJson(const SynthOptions& options, const SynthExpected& expected);

}  // namespace iotrace::bench

#endif  // IOTRACE_BENCH_SYNTH_RECORDING_H_
