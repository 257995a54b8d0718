// iotrace list [PATTERN] [-v]: the tracepoints and probe events this kernel offers, their
// fields with -v, and whether a kernel module could hook each tracepoint (its
// __tracepoint_<event> symbol exported, from Module.symvers where the system has one).
#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli.h"
#include "iotrace/base/status.h"
#include "iotrace/cli/flags.h"
#include "iotrace/sys/module_symvers.h"
#include "iotrace/sys/probe.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {
namespace {

// "block" = system block; "sys:ev" globs on both; otherwise a glob on the system or the event.
bool MatchesPattern(const std::string& pattern, const std::string& system,
                    const std::string& event) {
  if (pattern.empty()) return true;
  std::string p = pattern;
  for (char& c : p) {
    if (c == '/') c = ':';
  }
  size_t colon = p.find(':');
  if (colon != std::string::npos) {
    const std::string sp = p.substr(0, colon), ep = p.substr(colon + 1);
    return fnmatch(sp.empty() ? "*" : sp.c_str(), system.c_str(), 0) == 0 &&
           fnmatch(ep.empty() ? "*" : ep.c_str(), event.c_str(), 0) == 0;
  }
  return fnmatch(p.c_str(), system.c_str(), 0) == 0 || fnmatch(p.c_str(), event.c_str(), 0) == 0;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

int ListCommand(const std::vector<std::string>& args) {
  bool help = false, verbose = false;
  std::string tracefs_dir, symvers_path, modules_root = "/lib/modules";
  FlagParser flags;
  flags.AddSwitch("verbose", 'v', "also list each event's fields (name, type, offset, size)",
                  &verbose);
  flags.AddString("symvers", 0, "FILE",
                  "Module.symvers to answer 'could a module hook it' from (default: "
                  "/lib/modules/$(uname -r)/{build/,}Module.symvers)",
                  &symvers_path);
  AddTracefsFlag(flags, &tracefs_dir);
  flags.AddSwitch("help", 'h', "show this help", &help);
  std::vector<std::string> positional;
  absl::Status parsed = flags.Parse(args, &positional, nullptr);
  if (help) {
    std::fputs(FitHelp(absl::StrFormat(
        "usage: iotrace list [PATTERN] [-v]\n\n"
        "Lists the tracepoints and probe events this kernel offers. PATTERN is a system\n"
        "('block'), SYSTEM:EVENT, or a glob on either ('block:*rq*', '*_issue').\n"
        "MODULE HOOK says whether a kernel module could attach to the tracepoint (its\n"
        "__tracepoint_<event> symbol exported to modules, from Module.symvers): iotrace reads\n"
        "every tracepoint from user space either way.\n\noptions:\n%s",
        flags.Help().c_str())).c_str(), stdout);
    return kExitOk;
  }
  if (!parsed.ok()) return ReportError(parsed);
  if (positional.size() > 1) {
    return ReportError(UsageError("list takes at most one PATTERN"));
  }
  const std::string pattern = positional.empty() ? "" : positional[0];

  auto tracefs = FindTracefs(tracefs_dir);
  if (!tracefs.ok()) return ReportError(tracefs.status());
  auto available = ListAvailableEvents(*tracefs);
  if (!available.ok()) return ReportError(available.status());

  // Where the module-hook answer comes from.
  std::unique_ptr<ModuleSymvers> symvers;
  std::string hook_note;
  struct utsname u;
  std::string release = uname(&u) == 0 ? u.release : "";
  if (symvers_path.empty()) symvers_path = ModuleSymvers::FindForRelease(release, modules_root);
  if (!symvers_path.empty()) {
    auto loaded = ModuleSymvers::Load(symvers_path);
    if (!loaded.ok()) return ReportError(loaded.status());
    symvers = std::make_unique<ModuleSymvers>(std::move(*loaded));
    hook_note = "module hook: from " + symvers_path;
  } else {
    hook_note = absl::StrFormat(
        "module hook: unknown, no Module.symvers under %s/%s/ (nor build/)", modules_root,
        release);
    if (!PathExists("/proc/modules")) {
      hook_note += ";\nthis kernel has no loadable-module support at all (no /proc/modules), "
                   "so no module can hook any tracepoint here";
    }
  }

  std::vector<ExistingProbe> probes = ListProbeEvents(*tracefs);
  auto probe_kind = [&](const std::string& sys, const std::string& ev) -> const char* {
    for (const ExistingProbe& p : probes) {
      if (p.group == sys && p.event == ev) return ProbeTypeName(p.type);
    }
    return nullptr;
  };

  std::vector<std::string> matched;
  for (const std::string& full : *available) {
    size_t colon = full.find(':');
    if (colon == std::string::npos) continue;
    if (MatchesPattern(pattern, full.substr(0, colon), full.substr(colon + 1))) {
      matched.push_back(full);
    }
  }
  if (matched.empty()) {
    absl::Status s = absl::NotFoundError(absl::StrFormat("no event matches '%s'", pattern));
    // Systems are candidates too: 'blok' should find 'block'.
    std::vector<std::string> candidates = *available;
    for (const std::string& full : *available) {
      std::string sys = full.substr(0, full.find(':'));
      if (std::find(candidates.begin(), candidates.end(), sys) == candidates.end()) {
        candidates.push_back(sys);
      }
    }
    std::vector<std::string> near = SuggestNames(pattern, candidates);
    return ReportError(near.empty() ? WithHint(s, "run 'iotrace list' for all events")
                                    : WithHint(s, "did you mean " + near[0] + "?"));
  }
  std::sort(matched.begin(), matched.end());
  auto resolved = ResolveEvents(*tracefs, matched);
  if (!resolved.ok()) return ReportError(resolved.status());

  if (!verbose) std::printf("%-44s %6s  %-10s  %s\n", "EVENT", "ID", "KIND", "MODULE HOOK");
  for (const TraceEventInfo& e : *resolved) {
    const char* kind = probe_kind(e.system, e.name);
    std::string hook = kind != nullptr ? "-"
                       : symvers      ? HookStatusName(symvers->TracepointHook(e.name))
                                      : HookStatusName(HookStatus::kUnknown);
    if (!verbose) {
      std::printf("%-44s %6u  %-10s  %s\n", e.FullName().c_str(), e.id,
                  kind ? kind : "tracepoint", hook.c_str());
      continue;
    }
    std::printf("%s  (id %u, %s, module hook: %s)\n", e.FullName().c_str(), e.id,
                kind ? kind : "tracepoint", hook.c_str());
    std::printf("    %-24s %-26s %6s %5s\n", "FIELD", "TYPE", "OFFSET", "SIZE");
    for (const FieldInfo& f : e.format.fields) {
      if (f.is_common) continue;
      std::printf("    %-24s %-26s %6u %5u\n", f.name.c_str(), f.type.c_str(), f.offset,
                  f.size);
    }
  }
  std::printf("\n%zu event%s; the common header (type, flags, preempt count, pid) fills bytes "
              "0-7 of every record.\n%s\n",
              resolved->size(), resolved->size() == 1 ? "" : "s", hook_note.c_str());
  return kExitOk;
}

}  // namespace iotrace
