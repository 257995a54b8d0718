#include "iotrace/formats/perf_inflate.h"

#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/perf_data.h"

namespace iotrace {
namespace {

constexpr uint32_t kCompressionZstd = 1;     // HEADER_COMPRESSED's type
// Bytes gathered before a write, and inflated per ZSTD_decompressStream call.
constexpr size_t kWriteChunk = size_t{1} << 20;
constexpr size_t kInflateStep = size_t{256} << 10;
constexpr size_t kMaxInflatedRecord = size_t{64} << 20;

struct Layout {
  perf::FileHeader header;
  uint64_t data_end = 0;  // within the file
  bool cut = false;       // the data section runs past the end of the file
  bool unfinished = false;
};

// The header and the data section as the reader takes them (perf_data_reader.cc: a killed
// recording's data runs to the end; a cut one's, to the end of the file). False when the
// header is not a whole, plain perf.data header.
bool ReadLayout(ByteView file, Layout* l) {
  if (!LoadAt(file, 0, &l->header) || l->header.magic != perf::kMagic) return false;
  const uint64_t hsize = l->header.size;
  if (hsize != sizeof(perf::FileHeader)) return false;
  perf::FileSection& d = l->header.data;
  if (d.offset < hsize || d.offset > file.size) return false;
  l->unfinished = perf::NeverFinished(file, l->header, hsize);
  if (l->unfinished) {
    l->data_end = file.size;
  } else if (d.size > file.size - d.offset) {
    l->cut = true;
    l->data_end = file.size;
  } else {
    l->data_end = d.offset + d.size;
  }
  return true;
}

}  // namespace

struct PerfRecordInflater::Context {
  ~Context() { ZSTD_freeDCtx(dctx); }
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
};

PerfRecordInflater::PerfRecordInflater(uint64_t compressed_size)
    : ctx_(std::make_unique<Context>()), budget_((uint64_t{64} << 20) + 1024 * compressed_size) {}

PerfRecordInflater::~PerfRecordInflater() = default;

bool PerfRecordInflater::IsCompressed(ByteView data, uint64_t pos, uint32_t type, uint16_t size,
                                      ByteView* payload) {
  constexpr uint64_t kHeader = sizeof(perf::EventHeader);
  if (type == perf::kRecordCompressed) {
    *payload = data.Sub(pos + kHeader, size - kHeader);
    return true;
  }
  if (type == perf::kRecordCompressed2) {
    uint64_t n = 0;
    if (size < kHeader + 8 || !LoadAt(data, pos + kHeader, &n) || n > size - kHeader - 8) {
      *payload = ByteView();  // its stated size runs past the record: damaged
    } else {
      *payload = data.Sub(pos + kHeader + 8, n);
    }
    return true;
  }
  return false;
}

bool PerfRecordInflater::Inflate(ByteView payload, std::string* out) {
  if (payload.data == nullptr || ctx_->dctx == nullptr) return false;
  ZSTD_inBuffer in{payload.data, payload.size, 0};
  std::string& held = held_;  // a record begun in an earlier batch first
  const size_t start = held.size();
  for (;;) {
    // A record holds at most 64 KiB of zstd bytes, a piece of one ring buffer: ~1 MiB inflated
    // at real ratios. Far more is a crafted record, which must not fill the memory.
    if (held.size() - start > kMaxInflatedRecord) return false;
    const size_t at = held.size();
    held.resize(at + kInflateStep);
    ZSTD_outBuffer o{held.data() + at, kInflateStep, 0};
    const size_t rc = ZSTD_decompressStream(ctx_->dctx, &o, &in);
    held.resize(at + o.pos);
    if (ZSTD_isError(rc)) return false;
    inflated_bytes_ += o.pos;
    if (inflated_bytes_ > budget_) return false;
    // Done when the input is used up and the output was not filled (nothing held back).
    if (in.pos == in.size && o.pos < kInflateStep) break;
  }
  ++records_;
  compressed_bytes_ += payload.size;
  // The whole records go out; a record the batch ends inside waits for the next batch, so that
  // perf's own records between batches (round marks) never land inside it, as perf's reader
  // carries it over too.
  size_t whole = 0;
  while (held.size() - whole >= sizeof(perf::EventHeader)) {
    perf::EventHeader h;
    std::memcpy(&h, held.data() + whole, sizeof(h));
    if (h.size < sizeof(h)) return false;  // not a record: damaged
    if (h.size > held.size() - whole) break;
    whole += h.size;
  }
  out->append(held, 0, whole);
  held.erase(0, whole);
  return true;
}

namespace {

class Inflater {
 public:
  Inflater(ByteView file, int fd, PerfInflation* result,
           const std::function<void(uint64_t)>& release)
      : file_(file), fd_(fd), result_(result), release_(release), records_(file.size) {}

