// iotrace reset: removes what a killed iotrace left in tracefs (instances named iotrace_* and
// probe events in groups iotrace_*) and nothing else; prints each thing it removed or kept.
#include <fnmatch.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "cli.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"
#include "iotrace/cli/flags.h"
#include "iotrace/sys/probe.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {
namespace {

constexpr char kPrefix[] = "iotrace_";

// iotrace names its groups and instances iotrace_<pid> or iotrace_<what>_<pid>: the pid of
// the process that made it, or -1 when the name carries none.
int PidInName(const std::string& name) {
  size_t us = name.rfind('_');
  int pid = -1;
  if (us == std::string::npos || !absl::SimpleAtoi(name.substr(us + 1), &pid) || pid <= 0) {
    return -1;
  }
  return pid;
}

// The command name of a running process, or "" when `pid` does not run.
std::string RunningComm(int pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) return "";
  auto comm = ReadFileToString(absl::StrFormat("/proc/%d/comm", pid));
  return comm.ok() ? std::string(TrimText(*comm)) : "?";
}

}  // namespace

int ResetCommand(const std::vector<std::string>& args) {
  bool help = false, dry_run = false, force = false;
  std::string tracefs_dir;
  FlagParser flags;
  flags.Add("dry-run", 'n', false, "", "only show what would be removed",
            [&](const std::string&) {
              dry_run = true;
              return absl::OkStatus();
            });
  flags.Add("force", 'f', false, "", "also remove what belongs to a process that still runs",
            [&](const std::string&) {
              force = true;
              return absl::OkStatus();
            });
  flags.Add("tracefs", 0, true, "DIR", "tracefs mount point (default: found in /proc/mounts)",
            [&](const std::string& v) {
              tracefs_dir = v;
              return absl::OkStatus();
            });
  flags.Add("help", 'h', false, "", "show this help", [&](const std::string&) {
    help = true;
    return absl::OkStatus();
  });
  std::vector<std::string> positional;
  absl::Status parsed = flags.Parse(args, &positional, nullptr);
  if (help) {
    std::printf(
        "usage: iotrace reset [options] [GLOB]\n\n"
        "Removes the leftovers of a killed iotrace: tracefs instances named iotrace_* and\n"
        "probe events in groups iotrace_* (never anything else). GLOB narrows the names\n"
        "(default iotrace_*; it must start with iotrace_). Names that end in the pid of a\n"
        "process that still runs are kept unless --force.\n\noptions:\n%s",
        flags.Help().c_str());
    return kExitOk;
  }
  if (!parsed.ok()) return ReportError(parsed);
  std::string glob = positional.empty() ? std::string(kPrefix) + "*" : positional[0];
  if (positional.size() > 1 || glob.rfind(kPrefix, 0) != 0) {
    return ReportError(UsageError(
        absl::StrFormat("reset touches only names starting with %s, not '%s'", kPrefix, glob),
        "give a glob such as 'iotrace_1234' or 'iotrace_*'"));
  }
  auto tracefs = FindTracefs(tracefs_dir);
  if (!tracefs.ok()) return ReportError(tracefs.status());

  int removed = 0, kept = 0, failed = 0;
  // Decides whether `name` goes; prints why it stays.
  auto should_remove = [&](const std::string& what, const std::string& name,
                           const std::string& owner) {
    int pid = PidInName(owner);
    std::string comm = RunningComm(pid);
    if (!comm.empty() && !force) {
      std::printf("kept      %s %s: process %d (%s) still runs (--force removes it)\n",
                  what.c_str(), name.c_str(), pid, comm.c_str());
      ++kept;
      return false;
    }
    return true;
  };
  auto report = [&](const std::string& what, const std::string& name, const absl::Status& s) {
    if (dry_run) {
      std::printf("would remove %s %s\n", what.c_str(), name.c_str());
    } else if (s.ok()) {
      std::printf("removed   %s %s\n", what.c_str(), name.c_str());
      ++removed;
    } else {
      std::printf("FAILED    %s %s: %s\n", what.c_str(), name.c_str(),
                  std::string(s.message()).c_str());
      ++failed;
    }
  };

  // Probes first: an instance that still has a probe event enabled keeps it busy.
  for (const ExistingProbe& p : ListProbeEvents(*tracefs)) {
    if (p.group.rfind(kPrefix, 0) != 0 || fnmatch(glob.c_str(), p.group.c_str(), 0) != 0) {
      continue;
    }
    const std::string name = p.group + ":" + p.event;
    if (!should_remove(ProbeTypeName(p.type), name, p.group)) continue;
    report(ProbeTypeName(p.type), name,
           dry_run ? absl::OkStatus() : RemoveProbeEvent(*tracefs, p.group, p.event));
  }
  for (const std::string& inst : ListInstances(*tracefs, kPrefix)) {
    if (fnmatch(glob.c_str(), inst.c_str(), 0) != 0) continue;
    if (!should_remove("instance", inst, inst)) continue;
    report("instance", inst, dry_run ? absl::OkStatus() : RemoveInstance(*tracefs, inst));
  }
  if (removed + kept + failed == 0 && !dry_run) std::printf("nothing to remove\n");
  if (dry_run) return kExitOk;
  if (failed > 0) {
    return ReportError(WithHint(absl::FailedPreconditionError(absl::StrFormat(
                                    "%d of %d leftovers could not be removed", failed,
                                    failed + removed)),
                                "a busy one is still open by a running process: stop it, or "
                                "look with 'lsof +D %s'"));
  }
  return kExitOk;
}

}  // namespace iotrace
