// Log-linear (HDR style) latency histogram over nanoseconds: every power of two is split into
// 64 equal sub-buckets, so a bucket is at most 1/64 of its values wide and any percentile read
// from it is within 1/128 (0.8%) of the exact value. Exact count, min, max and sum.
//
// A bucket's count is a byte, with what passes 255 carried into a 64-bit array used only by
// histograms that had such a bucket. Only the cache lines between the lowest and the highest
// value seen are zeroed and used. A report of a thousand devices x ops x phases touches its
// histograms at random, a sample at a time: with 8-byte counts a histogram's few hundred
// samples over 700 buckets were spread over 6 KiB and two or three pages, a cache and TLB miss
// each (bench/README.md, "report at scale"); in bytes they are 700 bytes, and a busy histogram
// pays a carry once per 256 samples of a bucket.
//
// A histogram of its own holds all its counts' bytes. One in a HistogramArena holds a window of
// them, the lines in use and some room, side by side with the other histograms' windows, and
// takes a window twice as large when a value falls outside (the old one is left in the arena).
// The 6,144 histograms of a 1024-device report use 2.3 MB of lines: whole, their counts were
// 15.7 MB a thread, fresh memory that this VM clears at ~1.5 ms a MB (bench/README.md).
#ifndef IOTRACE_ANALYSIS_HISTOGRAM_H_
#define IOTRACE_ANALYSIS_HISTOGRAM_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "iotrace/analysis/bucket_scale.h"
#include "iotrace/base/arena.h"
#include "iotrace/base/prefetch.h"

namespace iotrace {

class Histogram;

// Storage for histograms that live no longer than it (a report's groups): their windows of
// counts side by side (in huge pages where the kernel gives them, so that thousands of
// histograms touched at random share a few TLB entries, touched as used); their carries apart
// (address space until a count passes 255).
class HistogramArena {
 public:
  HistogramArena() = default;
  HistogramArena(const HistogramArena&) = delete;
  HistogramArena& operator=(const HistogramArena&) = delete;

  // Bytes of windows handed out (for tests and measurements).
  size_t window_bytes() const { return window_bytes_; }

 private:
  friend class Histogram;
  // Carries for one more histogram (kBucketCount), uninitialized.
  uint64_t* TakeCarries();
  // `bytes` (whole lines) for a window of counts, 64-byte aligned (ArenaChunks::Allocate).
  uint8_t* TakeWindow(size_t bytes);

  ArenaChunks windows_{/*populate=*/false};
  size_t window_bytes_ = 0;
  std::vector<std::unique_ptr<uint64_t[]>> carries_;
  size_t capacity_ = 0;  // histograms' carries in the last chunk
  size_t taken_ = 0;     // of them
};

class alignas(64) Histogram {
 public:
  // The scale's constants (bucket_scale.h), as the histogram's.
  static constexpr int kSubBucketBits = bucket_scale::kSubBucketBits;
  static constexpr uint64_t kSubBuckets = bucket_scale::kSubBuckets;
  // Values past kMaxTrackable are counted in the last bucket (and in clamped()), while
  // min/max/sum stay exact.
  static constexpr int kMaxExponent = bucket_scale::kMaxExponent;
  static constexpr uint64_t kMaxTrackable = bucket_scale::kMaxTrackable;
  static constexpr size_t kBucketCount = bucket_scale::kBucketCount;

  Histogram() { OwnStorage(); }
  // Counts kept in `arena`, which must outlive the histogram (and its copies do not use it).
  explicit Histogram(HistogramArena& arena);
  // Bytes of counts the histogram holds room for (kBucketCount for one of its own).
  size_t window_capacity() const { return cap_; }
  Histogram(const Histogram& other) : Histogram() { *this = other; }
  Histogram& operator=(const Histogram& other);

  // The scale's buckets (bucket_scale.h): bucket `index` holds [BucketLow, BucketHigh).
  static size_t BucketIndex(uint64_t v) { return bucket_scale::Index(v); }
  static uint64_t BucketLow(size_t index) { return bucket_scale::Low(index); }
  static uint64_t BucketHigh(size_t index) { return bucket_scale::High(index); }
  static uint64_t BucketWidth(size_t index) { return bucket_scale::Width(index); }

