// The fuzzer's bytes consumed front to back as values and runs; past the end, zeros and empty
// runs (so that every input, however short, drives a whole case). Shared by the fuzz targets.
#ifndef IOTRACE_TESTS_FUZZ_FUZZ_INPUT_H_
#define IOTRACE_TESTS_FUZZ_FUZZ_INPUT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace iotrace::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  template <typename T>
  T Take() {
    T v{};
    size_t n = std::min(sizeof(T), size_ - pos_);
    std::memcpy(&v, data_ + pos_, n);
    pos_ += n;
    return v;
  }
  // The next `n` bytes (fewer at the end), as a view into the input.
  std::string_view Bytes(size_t n) {
    n = std::min(n, size_ - pos_);
    std::string_view out(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace iotrace::fuzz

#endif  // IOTRACE_TESTS_FUZZ_FUZZ_INPUT_H_
