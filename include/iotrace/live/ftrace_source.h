// The live engine's ftrace source: FtraceStream's per-CPU sub-buffers (memory-mapped, or pages
// by read()) walked in place, one stream of records per CPU.
#ifndef IOTRACE_LIVE_FTRACE_SOURCE_H_
#define IOTRACE_LIVE_FTRACE_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/capture/ftrace_stream.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/live/live_source.h"

namespace iotrace {

// Where common_pid lies in the records of `formats` (4 when they do not say).
uint32_t CommonPidOffset(const std::vector<EventFormat>& formats);
// The RawEvent of one record of a sub-buffer of `cpu`, in place; false when the record is too
// short to hold the common header.
bool FtraceRecordToEvent(const FtraceRecord& rec, uint32_t cpu, uint32_t pid_offset,
                         RawEvent* event);

class FtraceLiveSource : public LiveSource {
 public:
  static absl::StatusOr<std::unique_ptr<FtraceLiveSource>> Create(FtraceStreamOptions options);

  std::string backend() const override { return "ftrace"; }
  std::string ingest() const override { return FtraceIngestName(stream_->ingest()); }
  std::string ingest_note() const override;
  const std::vector<EventFormat>& formats() const override { return formats_; }
  int nr_cpus() const override { return nr_cpus_; }
  size_t stream_count() const override { return streams_.size(); }
  absl::Status SetEnabled(bool on) override { return on ? stream_->Start() : stream_->Pause(); }
  void WatchFd(int fd) override { stream_->WatchFd(fd); }
  absl::StatusOr<bool> Wait(int timeout_ms) override { return stream_->Wait(timeout_ms); }
  absl::StatusOr<bool> Next(size_t i, RawEvent* event, EventSink* losses) override;
  uint64_t LostSoFar() override;
  absl::StatusOr<LiveSourceEnd> Finish(EventSink* losses) override;


 private:
  struct Stream {
    explicit Stream(const FtracePageLayout& layout) : walker(layout) {}
    FtracePageWalker walker;
    ByteView page;
    bool on_page = false;
    uint32_t cpu = 0;
  };
  FtraceLiveSource() = default;

  std::unique_ptr<FtraceStream> stream_;
  std::vector<EventFormat> formats_;
  std::vector<Stream> streams_;
  int nr_cpus_ = 0;
  uint32_t pid_offset_ = 4;
  uint64_t problems_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_LIVE_FTRACE_SOURCE_H_
