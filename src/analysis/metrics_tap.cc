#include "iotrace/analysis/metrics_tap.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string_view>

namespace iotrace {

// The native bounds within one power of two at one schema s, as frexp mantissas in [0.5, 1):
// 2^(j/2^s - 1) for j = 0..2^s-1, as client_golang's nativeHistogramBounds. `first` cuts
// [0.5, 1) into 2^(s+1) equal steps, each narrower than any bucket, and holds for each the first
// bound at or above its start: the bucket of a mantissa is then that bound or the next one, found
// without client_golang's binary search (8 unpredictable branches at schema 8).
struct NativeSchema {
  std::vector<double> bounds;
  std::vector<uint16_t> first;
  int shift = 0;  // a mantissa's 52 bits >> shift: its step
};

namespace {

constexpr unsigned kRequestEnd =
    PhaseBit(Phase::kD2C) | PhaseBit(Phase::kI2C) | PhaseBit(Phase::kQ2C);

// Prometheus's label values, in Phase order (PhaseName's are upper case, for the report).
constexpr std::string_view kPhaseLabel[kPhaseCount] = {"i2d", "d2c", "i2c", "q2d", "q2c"};

struct NativeSchemas {
  std::array<NativeSchema, kMaxNativeSchema + 1> by_schema;
  NativeSchemas() {
    for (int s = 0; s <= kMaxNativeSchema; ++s) {
      NativeSchema& schema = by_schema[s];
      const int n = 1 << s;
      for (int j = 0; j < n; ++j) schema.bounds.push_back(std::exp2(double(j) / n - 1.0));
      const int steps = 2 * n;
      schema.shift = 52 - (s + 1);
      for (int t = 0; t < steps; ++t) {
        const double start = 0.5 + 0.5 * t / steps;
        schema.first.push_back(static_cast<uint16_t>(
            std::lower_bound(schema.bounds.begin(), schema.bounds.end(), start) -
            schema.bounds.begin()));
      }
    }
  }
};

const NativeSchema& SchemaOf(int schema) {
  static const NativeSchemas schemas;
  return schemas.by_schema[schema];
}

// Both buckets of a positive value.
struct Buckets {
  int32_t native;
  int classic;
};

// The native index as client_golang's findBucket: frexp's mantissa (in [0.5, 1)) and exponent,
// the first bound at or above the mantissa, plus the buckets of the powers of two below. An
// exact power of two has mantissa 0.5, which bound 0 matches: it closes the bucket below, as
// "upper-inclusive" asks. The classic index is the schema-0 one, (2^(i-1), 2^i], counted from
// 2^kClassicMinExponent and clamped. frexp is read off the bits: `seconds` is a positive normal
// double (a latency of 1 ns is 1e-9 s, far from the subnormals).
Buckets Locate(double seconds, const NativeSchema& schema) {
  const uint64_t bits = std::bit_cast<uint64_t>(seconds);
  const int exp = static_cast<int>(bits >> 52) - 1022;
  const uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);
  const double frac = std::bit_cast<double>(mantissa | uint64_t{1022} << 52);
  const size_t n = schema.bounds.size();
  size_t j = schema.first[mantissa >> schema.shift];
  if (j < n && schema.bounds[j] < frac) ++j;  // the step holds at most one bound
  const int power = exp - (mantissa == 0 ? 1 : 0);
  return {static_cast<int32_t>(j) + (exp - 1) * static_cast<int32_t>(n),
          std::clamp(power - kClassicMinExponent, 0, kClassicBounds)};
}

}  // namespace

int32_t NativeBucketIndex(double seconds, int schema) {
  return Locate(seconds, SchemaOf(schema)).native;
}

int ClassicBucketIndex(double seconds) {
  return seconds <= 0 ? 0 : Locate(seconds, SchemaOf(0)).classic;
}

MetricsTap::MetricsTap(const MetricsTapOptions& options, DeviceNames* names)
    : options_(options), names_(names), native_(&SchemaOf(options.native_schema)) {}

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
  const Buckets at = Locate(static_cast<double>(ns) / 1e9, *native_);
  ++series.classic[at.classic];
  const int32_t index = at.native;
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