  absl::Status Run() {
    if (!ReadLayout(file_, &l_)) {
      return absl::InvalidArgumentError("its header is not one of a whole perf.data file");
    }
    IOTRACE_RETURN_IF_ERROR(ReadCompressionFeature());
    // Everything before the data (header, attrs, ids) as it is; the header is written again
    // at the end.
    IOTRACE_RETURN_IF_ERROR(Append(file_.Sub(0, l_.header.data.offset)));
    IOTRACE_RETURN_IF_ERROR(CopyData());
    IOTRACE_RETURN_IF_ERROR(Flush());
    const uint64_t data_size = written_ - l_.header.data.offset;
    perf::FileHeader h = l_.header;
    h.features[perf::kFeatCompressed / 64] &= ~(uint64_t{1} << (perf::kFeatCompressed % 64));
    // A record the last batch began and none finished: left out, counted with the damage.
    result_->partial_record = records_.held() != 0 ? 1 : 0;
    if (l_.cut) {
      // The data ends early: said as the original says it, a data section past the end.
      h.data.size = data_size + 8;
    } else if (l_.unfinished) {
      // Still a recording that never finished (perf's feature bits say nothing, no table).
      h.data.size = 0;
      for (uint64_t& word : h.features) word = 0;
    } else {
      h.data.size = data_size;
      IOTRACE_RETURN_IF_ERROR(CopyFeatures(&h));
    }
    IOTRACE_RETURN_IF_ERROR(Flush());
    result_->compressed_records = records_.records();
    result_->compressed_bytes = records_.compressed_bytes();
    result_->inflated_bytes = records_.inflated_bytes();
    if (::pwrite(fd_, &h, sizeof(h), 0) != static_cast<ssize_t>(sizeof(h))) {
      return ErrnoError(errno, "write", "the inflated perf.data's header");
    }
    return absl::OkStatus();
  }

 private:
  absl::Status ReadCompressionFeature() {
    if (!perf::HasFeature(l_.header, perf::kFeatCompressed) || l_.cut) return absl::OkStatus();
    const perf::FileSection* s = FeatureSection(perf::kFeatCompressed);
    uint32_t fields[5] = {};  // version, type, level, ratio, mmap_len
    if (s == nullptr || s->size < sizeof(fields) || s->offset > file_.size ||
        !LoadAt(file_, s->offset, &fields)) {
      return absl::OkStatus();
    }
    if (fields[1] != kCompressionZstd) {
      return absl::UnimplementedError(absl::StrFormat(
          "its data is compressed with algorithm %u; only zstd (perf record -z) is supported",
          fields[1]));
    }
    result_->level = static_cast<int>(fields[2]);
    return absl::OkStatus();
  }

  // The entry of `feature` in the feature table (nullptr: not in the file).
  const perf::FileSection* FeatureSection(int feature) {
    if (!perf::HasFeature(l_.header, feature)) return nullptr;
    int index = 0;
    for (int f = 0; f < feature; ++f) index += perf::HasFeature(l_.header, f);
    const uint64_t at = l_.data_end + uint64_t(index) * sizeof(perf::FileSection);
    if (!LoadAt(file_, at, &section_)) return nullptr;
    return &section_;
  }

  absl::Status CopyData() {
    uint64_t pos = l_.header.data.offset;
    uint64_t run = pos;  // start of the records copied as they are, not written yet
    while (pos < l_.data_end) {
      perf::EventHeader h;
      if (!LoadAt(file_, pos, &h) || h.size < sizeof(h) || h.size > l_.data_end - pos) break;
      ByteView payload;
      if (!PerfRecordInflater::IsCompressed(file_, pos, h.type, h.size, &payload)) {
        pos += h.size;
        continue;
      }
      IOTRACE_RETURN_IF_ERROR(Append(file_.Sub(run, pos - run)));
      if (!records_.Inflate(payload, &pending_)) {
        // The stream cannot go on: the data ends here (the caller shows it ending early).
        result_->damaged = 1;
        return absl::OkStatus();
      }
      if (pending_.size() >= kWriteChunk) IOTRACE_RETURN_IF_ERROR(Flush());
      pos += h.size;
      run = pos;
      if (release_) release_(pos);
    }
    // The rest as it is (with a record cut short or damaged at its end, the reader sees it),
    // unless a compressed record is still waiting for its end: then the rest cannot finish it.
    if (records_.held() != 0) return absl::OkStatus();
    return Append(file_.Sub(run, l_.data_end - run));
  }

