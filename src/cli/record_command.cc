// iotrace record: flags -> RecordOptions -> RunRecord, then the summary table.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "iotrace/base/status.h"
#include "iotrace/capture/record.h"
#include "iotrace/cli/flags.h"
#include "iotrace/live/record_latency.h"

namespace iotrace {

int RecordCommand(const std::vector<std::string>& args) {
  RecordOptions opt;
  bool help = false;
  bool default_events = true;
  std::vector<std::string> extra_events;
  FlagParser flags;
  flags.Add("event", 'e', true, "SYS:EVENT",
            "also record this tracepoint (repeatable; globs such as 'block:*')",
            [&](const std::string& v) {
              extra_events.push_back(v);
              return absl::OkStatus();
            });
  flags.Add("no-default-events", 0, false, "",
            "record only the -e events (the report needs the default block_rq_* events)",
            [&](const std::string&) {
              default_events = false;
              return absl::OkStatus();
            });
  flags.AddString("output", 'o', "FILE",
                  "output file (default ./iotrace.dat with the ftrace backend, ./iotrace.data with "
                  "perf); '-': stream perf's pipe mode to standard output (perf backend)",
                  &opt.output);
  flags.Add("duration", 'd', true, "SECONDS",
            "stop after this long (more than 0; without -d: until Ctrl-C, stop on --control, or "
            "the end of the command after --)",
            [&](const std::string& v) {
              IOTRACE_RETURN_IF_ERROR(ParseSecondsFlag("--duration", v, &opt.duration_s));
              // Inside RecordOptions 0 means "no duration": -d 0 would record until Ctrl-C.
              if (opt.duration_s == 0) {
                return UsageError(absl::StrFormat("--duration %s: a recording of 0 s holds "
                                                  "nothing", v),
                                  "omit -d to record until Ctrl-C or until the command after "
                                  "-- ends");
              }
              return absl::OkStatus();
            });
  AddDevFlag(flags, &opt.devs);
  AddBackendFlag(flags, &opt.backend);
  AddBufferFlags(flags, &opt.mmap_pages, &opt.buffer_kb);
  flags.Add("delay", 'D', true, "MS",
            "turn the events on this many ms after the start (the command starts at once); -1: "
            "only when --control says enable",
            [&](const std::string& v) {
              int64_t ms = 0;
              if (!absl::SimpleAtoi(v, &ms) || ms < -1) {
                return WithHint(absl::InvalidArgumentError(absl::StrFormat(
                                    "--delay '%s': expected milliseconds or -1", v)),
                                "e.g. --delay 500, or --delay -1 with --control");
              }
              opt.delay_ms = ms;
              return absl::OkStatus();
            });
  flags.AddString(
      "control", 0, "fifo:CTL[,ACK]|fd:CTL[,ACK]",
      "take commands while recording, as perf record does: 'enable', 'disable', 'stop', "
      "'ping', one per line, each answered 'ack' on ACK (requests that cross a disabled "
      "stretch show as unpaired in the report)",
      &opt.control);
  flags.Add("flush-interval", 0, true, "MS",
            "what the kernel recorded reaches the output within about this long, so that a "
            "killed recording loses at most that much (default 1000; 0: full pages only)",
            [&](const std::string& v) {
              int64_t ms = 0;
              if (!absl::SimpleAtoi(v, &ms) || ms < 0 || ms > 3600000) {
                return UsageError(absl::StrFormat("--flush-interval '%s': expected "
                                                  "milliseconds, 0 to 3600000", v),
                                  "e.g. --flush-interval 200");
              }
              opt.flush_interval_ms = ms;
              return absl::OkStatus();
            });
  flags.AddOptionalValue(
      "switch-output", "signal|SIZE|TIME",
      "a new output file, OUTPUT.YYYYMMDDHHMMSSCC (its start, local time, as perf names them), "
      "on SIGUSR2 (signal, the default), when the file holds SIZE (B, K, M, G: 100M) or after "
      "TIME (s, m, h, d: 30s); each file is complete on its own, nothing is lost at a switch",
      [](const std::string& v) { return ParseSwitchOutput(v).ok(); },
      [&](const std::string& v) {
        IOTRACE_ASSIGN_OR_RETURN(opt.switch_output, ParseSwitchOutput(v));
        return absl::OkStatus();
      });
  flags.Add("switch-max-files", 0, true, "N",
            "with --switch-output: keep the newest N files of the run, removing the oldest",
            [&](const std::string& v) {
              int n = 0;
              if (!absl::SimpleAtoi(v, &n) || n < 1) {
                return UsageError(absl::StrFormat("--switch-max-files '%s': expected a number "
                                                  "of files, 1 or more", v),
                                  "e.g. --switch-max-files 10");
              }
              opt.switch_max_files = n;
              return absl::OkStatus();
            });
  flags.Add("max-size", 0, true, "SIZE",
            "stop (cleanly, every file complete) once the run's files on disk hold SIZE (B, K, "
            "M, G: 2G); checked at every drain, so a file may pass it by one drain",
            [&](const std::string& v) {
              IOTRACE_ASSIGN_OR_RETURN(opt.max_size, ParseByteSize("--max-size", v));
              return absl::OkStatus();
            });
  flags.Add("probe", 0, true, "DEF",
            "add a dynamic probe: 'p:[GRP/]NAME SYMBOL[+OFFS] [ARGS]', 'r:...', or "
            "'p:NAME /path/bin:SYMBOL [ARGS]' (repeatable)",
            [&](const std::string& v) {
              opt.probes.push_back(v);
              return absl::OkStatus();
            });
  flags.Add("progress", 0, false, "", "show the progress line even when stderr is not a terminal",
            [&](const std::string&) {
              opt.progress = 1;
              return absl::OkStatus();
            });
  flags.Add("no-progress", 0, false, "", "never show the progress line",
            [&](const std::string&) {
              opt.progress = 0;
              return absl::OkStatus();
            });
  bool progress_latency = true;
  flags.Add("no-progress-latency", 0, false, "",
            "leave the device time (D2C p50/p99 per disk, ftrace backend) off the progress line: "
            "it reads back every page stored, which costs CPU",
            [&](const std::string&) {
              progress_latency = false;
              return absl::OkStatus();
            });
  AddTracefsFlag(flags, &opt.tracefs_dir);
  flags.AddSwitch("help", 'h', "show this help", &help);

  absl::Status parsed = flags.Parse(args, nullptr, &opt.command);
  if (help) {
    std::fputs(FitHelp(absl::StrFormat(
        "usage: iotrace record [options] [-- command [args...]]\n\n"
        "Records block-layer tracepoints system-wide into a perf.data file (perf backend) or a\n"
        "trace.dat file (ftrace backend) that iotrace report, perf script and trace-cmd read.\n"
        "Stops after --duration, when the command after -- exits (iotrace then exits with its\n"
        "status), on Ctrl-C / SIGTERM, or on 'stop' from --control; the file is complete in\n"
        "every case. A command still running when the recording stops gets SIGTERM, as with\n"
        "perf record. A long recording can be split into files (--switch-output, the oldest\n"
        "removed past --switch-max-files) and bounded on disk (--max-size).\n\n"
        "Default events: %s\n\noptions:\n%s",
        absl::StrJoin(DefaultRecordEvents(), ", ").c_str(), flags.Help().c_str())).c_str(), stdout);
    return kExitOk;
  }
  if (!parsed.ok()) return ReportError(parsed);
  if (!default_events) opt.events.clear();
  opt.events.insert(opt.events.end(), extra_events.begin(), extra_events.end());
  absl::Status valid = ValidateRecordOptions(opt);
  if (!valid.ok()) return ReportError(AsUsageError(valid));
  for (const std::string& w : RecordOptionWarnings(opt)) {
    std::fprintf(stderr, "iotrace: warning: %s\n", w.c_str());
  }
  RemoveStaleTracefsLeftovers(opt.tracefs_dir);
  opt.argv = {"iotrace", "record"};
  opt.argv.insert(opt.argv.end(), args.begin(), args.end());

  // The progress line's latency figures, when there is a progress line to show them on.
  RecordLatency latency;
  const bool progress_shown = opt.progress < 0 ? isatty(STDERR_FILENO) == 1 : opt.progress > 0;
  if (progress_shown && progress_latency) opt.tap = &latency;
  RecordSummary summary;
  absl::StatusOr<int> result = RunRecord(opt, &summary);
  if (!summary.events.empty()) std::fputs(FormatRecordSummary(summary).c_str(), stderr);
  if (!result.ok()) return ReportError(result.status());
  return *result;
}

}  // namespace iotrace
