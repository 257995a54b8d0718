// The sleep / wake pair of a word one thread publishes and another waits on, with a flag so
// that the publisher makes the wake-up system call only when the other side sleeps. Used by
// SpscQueue and FileRing's read-ahead. (Not std::atomic::wait: libstdc++'s spins with
// sched_yield before sleeping, thousands of system calls per second when one side is simply
// slower than the other.)
#ifndef IOTRACE_BASE_FUTEX_H_
#define IOTRACE_BASE_FUTEX_H_

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace iotrace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
              std::atomic<uint32_t>::is_always_lock_free);

// Sleeps while `word` still holds `seen`. The flag goes up before the last look at the word
// (both sequentially consistent), and FutexPublish stores the word before it looks at the flag,
// so either this side sees the new value or the other side sees the flag and wakes it. Returns
// at once if the word changed in between; spurious wake-ups happen: callers re-check in a loop.
inline void FutexSleep(std::atomic<uint32_t>& word, uint32_t seen, std::atomic<bool>& sleeps) {
  sleeps.store(true, std::memory_order_seq_cst);
  if (word.load(std::memory_order_seq_cst) == seen) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr,
            nullptr, 0);
  }
  sleeps.store(false, std::memory_order_relaxed);
}

// Stores `value` in `word` and wakes the other side if it sleeps on it.
inline void FutexPublish(std::atomic<uint32_t>& word, uint32_t value, std::atomic<bool>& sleeps) {
  word.store(value, std::memory_order_seq_cst);
  if (sleeps.load(std::memory_order_seq_cst)) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
  }
}

}  // namespace iotrace

#endif  // IOTRACE_BASE_FUTEX_H_
