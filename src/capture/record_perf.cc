#include "record_backends.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>

#include "absl/strings/str_format.h"
#include "iotrace/base/clock.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/gated_child.h"
#include "iotrace/base/status.h"
#include "iotrace/capture/perf_capture.h"
#include "iotrace/formats/perf_data_writer.h"
#include "iotrace/sys/host_info.h"
#include "record_loop.h"
#include "record_summary.h"

namespace iotrace {
namespace {

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

// Makes the writer of a file (the header, the event formats, the comms of running processes).
using MakePerfWriter =
    std::function<absl::StatusOr<std::unique_ptr<PerfDataWriter>>(const std::string& path)>;

class PerfRun : public RunningCapture {
 public:
  PerfRun(PerfCapture& cap, std::unique_ptr<PerfDataWriter> writer, std::string path,
          MakePerfWriter make, OutputRotation* rotation)
      : cap_(cap),
        writer_(std::move(writer)),
        path_(std::move(path)),
        make_(std::move(make)),
        rotation_(rotation),
        silent_reported_(cap.events().size() * cap.cpus().size()) {}

  absl::Status WatchFd(int fd) override { return cap_.WatchFd(fd); }
  absl::Status UnwatchFd(int fd) override { return cap_.UnwatchFd(fd); }
  absl::Status SetEnabled(bool on) override { return on ? cap_.Enable() : cap_.Disable(); }
  absl::StatusOr<bool> Wait(int timeout_ms) override { return cap_.Wait(timeout_ms); }

  // With `check`: counts first, then the drain (see WriteSilentDrops).
  absl::Status Drain(bool check) override {
    if (check) IOTRACE_RETURN_IF_ERROR(cap_.ReadCounts());
    IOTRACE_RETURN_IF_ERROR(
        cap_.DrainAll([&](int, ByteView a, ByteView b) { return writer_->AppendData(a, b); }));
    IOTRACE_RETURN_IF_ERROR(writer_->AppendFinishedRound());
    if (check) IOTRACE_RETURN_IF_ERROR(WriteSilentDrops(MonotonicNs()));
    return absl::OkStatus();
  }

  CaptureProgress Progress() const override {
    CaptureProgress p;
    for (size_t e = 0; e < cap_.events().size(); ++e) {
      for (size_t c = 0; c < cap_.cpus().size(); ++c) {
        p.events += cap_.counts(e, c).samples;
        p.ring_lost += cap_.counts(e, c).ring_lost;
        p.silent += cap_.counts(e, c).Silent();
      }
    }
    p.bytes = bytes_before_ + writer_->data_size();
    return p;
  }

  // The rings drained into the file being written, its silent drops found so far written, and
  // the file finished; the next has everything the first had before its data (specs, formats,
  // host, the comms of the processes running now). The kernel keeps recording meanwhile into
  // the rings, which the next file takes. A silent drop found only later (the counts are read
  // before the drain) is written into a later file: the files' totals still add up.
  absl::Status SwitchOutput(const std::string& path) override {
    IOTRACE_RETURN_IF_ERROR(cap_.ReadCounts());
    IOTRACE_RETURN_IF_ERROR(
        cap_.DrainAll([&](int, ByteView a, ByteView b) { return writer_->AppendData(a, b); }));
    IOTRACE_RETURN_IF_ERROR(writer_->AppendFinishedRound());
    IOTRACE_RETURN_IF_ERROR(WriteSilentDrops(MonotonicNs()));
    IOTRACE_RETURN_IF_ERROR(FinishFile());
    IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<PerfDataWriter> next, make_(path));
    bytes_before_ += writer_->data_size();
    writer_ = std::move(next);
    path_ = path;
    return absl::OkStatus();
  }
  uint64_t CurrentBytes() const override {
    return writer_->data_offset() + writer_->data_size();
  }
  uint64_t OpenBytes() const override { return CurrentBytes(); }

  // Finishes the file being written and hands it to the rotation.
  absl::Status FinishFile() {
    absl::Status finished = writer_->Finish();
    const uint64_t bytes = writer_->stream() ? writer_->data_offset() + writer_->data_size()
                                             : FileSize(path_);
    last_bytes_ = bytes;
    if (rotation_ != nullptr) {
      RemoveRotatedFiles(rotation_->Finished(path_, bytes), rotation_->max_files());
    }
    return finished;
  }
  PerfDataWriter& writer() { return *writer_; }
  uint64_t last_bytes() const { return last_bytes_; }
  bool disk_full() const override { return writer_->disk_full(); }
  void Abandon() override {
    (void)cap_.Disable();
    (void)writer_->Finish();
  }

  // Stops the kernel, takes the final counts, empties the rings: the books are exact after it.
  absl::Status Stop() {
    absl::Status failure = cap_.Disable();
    absl::Status s = cap_.ReadCounts();
    if (failure.ok()) failure = s;
    if (!writer_->disk_full()) {
      s = cap_.DrainAll([&](int, ByteView a, ByteView b) { return writer_->AppendData(a, b); });
      if (failure.ok()) failure = s;
      if (!writer_->disk_full()) {
        s = WriteSilentDrops(MonotonicNs());
        if (failure.ok()) failure = s;
      }
    }
    return failure;
  }

