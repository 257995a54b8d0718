// perf.data compressed by `perf record -z` (zstd), made into a plain perf.data for the reader.
//
// With -z, perf writes the kernel's records in PERF_RECORD_COMPRESSED records (type 81: an
// 8-byte header, then zstd bytes, the record not padded to 8) or, in perf from 2025 on,
// PERF_RECORD_COMPRESSED2 (type 83: the header, a u64 with the size of the zstd bytes, then the
// bytes, padded to 8). Their bytes are one zstd stream across the records: a record of the
// stream may begin in one COMPRESSED record and end in the next. Its own records (round marks,
// synthesized comm and mmap records) stay as they are, between them. The header's "compressed"
// feature (HEADER_COMPRESSED: version, type, level, ratio, mmap_len; type 1 is zstd) says so.
//
// The reader reads the data section in place, by file position, which compressed bytes do not
// allow: the file is written again, plain, into a scratch file (like a pipe-mode stream,
// perf_pipe.h), the compressed records replaced by what they hold, the data section's size and
// the feature sections' offsets set to match, the compressed feature left out. Nothing is
// decoded per sample; memory stays at a buffer whatever the file's size.
#ifndef IOTRACE_FORMATS_PERF_INFLATE_H_
#define IOTRACE_FORMATS_PERF_INFLATE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "iotrace/base/bytes.h"

namespace iotrace {

// The zstd stream of a file's (or a pipe-mode stream's) compressed records, inflated a record
// at a time, in file order.
class PerfRecordInflater {
 public:
  // The stream may inflate to 64 MiB + 1024 x `compressed_size` bytes at most, far beyond any
  // real ratio (a crafted record could claim terabytes from a few bytes).
  explicit PerfRecordInflater(uint64_t compressed_size);
  ~PerfRecordInflater();
  PerfRecordInflater(const PerfRecordInflater&) = delete;
  PerfRecordInflater& operator=(const PerfRecordInflater&) = delete;

  // True when the record at `pos` of `data` (header {type, size}) is a compressed one; its zstd
  // bytes into `*payload` (empty with a null data pointer when its stated size is wrong).
  static bool IsCompressed(ByteView data, uint64_t pos, uint32_t type, uint16_t size,
                           ByteView* payload);
  // Appends the whole records that the next compressed record's zstd bytes complete to `*out`;
  // a record they end inside is held until a later one completes it (perf's own records between
  // batches, such as round marks, then go before it, as in perf's reader). False when they are
  // damaged, hold more than 64 MiB (one record holds a piece of a ring buffer, ~1 MiB inflated)
  // or take the stream past its budget: the stream cannot go on.
  bool Inflate(ByteView payload, std::string* out);
  // Bytes of a record begun and not finished (at the end: a record the data lost the rest of).
  size_t held() const { return held_.size(); }

  uint64_t records() const { return records_; }
  uint64_t compressed_bytes() const { return compressed_bytes_; }
  uint64_t inflated_bytes() const { return inflated_bytes_; }

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
  std::string held_;
  uint64_t budget_;
  uint64_t records_ = 0;
  uint64_t compressed_bytes_ = 0;
  uint64_t inflated_bytes_ = 0;
};

// True when `file` (a whole perf.data, PERFILE2) needs InflatePerfData: its header has the
// compressed feature, or it is a recording that never finished (perf::NeverFinished: perf
// killed) whose data holds a compressed record.
bool PerfDataIsCompressed(ByteView file);

struct PerfInflation {
  uint64_t compressed_records = 0;  // COMPRESSED and COMPRESSED2 records inflated
  uint64_t compressed_bytes = 0;    // the zstd bytes in them
  uint64_t inflated_bytes = 0;      // what those bytes held
  int level = -1;                   // the compressed feature's zstd level (-1: not known)
  // 1 when a compressed record could not be inflated (its zstd bytes are damaged, or inflate to
  // far more than any real ratio): the data from it on is left out (the caller shows every
  // CPU's data ending there), the feature sections after it kept.
  uint64_t damaged = 0;
  // 1 when the data ends inside a record that compressed records began: left out.
  uint64_t partial_record = 0;
};

// Writes the plain perf.data equivalent of `file` to the (empty) file open at `fd`.
// InvalidArgument when the header is not one this can write again; Unimplemented for a
// compression other than zstd. `release(offset)`, when given,
// is called once the bytes of `file` before `offset` are no longer needed.
absl::Status InflatePerfData(ByteView file, int fd, PerfInflation* result,
                             const std::function<void(uint64_t)>& release = {});

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_PERF_INFLATE_H_
