// What `iotrace live --listen` exposes to Prometheus (issue 23): the run's cumulative figures at
// one moment, as plain data. MetricsTap (analysis/metrics_tap.h) fills it from the samples the
// report builder records; the live engine adds its counters and publishes one snapshot at a
// time; scrapes read the latest snapshot, never the engine's state. The writers
// (output/prometheus_format.h) turn it into the text exposition format 0.0.4 or protobuf.
#ifndef IOTRACE_ANALYSIS_METRICS_MODEL_H_
#define IOTRACE_ANALYSIS_METRICS_MODEL_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace iotrace {

// Prometheus's text format 0.0.4, and its delimited protobuf (one length-prefixed MetricFamily
// after another), the only format that carries native histograms: the Content-Type of each.
inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr std::string_view kProtobufContentType =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
    "encoding=delimited";

// Classic buckets: `le` at the powers of two from 2^-20 s (about 954 ns) to 2^5 s (32 s), the
// same on every host (so that `sum by (le)` across hosts is exact), plus +Inf.
inline constexpr int kClassicMinExponent = -20;
inline constexpr int kClassicMaxExponent = 5;
inline constexpr int kClassicBounds = kClassicMaxExponent - kClassicMinExponent + 1;  // 26

// A native (sparse, exponential) histogram of positive values: bucket `index` at schema `s`
// holds (base^(index-1), base^index] seconds, base = 2^(2^-s). Indexes computed from each
// observed value, not converted from other buckets.
struct NativeHistogram {
  int32_t schema = 3;
  double zero_threshold = 0;  // values <= this count in zero_count (0 ns latencies)
  uint64_t zero_count = 0;
  std::vector<std::pair<int32_t, uint64_t>> buckets;  // (index, count), increasing index
};

struct LatencySeries {
  std::string device;     // kernel name ("loop0", "nvme0n1"), or MAJ:MIN when unknown
  std::string operation;  // read, write, flush, discard, write_zeroes, other
  std::string phase;      // i2d, d2c, i2c, q2d, q2c
  uint64_t count = 0;
  uint64_t sum_ns = 0;    // exact; exposed in seconds
  // Per classic bucket (not cumulative): [k] counts values in (2^(k-1+min), 2^(k+min)] s;
  // [0] also holds everything at or below 2^min s; `over` what lies above 2^max s.
  std::array<uint64_t, kClassicBounds> classic{};
  uint64_t over = 0;
  NativeHistogram native;
};

struct RequestSeries {
  std::string device;
  std::string operation;
  uint64_t requests = 0;  // requests completed
  uint64_t bytes = 0;
};

struct DeviceGauge {
  std::string device;
  uint64_t value = 0;
};

struct ReasonCount {
  std::string device;  // "" where the count is not per device
  std::string reason;
  uint64_t count = 0;
};

struct MetricsSnapshot {
  std::vector<LatencySeries> latency;     // by device, operation, phase
  std::vector<RequestSeries> requests;    // by device, operation
  std::vector<DeviceGauge> inflight;      // requests tracked now, by device
  std::vector<ReasonCount> unpaired;      // by device, reason
  std::vector<ReasonCount> lost;          // events lost, by reason (device "")
  uint64_t series_dropped = 0;            // samples of series past --max-series
  std::string version;
  std::string backend;
  double process_cpu_seconds = 0;
  uint64_t process_resident_bytes = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_METRICS_MODEL_H_
