#include "iotrace/analysis/comm_pool.h"

namespace iotrace {

CommPool::CommPool() {
  names_.emplace_back();  // id 0: "" (the cache's zeroed entries say so too)
}

uint32_t CommPool::InternMiss(const Key& raw, CacheEntry* c) {
  // The name: its bytes up to the NUL, zeroes after it.
  Key name{};
  const char* bytes = reinterpret_cast<const char*>(raw.data());
  std::memcpy(name.data(), bytes, strnlen(bytes, kCommSize));
  auto [it, added] = ids_.try_emplace(std::make_pair(name[0], name[1]), 0);
  if (added) {
    it->second = static_cast<uint32_t>(names_.size());
    std::array<char, kCommSize + 1> text{};
    std::memcpy(text.data(), name.data(), kCommSize);
    names_.push_back(text);
  }
  c->key = raw;
  c->id = it->second;
  return it->second;
}

}  // namespace iotrace
