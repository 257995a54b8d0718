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

}  // namespace
}  // namespace iotrace
