#include "iotrace/base/non_temporal_store.h"

#include <cstdint>
#include <cstring>
#include <thread>

#include "gtest/gtest.h"
#include "iotrace/base/spsc_queue.h"

namespace iotrace {
namespace {

// The 64 bytes land exactly where they were sent, whatever their values, and nothing beside
// them is written.
TEST(NonTemporalStoreTest, CopiesOneLineAndNothingAround) {
  alignas(64) uint8_t dst[3 * 64];
  std::memset(dst, 0xee, sizeof(dst));
  uint8_t src[64 + 1];  // read from an odd address: the source need not be aligned
  for (int i = 0; i < 65; ++i) src[i] = static_cast<uint8_t>(i * 37 + 1);
  StreamStore64(src + 1, dst + 64);
  StreamFence();
  EXPECT_EQ(std::memcmp(dst + 64, src + 1, 64), 0);
  for (int i = 0; i < 64; ++i) {
    ASSERT_EQ(dst[i], 0xee) << "before, byte " << i;
    ASSERT_EQ(dst[128 + i], 0xee) << "after, byte " << i;
  }
}

// The report's hand-off: lines written with streaming stores into reused batches, fenced, then
// published through the queue; the other thread sees every line whole and in order.
TEST(NonTemporalStoreTest, LinesPublishedAfterTheFenceArriveWholeOnAnotherThread) {
  struct Line {
    uint64_t words[8];
  };
  struct Batch {
    size_t size = 0;
    Line* lines = nullptr;
  };
  constexpr size_t kSlots = 3, kPerBatch = 256, kBatches = 2000;
  alignas(64) static Line storage[kSlots * kPerBatch];
  SpscQueue<Batch> q(kSlots);
  std::thread producer([&] {
    uint64_t next = 0;
    size_t slot = 0;
    for (size_t i = 0; i < kBatches; ++i) {
      Batch* b = q.BeginWrite();
      ASSERT_NE(b, nullptr);
      b->lines = storage + slot * kPerBatch;
      slot = (slot + 1) % kSlots;
      b->size = 1 + i % kPerBatch;
      for (size_t k = 0; k < b->size; ++k) {
        Line l;
        for (uint64_t w = 0; w < 8; ++w) l.words[w] = next * 8 + w;
        ++next;
        StreamStore64(&l, &b->lines[k]);
      }
      StreamFence();
      q.EndWrite();
    }
    q.Close();
  });
  uint64_t expected = 0, batches = 0, bad = 0;
  while (Batch* b = q.BeginRead()) {
    for (size_t k = 0; k < b->size; ++k, ++expected) {
      for (uint64_t w = 0; w < 8; ++w) bad += b->lines[k].words[w] != expected * 8 + w;
    }
    ++batches;
    q.EndRead();
  }
  producer.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(batches, kBatches);
  uint64_t sent = 0;
  for (size_t i = 0; i < kBatches; ++i) sent += 1 + i % kPerBatch;
  EXPECT_EQ(expected, sent);
}

}  // namespace
}  // namespace iotrace
