// The monotonic clock (CLOCK_MONOTONIC) in nanoseconds: for the durations iotrace measures of
// itself (recording windows, the backend check, the report's placement stretches); and the wall
// clock (CLOCK_REALTIME), for names stamped with the date; and the CPU time iotrace itself used,
// for the summaries of record and live.
#ifndef IOTRACE_BASE_CLOCK_H_
#define IOTRACE_BASE_CLOCK_H_

#include <sys/resource.h>
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

// The CPU time this process used so far: all its threads, not its children (a traced command).
struct ProcessCpu {
  double user_s = 0;
  double system_s = 0;
  double total_s() const { return user_s + system_s; }
};

inline ProcessCpu ProcessCpuNow() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return {ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
          ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6};
}

inline double ProcessCpuSeconds() { return ProcessCpuNow().total_s(); }

}  // namespace iotrace

#endif  // IOTRACE_BASE_CLOCK_H_
