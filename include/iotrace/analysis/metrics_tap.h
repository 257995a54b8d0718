// What `iotrace live --listen` counts for Prometheus (issue 23): a SampleTap that keeps, for the
// whole run, each device x op x phase's count, exact sum, classic buckets and native
// (exponential) buckets, and each device x op's requests and bytes. Snapshot copies them out as
// a MetricsSnapshot (metrics_model.h) for the writers of output/prometheus_format.h.
#ifndef IOTRACE_ANALYSIS_METRICS_TAP_H_
#define IOTRACE_ANALYSIS_METRICS_TAP_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/analysis/metrics_model.h"
#include "iotrace/sys/device_names.h"

namespace iotrace {

inline constexpr int kMinNativeSchema = 0;
inline constexpr int kMaxNativeSchema = 8;

struct MetricsTapOptions {
  int native_schema = 3;     // --native-schema, kMinNativeSchema..kMaxNativeSchema
  size_t max_series = 1000;  // latency series (device x op x phase) told apart: --max-series
};

// Where one latency falls, in seconds: a positive normal double (0 goes to the zero bucket).
// The native bucket at `schema`: i such that seconds lies in (2^((i-1)/2^s), 2^(i/2^s)]; found as
// Prometheus's client_golang does (frexp, then the bounds of one power of two), so that an exact
// power of two lands in the bucket it closes.
int32_t NativeBucketIndex(double seconds, int schema);
// The classic bucket (LatencySeries::classic): 0..kClassicBounds-1, or kClassicBounds for `over`.
int ClassicBucketIndex(double seconds);

struct NativeSchema;  // the bounds of one schema (metrics_tap.cc)

class MetricsTap : public SampleTap {
 public:
  MetricsTap(const MetricsTapOptions& options, DeviceNames* names);
  ~MetricsTap() override;

  void OnSample(const RequestSample& sample, unsigned phases) override;

  // Fills out->latency (by device name, then operation and phase in enum order),
  // out->requests (the same order) and out->series_dropped; leaves the other fields alone (the
  // live engine's). Reuses the vectors' storage when `out` is reused. Not synchronized: call it
  // between samples, on the thread that shows them; scrapes read the copy, never the tap.
  void Snapshot(MetricsSnapshot* out) const;

 private:
  struct Series {
    uint64_t count = 0;
    uint64_t sum_ns = 0;
    std::array<uint64_t, kClassicBounds + 1> classic{};  // the last is `over`
    uint64_t zero_count = 0;
    // Native counts of indexes native_lo.. : a dense run over the indexes seen so far, grown
    // (rarely: latencies keep to a few powers of two) when a value falls outside it.
    int32_t native_lo = 0;
    std::vector<uint64_t> native;
  };
  struct Slot {
    uint32_t dev = 0;
    std::string device;  // names_->Label(dev), looked up once
    std::array<std::array<std::unique_ptr<Series>, kPhaseCount>, kBlockOpCount> series;
    std::array<uint64_t, kBlockOpCount> requests{};
    std::array<uint64_t, kBlockOpCount> bytes{};
  };
  Slot& SlotFor(uint32_t dev);
  void Record(Series& series, uint64_t ns) const;

  MetricsTapOptions options_;
  DeviceNames* names_;
  const NativeSchema* native_;  // the native bounds at options_.native_schema
  std::vector<std::unique_ptr<Slot>> slots_;
  absl::flat_hash_map<uint32_t, Slot*> slot_index_;
  Slot* last_slot_ = nullptr;
  size_t series_count_ = 0;
  uint64_t series_dropped_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_METRICS_TAP_H_
