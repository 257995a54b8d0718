// The ftrace backend of `iotrace record`: a private tracefs instance with the recorded events
// (and --dev filters) enabled, whose per-CPU ring buffers are moved into a trace.dat file with
// splice(): per_cpu/cpuN/trace_pipe_raw -> pipe -> the TraceDatWriter's per-CPU file, so page
// data never passes through user space. Full pages move while recording (poll-driven); after
// tracing stops, the partial pages are flushed with read() (the kernel only splices full pages).
// At the end the per-CPU stats (entries, overrun, dropped events) go into the file's CPUSTAT
// options and the result, and the instance is removed on every path (destructor included).
//
// When the disk fills, the capture keeps running so that the books stay exact: pages are read
// and discarded, and their events counted per event as "unwritten".
#ifndef IOTRACE_CAPTURE_FTRACE_CAPTURE_H_
#define IOTRACE_CAPTURE_FTRACE_CAPTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/base/fd.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/formats/trace_dat_writer.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {

struct FtraceCaptureOptions {
  std::string tracefs = kDefaultTracefs;
  std::vector<TraceEventInfo> events;  // resolved (ResolveEvents)
  std::string output;                  // the trace.dat path
  std::vector<int> cpus;               // CPUs to record; empty: every online CPU
  uint32_t buffer_kb = 8192;           // per CPU
  // Kernel filter applied to every event that has a `dev` field ("" = none), e.g.
  // "dev == 7340035 || dev == 265289728".
  std::string dev_filter;
  std::string clock = "mono";
  std::string instance_name;  // "" = iotrace_<pid>
  std::string recorder;       // VERSION option ("" = iotrace <version>)
  uint32_t flush_interval_ms = 0;  // the run's --flush-interval, said in the file's header
};

// A private instance made ready to trace (tracing off): buffer size, clock, events and --dev
// filters set; the event formats and the instance's sub-buffer layout read. Both ftrace
// backends start so: record's (FtraceCapture) and live's (FtraceStream). `options.output` is not
// used.
struct FtraceInstanceSetup {
  std::unique_ptr<TracefsInstance> instance;
  TracingMetadata meta;
  FtracePageLayout layout;
  std::string clock;  // the instance's trace_clock, e.g. "mono"
  std::vector<int> cpus;  // options.cpus, or every online CPU
};
absl::StatusOr<FtraceInstanceSetup> SetUpFtraceInstance(FtraceCaptureOptions options);

// Waits up to `timeout_ms` for one of `cpu_fds` (trace_pipe_raw) to pass the instance's
// buffer_percent or one of `watched` (signalfds, the control channel) to become readable.
// True when a watched fd is readable. Both ftrace runs wait so.
absl::StatusOr<bool> WaitForFtraceData(const std::vector<int>& watched,
                                       const std::vector<int>& cpu_fds, int timeout_ms);

struct FtraceCpuResult {
  int cpu = 0;
  CpuBufferStats stats;        // per_cpu/cpuN/stats after the final flush
  uint64_t bytes_moved = 0;    // page bytes taken from the ring buffer
  uint64_t pages_spliced = 0;  // full pages moved by splice()
  uint64_t pages_flushed = 0;  // partial pages read at the end
  TraceDatCpuResult file;      // what the output holds for this CPU
};

// Events of one type in the output, per CPU (index as in cpus).
struct FtraceEventResult {
  std::string name;  // "system:event"
  uint32_t id = 0;
  std::vector<uint64_t> recorded;   // per CPU, read back from the finished file
  std::vector<uint64_t> unwritten;  // per CPU, read from the ring but not stored (disk full)
};

struct FtraceCaptureResult {
  std::string instance;
  std::vector<FtraceCpuResult> cpus;
  std::vector<FtraceEventResult> events;
  uint64_t output_bytes = 0;
  bool disk_full = false;
  // Pages that could not be stored and whose events are unknown (cut while being written).
  uint64_t unwritten_pages_unknown = 0;
  absl::Status storage_error;  // why page data was cut (disk full), OK otherwise
  // A step of stopping or cleaning up that failed although the file is valid (tracing_on,
  // reading stats, removing the instance: then `iotrace reset` removes it).
  absl::Status cleanup_error;
  // The instance's trace_clock selection, e.g. "mono".
  std::string clock;
};

// One file of a rotating recording (--switch-output), handed over by FtraceCapture::SwitchOutput
// with every page of its share stored and its CPUSTAT set.
struct FtraceOutputPart {
  std::unique_ptr<TraceDatWriter> writer;
  std::vector<TraceEventInfo> events;
  std::vector<int> cpus;
  std::vector<std::vector<uint64_t>> unwritten;  // [CPU index][event]: not stored (disk full)
  uint64_t unwritten_pages_unknown = 0;
  bool disk_full = false;
  absl::Status storage_error;
};
// Assembles the file (TraceDatWriter::Finish) and reads it back for its per-event counts; may
// run on another thread than the capture. Fills output_bytes, disk_full, storage_error,
// unwritten_pages_unknown, events and each CPU's `file`.
absl::StatusOr<FtraceCaptureResult> FinishFtraceOutput(FtraceOutputPart part);

