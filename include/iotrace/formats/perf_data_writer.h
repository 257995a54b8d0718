// Writer of perf.data files for `iotrace record` (perf backend): copies perf ring bytes verbatim
// into the data section (one write per drain, no per-event work) and keeps the file valid in
// every stop case, including a full disk: room for the trailer is reserved ahead of the data.
#ifndef IOTRACE_FORMATS_PERF_DATA_WRITER_H_
#define IOTRACE_FORMATS_PERF_DATA_WRITER_H_

#include <linux/perf_event.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/perf_data.h"

namespace iotrace {

// One recorded event: its attr (as passed to perf_event_open), its name ("block:block_rq_issue")
// and the ids (PERF_EVENT_IOC_ID) of its per-CPU fds.
struct PerfEventSpec {
  perf_event_attr attr{};
  std::string name;
  std::vector<uint64_t> ids;
};

// The system calls the writer makes on its file, so that tests can simulate a full disk, short
// writes and EINTR at any byte. Each returns what the system call returns (-1 with errno set).
class PerfFileIo {
 public:
  virtual ~PerfFileIo() = default;
  virtual ssize_t PWriteV(int fd, const struct iovec* iov, int iovcnt, off_t offset);
  virtual int Fallocate(int fd, int mode, off_t offset, off_t len);
  virtual int Ftruncate(int fd, off_t length);

  // The real system calls; never null.
  static PerfFileIo* Default();
};

struct PerfWriterOptions {
  PerfFileIo* io = nullptr;  // nullptr: PerfFileIo::Default()
  // The disk space reserved (fallocate KEEP_SIZE) ahead of the data end grows in steps of this
  // size, so most AppendData calls make no extra system call.
  uint64_t reserve_step = uint64_t{8} << 20;
  // >= 0: write perf's pipe-mode stream to this descriptor (a pipe, standard output) instead
  // of creating a file at the path (which then only names the stream in messages). The stream
  // is the 16-byte pipe header, the attrs (PERF_RECORD_HEADER_ATTR) and the event formats
  // (PERF_RECORD_HEADER_TRACING_DATA), then the records as they are appended: `perf script -i
  // -` and `iotrace report -i -` read it. Nothing is written at the end, and the descriptor is
  // not closed.
  int stream_fd = -1;
};

// Usage: Create, any number of Append* calls, Finish. After Finish (or after the writer is
// destroyed, which finishes it) the file is a valid perf.data that `perf script` and
// OpenPerfData read, holding every record appended before the first failed append.
class PerfDataWriter {
 public:
  // Creates `path` with mode 0600 (truncating an existing regular file; a symlink is followed
  // only onto a file this user owns) and writes everything that precedes the data: header
  // placeholder, the header features (TRACING_DATA from `tracing`, host facts from `host`,
  // EVENT_DESC from `events`), the ids and the attrs. Every event must have a name and ids.
  static absl::StatusOr<std::unique_ptr<PerfDataWriter>> Create(const std::string& path,
                                                                std::vector<PerfEventSpec> events,
                                                                const TracingMetadata& tracing,
                                                                const HostInfo& host,
                                                                PerfWriterOptions options = {});

  ~PerfDataWriter();
  PerfDataWriter(const PerfDataWriter&) = delete;
  PerfDataWriter& operator=(const PerfDataWriter&) = delete;

  // Appends raw ring bytes (whole records, copied verbatim) in one write: `second` is the part
  // after the ring's wrap point. Once the disk is full (or a write failed) nothing more is
  // accepted: the call returns ResourceExhausted (disk full) or the write error, and the file
  // keeps everything appended before.
  absl::Status AppendData(ByteView first, ByteView second = {});
  // Appends one record whose header is built here; `body` is padded with zeros to 8 bytes.
  absl::Status AppendRecord(uint32_t type, uint16_t misc, ByteView body);
  // PERF_RECORD_LOST_SAMPLES with the sample_id trailer of event `event_index` (samples the
  // kernel counted but never put in the ring: see docs/kernel-notes.md, silent drops).
  absl::Status AppendLostSamples(size_t event_index, uint64_t lost, const perf::SampleId& id);
  // PERF_RECORD_FINISHED_ROUND: every record appended before the previous round mark is older
  // than any record appended after this one.
  absl::Status AppendFinishedRound();
  // A synthesized PERF_RECORD_COMM with the sample_id trailer of event `event_index`.
  absl::Status AppendComm(uint32_t pid, uint32_t tid, std::string_view comm,
                          const perf::SampleId& id, size_t event_index = 0, bool exec = false);

  // Writes the feature section table after the data and the final header. Idempotent; the
  // writer accepts nothing afterwards.
  absl::Status Finish();

  const std::string& path() const { return path_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t data_size() const { return data_end_ - data_offset_; }
  // True once an append was refused because the disk (or quota) was full.
  bool disk_full() const { return disk_full_; }
  // Bytes offered to Append* but not written (after the disk filled or a write failed).
  uint64_t bytes_refused() const { return bytes_refused_; }
  bool finished() const { return finished_; }
  bool stream() const { return options_.stream_fd >= 0; }

 private:
  PerfDataWriter() = default;

  absl::Status WritePrefix();
  absl::Status Write(const struct iovec* iov, int iovcnt, uint64_t offset);
  absl::Status EnsureReserve(uint64_t bytes);
  absl::Status Stop(absl::Status status, uint64_t refused);
  void RememberChunkStart(uint64_t offset);
  absl::Status WriteTrailer();
  // Bytes to keep free after data ending at `data_end`: the feature table, plus the
  // FINISHED_ROUND that Finish writes when there is no data at all.
  uint64_t TrailerReserve(uint64_t data_end) const {
    return trailer_.size() + (data_end == data_offset_ ? sizeof(perf::EventHeader) : 0);
  }

  std::string path_;
  int fd_ = -1;
  PerfFileIo* io_ = nullptr;
  PerfWriterOptions options_;
  std::vector<PerfEventSpec> events_;

  std::string prefix_;   // header placeholder + features + ids + attrs, as written at Create
  std::string trailer_;  // the feature section table written after the data at Finish
  perf::FileHeader header_;

  uint64_t data_offset_ = 0;
  uint64_t data_end_ = 0;     // file offset right after the last whole record written
  uint64_t reserve_end_ = 0;  // blocks are reserved (fallocate KEEP_SIZE) up to here
  bool reserve_supported_ = true;
  bool disk_full_ = false;
  bool finished_ = false;
  absl::Status stopped_;  // non-OK once appends are refused
  uint64_t bytes_refused_ = 0;

  // Starts of the most recent appends: where the data can be cut back to a record boundary
  // when the trailer does not fit on a filesystem without fallocate.
  static constexpr int kChunkHistory = 64;
  uint64_t chunk_starts_[kChunkHistory] = {};
  int chunk_count_ = 0;
  int chunk_next_ = 0;

  std::string scratch_;  // reused buffer for synthesized records
};

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_PERF_DATA_WRITER_H_