  void Summarize(RecordSummary* summary) const {
    const size_t ncpu = cap_.cpus().size();
    for (size_t e = 0; e < cap_.events().size(); ++e) {
      EventSummary row;
      row.name = cap_.events()[e].name;
      for (size_t c = 0; c < ncpu; ++c) {
        const EventCpuCounts& k = cap_.counts(e, c);
        row.recorded += k.samples;
        row.kernel_count += k.kernel_count;
        row.ring_lost += k.ring_lost;
        // What the file says was dropped silently; once the disk is full the rest of the
        // difference was counted by the kernel but never written.
        uint64_t silent_in_file = silent_reported_[e * ncpu + c];
        row.silent += silent_in_file;
        row.unwritten += k.Silent() - std::min(k.Silent(), silent_in_file);
      }
      summary->events.push_back(row);
    }
  }

 private:
  // Writes LOST_SAMPLES records for silent drops found since the last call. The estimate taken
  // mid-run (counts read before the drain) never exceeds the truth, so reporting only increases
  // keeps the file's total equal to the exact figure computed after the final drain.
  absl::Status WriteSilentDrops(uint64_t now_ns) {
    const size_t ncpu = cap_.cpus().size();
    for (size_t e = 0; e < cap_.events().size(); ++e) {
      for (size_t c = 0; c < ncpu; ++c) {
        uint64_t silent = cap_.counts(e, c).Silent();
        uint64_t& reported = silent_reported_[e * ncpu + c];
        if (silent > reported) {
          perf::SampleId id;
          id.pid = id.tid = static_cast<uint32_t>(-1);
          id.time = now_ns;
          id.id = cap_.events()[e].ids[c];
          id.cpu = static_cast<uint32_t>(cap_.cpus()[c]);
          IOTRACE_RETURN_IF_ERROR(writer_->AppendLostSamples(e, silent - reported, id));
          reported = silent;
        }
      }
    }
    return absl::OkStatus();
  }

  PerfCapture& cap_;
  std::unique_ptr<PerfDataWriter> writer_;  // the file being written
  std::string path_;  // the file being written
  MakePerfWriter make_;
  OutputRotation* rotation_;  // null without --switch-output / --max-size
  uint64_t bytes_before_ = 0;  // data of the files finished before this one
  uint64_t last_bytes_ = 0;    // the last file finished, on disk
  std::vector<uint64_t> silent_reported_;  // [event * ncpu + cpu]: LOST_SAMPLES written so far
};

}  // namespace

absl::StatusOr<int> RecordWithPerf(const RecordOptions& opt, const std::string& tracefs,
                                   const std::vector<TraceEventInfo>& events,
                                   const std::string& filter, SignalGuard& signals,
                                   ControlChannel* control, RecordSummary* summary) {
  PerfCaptureOptions copt;
  copt.events = events;
  copt.mmap_pages = opt.mmap_pages;
  copt.dev_filter = filter;
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<PerfCapture> cap, PerfCapture::Open(copt));
  IOTRACE_ASSIGN_OR_RETURN(TracingMetadata meta, CollectTracingMetadata(tracefs, events));

  std::optional<GatedChild> child;
  if (!opt.command.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(GatedChild c, GatedChild::Start(opt.command, opt.output == "-"));
    child.emplace(std::move(c));
  }
  std::string first_path;
  std::unique_ptr<OutputRotation> rotation = MakeRotation(opt, summary->output, &first_path);
  if (rotation != nullptr && rotation->mode().on()) summary->output = first_path;
  std::vector<PerfEventSpec> specs = PerfEventSpecs(*cap);
  HostInfo host = ThisMachine(opt.argv);
  host.nr_cpus_online = static_cast<uint32_t>(cap->cpus().size());
  PerfWriterOptions wopt;
  if (summary->output == "-") wopt.stream_fd = STDOUT_FILENO;  // perf's pipe mode
  MakePerfWriter make = [&](const std::string& path)
      -> absl::StatusOr<std::unique_ptr<PerfDataWriter>> {
    IOTRACE_ASSIGN_OR_RETURN(
        std::unique_ptr<PerfDataWriter> writer,
        PerfDataWriter::Create(wopt.stream_fd >= 0 ? "standard output" : path, specs, meta, host,
                               wopt));
    IOTRACE_RETURN_IF_ERROR(
        WriteExistingComms(writer.get(), cap->events()[0], cap->cpus()[0]));
    return writer;
  };
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<PerfDataWriter> writer, make(first_path));

  PerfRun run(*cap, std::move(writer), first_path, make, rotation.get());
  IOTRACE_ASSIGN_OR_RETURN(
      const uint64_t start_ns,
      StartRecording(opt, run, signals, child ? &*child : nullptr, control, *summary));
  absl::Status failure = RunLoop(opt, run, signals, child ? &*child : nullptr, control, start_ns,
                                 rotation.get(), summary);
  absl::Status s = run.Stop();
  if (failure.ok()) failure = s;
  const uint64_t end_ns = MonotonicNs();
  s = run.FinishFile();
  if (failure.ok()) failure = s;

  summary->seconds = (end_ns - start_ns) / 1e9;
  summary->output_bytes = run.last_bytes();
  summary->bytes_written = run.last_bytes();
  if (rotation != nullptr) SummarizeRotation(*rotation, summary);
  summary->disk_full = run.writer().disk_full();
  run.Summarize(summary);
  const int command_status = child ? EndCommand(*child, *summary) : 0;
  if (summary->disk_full) return DiskFullError(*summary);
  if (!failure.ok()) return failure;
  return command_status;
}

}  // namespace iotrace
