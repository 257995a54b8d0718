#include "iotrace/capture/perf_ring.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

constexpr size_t kPage = 4096;

// A heap buffer laid out like a perf mmap (metadata page + data), written the way the kernel
// writes: whole records at data_head, wrapping at the end, head published last.
class FakeRing {
 public:
  explicit FakeRing(size_t data_size) : mem_(kPage + data_size), data_size_(data_size) {}
  void* base() { return mem_.data(); }
  perf_event_mmap_page* meta() { return reinterpret_cast<perf_event_mmap_page*>(mem_.data()); }

  void Write(const std::vector<uint8_t>& record) {
    uint64_t head = meta()->data_head;
    for (size_t i = 0; i < record.size(); ++i) {
      mem_[kPage + ((head + i) & (data_size_ - 1))] = record[i];
    }
    meta()->data_head = head + record.size();
    written_.insert(written_.end(), record.begin(), record.end());
  }
  // Pretend earlier data was already consumed up to `pos` (to place records at the wrap).
  void StartAt(uint64_t pos) {
    meta()->data_head = pos;
    meta()->data_tail = pos;
  }
  const std::vector<uint8_t>& written() const { return written_; }

 private:
  std::vector<uint8_t> mem_;
  size_t data_size_;
  std::vector<uint8_t> written_;
};

std::vector<uint8_t> Sample(uint64_t id, uint32_t raw_len) {
  // header, IDENTIFIER, TID, TIME, CPU, RAW(size + bytes), padded to 8.
  uint32_t size = 8 + 8 + 8 + 8 + 8 + 4 + raw_len;
  size = (size + 7) & ~7u;
  std::vector<uint8_t> r(size, 0xAB);
  perf_event_header h{PERF_RECORD_SAMPLE, 0, static_cast<uint16_t>(size)};
  std::memcpy(r.data(), &h, sizeof(h));
  std::memcpy(r.data() + 8, &id, 8);
  std::memcpy(r.data() + 40, &raw_len, 4);
  return r;
}

std::vector<uint8_t> Lost(uint64_t id, uint64_t lost) {
  std::vector<uint8_t> r(24 + 8, 0);  // + a sample_id tail
  perf_event_header h{PERF_RECORD_LOST, 0, static_cast<uint16_t>(r.size())};
  std::memcpy(r.data(), &h, sizeof(h));
  std::memcpy(r.data() + 8, &id, 8);
  std::memcpy(r.data() + 16, &lost, 8);
  return r;
}

struct Collector {
  std::vector<uint8_t> bytes;
  int calls = 0;
  bool second_used = false;
  absl::Status operator()(ByteView a, ByteView b) {
    ++calls;
    bytes.insert(bytes.end(), a.data, a.data + a.size);
    bytes.insert(bytes.end(), b.data, b.data + b.size);
    second_used = second_used || b.size > 0;
    return absl::OkStatus();
  }
};

TEST(PerfRingTest, DrainsWholeRecordsAndCountsSamplesPerId) {
  FakeRing ring(8 * kPage);
  ring.Write(Sample(11, 60));
  ring.Write(Sample(12, 52));
  ring.Write(Sample(11, 60));
  ring.Write(Sample(99, 4));  // an id this ring does not know
  PerfRing pr(ring.base(), kPage, 8 * kPage, {11, 12});
  EXPECT_EQ(pr.Readable(), ring.written().size());
  RingCounts counts;
  Collector sink;
  ASSERT_TRUE(pr.Drain([&](ByteView a, ByteView b) { return sink(a, b); }, &counts).ok());
  EXPECT_EQ(sink.bytes, ring.written());
  EXPECT_FALSE(sink.second_used);
  ASSERT_EQ(counts.samples.size(), 2u);
  EXPECT_EQ(counts.samples[0], 2u);
  EXPECT_EQ(counts.samples[1], 1u);
  EXPECT_EQ(counts.other_samples, 1u);
  EXPECT_EQ(counts.records, 4u);
  EXPECT_EQ(counts.bytes, ring.written().size());
  EXPECT_EQ(ring.meta()->data_tail, ring.meta()->data_head);
  EXPECT_EQ(pr.Readable(), 0u);
}

TEST(PerfRingTest, SplitsAtTheWrapAndCountsARecordWhoseHeaderStraddlesTheEnd) {
  const size_t size = 2 * kPage;
  FakeRing ring(size);
  // Start 4 bytes before the end: the first record's header itself straddles the wrap.
  ring.StartAt(size * 3 - 4);
  for (int i = 0; i < 20; ++i) ring.Write(Sample(i % 2 ? 7 : 8, 36 + 8 * (i % 3)));
  ring.Write(Lost(7, 123));
  PerfRing pr(ring.base(), kPage, size, {7, 8});
  RingCounts counts;
  Collector sink;
  ASSERT_TRUE(pr.Drain([&](ByteView a, ByteView b) { return sink(a, b); }, &counts).ok());
  EXPECT_EQ(sink.calls, 1);
  EXPECT_TRUE(sink.second_used);
  EXPECT_EQ(sink.bytes, ring.written());
  EXPECT_EQ(counts.samples[0], 10u);
  EXPECT_EQ(counts.samples[1], 10u);
  EXPECT_EQ(counts.lost_records, 1u);
  EXPECT_EQ(counts.lost_events, 123u);
  EXPECT_EQ(counts.bad_headers, 0u);
}

