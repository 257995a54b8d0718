// iotrace doctor: what this machine supports and what iotrace will do; exit 0 when recording
// would work.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli.h"
#include "iotrace/cli/doctor.h"
#include "iotrace/cli/flags.h"

namespace iotrace {

int DoctorCommand(const std::vector<std::string>& args) {
  DoctorOptions opt;
  bool help = false;
  FlagParser flags;
  flags.Add("check-ms", 0, true, "MS",
            "length of each live backend check (default 200; 0 skips them)",
            [&](const std::string& v) { return ParseUint32Flag("--check-ms", v, &opt.check_ms); });
  flags.Add("no-check", 0, false, "", "skip the live backend checks", [&](const std::string&) {
    opt.check_ms = 0;
    return absl::OkStatus();
  });
  AddTracefsFlag(flags, &opt.tracefs);
  flags.AddSwitch("help", 'h', "show this help", &help);
  absl::Status parsed = flags.Parse(args, nullptr, nullptr);
  if (help) {
    std::fputs(FitHelp(absl::StrFormat(
        "usage: iotrace doctor [options]\n\n"
        "Shows what this machine supports (tracefs, privileges, block event layouts, kprobes,\n"
        "uprobes, block devices and their schedulers) and runs a short live check of each\n"
        "capture backend (does every event the kernel counts reach the buffers?). Exits 0\n"
        "when recording would work, 1 otherwise.\n\noptions:\n%s",
        flags.Help().c_str())).c_str(), stdout);
    return kExitOk;
  }
  if (!parsed.ok()) return ReportError(parsed);
  RemoveStaleTracefsLeftovers(opt.tracefs);
  DoctorReport report = RunDoctor(opt);
  std::fputs(FormatDoctorReport(report).c_str(), stdout);
  return report.recording_works ? kExitOk : kExitRuntime;
}

}  // namespace iotrace
