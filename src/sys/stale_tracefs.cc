#include "iotrace/sys/stale_tracefs.h"

#include <sys/stat.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/text.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {

int PidInIotraceName(const std::string& name) {
  if (name.rfind(kIotraceTracefsPrefix, 0) != 0) return -1;
  const size_t us = name.rfind('_');
  int pid = -1;
  if (!absl::SimpleAtoi(name.substr(us + 1), &pid) || pid <= 0) return -1;
  return pid;
}

std::string RunningComm(int pid, const std::string& procfs) {
  struct stat st;
  if (pid <= 0 || ::stat(absl::StrFormat("%s/%d", procfs, pid).c_str(), &st) != 0) return "";
  auto comm = ReadFileToString(absl::StrFormat("%s/%d/comm", procfs, pid));
  return comm.ok() ? std::string(TrimText(*comm)) : "?";
}

bool TracefsLeftover::stale() const {
  if (pid <= 0) return false;
  // "?": something runs there whose name cannot be read; it may be an iotrace.
  return comm.empty() || (comm != "?" && comm.rfind("iotrace", 0) != 0);
}

std::vector<TracefsLeftover> FindTracefsLeftovers(const std::string& tracefs,
                                                  const std::string& procfs) {
  std::vector<TracefsLeftover> out;
  auto add = [&](TracefsLeftover l) {
    l.pid = PidInIotraceName(l.owner);
    l.comm = RunningComm(l.pid, procfs);
    out.push_back(std::move(l));
  };
  for (const ExistingProbe& p : ListProbeEvents(tracefs)) {
    if (p.group.rfind(kIotraceTracefsPrefix, 0) != 0) continue;
    TracefsLeftover l;
    l.probe = true;
    l.kind = ProbeTypeName(p.type);
    l.name = p.group + ":" + p.event;
    l.owner = p.group;
    l.group = p.group;
    l.event = p.event;
    add(std::move(l));
  }
  for (const std::string& inst : ListInstances(tracefs, kIotraceTracefsPrefix)) {
    TracefsLeftover l;
    l.kind = "instance";
    l.name = inst;
    l.owner = inst;
    add(std::move(l));
  }
  return out;
}

absl::Status RemoveTracefsLeftover(const std::string& tracefs, const TracefsLeftover& leftover) {
  return leftover.probe ? RemoveProbeEvent(tracefs, leftover.group, leftover.event)
                        : RemoveInstance(tracefs, leftover.name);
}

std::vector<std::string> RemoveStaleTracefs(const std::string& tracefs,
                                            const std::string& procfs) {
  std::vector<std::string> lines;
  for (const TracefsLeftover& l : FindTracefsLeftovers(tracefs, procfs)) {
    if (!l.stale()) continue;
    const std::string why =
        l.comm.empty() ? "its process is gone"
                       : absl::StrFormat("pid %d is now %s, not an iotrace", l.pid, l.comm);
    const std::string what = l.probe ? "probe event" : "tracefs instance";
    absl::Status s = RemoveTracefsLeftover(tracefs, l);
    if (s.ok()) {
      lines.push_back(absl::StrFormat("iotrace: removed stale %s %s (%s)", what, l.name, why));
    } else {
      lines.push_back(absl::StrFormat("iotrace: warning: stale %s %s (%s) not removed: %s", what,
                                      l.name, why, s.message()));
    }
  }
  return lines;
}

}  // namespace iotrace