class FtraceCapture {
 public:
  // Creates the instance (tracing off), sets buffer size, clock, events and filters, creates the
  // output and opens every CPU's trace_pipe_raw and pipe. Nothing is recorded before Start().
  static absl::StatusOr<std::unique_ptr<FtraceCapture>> Create(FtraceCaptureOptions options);
  // Finishes (file valid, instance removed) if Finish() was not called.
  ~FtraceCapture();
  FtraceCapture(const FtraceCapture&) = delete;
  FtraceCapture& operator=(const FtraceCapture&) = delete;

  const std::string& instance_name() const { return instance_->name(); }
  const std::string& output() const { return options_.output; }
  const std::vector<int>& cpus() const { return cpus_; }
  uint32_t page_size() const { return writer_->page_size(); }

  // Turns tracing on in the instance (again after Pause).
  absl::Status Start();
  // Turns tracing off for a while (--control disable); what is in the buffers stays.
  absl::Status Pause();
  // Adds an fd (a signalfd) that ends Wait when readable.
  void WatchFd(int fd) { watched_.push_back(fd); }
  void UnwatchFd(int fd) { std::erase(watched_, fd); }
  // Waits up to `timeout_ms` for a CPU buffer to pass the instance's buffer_percent or a watched
  // fd to become readable. True when a watched fd is readable.
  absl::StatusOr<bool> Wait(int timeout_ms);
  // Moves every full page available now; returns the bytes moved. Never blocks.
  absl::StatusOr<uint64_t> DrainOnce();
  // Wait, then DrainOnce. True when a watched fd is readable.
  absl::StatusOr<bool> Poll(int timeout_ms);
  // Stores what a CPU that filled no page since the last call has in its page being filled, so
  // that what the kernel recorded reaches the output (and survives a kill) within one call's
  // period: record calls it every --flush-interval.
  absl::Status FlushIdle();
  // Turns tracing off and flushes everything left, partial pages included.
  absl::Status Stop();
  // --switch-output: what the CPUs filled so far (full pages, and the page being filled) goes
  // to the current file, whose CPUSTAT gets the kernel's counters since the last switch; the
  // CPUs then write to a new file `path` (same header), and the current one is handed back to
  // be finished (FinishFtraceOutput). Tracing goes on throughout: what the kernel records
  // meanwhile stays in its buffers for the new file.
  absl::StatusOr<FtraceOutputPart> SwitchOutput(const std::string& path);
  // Stop (if needed), stats into CPUSTAT, the output assembled, the instance removed, the file
  // read back for the per-event counts. Error only when no valid output could be made; other
  // failures are in the result's cleanup_error.
  absl::StatusOr<FtraceCaptureResult> Finish();

  // Progress while recording.
  uint64_t bytes_moved() const;
  // The current output file's bytes on disk so far: its header and every CPU's spool.
  uint64_t OutputBytes() const;
  // What CPU `index` (of cpus()) has in the output so far: whole pages from offset 0 of `fd`
  // (readable with pread), `bytes` of them. The layout of its pages.
  int StoredFd(size_t index) const { return cpu_state_[index].out; }
  uint64_t StoredBytes(size_t index) const;
  const FtracePageLayout& layout() const { return layout_; }
  const std::vector<TraceEventInfo>& events() const { return options_.events; }
  bool disk_full() const { return disk_full_; }
  // The instance's live stats for one CPU (index in cpus()).
  absl::StatusOr<CpuBufferStats> ReadCpuStats(size_t index) const;

 private:
  struct Cpu {
    int cpu = 0;
    UniqueFd raw;  // trace_pipe_raw, O_NONBLOCK
    UniqueFd pipe_r, pipe_w;
    int out = -1;  // the writer's file for this CPU
    uint64_t bytes_moved = 0;
    uint64_t pages_spliced = 0;
    uint64_t pages_flushed = 0;
    uint64_t spliced_at_flush = 0;  // pages_spliced at the last FlushIdle
    std::vector<uint64_t> unwritten;  // per event index
  };

  FtraceCapture() = default;
  absl::StatusOr<uint64_t> SpliceCpu(Cpu* c);
  absl::Status FlushPartialPages(Cpu* c);
  // Reads one page of `c` (partial or full) and stores it; false when the ring had none.
  bool ReadOnePage(Cpu* c);
  void SwitchToDiscard(const absl::Status& why);
  void CountDiscarded(Cpu* c, ByteView pages);
  void DiscardPipe(Cpu* c, uint64_t bytes_written_of_batch);
  // The CPUSTAT text of CPU `i` for the current file: the counters since the last switch.
  std::string StatsText(size_t i, const CpuBufferStats& now) const;
  // The current writer handed over with what the CPUs did not store into it.
  FtraceOutputPart TakePart();

  FtraceCaptureOptions options_;
  FtracePageLayout layout_;
  std::unique_ptr<TracefsInstance> instance_;
  std::unique_ptr<TraceDatWriter> writer_;
  TraceDatWriterOptions writer_options_;  // for the next file of a rotating recording
  std::vector<CpuBufferStats> stats_base_;  // per CPU at the last switch (none before one)
  std::vector<int> cpus_;
  std::vector<Cpu> cpu_state_;
  std::vector<int> watched_;
  std::string read_buf_;  // one page: partial-page flush and the disk-full discard path
  uint32_t pipe_bytes_ = 0;
  bool started_ = false;
  bool stopped_ = false;
  bool finished_ = false;
  bool disk_full_ = false;
  uint64_t unwritten_pages_unknown_ = 0;
  absl::Status storage_error_;
};

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_FTRACE_CAPTURE_H_
