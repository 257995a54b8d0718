#include "iotrace/analysis/histogram.h"

#include <cmath>
#include <cstring>

namespace iotrace {

namespace {
constexpr size_t kLine = 64;  // one-byte counts per cache line
static_assert(Histogram::kBucketCount / kLine <= 64, "a bit of carried_lines_ for each line");
static_assert(Histogram::kBucketCount % kLine == 0);
// Carries of histograms in an arena's first chunk (a report of one disk has a handful), and in
// each after it.
constexpr size_t kFirstCarries = 64;
constexpr size_t kCarries = 1024;
// An arena's first chunk of windows (plain pages: a report of one disk has a handful of
// histograms), and each after it (one huge page).
constexpr size_t kFirstWindows = size_t{64} << 10;
constexpr size_t kWindows = size_t{2} << 20;
// A histogram's first window, in lines: most of a report's hold their values in one to four
// (1024 devices: 5,200 of 6,144 groups), the others in 9 to 14.
constexpr size_t kFirstWindowLines = 2;
}  // namespace

uint64_t* HistogramArena::TakeCarries() {
  if (taken_ == capacity_) {
    const size_t capacity = carries_.empty() ? kFirstCarries : kCarries;
    // Uninitialized: pages of it become memory only where a count carries.
    carries_.emplace_back(new uint64_t[capacity * Histogram::kBucketCount]);
    capacity_ = capacity;
    taken_ = 0;
  }
  return carries_.back().get() + taken_++ * Histogram::kBucketCount;
}

uint8_t* HistogramArena::TakeWindow(size_t bytes) {
  window_bytes_ += bytes;
  return static_cast<uint8_t*>(windows_.Allocate(
      bytes, kLine, [this] { return windows_.chunks() == 0 ? kFirstWindows : kWindows; }));
}

Histogram::Histogram(HistogramArena& arena) {
  high_ = arena.TakeCarries();
  arena_ = &arena;
}

void Histogram::OwnStorage() {
  storage_.reset(new uint64_t[kStorageWords]);
  window_ = reinterpret_cast<uint8_t*>(storage_.get());
  base_ = 0;
  cap_ = kBucketCount;
  low_ = window_;
  high_ = storage_.get() + kBucketCount / 8;
}

Histogram& Histogram::operator=(const Histogram& other) {
  if (this == &other) return *this;
  lo_ = span_ = 0;
  carried_lines_ = 0;
  if (other.span_ != 0) {
    Widen(other.lo_, other.lo_ + other.span_);
    std::memcpy(low_, other.low_, span_);
    if (other.carried_lines_ != 0) {
      carried_lines_ = other.carried_lines_;
      std::copy(other.high() + lo_, other.high() + lo_ + span_, high() + lo_);
    }
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
  const size_t hi = lo_ + span_;
  const size_t new_lo = span_ == 0 ? first : std::min(first, lo_);
  const size_t new_hi = span_ == 0 ? last : std::max(last, hi);
  if (window_ == nullptr || new_lo < base_ || new_hi > base_ + cap_) {
    // A window of its own in the arena, twice as large as the last at least, with the room on
    // the side the values went out at (above for the first).
    const size_t need = new_hi - new_lo;
    const size_t cap = std::min(
        kBucketCount, std::max(need, window_ == nullptr ? kFirstWindowLines * kLine : 2 * cap_));
    const size_t base = std::min(
        kBucketCount - cap, span_ != 0 && new_lo < lo_ ? new_hi - std::min(new_hi, cap) : new_lo);
    uint8_t* window = arena_->TakeWindow(cap);
    if (span_ != 0) std::memcpy(window + (lo_ - base), low_, span_);
    window_ = window;
    base_ = base;
    cap_ = cap;
  }
  // The buckets of [from, to) come into use.
  auto use = [this](size_t from, size_t to) {
    std::memset(window_ + (from - base_), 0, to - from);
    if (carried_lines_ != 0) std::fill(high() + from, high() + to, 0);
  };
  if (span_ == 0) {
    use(new_lo, new_hi);
  } else {
    if (new_lo < lo_) use(new_lo, lo_);
    if (new_hi > hi) use(hi, new_hi);
  }
  lo_ = new_lo;
  span_ = new_hi - new_lo;
  low_ = window_ + (lo_ - base_);
}

void Histogram::Carry(size_t index, uint64_t carries) {
  if (carried_lines_ == 0) std::fill(high() + lo_, high() + lo_ + span_, 0);
  carried_lines_ |= uint64_t{1} << (index / kLine);
  high()[index] += carries;
}

void Histogram::AddAt(size_t index, uint64_t n) {
  const uint64_t sum = Low(index) + n;
  Low(index) = static_cast<uint8_t>(sum);
  if (sum > 0xff) Carry(index, sum >> 8);
}

void Histogram::RecordN(uint64_t ns, uint64_t n) {
  if (n == 0) return;
  const size_t index = BucketIndex(std::min(ns, kMaxTrackable));
  if (index - lo_ >= span_) Widen(index, index + 1);
  AddAt(index, n);
  count_ += n;
  sum_ += ns * n;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
  if (ns > kMaxTrackable) clamped_ += n;
}

uint64_t Histogram::ValueAtPercentile(double p) const {
  uint64_t value = 0;
  ValuesAtPercentiles({&p, 1}, {&value, 1});
  return value;
}

void Histogram::CopyCounts(uint8_t* low, uint64_t* high) const {
  if (count_ == 0) return;
  const size_t first = FirstBucket();
  const size_t n = LastBucket() - first + 1;
  std::memcpy(low, &Low(first), n);
  if (carried_lines_ != 0) std::memcpy(high, high_ + first, n * sizeof(uint64_t));
}

size_t Histogram::NonEmptyBuckets() const {
  if (count_ == 0) return 0;
  const size_t first = FirstBucket();
  const size_t last = LastBucket();
  size_t n = 0;
  if (carried_lines_ == 0) {
    for (size_t i = first; i <= last; ++i) n += Low(i) != 0;
  } else {
    for (size_t i = first; i <= last; ++i) n += CountIn(i) != 0;
  }
  return n;
}

void Histogram::ValuesAtPercentiles(std::span<const double> ps, std::span<uint64_t> out) const {
  // Whether to read carries is decided once, not per bucket.
  if (carried_lines_ != 0) {
    WalkPercentiles<true>(ps, out);
  } else {
    WalkPercentiles<false>(ps, out);
  }
}

template <bool kCarried>
void Histogram::WalkPercentiles(std::span<const double> ps, std::span<uint64_t> out) const {
  auto count_in = [this](size_t i) -> uint64_t {
    return kCarried ? Low(i) + (high_[i] << 8) : Low(i);
  };
  // The samples in the line of buckets from `from`: its bytes summed eight at a time in four
  // 16-bit lanes (at most 8 x 510 each), its carries only where the line has any.
  auto line_count = [this](size_t from) {
    constexpr uint64_t kEven = 0x00ff00ff00ff00ffULL;
    uint64_t lanes = 0;
    for (size_t i = from; i < from + kLine; i += 8) {
      uint64_t bytes;
      std::memcpy(&bytes, &Low(i), 8);
      lanes += (bytes & kEven) + ((bytes >> 8) & kEven);
    }
    uint64_t n = (lanes * 0x0001000100010001ULL) >> 48;
    if (kCarried && ((carried_lines_ >> (from / kLine)) & 1) != 0) {
      uint64_t carries = 0;
      for (size_t i = from; i < from + kLine; ++i) carries += high_[i];
      n += carries << 8;
    }
    return n;
  };
  // The walk: bucket i, and `seen` the samples up to and including it. A rank no lower than
  // the one before goes on from where that one stopped; a lower one starts again.
  const size_t first = FirstBucket();
  const size_t last = LastBucket();
  size_t i = first;
  uint64_t seen = count_ == 0 ? 0 : count_in(first);
  uint64_t last_rank = 0;
  for (size_t k = 0; k < ps.size(); ++k) {
    const double p = ps[k];
    if (count_ == 0) {
      out[k] = 0;
      continue;
    }
    if (!(p > 0)) {
      out[k] = min_;
      continue;
    }
    if (p >= 100) {
      out[k] = max_;
      continue;
    }
    uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
    rank = std::clamp<uint64_t>(rank, 1, count_);
    if (rank < last_rank) {
      i = first;
      seen = count_in(first);
    }
    last_rank = rank;
    while (seen < rank && i < last) {
      // A whole line of buckets at a time while the rank lies beyond it.
      if (const size_t next = i + 1; next % kLine == 0 && next + kLine - 1 <= last) {
        if (const uint64_t n = line_count(next); seen + n < rank) {
          seen += n;
          i = next + kLine - 1;
          continue;
        }
      }
      seen += count_in(++i);
    }
    if (seen < rank) {
      out[k] = max_;
      continue;
    }
    const uint64_t mid = BucketLow(i) + (BucketWidth(i) - 1) / 2;
    out[k] = std::clamp(mid, min_, max_);
  }
}

void Histogram::Merge(const Histogram& other) {
  if (other.count_ == 0) return;
  Widen(other.lo_, other.lo_ + other.span_);
  const uint8_t* from = other.low_;
  uint8_t* to = &Low(other.lo_);
  // The usual case, in vector instructions: no count of `other` past a byte, and no sum either
  // (a two-range report of 1024 devices merges 6,144 histograms, byte by byte ~9 ms).
  bool fits = other.carried_lines_ == 0;
  if (fits) {
    unsigned over = 0;
    for (size_t i = 0; i < other.span_; ++i) over |= (unsigned{to[i]} + from[i]) >> 8;
    fits = over == 0;
  }
  if (fits) {
    for (size_t i = 0; i < other.span_; ++i) to[i] = static_cast<uint8_t>(to[i] + from[i]);
  } else {
    for (size_t i = other.lo_; i < other.lo_ + other.span_; ++i) {
      if (const uint64_t n = other.CountIn(i); n != 0) AddAt(i, n);
    }
  }
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  clamped_ += other.clamped_;
}

void Histogram::Reset() {
  if (count_ == 0) return;
  std::memset(low_, 0, span_);
  carried_lines_ = 0;  // (the first carry zeroes the carries of the buckets in use)
  count_ = 0;
  sum_ = 0;
  min_ = std::numeric_limits<uint64_t>::max();
  max_ = 0;
  clamped_ = 0;
}

}  // namespace iotrace
