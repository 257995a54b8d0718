// The monotonic clock (CLOCK_MONOTONIC) in nanoseconds: for the durations iotrace measures of
// itself (recording windows, the backend check, the report's placement stretches).
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

}  // namespace iotrace

#endif  // IOTRACE_BASE_CLOCK_H_
