// `iotrace record`: options (record_options.cc), the run (record.cc and the modules beside it in
// src/capture/), and the summary (record_summary.cc).
#ifndef IOTRACE_CAPTURE_RECORD_H_
#define IOTRACE_CAPTURE_RECORD_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"
#include "iotrace/base/clock.h"
#include "iotrace/capture/record_rotation.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {

enum class Backend { kAuto, kPerf, kFtrace };
const char* BackendName(Backend b);

// The events `iotrace record` takes by default: what the report needs to pair requests.
const std::vector<std::string>& DefaultRecordEvents();

// Sees what a recording stores while it runs, for the progress line's latency figures (the live
// engine's: live/record_latency.h). The ftrace backend hands it every page it stored, read back
// from the output (a copy per page); the perf backend hands it nothing. Called on the run loop's
// thread.
class RecordTap {
 public:
  virtual ~RecordTap() = default;
  // Before the first pages: the events recorded, the sub-buffer layout, the CPUs recorded.
  virtual absl::Status Begin(const std::vector<TraceEventInfo>& events,
                             const FtracePageLayout& layout, const std::vector<int>& cpus) = 0;
  // Whole pages of the CPU at `index` (of `cpus`), in the order they were stored.
  virtual void OnPages(size_t index, ByteView pages) = 0;
  // The figures for the progress line ("" when there is nothing to show yet); `now_ns` is
  // CLOCK_MONOTONIC's, the recording's trace clock.
  virtual std::string Progress(uint64_t now_ns) = 0;
};

struct RecordOptions {
  std::vector<std::string> events = DefaultRecordEvents();
  std::vector<std::string> devs;        // --dev, as given
  std::vector<std::string> probes;      // --probe definitions
  std::string output;                   // "" = iotrace.data (perf) / iotrace.dat (ftrace)
  double duration_s = 0;                // 0 = until the command exits or a signal
  uint32_t mmap_pages = 1024;           // perf: data pages per CPU ring
  uint32_t buffer_kb = 8192;            // ftrace: per-CPU buffer
  Backend backend = Backend::kAuto;
  std::vector<std::string> command;     // after --
  int progress = -1;                    // -1: when stderr is a terminal
  std::string tracefs_dir;              // "" = find the mount
  int64_t delay_ms = 0;                 // events enabled after this long; -1: by --control
  // What the kernel recorded reaches the output file within about this long, so that a kill
  // (SIGKILL, the OOM killer) loses at most that much: ftrace stores the page being filled of a
  // CPU that filled none since the last flush; perf drains its rings at least this often.
  int64_t flush_interval_ms = 1000;
  std::string control;                  // --control spec ("" = none), see record_control.h
  // --switch-output: a new file OUTPUT.YYYYMMDDHHMMSSCC each time (record_rotation.h).
  SwitchOutputMode switch_output;
  int switch_max_files = 0;             // --switch-max-files: the oldest removed past it (0: none)
  uint64_t max_size = 0;                // --max-size: stop once the run's files hold this much
  std::vector<std::string> argv;        // the whole command line, stored in the file
  RecordTap* tap = nullptr;             // the progress line's latency figures (not owned)
};

// One row of the end-of-run table.
struct EventSummary {
  std::string name;
  uint64_t recorded = 0;      // in the output file
  uint64_t kernel_count = 0;  // what the kernel counted (perf read(); ftrace: entries + losses)
  uint64_t ring_lost = 0;     // lost because a buffer was full (perf LOST, ftrace overrun)
  uint64_t silent = 0;        // counted by the kernel, neither recorded nor reported lost
  uint64_t unwritten = 0;     // counted, but not written because the output stopped (disk full)
};

struct RecordSummary {
  Backend backend = Backend::kPerf;
  std::string backend_reason;
  std::string backend_check;       // --backend auto: whether its check ran or a kept verdict
  std::string output;
  double seconds = 0;
  uint64_t output_bytes = 0;       // the run's files on disk at the end
  // --switch-output: the files made (output names the last), those still on disk, and what was
  // written into all of them.
  bool rotated = false;
  uint64_t files_made = 1;
  uint64_t files_on_disk = 1;
  uint64_t bytes_written = 0;
  std::string first_output;
  std::vector<EventSummary> events;
  uint64_t unattributed_lost = 0;  // losses whose event is unknown (ftrace per-CPU drops)
  // perf counts per event; ftrace only per CPU (then ring lost / dropped silent show "-").
  bool per_event_losses = true;
  bool disk_full = false;
  std::string stop_reason;          // "duration", "command exited", "SIGINT", "--max-size", ...
  int stop_signal = 0;              // the signal that stopped it, if one did
  double disabled_s = 0;            // time with events off (--delay, --control disable)
  ProcessCpu own_cpu;               // the process's CPU at the end, set-up and check included
};

// The table printed at the end of every recording (also unit-tested).
std::string FormatRecordSummary(const RecordSummary& summary);

// Usage checks on the options alone (bad --dev, ring size, ...), before anything is touched.
absl::Status ValidateRecordOptions(const RecordOptions& options);
// Things that are allowed but probably not meant, one line each: a --dev MAJ:MIN that no block
// device has right now (under `sysfs_root`/dev/block; it may still appear, e.g. a loop device
// the traced command sets up).
std::vector<std::string> RecordOptionWarnings(const RecordOptions& options,
                                              const std::string& sysfs_root = "/sys");

// A warning when the output's name says another format than the backend writes (run.data from
// the ftrace backend is a trace.dat, which perf script cannot read), else "".
std::string OutputNameWarning(const std::string& path, Backend backend);

// "12.3 MiB"
std::string HumanBytes(uint64_t bytes);

// The kernel filter of --dev values ("dev == 7340032 || dev == 8388608"); an error names a bad
// value.
absl::StatusOr<std::string> BuildDevFilter(const std::vector<std::string>& devs);

// Checks that this process may record: root, or CAP_PERFMON / CAP_SYS_ADMIN.
absl::Status CheckRecordPrivileges(uid_t euid, uint64_t effective_caps);
absl::Status CheckRecordPrivileges();

// Runs a whole recording. Returns the exit code to use (the command's status when a command
// ran), or an error status for a failure (after making what was written a valid file).
absl::StatusOr<int> RunRecord(const RecordOptions& options, RecordSummary* summary);

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_RECORD_H_
