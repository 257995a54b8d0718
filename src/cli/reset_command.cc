// iotrace reset: removes what a killed iotrace left in tracefs (instances named iotrace_* and
// probe events in groups iotrace_*) and nothing else; prints each thing it removed or kept.
#include <fnmatch.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli.h"
#include "iotrace/base/status.h"
#include "iotrace/cli/flags.h"
#include "iotrace/sys/stale_tracefs.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {

int ResetCommand(const std::vector<std::string>& args) {
  bool help = false, dry_run = false, force = false;
  std::string tracefs_dir;
  FlagParser flags;
  flags.AddSwitch("dry-run", 'n', "only show what would be removed", &dry_run);
  flags.AddSwitch("force", 'f', "also remove what belongs to a process that still runs", &force);
  AddTracefsFlag(flags, &tracefs_dir);
  flags.AddSwitch("help", 'h', "show this help", &help);
  std::vector<std::string> positional;
  absl::Status parsed = flags.Parse(args, &positional, nullptr);
  if (help) {
    std::fputs(FitHelp(absl::StrFormat(
        "usage: iotrace reset [options] [GLOB]\n\n"
        "Removes the leftovers of a killed iotrace: tracefs instances named iotrace_* and\n"
        "probe events in groups iotrace_* (never anything else). GLOB narrows the names\n"
        "(default iotrace_*; it must start with iotrace_). Names that end in the pid of a\n"
        "process that still runs are kept unless --force.\n\noptions:\n%s",
        flags.Help().c_str())).c_str(), stdout);
    return kExitOk;
  }
  if (!parsed.ok()) return ReportError(parsed);
  const std::string prefix = kIotraceTracefsPrefix;
  std::string glob = positional.empty() ? prefix + "*" : positional[0];
  if (positional.size() > 1 || glob.rfind(prefix, 0) != 0) {
    return ReportError(UsageError(
        absl::StrFormat("reset touches only names starting with %s, not '%s'", prefix, glob),
        "give a glob such as 'iotrace_1234' or 'iotrace_*'"));
  }
  auto tracefs = FindTracefs(tracefs_dir);
  if (!tracefs.ok()) return ReportError(tracefs.status());

  int removed = 0, kept = 0, failed = 0;
  // Decides whether a leftover goes; prints why it stays.
  auto should_remove = [&](const TracefsLeftover& l) {
    if (!l.comm.empty() && !force) {
      std::printf("kept      %s %s: process %d (%s) still runs (--force removes it)\n",
                  l.kind.c_str(), l.name.c_str(), l.pid, l.comm.c_str());
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

  // Probes first (FindTracefsLeftovers' order): an instance with a probe event enabled is busy.
  for (const TracefsLeftover& l : FindTracefsLeftovers(*tracefs)) {
    if (fnmatch(glob.c_str(), l.owner.c_str(), 0) != 0 || !should_remove(l)) continue;
    report(l.kind, l.name, dry_run ? absl::OkStatus() : RemoveTracefsLeftover(*tracefs, l));
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
