// Log-linear (HDR style) latency histogram over nanoseconds: every power of two is split into
// 64 equal sub-buckets, so a bucket is at most 1/64 of its values wide and any percentile read
// from it is within 1/128 (0.8%) of the exact value. Exact count, min, max and sum.
//
// The 2560 buckets (20 KiB) are allocated uninitialized, and only the cache lines between the
// lowest and the highest value seen are zeroed and used: a histogram's latencies span a few
// powers of two, so it touches a page or two rather than five, and a report of a thousand
// devices x ops x phases does not zero (nor keep resident) 20 KiB for each.
#ifndef IOTRACE_ANALYSIS_HISTOGRAM_H_
#define IOTRACE_ANALYSIS_HISTOGRAM_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>

namespace iotrace {

class Histogram {
 public:
  static constexpr int kSubBucketBits = 6;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;  // per power of two
  // Values up to 2^(kMaxExponent + 1) - 1 ns (about 9.8 hours) get their own bucket; larger
  // ones are counted in the last bucket (and in clamped()), while min/max/sum stay exact.
  static constexpr int kMaxExponent = 44;
  static constexpr uint64_t kMaxTrackable = (uint64_t{1} << (kMaxExponent + 1)) - 1;
  static constexpr size_t kBucketCount =
      static_cast<size_t>(kMaxExponent - kSubBucketBits) * kSubBuckets + 2 * kSubBuckets;

  Histogram() : counts_(new uint64_t[kBucketCount]) {}
  Histogram(const Histogram& other) : Histogram() { *this = other; }
  Histogram& operator=(const Histogram& other);

  // Values below 128 have buckets of width 1; above, the exponent e = floor(log2 v) and the 6
  // bits after the leading one select the bucket. `v | kSubBuckets` folds the small values into
  // the first exponent without a branch.
  static size_t BucketIndex(uint64_t v) {
    const int e = 63 - __builtin_clzll(v | kSubBuckets);
    const int shift = e - kSubBucketBits;
    return (static_cast<size_t>(shift) << kSubBucketBits) + static_cast<size_t>(v >> shift);
  }
  // Bucket `index` holds the values [BucketLow(index), BucketHigh(index)).
  static uint64_t BucketLow(size_t index) {
    const int shift = ShiftOf(index);
    return static_cast<uint64_t>(index - (static_cast<size_t>(shift) << kSubBucketBits)) << shift;
  }
  static uint64_t BucketHigh(size_t index) { return BucketLow(index) + BucketWidth(index); }
  static uint64_t BucketWidth(size_t index) { return uint64_t{1} << ShiftOf(index); }

  // The hot path: a clz, a shift, an add and four updates; no branch on the value.
  void Record(uint64_t ns) {
    const size_t index = BucketIndex(std::min(ns, kMaxTrackable));
    if (index < lo_ || index >= hi_) [[unlikely]] Widen(index, index + 1);
    ++counts_[index];
    ++count_;
    sum_ += ns;
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
    clamped_ += ns > kMaxTrackable;
  }
  // Records `n` samples of the same value.
  void RecordN(uint64_t ns, uint64_t n);

  uint64_t count() const { return count_; }
  uint64_t sum() const { return sum_; }
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_) / count_; }
  // Samples above kMaxTrackable (counted in the last bucket).
  uint64_t clamped() const { return clamped_; }
  bool empty() const { return count_ == 0; }

  // The value at percentile `p` (0..100): the middle of the bucket that holds the sample of
  // rank ceil(p/100 * count), clamped to [min, max]; p <= 0 gives min, p >= 100 gives max.
  // 0 when empty.
  uint64_t ValueAtPercentile(double p) const;

  void Merge(const Histogram& other);
  void Reset();

  // Calls fn(lo, hi, count) for every non-empty bucket in increasing order; [lo, hi).
  template <typename Fn>
  void ForEachBucket(Fn fn) const {
    if (count_ == 0) return;
    for (size_t i = BucketIndex(std::min(min_, kMaxTrackable)), last = BucketIndex(std::min(max_, kMaxTrackable));
         i <= last; ++i) {
      if (counts_[i] != 0) fn(BucketLow(i), BucketHigh(i), counts_[i]);
    }
  }
  uint64_t CountAt(size_t index) const {
    return index >= lo_ && index < hi_ ? counts_[index] : 0;
  }

 private:
  static int ShiftOf(size_t index) {
    const int e_minus_bits = static_cast<int>(index >> kSubBucketBits);
    return e_minus_bits == 0 ? 0 : e_minus_bits - 1;
  }

  // Zeroes the buckets of [first, last) not in use yet (whole cache lines), and uses them.
  void Widen(size_t first, size_t last);

  // Buckets [lo_, hi_) are in use (zeroed, then counted); the others were never written.
  std::unique_ptr<uint64_t[]> counts_;
  size_t lo_ = 0;
  size_t hi_ = 0;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = std::numeric_limits<uint64_t>::max();
  uint64_t max_ = 0;
  uint64_t clamped_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_HISTOGRAM_H_
