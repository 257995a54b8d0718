// The log-linear (HDR style) scale of latency buckets that a Histogram counts in and a report's
// rows list (LatencyBuckets): every power of two of nanoseconds is split into 64 equal buckets,
// so a bucket is at most 1/64 of its values wide. Plain arithmetic, shared by the builder's
// histograms and the report model that the formatters read.
#ifndef IOTRACE_ANALYSIS_BUCKET_SCALE_H_
#define IOTRACE_ANALYSIS_BUCKET_SCALE_H_

#include <cstddef>
#include <cstdint>

namespace iotrace::bucket_scale {

inline constexpr int kSubBucketBits = 6;
inline constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;  // per power of two
// Values up to 2^(kMaxExponent + 1) - 1 ns (about 9.8 hours) get their own bucket; larger ones
// are counted in the last bucket.
inline constexpr int kMaxExponent = 44;
inline constexpr uint64_t kMaxTrackable = (uint64_t{1} << (kMaxExponent + 1)) - 1;
inline constexpr size_t kBucketCount =
    static_cast<size_t>(kMaxExponent - kSubBucketBits) * kSubBuckets + 2 * kSubBuckets;

// Values below 128 have buckets of width 1; above, the exponent e = floor(log2 v) and the 6
// bits after the leading one select the bucket. `v | kSubBuckets` folds the small values into
// the first exponent without a branch. (v <= kMaxTrackable.)
inline size_t Index(uint64_t v) {
  const int e = 63 - __builtin_clzll(v | kSubBuckets);
  const int shift = e - kSubBucketBits;
  return (static_cast<size_t>(shift) << kSubBucketBits) + static_cast<size_t>(v >> shift);
}
inline int ShiftOf(size_t index) {
  const int e_minus_bits = static_cast<int>(index >> kSubBucketBits);
  return e_minus_bits == 0 ? 0 : e_minus_bits - 1;
}
// Bucket `index` holds the values [Low(index), High(index)).
inline uint64_t Low(size_t index) {
  const int shift = ShiftOf(index);
  return static_cast<uint64_t>(index - (static_cast<size_t>(shift) << kSubBucketBits)) << shift;
}
inline uint64_t Width(size_t index) { return uint64_t{1} << ShiftOf(index); }
inline uint64_t High(size_t index) { return Low(index) + Width(index); }

}  // namespace iotrace::bucket_scale

#endif  // IOTRACE_ANALYSIS_BUCKET_SCALE_H_
