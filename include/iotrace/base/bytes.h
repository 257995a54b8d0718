// Bounds-checked, alignment-free loads from byte buffers (rings, mmapped files, raw records).
// Every read of untrusted bytes in iotrace goes through these helpers: lengths and offsets
// that come from a file or a ring are never trusted.
#ifndef IOTRACE_BASE_BYTES_H_
#define IOTRACE_BASE_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace iotrace {

// A read-only view of bytes that it does not own.
struct ByteView {
  const uint8_t* data = nullptr;
  size_t size = 0;

  constexpr ByteView() = default;
  constexpr ByteView(const uint8_t* d, size_t n) : data(d), size(n) {}
  ByteView(const void* d, size_t n) : data(static_cast<const uint8_t*>(d)), size(n) {}

  bool empty() const { return size == 0; }
  // True when [offset, offset + len) lies inside the view (overflow-safe).
  bool Contains(size_t offset, size_t len) const {
    return offset <= size && len <= size - offset;
  }
  // The sub-view [offset, offset + len), or an empty view when it does not fit.
  ByteView Sub(size_t offset, size_t len) const {
    return Contains(offset, len) ? ByteView(data + offset, len) : ByteView();
  }
  std::string_view AsString() const {
    return std::string_view(reinterpret_cast<const char*>(data), size);
  }
};

// Loads a T at byte offset `offset`; false (and *out untouched) when it does not fit.
template <typename T>
inline bool LoadAt(ByteView view, size_t offset, T* out) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (!view.Contains(offset, sizeof(T))) return false;
  std::memcpy(out, view.data + offset, sizeof(T));
  return true;
}

// Loads an unsigned integer of `size` bytes (1, 2, 4 or 8; little endian host) widened to u64.
inline bool LoadUnsigned(ByteView view, size_t offset, size_t size, uint64_t* out) {
  if (!view.Contains(offset, size)) return false;
  switch (size) {
    case 1: *out = view.data[offset]; return true;
    case 2: { uint16_t v; std::memcpy(&v, view.data + offset, 2); *out = v; return true; }
    case 4: { uint32_t v; std::memcpy(&v, view.data + offset, 4); *out = v; return true; }
    case 8: { std::memcpy(out, view.data + offset, 8); return true; }
    default: return false;
  }
}

// Sequential reader over a ByteView; once a read fails, every later read fails too, so a
// parser can run a series of reads and check ok() once.
class ByteReader {
 public:
  explicit ByteReader(ByteView view) : view_(view) {}

  template <typename T>
  bool Read(T* out) {
    if (!ok_ || !LoadAt(view_, pos_, out)) return ok_ = false;
    pos_ += sizeof(T);
    return true;
  }
  // Returns the next `len` bytes in place (no copy).
  bool ReadBytes(size_t len, ByteView* out) {
    if (!ok_ || !view_.Contains(pos_, len)) return ok_ = false;
    *out = ByteView(view_.data + pos_, len);
    pos_ += len;
    return true;
  }
  // A NUL-terminated string in place (without the NUL).
  bool ReadCString(std::string_view* out) {
    if (!ok_) return false;
    const void* nul = pos_ < view_.size ? std::memchr(view_.data + pos_, 0, view_.size - pos_)
                                        : nullptr;
    if (nul == nullptr) return ok_ = false;
    size_t len = static_cast<const uint8_t*>(nul) - (view_.data + pos_);
    *out = std::string_view(reinterpret_cast<const char*>(view_.data + pos_), len);
    pos_ += len + 1;
    return true;
  }
  bool Skip(size_t len) {
    if (!ok_ || !view_.Contains(pos_, len)) return ok_ = false;
    pos_ += len;
    return true;
  }
  bool Seek(size_t pos) {
    if (!ok_ || pos > view_.size) return ok_ = false;
    pos_ = pos;
    return true;
  }

  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return view_.size - pos_; }
  ByteView view() const { return view_; }

 private:
  ByteView view_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace iotrace

#endif  // IOTRACE_BASE_BYTES_H_