TEST(PerfRingTest, RepeatedDrainsAccumulateAndEmptyRingCallsNoSink) {
  FakeRing ring(kPage);
  PerfRing pr(ring.base(), kPage, kPage, {5});
  RingCounts counts;
  Collector sink;
  auto fn = [&](ByteView a, ByteView b) { return sink(a, b); };
  ASSERT_TRUE(pr.Drain(fn, &counts).ok());
  EXPECT_EQ(sink.calls, 0);
  // Many rounds through a one-page ring: every round wraps at a different place.
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 5; ++i) ring.Write(Sample(5, 44));
    ASSERT_TRUE(pr.Drain(fn, &counts).ok());
  }
  EXPECT_EQ(counts.samples[0], 250u);
  EXPECT_EQ(sink.bytes, ring.written());
}

TEST(PerfRingTest, FailedSinkKeepsTheDataAndCountsNothing) {
  FakeRing ring(kPage);
  ring.Write(Sample(5, 44));
  PerfRing pr(ring.base(), kPage, kPage, {5});
  RingCounts counts;
  absl::Status s = pr.Drain(
      [](ByteView, ByteView) { return absl::ResourceExhaustedError("disk full"); }, &counts);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ring.meta()->data_tail, 0u);
  EXPECT_EQ(counts.records, 0u);
  EXPECT_TRUE(counts.samples.empty() || counts.samples[0] == 0u);
  EXPECT_EQ(counts.bytes, 0u);
}

TEST(PerfRingTest, CorruptHeaderStopsCountingWithoutLooping) {
  FakeRing ring(kPage);
  ring.Write(Sample(5, 44));
  std::vector<uint8_t> zero(16, 0);  // a header with size 0
  ring.Write(zero);
  PerfRing pr(ring.base(), kPage, kPage, {5});
  RingCounts counts;
  Collector sink;
  ASSERT_TRUE(pr.Drain([&](ByteView a, ByteView b) { return sink(a, b); }, &counts).ok());
  EXPECT_EQ(counts.samples[0], 1u);
  EXPECT_EQ(counts.bad_headers, 1u);
  EXPECT_EQ(sink.bytes.size(), ring.written().size());
}


// In-place reading: a record is read where it lies, and the kernel gets its space back only
// through Release, up to the records read.
std::vector<uint8_t> Bytes(ByteView v) { return std::vector<uint8_t>(v.data, v.data + v.size); }

TEST(PerfRingReadRecordTest, ReadsRecordsInPlaceAndReleasesOnlyWhatWasRead) {
  FakeRing ring(8 * kPage);
  const std::vector<uint8_t> a = Sample(11, 60), b = Sample(12, 52), c = Sample(11, 4);
  ring.Write(a);
  ring.Write(b);
  PerfRing pr(ring.base(), kPage, 8 * kPage, {11, 12});
  RingCounts counts;
  ByteView rec;
  ASSERT_TRUE(pr.ReadRecord(&rec, &counts));
  EXPECT_EQ(rec.data, static_cast<uint8_t*>(ring.base()) + kPage);  // in the ring: no copy
  EXPECT_EQ(Bytes(rec), a);
  // Read but not released: the kernel still sees the ring's space as taken.
  EXPECT_EQ(ring.meta()->data_tail, 0u);
  ASSERT_TRUE(pr.ReadRecord(&rec, &counts));
  EXPECT_EQ(Bytes(rec), b);
  pr.Release();
  EXPECT_EQ(ring.meta()->data_tail, a.size() + b.size());
  EXPECT_FALSE(pr.ReadRecord(&rec, &counts));
  // A record written after the ring ran dry is found (data_head loaded again).
  ring.Write(c);
  ASSERT_TRUE(pr.ReadRecord(&rec, &counts));
  EXPECT_EQ(Bytes(rec), c);
  EXPECT_EQ(ring.meta()->data_tail, a.size() + b.size());
  EXPECT_EQ(pr.read_position(), ring.written().size());
  pr.Release();
  EXPECT_EQ(ring.meta()->data_tail, ring.written().size());
  EXPECT_EQ(counts.samples[0], 2u);
  EXPECT_EQ(counts.samples[1], 1u);
  EXPECT_EQ(counts.records, 3u);
  EXPECT_EQ(counts.bytes, ring.written().size());
}

