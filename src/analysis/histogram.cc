#include "iotrace/analysis/histogram.h"

#include <cmath>

namespace iotrace {

namespace {
constexpr size_t kLine = 64 / sizeof(uint64_t);  // buckets per cache line
}  // namespace

Histogram& Histogram::operator=(const Histogram& other) {
  if (this == &other) return *this;
  lo_ = hi_ = 0;
  if (other.lo_ < other.hi_) {
    Widen(other.lo_, other.hi_);
    std::copy(other.counts_.get() + lo_, other.counts_.get() + hi_, counts_.get() + lo_);
  }
  count_ = other.count_;
  sum_ = other.sum_;
  min_ = other.min_;
  max_ = other.max_;
  clamped_ = other.clamped_;
  return *this;
}

void Histogram::Widen(size_t first, size_t last) {
  first = first / kLine * kLine;
  last = std::min(kBucketCount, (last + kLine - 1) / kLine * kLine);
  uint64_t* c = counts_.get();
  if (lo_ == hi_) {
    std::fill(c + first, c + last, 0);
    lo_ = first;
    hi_ = last;
    return;
  }
  if (first < lo_) {
    std::fill(c + first, c + lo_, 0);
    lo_ = first;
  }
  if (last > hi_) {
    std::fill(c + hi_, c + last, 0);
    hi_ = last;
  }
}

void Histogram::RecordN(uint64_t ns, uint64_t n) {
  if (n == 0) return;
  const size_t index = BucketIndex(std::min(ns, kMaxTrackable));
  if (index < lo_ || index >= hi_) Widen(index, index + 1);
  counts_[index] += n;
  count_ += n;
  sum_ += ns * n;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
  if (ns > kMaxTrackable) clamped_ += n;
}

uint64_t Histogram::ValueAtPercentile(double p) const {
  if (count_ == 0) return 0;
  if (!(p > 0)) return min_;
  if (p >= 100) return max_;
  uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  const size_t last = BucketIndex(std::min(max_, kMaxTrackable));
  for (size_t i = BucketIndex(std::min(min_, kMaxTrackable)); i <= last; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      uint64_t mid = BucketLow(i) + (BucketWidth(i) - 1) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

void Histogram::Merge(const Histogram& other) {
  if (other.count_ == 0) return;
  Widen(other.lo_, other.hi_);
  for (size_t i = other.lo_; i < other.hi_; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  clamped_ += other.clamped_;
}

void Histogram::Reset() {
  if (count_ == 0) return;
  std::fill(counts_.get() + lo_, counts_.get() + hi_, 0);
  count_ = 0;
  sum_ = 0;
  min_ = std::numeric_limits<uint64_t>::max();
  max_ = 0;
  clamped_ = 0;
}

}  // namespace iotrace
