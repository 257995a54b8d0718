// What a killed iotrace leaves in tracefs (instances and probe groups named iotrace_<pid> or
// iotrace_<what>_<pid>), who owns each leftover by the pid in its name, and removing the ones
// whose owner is gone: shared by `iotrace reset` and the start of record, live and doctor.
#ifndef IOTRACE_SYS_STALE_TRACEFS_H_
#define IOTRACE_SYS_STALE_TRACEFS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "iotrace/sys/probe.h"

namespace iotrace {

inline constexpr char kIotraceTracefsPrefix[] = "iotrace_";

// The pid at the end of an iotrace name (iotrace_1234, iotrace_check_1234), -1 when it has none.
int PidInIotraceName(const std::string& name);

// The command name (/proc/PID/comm) of process `pid` under `procfs`, "" when no such process
// runs (or pid <= 0), "?" when it runs but its comm cannot be read.
std::string RunningComm(int pid, const std::string& procfs = "/proc");

struct TracefsLeftover {
  bool probe = false;       // a probe event; else an instance
  std::string kind;         // "instance", "kprobe", "uprobe", ...
  std::string name;         // the instance's name, or group:event
  std::string owner;        // the name that carries the pid: the instance's, the probe's group
  std::string group, event; // a probe's
  int pid = -1;             // from `owner`; -1 when it carries none
  std::string comm;         // what runs as `pid` now ("" nothing; see RunningComm)
  // Nothing runs as the pid, or what runs is no iotrace (a reused pid: its comm does not start
  // with "iotrace"; iotrace's own test binaries, iotrace_unit_te..., count as iotrace). A name
  // without a pid is never stale: iotrace did not make it.
  bool stale() const;
};

// Probe events in groups iotrace_* first (an instance with a probe event enabled in it is
// busy), then instances named iotrace_*, with the owner of each looked up under `procfs`.
// Nothing named otherwise is listed.
std::vector<TracefsLeftover> FindTracefsLeftovers(const std::string& tracefs,
                                                  const std::string& procfs = "/proc");

absl::Status RemoveTracefsLeftover(const std::string& tracefs, const TracefsLeftover& leftover);

// Removes every stale leftover (TracefsLeftover::stale) and returns one line per leftover for
// stderr: "iotrace: removed stale tracefs instance iotrace_1234 (its process is gone)", or a
// warning when it could not be removed. Nothing of a live iotrace, nothing not named iotrace_*.
std::vector<std::string> RemoveStaleTracefs(const std::string& tracefs,
                                            const std::string& procfs = "/proc");

}  // namespace iotrace

#endif  // IOTRACE_SYS_STALE_TRACEFS_H_
