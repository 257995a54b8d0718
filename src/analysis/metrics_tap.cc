#include "iotrace/analysis/metrics_tap.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string_view>

namespace iotrace {
namespace {

constexpr unsigned kRequestEnd =
    PhaseBit(Phase::kD2C) | PhaseBit(Phase::kI2C) | PhaseBit(Phase::kQ2C);

// Prometheus's label values, in Phase order (PhaseName's are upper case, for the report).
constexpr std::string_view kPhaseLabel[kPhaseCount] = {"i2d", "d2c", "i2c", "q2d", "q2c"};

// The native bounds within one power of two, per schema, as frexp mantissas in [0.5, 1):
// 2^(j/2^s - 1) for j = 0..2^s-1, as client_golang's nativeHistogramBounds.
struct NativeBounds {
  std::array<std::vector<double>, kMaxNativeSchema + 1> by_schema;
  NativeBounds() {
    for (int s = 0; s <= kMaxNativeSchema; ++s) {
      const int n = 1 << s;
      for (int j = 0; j < n; ++j) by_schema[s].push_back(std::exp2(double(j) / n - 1.0));
    }
  }
};

const std::vector<double>& BoundsOf(int schema) {
  static const NativeBounds bounds;
  return bounds.by_schema[schema];
}

// client_golang's findBucket for a positive value: the first bound at or above the mantissa,
// plus the buckets of the powers of two below. An exact power of two has mantissa 0.5, which
// bound 0 matches: it closes the bucket below, as "upper-inclusive" asks.
int32_t NativeIndex(double seconds, const std::vector<double>& bounds) {
  int exp = 0;
  const double frac = std::frexp(seconds, &exp);
  const auto at = std::lower_bound(bounds.begin(), bounds.end(), frac);
  return static_cast<int32_t>(at - bounds.begin()) +
         (exp - 1) * static_cast<int32_t>(bounds.size());
}

}  // namespace

int32_t NativeBucketIndex(double seconds, int schema) {
  return NativeIndex(seconds, BoundsOf(schema));
}

int ClassicBucketIndex(double seconds) {
  if (seconds <= 0) return 0;
  // At schema 0 a native bucket is one power of two: (2^(i-1), 2^i], the classic buckets' shape.
  const int i = NativeBucketIndex(seconds, 0);
  return std::clamp(i - kClassicMinExponent, 0, kClassicBounds);
}

MetricsTap::MetricsTap(const MetricsTapOptions& options, DeviceNames* names)
    : options_(options), names_(names) {
  BoundsOf(options_.native_schema);  // built here, not on the first sample
}

MetricsTap::~MetricsTap() = default;

MetricsTap::Slot& MetricsTap::SlotFor(uint32_t dev) {
  if (last_slot_ != nullptr && last_slot_->dev == dev) return *last_slot_;
  auto it = slot_index_.find(dev);
  if (it == slot_index_.end()) {
    auto slot = std::make_unique<Slot>();
    slot->dev = dev;
    slot->device = names_->Label(dev);
    it = slot_index_.emplace(dev, slot.get()).first;
    slots_.push_back(std::move(slot));
  }
  last_slot_ = it->second;
  return *last_slot_;
}

void MetricsTap::Record(Series& series, uint64_t ns) const {
  ++series.count;
  series.sum_ns += ns;
  if (ns == 0) {
    ++series.classic[0];
    ++series.zero_count;
    return;
  }
  const double seconds = static_cast<double>(ns) / 1e9;
  ++series.classic[ClassicBucketIndex(seconds)];
  const int32_t index = NativeIndex(seconds, BoundsOf(options_.native_schema));
  std::vector<uint64_t>& counts = series.native;
  const int32_t size = static_cast<int32_t>(counts.size());
  if (size == 0 || index < series.native_lo || index >= series.native_lo + size) {
    // Grown by a power of two's buckets past the value, so that latencies creeping outward do
    // not grow it at every new bucket.
    const int32_t slack = int32_t{1} << options_.native_schema;
    const int32_t lo = size == 0 ? index - slack : std::min(series.native_lo, index - slack);
    const int32_t hi =
        size == 0 ? index + slack : std::max(series.native_lo + size - 1, index + slack);
    std::vector<uint64_t> grown(static_cast<size_t>(hi - lo + 1), 0);
    std::copy(counts.begin(), counts.end(), grown.begin() + (series.native_lo - lo));
    counts.swap(grown);
    series.native_lo = lo;
  }
  ++counts[static_cast<size_t>(index - series.native_lo)];
}

void MetricsTap::OnSample(const RequestSample& s, unsigned phases) {
  Slot& slot = SlotFor(s.dev);
  const int op = static_cast<int>(s.op);
  for (unsigned bits = phases; bits != 0; bits &= bits - 1) {
    const int p = std::countr_zero(bits);
    std::unique_ptr<Series>& series = slot.series[op][p];
    if (series == nullptr) {
      if (series_count_ >= options_.max_series) {
        ++series_dropped_;
        continue;
      }
      series = std::make_unique<Series>();
      ++series_count_;
    }
    Record(*series, s.Latency(static_cast<Phase>(p)));
  }
  if ((phases & kRequestEnd) == 0) return;
  ++slot.requests[op];
  slot.bytes[op] += s.bytes;
}

void MetricsTap::Snapshot(MetricsSnapshot* out) const {
  std::vector<const Slot*> slots;
  slots.reserve(slots_.size());
  for (const auto& s : slots_) slots.push_back(s.get());
  std::sort(slots.begin(), slots.end(), [](const Slot* a, const Slot* b) {
    return a->device != b->device ? a->device < b->device : a->dev < b->dev;
  });
  size_t latency = 0;
  size_t requests = 0;
  for (const Slot* slot : slots) {
    for (int op = 0; op < kBlockOpCount; ++op) {
      // No write_zeroes yet: BlockOp does not tell it apart (ParseRwbs makes "WZ" kOther, with
      // the zone ops and "N"), so write-zeroes requests are counted under "other".
      const std::string_view operation = BlockOpName(static_cast<BlockOp>(op));
      for (int p = 0; p < kPhaseCount; ++p) {
        const Series* series = slot->series[op][p].get();
        if (series == nullptr) continue;
        if (latency == out->latency.size()) out->latency.emplace_back();
        LatencySeries& l = out->latency[latency++];
        l.device = slot->device;
        l.operation = operation;
        l.phase = kPhaseLabel[p];
        l.count = series->count;
        l.sum_ns = series->sum_ns;
        std::copy_n(series->classic.begin(), kClassicBounds, l.classic.begin());
        l.over = series->classic[kClassicBounds];
        l.native.schema = options_.native_schema;
        l.native.zero_threshold = 0;
        l.native.zero_count = series->zero_count;
        l.native.buckets.clear();
        for (size_t i = 0; i < series->native.size(); ++i) {
          if (series->native[i] == 0) continue;
          l.native.buckets.emplace_back(series->native_lo + static_cast<int32_t>(i),
                                        series->native[i]);
        }
      }
      if (slot->requests[op] == 0) continue;
      if (requests == out->requests.size()) out->requests.emplace_back();
      RequestSeries& r = out->requests[requests++];
      r.device = slot->device;
      r.operation = operation;
      r.requests = slot->requests[op];
      r.bytes = slot->bytes[op];
    }
  }
  out->latency.resize(latency);
  out->requests.resize(requests);
  out->series_dropped = series_dropped_;
}

}  // namespace iotrace
