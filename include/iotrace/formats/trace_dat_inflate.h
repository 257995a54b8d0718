// Decompression of trace.dat version 7 files (trace-cmd's default output: zstd, or zlib).
//
// trace-cmd.dat.v7(5): a compressed metadata or options section holds one block
// ([u32 compressed size][u32 uncompressed size][bytes]); a compressed flyrecord CPU stream holds
// [u32 chunk count] then that many blocks, each a whole number of ring-buffer pages.
//
// The reader walks ring-buffer pages in place, which compressed bytes do not allow: the metadata
// blocks are inflated into memory (kilobytes), the per-CPU streams chunk by chunk into an
// unlinked temporary file that the reader then maps like an uncompressed file. Memory stays at
// one chunk whatever the file size; the disk holds the uncompressed data while the report runs.
#ifndef IOTRACE_FORMATS_TRACE_DAT_INFLATE_H_
#define IOTRACE_FORMATS_TRACE_DAT_INFLATE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"
#include "iotrace/base/fd.h"

namespace iotrace {

// Largest uncompressed block accepted: trace-cmd writes chunks of some pages (80 KiB by default),
// a crafted file must not make us allocate gigabytes for one.
inline constexpr uint32_t kMaxInflatedBlock = uint32_t{64} << 20;

class TraceDatInflater {
 public:
  // "zstd" or "zlib" (the algorithms trace-cmd writes); anything else is Unimplemented.
  static absl::StatusOr<TraceDatInflater> For(std::string_view algorithm);

  std::string_view algorithm() const { return algorithm_; }

  // Inflates the block at the start of `in` into `out` (replacing its contents); `*consumed` is
  // the block's size in `in`, header included. InvalidArgument names what is wrong.
  absl::Status Block(ByteView in, size_t* consumed, std::string* out) const;

  // Inflates one CPU's chunked stream that starts at `in` and appends it to `fd` at its current
  // position, adding the bytes written to `*written` and the bytes read to `*consumed` (chunks
  // before an error are kept). `in` may run past the stream: the chunk count delimits it, as in
  // trace-cmd's reader (trace-cmd 3.1.6 stores the stream's size 4 bytes short). `budget` caps
  // the total uncompressed size (a small file must not fill the disk); `scratch` is reused.
  absl::Status Chunks(ByteView in, int fd, uint64_t budget, uint64_t* written, size_t* consumed,
                      std::string* scratch) const;

 private:
  enum class Kind { kZstd, kZlib };
  explicit TraceDatInflater(Kind kind, std::string_view name) : kind_(kind), algorithm_(name) {}
  Kind kind_;
  std::string_view algorithm_;
};


}  // namespace iotrace

#endif  // IOTRACE_FORMATS_TRACE_DAT_INFLATE_H_
