#include "iotrace/formats/trace_dat_inflate.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"

namespace iotrace {
namespace {

absl::Status Bad(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("corrupt compressed %s", what));
}

}  // namespace

absl::StatusOr<TraceDatInflater> TraceDatInflater::For(std::string_view algorithm) {
  if (algorithm == "zstd") return TraceDatInflater(Kind::kZstd, "zstd");
  if (algorithm == "zlib") return TraceDatInflater(Kind::kZlib, "zlib");
  return absl::UnimplementedError(
      absl::StrFormat("compression algorithm \"%s\" is not supported (zstd and zlib are)",
                      absl::CHexEscape(absl::string_view(algorithm.data(), algorithm.size()))));
}

absl::Status TraceDatInflater::Block(ByteView in, size_t* consumed, std::string* out) const {
  uint32_t csize = 0, usize = 0;
  if (!LoadAt(in, 0, &csize) || !LoadAt(in, 4, &usize)) return Bad("block header");
  if (!in.Contains(8, csize)) return Bad("block (it runs past its section)");
  if (usize > kMaxInflatedBlock) {
    return Bad(absl::StrFormat("block (it claims %u uncompressed bytes, more than the %u accepted)",
                               usize, kMaxInflatedBlock));
  }
  out->resize(usize);
  const uint8_t* src = in.data + 8;
  if (kind_ == Kind::kZstd) {
    size_t n = ZSTD_decompress(out->data(), usize, src, csize);
    if (ZSTD_isError(n)) return Bad(absl::StrCat("zstd block: ", ZSTD_getErrorName(n)));
    if (n != usize) return Bad("zstd block (shorter than its header says)");
  } else {
    uLongf n = usize;
    int rc = uncompress(reinterpret_cast<Bytef*>(out->data()), &n, src, csize);
    if (rc != Z_OK) return Bad(absl::StrCat("zlib block: ", zError(rc)));
    if (n != usize) return Bad("zlib block (shorter than its header says)");
  }
  *consumed = 8 + size_t{csize};
  return absl::OkStatus();
}

absl::Status TraceDatInflater::Chunks(ByteView in, int fd, uint64_t budget, uint64_t* written,
                                      size_t* consumed, std::string* scratch) const {
  uint32_t count = 0;
  if (!LoadAt(in, 0, &count)) return Bad("trace data (no chunk count)");
  if (count > (in.size - 4) / 8) return Bad("trace data (more chunks than bytes)");
  size_t pos = 4;
  *consumed = pos;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t usize = 0;
    if (LoadAt(in, pos + 4, &usize) && *written + usize > budget) {
      return Bad(absl::StrFormat(
          "trace data (it inflates to more than %u bytes, far beyond any real compression ratio)",
          budget));
    }
    size_t block = 0;
    IOTRACE_RETURN_IF_ERROR(Block(in.Sub(pos, in.size - pos), &block, scratch));
    IOTRACE_RETURN_IF_ERROR(WriteToScratchFile(fd, ByteView(scratch->data(), scratch->size())));
    *written += scratch->size();
    pos += block;
    *consumed = pos;
  }
  return absl::OkStatus();
}

}  // namespace iotrace
