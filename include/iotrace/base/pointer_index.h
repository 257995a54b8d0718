// Objects owned elsewhere, found by a 64-bit key: open addressing, linear probing, at most half
// full, doubled as keys come. For state kept per device and looked up per event (the matcher's
// devices, the report builder's slots): with a thousand disks interleaving, a direct-mapped cache
// of 256 in front of a hash map missed nearly every event (bench/README.md, "report at scale").
// Each key is stored beside its pointer, so that a probe reads the table's own line, not the
// objects of the keys it passes.
#ifndef IOTRACE_BASE_POINTER_INDEX_H_
#define IOTRACE_BASE_POINTER_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace iotrace {

template <typename T>
class PointerIndex {
 public:
  PointerIndex() : entries_(kInitialSize) {}

  // The object of `key`; nullptr if none was inserted.
  T* Find(uint64_t key) const {
    const size_t mask = entries_.size() - 1;
    for (size_t at = Hash(key) & mask;; at = (at + 1) & mask) {
      const Entry& e = entries_[at];
      if (e.value == nullptr || e.key == key) return e.value;
    }
  }
  // Adds `value` (not nullptr) under `key`, which is not in the index yet.
  void Insert(uint64_t key, T* value) {
    if ((size_ + 1) * 2 > entries_.size()) {
      std::vector<Entry> old(entries_.size() * 2);
      old.swap(entries_);
      for (const Entry& e : old) {
        if (e.value != nullptr) Place(e.key, e.value);
      }
    }
    Place(key, value);
    ++size_;
  }
  size_t size() const { return size_; }

 private:
  struct Entry {
    uint64_t key = 0;
    T* value = nullptr;  // nullptr: the entry is free
  };
  static constexpr size_t kInitialSize = 64;
  // Multiplicative (Fibonacci) hashing: dev_t's minor numbers sit in the low bits, which the
  // product's upper half mixes into every bit taken.
  static size_t Hash(uint64_t key) { return (key * 0x9e3779b97f4a7c15ULL) >> 32; }
  void Place(uint64_t key, T* value) {
    const size_t mask = entries_.size() - 1;
    size_t at = Hash(key) & mask;
    while (entries_[at].value != nullptr) at = (at + 1) & mask;
    entries_[at] = Entry{key, value};
  }

  std::vector<Entry> entries_;  // a power of two of them
  size_t size_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_BASE_POINTER_INDEX_H_
