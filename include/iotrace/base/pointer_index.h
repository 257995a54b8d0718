// Objects owned elsewhere, found by a 64-bit key: open addressing, linear probing, at most half
// full, doubled as keys come. For state kept per device and looked up per event (the matcher's
// devices, the report builder's slots): with a thousand disks interleaving, a direct-mapped cache
// of 256 in front of a hash map missed nearly every event (bench/README.md, "report at scale").
// Each key is stored beside its pointer, so that a probe reads the table's own line, not the
// objects of the keys it passes.
// In front of the hash: the keys of the first key's major number (dev_t: MAJOR << 20 | MINOR;
// the builder's slots without --by are dev_t too) with minors below kMaxDirect, in an array of
// pointers by minor. Disks of one driver take consecutive minors (NVMe namespaces 259:0, 1, ...;
// SCSI disks 8:0, 16, ...), so at 1024 devices the lookup reads one line of an 8 KiB array, not
// a probe into 32 KiB of keys and pointers: the profile had the matcher's and the builder's
// lookups as their costliest loads (bench/README.md, "report at scale").
#ifndef IOTRACE_BASE_POINTER_INDEX_H_
#define IOTRACE_BASE_POINTER_INDEX_H_

#include <algorithm>
#include <bit>
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
    const uint64_t minor = key - direct_base_;
    if (minor < direct_.size()) return direct_[minor];
    return FindHashed(key);
  }
  // Adds `value` (not nullptr) under `key`, which is not in the index yet.
  void Insert(uint64_t key, T* value) {
    if (size_ == 0) direct_base_ = key & ~kMinorMask;
    const uint64_t minor = key - direct_base_;
    if (minor < kMaxDirect) {
      if (minor >= direct_.size()) direct_.resize(std::bit_ceil(std::max<uint64_t>(minor + 1, 64)));
      direct_[minor] = value;
    } else {
      InsertHashed(key, value);
    }
    ++size_;
  }
  size_t size() const { return size_; }

 private:
  struct Entry {
    uint64_t key = 0;
    T* value = nullptr;  // nullptr: the entry is free
  };
  static constexpr size_t kInitialSize = 64;
  static constexpr uint64_t kMinorMask = (uint64_t{1} << 20) - 1;
  // At most 32 KiB of pointers: minors of one major from 4096 on go to the hash.
  static constexpr uint64_t kMaxDirect = 4096;

  T* FindHashed(uint64_t key) const {
    const size_t mask = entries_.size() - 1;
    for (size_t at = Hash(key) & mask;; at = (at + 1) & mask) {
      const Entry& e = entries_[at];
      if (e.value == nullptr || e.key == key) return e.value;
    }
  }
  void InsertHashed(uint64_t key, T* value) {
    if ((hashed_ + 1) * 2 > entries_.size()) {
      std::vector<Entry> old(entries_.size() * 2);
      old.swap(entries_);
      for (const Entry& e : old) {
        if (e.value != nullptr) Place(e.key, e.value);
      }
    }
    Place(key, value);
    ++hashed_;
  }
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
  size_t hashed_ = 0;           // keys in entries_
  std::vector<T*> direct_;      // by key - direct_base_ (nullptr: none), a power of two of them
  uint64_t direct_base_ = 0;    // the first key with its minor bits cleared
  size_t size_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_BASE_POINTER_INDEX_H_