  // The feature table and sections after the new data, without the compressed feature; a
  // section cut off by the end of the file stays cut off (and those after it beyond the end).
  absl::Status CopyFeatures(perf::FileHeader* h) {
    std::vector<perf::FileSection> in_file;
    for (int f = 0; f < perf::kFeatBits; ++f) {
      if (!perf::HasFeature(*h, f)) continue;
      const perf::FileSection* s = FeatureSection(f);
      if (s == nullptr) {
        // The table itself is cut off: none is written, and the reader counts the features cut.
        return absl::OkStatus();
      }
      in_file.push_back(*s);
    }
    std::vector<perf::FileSection> table(in_file.size());
    uint64_t at = written_ + in_file.size() * sizeof(perf::FileSection);
    for (size_t i = 0; i < in_file.size(); ++i) {
      table[i] = {at, in_file[i].size};
      at += in_file[i].size;
    }
    IOTRACE_RETURN_IF_ERROR(Append(ByteView(table.data(), table.size() * sizeof(table[0]))));
    for (const perf::FileSection& s : in_file) {
      if (s.offset >= file_.size) break;
      IOTRACE_RETURN_IF_ERROR(Append(file_.Sub(s.offset, std::min(s.size, file_.size - s.offset))));
      if (s.size > file_.size - s.offset) break;
    }
    return absl::OkStatus();
  }

  absl::Status Append(ByteView bytes) {
    if (bytes.size == 0) return absl::OkStatus();
    if (pending_.size() + bytes.size > kWriteChunk) {
      IOTRACE_RETURN_IF_ERROR(Flush());
      if (bytes.size >= kWriteChunk) {
        written_ += bytes.size;
        return WriteToScratchFile(fd_, bytes);
      }
    }
    pending_.append(reinterpret_cast<const char*>(bytes.data), bytes.size);
    return absl::OkStatus();
  }

  absl::Status Flush() {
    if (pending_.empty()) return absl::OkStatus();
    IOTRACE_RETURN_IF_ERROR(WriteToScratchFile(fd_, ByteView(pending_.data(), pending_.size())));
    written_ += pending_.size();
    pending_.clear();
    return absl::OkStatus();
  }

  ByteView file_;
  int fd_;
  PerfInflation* result_;
  const std::function<void(uint64_t)>& release_;
  Layout l_;
  perf::FileSection section_;
  PerfRecordInflater records_;
  uint64_t written_ = 0;  // bytes written to fd_ (not counting pending_)
  std::string pending_;
};

}  // namespace

bool PerfDataIsCompressed(ByteView file) {
  Layout l;
  if (!ReadLayout(file, &l)) return false;
  if (!l.unfinished) return perf::HasFeature(l.header, perf::kFeatCompressed);
  // The kernel's records of a -z recording are compressed from the first drain of the rings
  // on, so one comes before the first round mark; only perf's synthesized records (comm, mmap:
  // megabytes on a busy machine) precede it. A killed plain recording (iotrace's own, most
  // often) is not walked to its end: the look stops at its first round mark, or after 64 MiB.
  const uint64_t end = std::min(l.data_end, l.header.data.offset + (uint64_t{64} << 20));
  for (uint64_t pos = l.header.data.offset; pos < end;) {
    perf::EventHeader h;
    if (!LoadAt(file, pos, &h) || h.size < sizeof(h)) return false;
    ByteView payload;
    if (PerfRecordInflater::IsCompressed(file, pos, h.type, h.size, &payload)) return true;
    if (h.type == perf::kRecordFinishedRound) return false;
    pos += h.size;
  }
  return false;
}

absl::Status InflatePerfData(ByteView file, int fd, PerfInflation* result,
                             const std::function<void(uint64_t)>& release) {
  *result = PerfInflation{};
  Inflater inflater(file, fd, result, release);
  return inflater.Run();
}

}  // namespace iotrace
