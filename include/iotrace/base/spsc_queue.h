// A bounded single-producer single-consumer queue of reusable slots, to hand batches of work
// from one thread to another with no lock and no allocation after construction: the producer
// fills the slot BeginWrite() gives it in place and publishes it with EndWrite(); the consumer
// reads the slot BeginRead() gives it and hands it back with EndRead(). A side blocks (a futex
// wait) only while the queue is full / empty, and a side wakes the other (a futex wake) only
// when that one sleeps, so with batches of a few thousand items the synchronisation costs a few
// atomic operations per batch and a system call pair per stall.
//
// The sleeping and waking is futex.h's (a stall here lasts a whole batch, far longer than any
// spin would).
//
// Close() (producer: nothing more will come) and Cancel() (consumer: stop producing) wake the
// other side. The counters carry those flags in their lowest bit, so that a waiter always sees
// the word it sleeps on change.
#ifndef IOTRACE_BASE_SPSC_QUEUE_H_
#define IOTRACE_BASE_SPSC_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "iotrace/base/futex.h"

namespace iotrace {

template <typename T>
class SpscQueue {
 public:
  static constexpr size_t kMaxCapacity = size_t{1} << 20;
  // Room for `capacity` slots (1 to kMaxCapacity), default-constructed once.
  explicit SpscQueue(size_t capacity)
      : capacity_(static_cast<uint32_t>(capacity < 1             ? 1
                                        : capacity > kMaxCapacity ? kMaxCapacity
                                                                  : capacity)),
        slots_(new T[capacity_]) {}
  SpscQueue(const SpscQueue&) = delete;
  SpscQueue& operator=(const SpscQueue&) = delete;

  size_t capacity() const { return capacity_; }

  // Producer: the next free slot, waiting while every slot is full; nullptr once the consumer
  // has cancelled.
  T* BeginWrite() {
    for (;;) {
      const uint32_t h = read_.load(std::memory_order_acquire);
      if (h & kFlag) return nullptr;
      if (((written_ - (h >> 1)) & kCountMask) < capacity_) return &slots_[write_slot_];
      FutexSleep(read_, h, producer_sleeps_);
    }
  }
  // Producer: publishes the slot from BeginWrite().
  void EndWrite() {
    written_ = (written_ + 1) & kCountMask;
    write_slot_ = write_slot_ + 1 == capacity_ ? 0 : write_slot_ + 1;
    FutexPublish(write_, written_ << 1, consumer_sleeps_);
  }
  // Producer: waits until the consumer has handed back every published slot (so that what it
  // did with them happened before this returns); false once the consumer has cancelled.
  bool WaitDrained() {
    for (;;) {
      const uint32_t h = read_.load(std::memory_order_acquire);
      if (h & kFlag) return false;
      if ((h >> 1) == written_) return true;
      FutexSleep(read_, h, producer_sleeps_);
    }
  }
  // Producer: no more slots will come; the consumer drains what is there, then gets nullptr.
  void Close() { FutexPublish(write_, written_ << 1 | kFlag, consumer_sleeps_); }

  // Consumer: the oldest published slot, waiting while there is none; nullptr once the
  // producer has closed the queue and every slot was read.
  T* BeginRead() {
    for (;;) {
      const uint32_t t = write_.load(std::memory_order_acquire);
      if ((t >> 1) != read_count_) return &slots_[read_slot_];
      if (t & kFlag) return nullptr;
      FutexSleep(write_, t, consumer_sleeps_);
    }
  }
  // Consumer: gives the slot from BeginRead() back to the producer.
  void EndRead() {
    read_count_ = (read_count_ + 1) & kCountMask;
    read_slot_ = read_slot_ + 1 == capacity_ ? 0 : read_slot_ + 1;
    FutexPublish(read_, read_count_ << 1, producer_sleeps_);
  }
  // Consumer: stop; the producer's next BeginWrite() returns nullptr.
  void Cancel() { FutexPublish(read_, read_count_ << 1 | kFlag, producer_sleeps_); }

 private:
  static constexpr uint32_t kFlag = 1;
  // Counts are kept modulo 2^31 (they travel shifted left by one, beside the flag): their
  // difference stays exact since it never exceeds the capacity.
  static constexpr uint32_t kCountMask = 0x7fffffff;


  const uint32_t capacity_;
  std::unique_ptr<T[]> slots_;
  // Each side's own count and the words the other side reads, on separate cache lines so that
  // the two threads do not bounce one line between them on every operation.
  alignas(64) std::atomic<uint32_t> write_{0};  // written << 1 | closed
  std::atomic<bool> consumer_sleeps_{false};
  uint32_t written_ = 0;                        // producer only
  uint32_t write_slot_ = 0;
  alignas(64) std::atomic<uint32_t> read_{0};   // read << 1 | cancelled
  std::atomic<bool> producer_sleeps_{false};
  uint32_t read_count_ = 0;                     // consumer only
  uint32_t read_slot_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_BASE_SPSC_QUEUE_H_
