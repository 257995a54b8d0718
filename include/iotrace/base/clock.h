// The monotonic clock (CLOCK_MONOTONIC) in nanoseconds: for the durations iotrace measures of
// itself (recording windows, the backend check, the report's placement stretches); and the wall
// clock (CLOCK_REALTIME), for names stamped with the date.
#ifndef IOTRACE_BASE_CLOCK_H_
#define IOTRACE_BASE_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace iotrace {

inline uint64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

inline int64_t RealtimeNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000ll + int64_t(ts.tv_nsec);
}

}  // namespace iotrace

#endif  // IOTRACE_BASE_CLOCK_H_
