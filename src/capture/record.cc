#include "iotrace/capture/record.h"

#include <signal.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/base/gated_child.h"
#include "iotrace/base/signal_guard.h"
#include "iotrace/base/status.h"
#include "iotrace/capture/backend_check.h"
#include "iotrace/capture/backend_verdict.h"
#include "iotrace/capture/record_control.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/sys/probe.h"
#include "iotrace/sys/tracefs.h"
#include "record_backends.h"

namespace iotrace {

absl::StatusOr<std::string> BuildDevFilter(const std::vector<std::string>& devs) {
  std::vector<std::string> terms;
  for (const std::string& d : devs) {
    auto dev = ParseDevSpec(d);
    if (!dev.ok()) return dev.status();
    // The dev field holds the kernel encoding (MAJOR << 20 | MINOR), not glibc's makedev.
    terms.push_back(absl::StrFormat("dev == %u", *dev));
  }
  return absl::StrJoin(terms, " || ");
}

absl::StatusOr<int> RunRecord(const RecordOptions& opt, RecordSummary* summary) {
  IOTRACE_RETURN_IF_ERROR(CheckRecordPrivileges());
  IOTRACE_ASSIGN_OR_RETURN(std::string filter, BuildDevFilter(opt.devs));
  if (!opt.command.empty()) {
    // Before anything is created: a command that cannot run is a plain error.
    auto exe = FindExecutable(opt.command[0]);
    if (!exe.ok()) return AsUsageError(WithHint(exe.status(), "check the command after --"));
  }
  IOTRACE_ASSIGN_OR_RETURN(std::string tracefs, FindTracefs(opt.tracefs_dir));
  std::optional<ControlChannel> control;
  if (!opt.control.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(ControlSpec spec, ParseControlSpec(opt.control));
    auto opened = ControlChannel::Open(spec);
    if (!opened.ok()) return AsUsageError(opened.status());
    control.emplace(std::move(*opened));
  }
  // From here on iotrace changes things (probes, an instance): Ctrl-C and SIGTERM are taken
  // from a signalfd, so that they end the recording through the cleanup path, even if they
  // arrive while things are being set up.
  SignalGuard signals(opt.switch_output.kind == SwitchOutputMode::Kind::kSignal);
  std::vector<TraceEventInfo> events;
  if (!opt.events.empty()) {
    auto resolved = ResolveEvents(tracefs, opt.events);
    if (!resolved.ok()) {
      // An event that does not exist is a mistake in the command line.
      return resolved.status().code() == absl::StatusCode::kNotFound
                 ? AsUsageError(resolved.status())
                 : resolved.status();
    }
    events = std::move(*resolved);
  }
  // Probes live longer than the capture that records them (they are removed after it closed).
  std::unique_ptr<DynamicProbes> probes;
  if (!opt.probes.empty()) {
    DynamicProbeOptions popt;
    popt.tracefs = tracefs;
    auto created = DynamicProbes::Create(opt.probes, popt);
    if (!created.ok()) {
      return created.status().code() == absl::StatusCode::kInvalidArgument
                 ? AsUsageError(created.status())
                 : created.status();
    }
    probes = std::move(*created);
    for (const TraceEventInfo& e : probes->events()) events.push_back(e);
  }

  Backend backend = opt.backend;
  summary->backend_reason = "chosen with --backend";
  if (opt.output == "-") {
    // A reader that goes away (perf script ... | head) makes writes fail with EPIPE, which
    // ends the recording through the cleanup path, rather than SIGPIPE killing iotrace.
    signal(SIGPIPE, SIG_IGN);
  }
  if (backend == Backend::kAuto && opt.output == "-") {
    // A stream needs a format that can be written in one pass: perf's pipe mode (a trace.dat
    // needs its per-CPU table before the data).
    backend = Backend::kPerf;
    summary->backend_reason = "auto: -o - streams perf's pipe-mode format";
  } else if (backend == Backend::kAuto) {
    const AutoChoice choice = ChooseBackend(tracefs, DefaultVerdictPath());
    backend = choice.backend;
    summary->backend_reason = choice.reason;
    summary->backend_check = DescribeAutoCheck(choice);
  }
  summary->backend = backend;
  summary->output = opt.output.empty()
                        ? (backend == Backend::kFtrace ? "iotrace.dat" : "iotrace.data")
                        : opt.output;
  ControlChannel* ctl = control ? &*control : nullptr;
  absl::StatusOr<int> result =
      backend == Backend::kFtrace
          ? RecordWithFtrace(opt, tracefs, events, filter, signals, ctl, summary)
          : RecordWithPerf(opt, tracefs, events, filter, signals, ctl, summary);
  if (probes) {
    absl::Status s = probes->Remove();
    if (!s.ok()) {
      std::fprintf(stderr, "iotrace: warning: %s\nhint: run 'iotrace reset'\n",
                   std::string(s.message()).c_str());
    }
  }
  summary->own_cpu = ProcessCpuNow();
  return result;
}

}  // namespace iotrace