  // The hot path: a clz, a shift, one range check, a byte incremented, four updates.
  void Record(uint64_t ns) {
    const size_t index = BucketIndex(std::min(ns, kMaxTrackable));
    if (index - lo_ >= span_) [[unlikely]]
      Widen(index, index + 1);  // wraps below lo_
    if (++Low(index) == 0) [[unlikely]]
      Carry(index, 1);
    ++count_;
    sum_ += ns;
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
    clamped_ += ns > kMaxTrackable;
  }
  // Records `n` samples of the same value.
  void RecordN(uint64_t ns, uint64_t n);
  // Asks for the line of counts that Record(ns) will write, ahead of it (a report of a thousand
  // devices records its samples a few samples after it knows them: LatencyReportBuilder). A
  // value outside the buckets in use asks for a line that may not be the histogram's (a
  // prefetch does not fault), and Record then widens.
  void PrefetchBucket(uint64_t ns) const {
    Prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(low_) +
                                           (BucketIndex(std::min(ns, kMaxTrackable)) - lo_)));
  }

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
  // ValueAtPercentile of each of `ps` into `out` (as many), from one walk of the buckets when
  // `ps` ascend (a report's p50, p90, p99 and p99.9 of every group).
  void ValuesAtPercentiles(std::span<const double> ps, std::span<uint64_t> out) const;

  void Merge(const Histogram& other);
  void Reset();

  // Calls fn(lo, hi, count) for every non-empty bucket in increasing order; [lo, hi).
  template <typename Fn>
  void ForEachBucket(Fn fn) const {
    if (count_ == 0) return;
    for (size_t i = FirstBucket(), last = LastBucket(); i <= last; ++i) {
      if (const uint64_t n = CountIn(i); n != 0) fn(BucketLow(i), BucketHigh(i), n);
    }
  }
  // How many buckets ForEachBucket visits (a view of the counts' size(), LatencyBuckets).
  size_t NonEmptyBuckets() const;
  // The buckets ForEachBucket visits lie in [FirstBucket(), LastBucket()] (when not empty).
  size_t FirstBucket() const { return BucketIndex(std::min(min_, kMaxTrackable)); }
  size_t LastBucket() const { return BucketIndex(std::min(max_, kMaxTrackable)); }
  // Whether a bucket's count passed 255 (its carries are kept apart).
  bool carried() const { return carried_lines_ != 0; }
  // The counts of buckets [FirstBucket(), LastBucket()]: their low bytes into `low`, and their
  // carries into `high` when carried() (a count is low + (high << 8)); as many of each.
  void CopyCounts(uint8_t* low, uint64_t* high) const;
  uint64_t CountAt(size_t index) const {
    return index - lo_ < span_ ? CountIn(index) : 0;
  }

 private:
  // The low bytes of the counts, then the carries (count >> 8), in one allocation.
  static constexpr size_t kStorageWords = kBucketCount / 8 + kBucketCount;
  void OwnStorage();
  // The low byte of the count of bucket `index` (in use).
  uint8_t& Low(size_t index) const { return low_[index - lo_]; }
  uint64_t* high() const { return high_; }
  // The count of bucket `index` (in use).
  uint64_t CountIn(size_t index) const {
    return Low(index) + (carried_lines_ != 0 ? high()[index] << 8 : 0);
  }
  template <bool kCarried>
  void WalkPercentiles(std::span<const double> ps, std::span<uint64_t> out) const;
  // Zeroes the buckets of [first, last) not in use yet (whole cache lines), and uses them; a
  // histogram in an arena takes a larger window where they do not fit in its own.
  void Widen(size_t first, size_t last);
  // Adds `carries` x 256 to bucket `index` (in use), whose byte holds the low 8 bits; the
  // carries of the buckets in use are zeroed at the first.
  void Carry(size_t index, uint64_t carries);
  // Adds `n` to bucket `index` (in use).
  void AddAt(size_t index, uint64_t n);

  // Buckets [lo_, lo_ + span_) are in use (zeroed, then counted: bucket i's low byte at
  // low_[i - lo_]), their carries too once any bucket carried (carried_lines_: a bit for each
  // line of 64 buckets that did, for the percentiles); the others were never written. What
  // Record reads and writes comes first and fills the class's first cache line (alignas(64)): a
  // report of a thousand devices records into its histograms at random, and a header over two
  // lines cost a miss more a sample.
  uint8_t* low_ = nullptr;  // the count of bucket lo_ (in window_)
  size_t lo_ = 0;
  size_t span_ = 0;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = std::numeric_limits<uint64_t>::max();
  uint64_t max_ = 0;
  uint64_t clamped_ = 0;
  uint64_t* high_ = nullptr;  // kBucketCount carries, by bucket
  uint64_t carried_lines_ = 0;
  // Room for the counts of buckets [base_, base_ + cap_), whole lines: all of them for a
  // histogram of its own, a window in the arena's memory (none before the first value) else.
  uint8_t* window_ = nullptr;
  size_t base_ = 0;
  size_t cap_ = 0;
  HistogramArena* arena_ = nullptr;
  std::unique_ptr<uint64_t[]> storage_;  // nullptr in an arena
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_HISTOGRAM_H_
