// Arithmetic on whole stats structs made of uint64_t counters only (MatchStats, DecodeStats):
// for adding up what two readers of one file counted apart.
#ifndef IOTRACE_BASE_COUNTERS_H_
#define IOTRACE_BASE_COUNTERS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace iotrace {

// *to += plus - minus, counter by counter. T must hold nothing but uint64_t counters (plain or
// in std::arrays): no other member, so no padding either.
template <typename T>
void AddCounters(T* to, const T& plus, const T& minus) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % sizeof(uint64_t) == 0 &&
                alignof(T) == alignof(uint64_t));
  constexpr size_t kCount = sizeof(T) / sizeof(uint64_t);
  uint64_t t[kCount], p[kCount], m[kCount];
  std::memcpy(t, to, sizeof(T));
  std::memcpy(p, &plus, sizeof(T));
  std::memcpy(m, &minus, sizeof(T));
  for (size_t i = 0; i < kCount; ++i) t[i] += p[i] - m[i];
  std::memcpy(to, t, sizeof(T));
}

}  // namespace iotrace

#endif  // IOTRACE_BASE_COUNTERS_H_
