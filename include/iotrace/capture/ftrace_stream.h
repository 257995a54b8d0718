// The ftrace backend of `iotrace live`: a private tracefs instance (set up as record's, see
// SetUpFtraceInstance) whose per-CPU ring buffers are read where the kernel wrote them. On
// Linux 6.10+ each CPU's trace_pipe_raw is memory-mapped: the meta page, then every sub-buffer;
// TRACE_MMAP_IOCTL_GET_READER hands the reader sub-buffer over (the one the kernel's writer no
// longer touches, or the one it is still filling, which then grows), and its events are decoded
// in place. Elsewhere (an older kernel, a mapping refused) read() hands out one page at a time,
// copied. With an output file, every page also goes into a trace.dat as record writes it.
// The instance is removed on every path (destructor included).
#ifndef IOTRACE_CAPTURE_FTRACE_STREAM_H_
#define IOTRACE_CAPTURE_FTRACE_STREAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"
#include "iotrace/base/fd.h"
#include "iotrace/capture/ftrace_capture.h"
#include "iotrace/event/cpu_buffer_stats.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/formats/trace_dat_writer.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {

enum class FtraceIngest { kAuto, kMmap, kRead };
const char* FtraceIngestName(FtraceIngest ingest);  // "auto", "mmap", "read"

struct FtraceStreamOptions {
  FtraceCaptureOptions capture;  // output: "" for no file
  FtraceIngest ingest = FtraceIngest::kAuto;  // auto: mmap where the kernel has it, else read
};

// The layout of the meta page (include/uapi/linux/trace_mmap.h, Linux 6.10): the fields this
// reader uses, at their offsets.
struct TraceBufferMeta {
  uint32_t meta_page_size;
  uint32_t meta_struct_len;
  uint32_t subbuf_size;
  uint32_t nr_subbufs;
  uint64_t reader_lost_events;
  uint32_t reader_id;
  uint32_t reader_read;
  uint64_t flags;
  uint64_t entries;
  uint64_t overrun;
  uint64_t read;
};
// _IO('R', 0x20)
inline constexpr unsigned long kTraceMmapIoctlGetReader = 0x5220;

// What Next hands over of one CPU's buffer.
enum class PageUpdate {
  kNone,   // nothing new
  kGrown,  // the same page as before, maybe with more data: walk on (FtracePageWalker::Refresh)
  kNew,    // another page: walk it from its start
};

struct FtraceStreamCpuResult {
  int cpu = 0;
  CpuBufferStats stats;    // per_cpu/cpuN/stats at the end
  uint64_t pages = 0;      // pages taken (sub-buffers swapped in, or read)
  uint64_t bytes = 0;      // their event data
  uint64_t ioctls = 0;     // GET_READER calls (mmap)
  uint64_t lost_meta = 0;  // the meta page's reader.lost_events, added up at each swap
};

struct FtraceStreamResult {
  std::string instance;
  std::string ingest;       // "mmap" or "read"
  std::string clock;
  std::vector<FtraceStreamCpuResult> cpus;
  uint64_t output_bytes = 0;  // 0 without an output
  bool disk_full = false;
  absl::Status storage_error;
  absl::Status cleanup_error;
};

class FtraceStream {
 public:
  // Sets the instance up (tracing off) and opens every CPU's buffer, mapped when it can be.
  static absl::StatusOr<std::unique_ptr<FtraceStream>> Create(FtraceStreamOptions options);
  ~FtraceStream();
  FtraceStream(const FtraceStream&) = delete;
  FtraceStream& operator=(const FtraceStream&) = delete;

  const std::vector<int>& cpus() const { return cpus_; }
  const FtracePageLayout& layout() const { return layout_; }
  const TracingMetadata& metadata() const { return meta_; }
  const std::string& instance_name() const { return instance_->name(); }
  const std::string& clock() const { return clock_; }
  FtraceIngest ingest() const { return ingest_; }
  // Why the mapping was not used ("" when it was, or was not asked for).
  const std::string& mmap_refused() const { return mmap_refused_; }

  absl::Status Start();  // tracing on
  absl::Status Pause();  // tracing off; what is in the buffers stays
  void WatchFd(int fd) { watched_.push_back(fd); }
  void UnwatchFd(int fd) { std::erase(watched_, fd); }
  // Waits up to `timeout_ms` for a buffer to pass the instance's buffer_percent or a watched fd
  // to become readable. True when a watched fd is readable.
  absl::StatusOr<bool> Wait(int timeout_ms);

  // CPU `index`'s next data: the page (valid until the next call for this CPU) and what changed.
  // Never blocks.
  absl::StatusOr<PageUpdate> Next(size_t index, ByteView* page);

  // The instance's live counters for one CPU.
  absl::StatusOr<CpuBufferStats> ReadCpuStats(size_t index) const;

  // Tracing off (if on), the counters read, the last pages written and the output assembled
  // (when there is one), the instance removed. Call after reading everything Next gives.
  absl::StatusOr<FtraceStreamResult> Finish();

 private:
  struct Cpu {
    int cpu = 0;
    UniqueFd raw;
    // mmap
    UniqueMapping map;
    const volatile TraceBufferMeta* meta = nullptr;
    int64_t reader_id = -1;
    std::string staged;  // the reader page as it was before the last GET_READER (output only)
    // read
    std::string page;
    FtraceStreamCpuResult result;
  };

  FtraceStream() = default;
  absl::Status MapCpu(Cpu& c);
  absl::StatusOr<PageUpdate> NextMapped(Cpu& c, ByteView* page);
  absl::StatusOr<PageUpdate> NextRead(Cpu& c, ByteView* page);
  void Store(Cpu& c, ByteView page);
  ByteView ReaderPage(const Cpu& c) const;

  FtraceStreamOptions options_;
  std::unique_ptr<TracefsInstance> instance_;
  TracingMetadata meta_;
  FtracePageLayout layout_;
  std::string clock_;
  std::vector<int> cpus_;
  std::vector<Cpu> cpu_state_;
  std::vector<int> watched_;
  FtraceIngest ingest_ = FtraceIngest::kRead;
  std::string mmap_refused_;
  std::unique_ptr<TraceDatWriter> writer_;
  bool disk_full_ = false;
  absl::Status storage_error_;
  bool finished_ = false;
};

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_FTRACE_STREAM_H_
