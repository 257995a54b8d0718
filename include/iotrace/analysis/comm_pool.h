// Process names (comm, TASK_COMM_LEN bytes) by a small number, so that a request in flight keeps
// 4 bytes per name instead of 16 (RequestEntry: at 1 M requests in flight, 24 MB less per
// table). Ids are the pool's own: two pools give one name different ids.
#ifndef IOTRACE_ANALYSIS_COMM_POOL_H_
#define IOTRACE_ANALYSIS_COMM_POOL_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "iotrace/event/block_event.h"

namespace iotrace {

class CommPool {
 public:
  CommPool();
  CommPool(const CommPool&) = delete;
  CommPool& operator=(const CommPool&) = delete;

  // The id of `comm` (NUL-terminated within kCommSize bytes; what follows the NUL is not part
  // of it). 0 is the empty name.
  uint32_t Intern(const char* comm) {
    if (comm[0] == '\0') return 0;
    // The cache holds the 16 bytes as they came: equal bytes are the same name whatever
    // follows the NUL, and the common case needs no look for the NUL.
    Key raw;
    std::memcpy(raw.data(), comm, kCommSize);
    CacheEntry& c = cache_[Slot(raw)];
    if (c.key == raw) return c.id;
    return InternMiss(raw, &c);
  }
  // The name of `id` (NUL-terminated): valid until the next Intern.
  const char* Name(uint32_t id) const { return names_[id].data(); }
  // The id in this pool of `other`'s `id`.
  uint32_t From(const CommPool& other, uint32_t id) { return Intern(other.Name(id)); }
  size_t size() const { return names_.size(); }

 private:
  using Key = std::array<uint64_t, 2>;  // a name's 16 bytes
  struct CacheEntry {
    Key key{};
    uint32_t id = 0;
  };
  static size_t Slot(const Key& k) {
    return static_cast<size_t>(((k[0] ^ (k[1] * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL) >>
                               56);
  }
  uint32_t InternMiss(const Key& k, CacheEntry* c);

  // A direct-mapped cache in front of the map: a request's names come from the few processes
  // doing I/O at the time.
  std::array<CacheEntry, 256> cache_{};
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, uint32_t> ids_;
  std::vector<std::array<char, kCommSize + 1>> names_;
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_COMM_POOL_H_