TEST(PerfRingReadRecordTest, CopiesOnlyTheRecordThatWraps) {
  const size_t size = kPage;
  FakeRing ring(size);
  const uint8_t* data = static_cast<uint8_t*>(ring.base()) + kPage;
  // 8-aligned as the kernel keeps it: a record that ends exactly at the ring's end, and one
  // right after it at the start of the data. Neither is copied.
  ring.StartAt(size * 5 - 48);
  const std::vector<uint8_t> at_end = Sample(7, 4);  // 48 bytes
  ASSERT_EQ(at_end.size(), 48u);
  ring.Write(at_end);
  ring.Write(Sample(7, 12));
  PerfRing pr(ring.base(), kPage, size, {7});
  RingCounts counts;
  ByteView rec;
  ASSERT_TRUE(pr.ReadRecord(&rec, &counts));
  EXPECT_EQ(rec.data, data + size - 48);
  ASSERT_TRUE(pr.ReadRecord(&rec, &counts));
  EXPECT_EQ(rec.data, data);
  pr.Release();

  // A record of 144 bytes starting 40 bytes before the end: copied whole; the one after it is
  // read in place again.
  ring.StartAt(size * 9 - 40);
  PerfRing wrapping(ring.base(), kPage, size, {7});
  const std::vector<uint8_t> wraps = Sample(7, 100);
  ASSERT_EQ(wraps.size(), 144u);
  ring.Write(wraps);
  ring.Write(at_end);
  ASSERT_TRUE(wrapping.ReadRecord(&rec, &counts));
  EXPECT_FALSE(rec.data >= data && rec.data < data + size);
  EXPECT_EQ(Bytes(rec), wraps);
  ASSERT_TRUE(wrapping.ReadRecord(&rec, &counts));
  EXPECT_EQ(rec.data, data + 144 - 40);
  EXPECT_EQ(Bytes(rec), at_end);
  EXPECT_FALSE(wrapping.ReadRecord(&rec, &counts));
  EXPECT_EQ(ring.meta()->data_tail, size * 9 - 40);
  wrapping.Release();
  EXPECT_EQ(ring.meta()->data_tail, size * 9 - 40 + 144 + 48);
  EXPECT_EQ(counts.samples[0], 4u);
}

TEST(PerfRingReadRecordTest, ManyRoundsThroughASmallRingGiveEveryRecordOnce) {
  FakeRing ring(kPage);
  PerfRing pr(ring.base(), kPage, kPage, {5, 6});
  RingCounts counts;
  std::vector<uint8_t> read;
  ByteView rec;
  for (int round = 0; round < 60; ++round) {
    // Sizes that do not divide the ring: records wrap at ever other places.
    for (int i = 0; i < 7; ++i) ring.Write(Sample(i % 2 ? 5 : 6, 36 + 8 * (i % 4)));
    if (round % 10 == 3) ring.Write(Lost(5, round));
    // The kernel may not write over what was not released: at most one ring's worth pending.
    ASSERT_LE(ring.meta()->data_head - ring.meta()->data_tail, kPage);
    while (pr.ReadRecord(&rec, &counts)) read.insert(read.end(), rec.data, rec.data + rec.size);
    pr.Release();
  }
  EXPECT_EQ(read, ring.written());
  EXPECT_EQ(counts.samples[0] + counts.samples[1], 60u * 7);
  EXPECT_EQ(counts.lost_records, 6u);
  EXPECT_EQ(counts.lost_events, 3u + 13 + 23 + 33 + 43 + 53);
  EXPECT_EQ(counts.bad_headers, 0u);
  EXPECT_EQ(ring.meta()->data_tail, ring.meta()->data_head);
}

TEST(PerfRingReadRecordTest, CorruptHeaderSkipsWhatIsReadableOnce) {
  FakeRing ring(kPage);
  ring.Write(Sample(5, 44));
  ring.Write(std::vector<uint8_t>(16, 0));  // a header with size 0
  PerfRing pr(ring.base(), kPage, kPage, {5});
  RingCounts counts;
  ByteView rec;
  ASSERT_TRUE(pr.ReadRecord(&rec, &counts));
  EXPECT_FALSE(pr.ReadRecord(&rec, &counts));
  EXPECT_EQ(counts.bad_headers, 1u);
  EXPECT_FALSE(pr.ReadRecord(&rec, &counts));  // skipped: no loop on the same bytes
  EXPECT_EQ(counts.bad_headers, 1u);
  pr.Release();
  EXPECT_EQ(ring.meta()->data_tail, ring.written().size());
  // What the kernel writes after it reads as usual.
  ring.Write(Sample(5, 4));
  ASSERT_TRUE(pr.ReadRecord(&rec, &counts));
  EXPECT_EQ(counts.samples[0], 2u);
}

}  // namespace
}  // namespace iotrace
