#include "iotrace/base/spsc_queue.h"

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

struct Batch {
  size_t size = 0;
  uint64_t values[16] = {};
};

TEST(SpscQueueTest, HandsSlotsOverInOrderWithinOneThread) {
  SpscQueue<Batch> q(3);
  for (uint64_t round = 0; round < 10; ++round) {  // wraps the slot ring several times
    for (uint64_t i = 0; i < 3; ++i) {
      Batch* b = q.BeginWrite();
      ASSERT_NE(b, nullptr);
      b->size = 1;
      b->values[0] = round * 3 + i;
      q.EndWrite();
    }
    for (uint64_t i = 0; i < 3; ++i) {
      Batch* b = q.BeginRead();
      ASSERT_NE(b, nullptr);
      EXPECT_EQ(b->values[0], round * 3 + i);
      q.EndRead();
    }
  }
  q.Close();
  EXPECT_EQ(q.BeginRead(), nullptr);
}

TEST(SpscQueueTest, ConsumerDrainsWhatWasPublishedBeforeClose) {
  SpscQueue<Batch> q(4);
  for (uint64_t i = 0; i < 2; ++i) {
    q.BeginWrite()->values[0] = i;
    q.EndWrite();
  }
  q.Close();
  for (uint64_t i = 0; i < 2; ++i) {
    Batch* b = q.BeginRead();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->values[0], i);
    q.EndRead();
  }
  EXPECT_EQ(q.BeginRead(), nullptr);
  EXPECT_EQ(q.BeginRead(), nullptr);  // and stays closed
}

TEST(SpscQueueTest, CancelStopsTheProducer) {
  SpscQueue<Batch> q(2);
  q.BeginWrite();
  q.EndWrite();
  q.Cancel();
  EXPECT_EQ(q.BeginWrite(), nullptr);
}

// Two threads, a queue much smaller than the stream: both sides block and wake many times, and
// every value arrives once, in order.
TEST(SpscQueueTest, TransfersEveryBatchInOrderBetweenThreads) {
  constexpr uint64_t kBatches = 20000;
  SpscQueue<Batch> q(4);
  std::thread producer([&q] {
    uint64_t next = 0;
    for (uint64_t i = 0; i < kBatches; ++i) {
      Batch* b = q.BeginWrite();
      ASSERT_NE(b, nullptr);
      b->size = 1 + i % 16;
      for (size_t k = 0; k < b->size; ++k) b->values[k] = next++;
      q.EndWrite();
    }
    q.Close();
  });
  uint64_t expected = 0, batches = 0;
  bool in_order = true;
  while (Batch* b = q.BeginRead()) {
    for (size_t k = 0; k < b->size; ++k) in_order &= b->values[k] == expected++;
    ++batches;
    q.EndRead();
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(batches, kBatches);
}

// WaitDrained returns only once the consumer has handed back every published slot, and what
// the consumer did with them (here: a plain sum, no atomics) is then visible to the producer,
// which may take over that state and give it back, as the report does when it moves pairing
// between threads.
TEST(SpscQueueTest, WaitDrainedHandsTheConsumersWorkBack) {
  SpscQueue<Batch> q(4);
  uint64_t sum = 0;  // written by the consumer, then by the producer between drains
  std::thread consumer([&] {
    while (Batch* b = q.BeginRead()) {
      for (size_t k = 0; k < b->size; ++k) sum += b->values[k];
      q.EndRead();
    }
  });
  // Failures end the loop rather than the test, so that the consumer is always joined.
  uint64_t expected = 0;
  bool ok = true;
  for (uint64_t round = 0; round < 500 && ok; ++round) {
    for (uint64_t i = 0; i < 1 + round % 7; ++i) {
      Batch* b = q.BeginWrite();
      b->size = 16;
      for (size_t k = 0; k < 16; ++k) expected += b->values[k] = round * 100 + i * 16 + k;
      q.EndWrite();
    }
    EXPECT_TRUE(ok = q.WaitDrained());
    EXPECT_EQ(sum, expected) << "round " << round;
    ok = ok && sum == expected;
    sum += 1;  // the producer's own turn on the shared state
    ++expected;
  }
  q.Close();
  consumer.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(sum, expected);
}

TEST(SpscQueueTest, WaitDrainedReturnsFalseOnceCancelled) {
  SpscQueue<Batch> q(2);
  q.BeginWrite();
  q.EndWrite();
  bool drained = true;
  std::thread producer([&] { drained = q.WaitDrained(); });  // the slot is never read
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.Cancel();
  producer.join();
  EXPECT_FALSE(drained);
}

TEST(SpscQueueTest, CancelWakesAProducerWaitingForRoom) {
  SpscQueue<Batch> q(1);
  q.BeginWrite();
  q.EndWrite();  // full
  bool got_null = false;
  std::thread producer([&] { got_null = q.BeginWrite() == nullptr; });  // blocks
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.Cancel();
  producer.join();
  EXPECT_TRUE(got_null);
}

}  // namespace
}  // namespace iotrace
