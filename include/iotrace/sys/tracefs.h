// tracefs access for recording: where tracefs is, which events exist, their ids and formats,
// the metadata an output file carries, and private instances that remove themselves.
#ifndef IOTRACE_SYS_TRACEFS_H_
#define IOTRACE_SYS_TRACEFS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/event/cpu_buffer_stats.h"
#include "iotrace/event/event_format.h"

struct tracefs_instance;

namespace iotrace {

inline constexpr char kDefaultTracefs[] = "/sys/kernel/tracing";

// The tracefs mount point. Fails with a hint (the mount command) when tracefs is in the kernel
// but not mounted, and says so when the kernel has no tracefs at all. `override_dir` points
// libtracefs at another tree (tests use fakes); `proc_dir` is where mounts and filesystems are
// read (tests pass a fake /proc).
absl::StatusOr<std::string> FindTracefs(const std::string& override_dir = "",
                                        const std::string& proc_dir = "/proc");

// One resolved tracepoint or probe event.
struct TraceEventInfo {
  std::string system;
  std::string name;
  uint32_t id = 0;
  std::string format_text;
  EventFormat format;
  std::string FullName() const { return system + ":" + name; }
};

// Every "system:event" that tracefs offers (from available_events).
absl::StatusOr<std::vector<std::string>> ListAvailableEvents(const std::string& tracefs);

// Resolves specs ("block:block_rq_issue", "block:*", "block/block_rq_*", "sys:ev*") to events
// with their id and parsed format, in spec order, without duplicates. An unknown event or a
// glob matching nothing is a NotFound error suggesting close names.
absl::StatusOr<std::vector<TraceEventInfo>> ResolveEvents(const std::string& tracefs,
                                                          const std::vector<std::string>& specs);

// Names from `candidates` closest to `wanted` (edit distance), best first, at most `max`.
std::vector<std::string> SuggestNames(std::string_view wanted,
                                      const std::vector<std::string>& candidates, size_t max = 3);

// header_page, header_event, printk formats, saved cmdlines and the events' format texts; the
// ftrace system's formats (function, print, ...) only when asked: trace-cmd stores them, perf
// does not (and perf 6.1 cannot parse some of this kernel's).
absl::StatusOr<TracingMetadata> CollectTracingMetadata(const std::string& tracefs,
                                                       const std::vector<TraceEventInfo>& events,
                                                       bool include_ftrace_formats = false);

// saved_cmdlines of the top level ("pid comm" lines); empty when unreadable.
std::string ReadSavedCmdlines(const std::string& tracefs);


// A private ftrace instance (instances/NAME). Everything it enables lives inside it, and the
// destructor turns tracing off and removes the instance, so nothing is left behind.
class TracefsInstance {
 public:
  // Fails with AlreadyExists (hint: iotrace reset) when an instance of that name exists.
  static absl::StatusOr<std::unique_ptr<TracefsInstance>> Create(const std::string& tracefs,
                                                                 const std::string& name);
  ~TracefsInstance();
  TracefsInstance(const TracefsInstance&) = delete;
  TracefsInstance& operator=(const TracefsInstance&) = delete;

  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }  // <tracefs>/instances/<name>

  absl::Status EnableEvent(const std::string& system, const std::string& event);
  absl::Status SetEventFilter(const std::string& system, const std::string& event,
                              const std::string& filter);
  absl::Status SetBufferSizeKb(uint32_t kb);
  absl::Status SetClock(const std::string& clock);
  absl::Status SetTracingOn(bool on);
  absl::StatusOr<std::string> ReadFile(const std::string& relative_path) const;
  // <dir>/per_cpu/cpu<cpu>/<file>, e.g. trace_pipe_raw.
  std::string PerCpuPath(int cpu, const std::string& file) const;
  absl::StatusOr<CpuBufferStats> ReadCpuStats(int cpu) const;
  // Removes the instance now (the destructor does it otherwise); safe to call twice.
  absl::Status Remove();

 private:
  TracefsInstance(std::string name, std::string dir, tracefs_instance* handle);
  absl::Status WriteFile(const std::string& relative_path, const std::string& value);
  std::string name_;
  std::string dir_;
  tracefs_instance* handle_ = nullptr;
};

// Names of instances whose name starts with `prefix` (e.g. "iotrace_").
std::vector<std::string> ListInstances(const std::string& tracefs, const std::string& prefix);
// Removes one instance by name (used by `iotrace reset` for leftovers of a killed run).
absl::Status RemoveInstance(const std::string& tracefs, const std::string& name);

// The kernel's last tracefs error (error_log) for an instance or the top level, "" if none.
std::string TracefsErrorLast(tracefs_instance* instance = nullptr);

}  // namespace iotrace

#endif  // IOTRACE_SYS_TRACEFS_H_
