// A row's buckets as a view of a histogram's counts (what a report's rows are) against the
// histogram itself, carries and empty buckets included, and as a list of their own.
#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/analysis/histogram.h"
#include "iotrace/analysis/report.h"

namespace iotrace {
namespace {

std::vector<LatencyBucket> BucketsOf(const Histogram& h) {
  std::vector<LatencyBucket> out;
  h.ForEachBucket([&](uint64_t lo, uint64_t hi, uint64_t n) { out.push_back({lo, hi, n}); });
  return out;
}

// The view of `h` that a report row holds: its counts copied into memory of their own.
LatencyBuckets ViewOf(const Histogram& h) {
  const size_t n = h.LastBucket() - h.FirstBucket() + 1;
  auto mem = std::make_shared<std::vector<uint64_t>>(n + n / 8 + 1);
  uint64_t* high = h.carried() ? mem->data() : nullptr;
  auto* low = reinterpret_cast<uint8_t*>(mem->data() + n);
  h.CopyCounts(low, high);
  return LatencyBuckets::OfCounts(mem, low, high, h.FirstBucket(), n, h.NonEmptyBuckets());
}

void ExpectSame(const LatencyBuckets& got, const std::vector<LatencyBucket>& want) {
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got.empty(), want.empty());
  size_t i = 0;
  for (const LatencyBucket& b : got) {
    ASSERT_LT(i, want.size());
    EXPECT_EQ(b.lo_ns, want[i].lo_ns) << i;
    EXPECT_EQ(b.hi_ns, want[i].hi_ns) << i;
    EXPECT_EQ(b.count, want[i].count) << i;
    ++i;
  }
  EXPECT_EQ(i, want.size());
  if (want.empty()) return;
  EXPECT_EQ(got.front().lo_ns, want.front().lo_ns);
  EXPECT_EQ(got.back().lo_ns, want.back().lo_ns);
  EXPECT_EQ(got.back().count, want.back().count);
  EXPECT_EQ(got[want.size() / 2].lo_ns, want[want.size() / 2].lo_ns);
  EXPECT_EQ(got[want.size() / 2].count, want[want.size() / 2].count);
  const std::vector<LatencyBucket> v = got.ToVector();
  ASSERT_EQ(v.size(), want.size());
  for (size_t k = 0; k < v.size(); ++k) EXPECT_EQ(v[k].count, want[k].count);
}

// Counts of one, of exactly 256 (a zero low byte, the count in the carries), of thousands,
// and empty buckets between them: the view visits what ForEachBucket visits.
TEST(LatencyBucketsTest, AViewOfCarriedCountsIsTheHistogramsBuckets) {
  HistogramArena arena;
  Histogram h(arena);
  h.Record(1000);
  h.RecordN(5000, 256);
  h.RecordN(5000'000, 70'000);
  h.Record(9'000'000);
  h.RecordN(40'000, 3);
  ASSERT_TRUE(h.carried());
  const LatencyBuckets view = ViewOf(h);
  EXPECT_TRUE(view.is_view());
  ExpectSame(view, BucketsOf(h));
  EXPECT_EQ(view.size(), 5u);
  EXPECT_EQ(view[1].count, 256u);
  EXPECT_EQ(view[3].count, 70'000u);
}

TEST(LatencyBucketsTest, AViewOfRandomHistogramsIsTheirBuckets) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    Histogram h;
    const int samples = 1 + static_cast<int>(rng() % 3000);
    const uint64_t scale = uint64_t{1} << (rng() % 30);
    for (int i = 0; i < samples; ++i) h.Record(scale + rng() % (scale * 4 + 1));
    ExpectSame(ViewOf(h), BucketsOf(h));
  }
}

// A view outlives the histogram it was copied from; a copy shares its memory.
TEST(LatencyBucketsTest, AViewKeepsItsCountsAfterTheHistogramIsGone) {
  std::vector<LatencyBucket> want;
  LatencyBuckets view;
  {
    auto h = std::make_unique<Histogram>();
    for (uint64_t v = 100; v < 100'000; v += 37) h->Record(v);
    want = BucketsOf(*h);
    view = ViewOf(*h);
  }
  const LatencyBuckets copy = view;
  EXPECT_EQ(copy.memory(), view.memory());
  ExpectSame(copy, want);
}

// Views of histograms made every way a report's are: merged, reset and refilled, copied, and
// with values past the scale's end (counted in its last bucket).
TEST(LatencyBucketsTest, ViewsOfMergedResetCopiedAndClampedHistograms) {
  HistogramArena arena;
  Histogram a(arena), b(arena);
  for (uint64_t v = 1000; v < 200'000; v += 97) a.Record(v);
  b.RecordN(150'000, 300);  // a carry, at a bucket a also has
  b.RecordN(9'000'000, 2);
  a.Merge(b);
  ExpectSame(ViewOf(a), BucketsOf(a));
  const Histogram copy = a;
  ExpectSame(ViewOf(copy), BucketsOf(a));

  Histogram r(arena);
  r.RecordN(5000, 1000);  // carried
  ASSERT_TRUE(r.carried());
  r.Reset();
  EXPECT_FALSE(r.carried());  // a reset histogram's view copies no carries
  r.Record(70);
  r.Record(80'000);
  ExpectSame(ViewOf(r), BucketsOf(r));
  EXPECT_EQ(ViewOf(r).size(), 2u);

  Histogram c;
  c.Record(Histogram::kMaxTrackable + 12345);
  c.Record(Histogram::kMaxTrackable * 3);
  c.Record(10);
  const std::vector<LatencyBucket> want = BucketsOf(c);
  ASSERT_EQ(want.size(), 2u);
  EXPECT_EQ(want.back().count, 2u);
  ExpectSame(ViewOf(c), want);
}

// A moved-from view is empty, as a moved-from vector is in practice; an iterator walks the
// buckets it was made from, so it outlives a move of the LatencyBuckets.
TEST(LatencyBucketsTest, AMovedFromViewIsEmptyAndIteratorsSurviveAMove) {
  Histogram h;
  for (uint64_t v = 1; v < 5000; v += 3) h.Record(v);
  const std::vector<LatencyBucket> want = BucketsOf(h);
  LatencyBuckets from = ViewOf(h);
  LatencyBuckets::Iterator it = from.begin();
  LatencyBuckets to = std::move(from);
  EXPECT_TRUE(from.empty());            // NOLINT(bugprone-use-after-move): what is checked
  EXPECT_FALSE(from.is_view());         // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(from.begin(), from.end());  // NOLINT(bugprone-use-after-move)
  ExpectSame(to, want);
  EXPECT_EQ((*it).lo_ns, want.front().lo_ns);
  ++it;
  EXPECT_EQ((*it).lo_ns, want[1].lo_ns);

  LatencyBuckets list = {{1, 2, 3}};
  LatencyBuckets moved;
  moved = std::move(list);
  EXPECT_TRUE(list.empty());  // NOLINT(bugprone-use-after-move)
  ExpectSame(moved, {{1, 2, 3}});
}

// A list is a list; a push onto a view makes it a list of the view's buckets and the new one.
TEST(LatencyBucketsTest, ListsAndAPushOntoAView) {
  LatencyBuckets list = {{10, 11, 2}, {20, 21, 3}};
  EXPECT_FALSE(list.is_view());
  EXPECT_EQ(list.memory(), nullptr);
  ExpectSame(list, {{10, 11, 2}, {20, 21, 3}});
  LatencyBuckets empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.begin(), empty.end());

  Histogram h;
  h.RecordN(10, 4);
  h.RecordN(50, 1);
  LatencyBuckets b = ViewOf(h);
  b.push_back({1000, 1008, 9});
  EXPECT_FALSE(b.is_view());
  ExpectSame(b, {{10, 11, 4}, {50, 51, 1}, {1000, 1008, 9}});
  std::vector<LatencyBucket> from = {{1, 2, 1}};
  b.assign(from.begin(), from.end());
  ExpectSame(b, from);
}

}  // namespace
}  // namespace iotrace
