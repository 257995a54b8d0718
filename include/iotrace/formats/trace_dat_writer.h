// Writer of trace.dat version 6 files (trace-cmd.dat.v6(5)) that `trace-cmd report` and
// iotrace's reader read: initial format + tracing data, CPU count, options (TRACECLOCK, UNAME,
// VERSION, one CPUSTAT per CPU), "flyrecord" with each CPU's (offset, size), then the per-CPU
// ring-buffer pages, page aligned.
//
// Each CPU's pages go to a spool file of its own beside the output, `FILE.cpuN` (as trace-cmd
// names its per-CPU files), that a capture can splice() into, so page data never passes through
// user space. The output's header is written at Create with no CPU data (every CPU at offset 0,
// size 0): a recording killed before Finish (SIGKILL, the OOM killer) leaves that header and
// the spools, which iotrace's reader reads as an unfinished recording and RecoverTraceDat
// (trace_dat_recover.h) turns into a complete file. Finish() assembles the output with
// copy_file_range, writes the header that names the data, and removes the spools; a chunk is
// freed from its spool as it is copied only when the disk lacks room for a second copy. The
// file is valid after Finish() whatever stopped the
// recording: a trailing partial page is cut, and when the disk fills while assembling, each CPU
// keeps the whole pages that were stored; both losses are returned and stated in the CPU's
// CPUSTAT text ("iotrace pages not written: N"). The output is created with mode 0600.
#ifndef IOTRACE_FORMATS_TRACE_DAT_WRITER_H_
#define IOTRACE_FORMATS_TRACE_DAT_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"
#include "iotrace/base/fd.h"
#include "iotrace/event/event_format.h"

namespace iotrace {

struct TraceDatWriterOptions {
  // header_page decides the sub-buffer size (use the instance's own events/header_page when
  // buffer_subbuf_size_kb is not 4). saved_cmdlines can be replaced at the end.
  TracingMetadata meta;
  int nr_cpus = 0;
  // The clock's name ("mono") or the instance's trace_clock text ("local [mono] ...").
  std::string trace_clock = "mono";
  std::string uname;     // UNAME option; empty: "sysname nodename release machine" of this host
  std::string recorder;  // VERSION option; empty: "iotrace <version>"
};

struct TraceDatCpuResult {
  uint64_t offset = 0;  // in the output file
  uint64_t bytes = 0;   // page data stored
  uint64_t pages = 0;
  uint64_t partial_bytes_cut = 0;  // a trailing partial page that was dropped
  uint64_t pages_not_written = 0;  // whole pages lost while assembling (disk full, I/O error)
};

// The spool file of CPU `cpu` of the recording `path`: "PATH.cpuN".
std::string TraceDatSpoolPath(const std::string& path, int cpu);

struct TraceDatWriteResult {
  std::vector<TraceDatCpuResult> cpus;
  uint64_t file_size = 0;
  // OK, or the error that cut page data (e.g. ENOSPC); the file is valid either way.
  absl::Status storage_error;
};

class TraceDatWriter {
 public:
  // Creates (truncates) `path` with mode 0600, its header (no CPU data yet) and one spool file
  // per CPU next to it.
  static absl::StatusOr<std::unique_ptr<TraceDatWriter>> Create(const std::string& path,
                                                                TraceDatWriterOptions options);
  // Takes up the unfinished recording `path` (its header already parsed into `options`) and
  // its spools as they are, for Finish() to assemble: the recovery of a killed recording. Every
  // CPU's CPUSTAT is `note` (the kernel's counters were never read).
  static absl::StatusOr<std::unique_ptr<TraceDatWriter>> Resume(const std::string& path,
                                                                TraceDatWriterOptions options,
                                                                const std::string& note);
  // Finishes the file when Finish() was not called (errors are lost then).
  ~TraceDatWriter();
  TraceDatWriter(const TraceDatWriter&) = delete;
  TraceDatWriter& operator=(const TraceDatWriter&) = delete;

  const std::string& path() const { return path_; }
  int nr_cpus() const { return static_cast<int>(cpu_fds_.size()); }
  uint32_t page_size() const { return page_size_; }

  // Where CPU `cpu`'s pages go, in order, whole pages (a splice() or write() target; the file
  // position is the append point). Owned by the writer.
  int CpuFd(int cpu) const { return cpu_fds_[cpu].get(); }
  // Appends pages through write() (tests, and captures that read instead of splicing).
  absl::Status AppendPages(int cpu, ByteView pages);
  // The instance's per_cpu/cpuN/stats text, stored as CPUSTAT (read it after tracing stopped).
  void SetCpuStats(int cpu, std::string stats_text);
  // Replaces saved_cmdlines (read at the end, it knows the pids seen during the recording).
  // Ignored if the header would no longer fit the space reserved at Create.
  void SetSavedCmdlines(std::string cmdlines);

  // Assembles the output. Error only when no valid file could be written.
  absl::StatusOr<TraceDatWriteResult> Finish();

  // Bytes reserved for the header at Create; page data starts there.
  uint64_t data_start() const { return data_start_; }

 private:
  TraceDatWriter() = default;
  std::string BuildHeader(const std::vector<TraceDatCpuResult>& cpus,
                          const std::string& cmdlines) const;
  void RemoveSpools();

  std::string path_;
  TraceDatWriterOptions options_;
  uint32_t page_size_ = 4096;
  uint64_t data_start_ = 0;
  UniqueFd out_;
  std::vector<UniqueFd> cpu_fds_;
  std::vector<std::string> cpu_stats_;
  std::string new_cmdlines_;
  bool have_new_cmdlines_ = false;
  bool finished_ = false;
};

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_TRACE_DAT_WRITER_H_
