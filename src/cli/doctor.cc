#include "iotrace/cli/doctor.h"

#include <dirent.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/base/clock.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"
#include "iotrace/capture/backend_check.h"
#include "iotrace/capture/backend_verdict.h"
#include "iotrace/capture/record.h"
#include "iotrace/sys/probe.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {
namespace {

const EventFormat* FindFormat(const std::vector<EventFormat>& formats, const std::string& name) {
  for (const EventFormat& f : formats) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string Layout(const EventFormat& f) {
  std::vector<std::string> parts;
  for (const FieldInfo& field : f.fields) {
    if (field.is_common) continue;
    parts.push_back(absl::StrFormat("%s@%d", field.name, field.offset));
  }
  return absl::StrJoin(parts, " ");
}

std::string ReadTrimmed(const std::string& path) {
  auto text = ReadFileToString(path);
  return text.ok() ? std::string(TrimText(*text)) : std::string();
}

// "none [mq-deadline] kyber" -> "mq-deadline".
std::string ActiveScheduler(std::string_view text) {
  size_t open = text.find('['), close = text.find(']');
  if (open != std::string_view::npos && close != std::string_view::npos && close > open) {
    return std::string(text.substr(open + 1, close - open - 1));
  }
  return std::string(TrimText(text));
}

}  // namespace

const char* DoctorLevelName(DoctorLevel level) {
  switch (level) {
    case DoctorLevel::kOk: return "ok";
    case DoctorLevel::kInfo: return "info";
    case DoctorLevel::kWarn: return "warn";
    case DoctorLevel::kFail: return "FAIL";
  }
  return "?";
}

std::vector<std::string> DescribeBlockLayout(const std::vector<EventFormat>& formats,
                                             const std::vector<std::string>& names) {
  std::vector<std::string> out;
  auto has = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  const EventFormat* issue = FindFormat(formats, "block_rq_issue");
  if (issue != nullptr) {
    out.push_back("block_rq_issue: " + Layout(*issue));
    const FieldInfo* ioprio = issue->FindField("ioprio");
    out.push_back(ioprio != nullptr ? "ioprio field: present (6.11+ layout)"
                                    : "ioprio field: absent (pre-6.11 layout)");
    if (const FieldInfo* rwbs = issue->FindField("rwbs")) {
      out.push_back(absl::StrFormat("rwbs: char[%d] (8 up to 6.15, 9 in 6.16, 10 later)",
                                    rwbs->array_len ? rwbs->array_len : rwbs->size));
    }
    if (const FieldInfo* dev = issue->FindField("dev")) {
      out.push_back(absl::StrFormat("dev: %s (%d bytes), kernel encoding MAJOR<<20|MINOR",
                                    dev->type, dev->size));
    }
    if (issue->fields.size() > 4 && issue->fields[4].offset != 8) {
      out.push_back(absl::StrFormat("first field at offset %d, not 8 (common_padding kernel)",
                                    issue->fields[4].offset));
    }
  }
  if (const EventFormat* complete = FindFormat(formats, "block_rq_complete")) {
    out.push_back("block_rq_complete: " + Layout(*complete) +
                  (complete->FindField("comm") ? "" : " (no comm, no bytes)"));
  }
  if (const EventFormat* requeue = FindFormat(formats, "block_rq_requeue")) {
    out.push_back("block_rq_requeue: " + Layout(*requeue));
  }
  const bool io_start = has("block_io_start"), io_done = has("block_io_done");
  out.push_back(io_start && io_done
                    ? "block_io_start/done: present (only where iostats is on)"
                    : "block_io_start/done: absent (kernel before 6.5)");
  for (const char* needed : {"block_rq_insert", "block_rq_issue", "block_rq_complete",
                             "block_rq_requeue", "block_rq_merge"}) {
    if (!has(needed)) out.push_back(std::string(needed) + ": MISSING");
  }
  return out;
}

std::vector<BlockDeviceInfo> ListBlockDevices(const std::string& sys_block) {
  std::vector<BlockDeviceInfo> out;
  DIR* d = opendir(sys_block.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    BlockDeviceInfo dev;
    dev.name = e->d_name;
    const std::string base = sys_block + "/" + dev.name;
    if (!absl::SimpleAtoi(ReadTrimmed(base + "/size"), &dev.sectors) || dev.sectors == 0) {
      continue;  // unattached loop devices and the like
    }
    dev.majmin = ReadTrimmed(base + "/dev");
    auto sched = ReadFileToString(base + "/queue/scheduler");
    if (sched.ok()) dev.scheduler = ActiveScheduler(*sched);
    int iostats = -1;
    if (absl::SimpleAtoi(ReadTrimmed(base + "/queue/iostats"), &iostats)) dev.iostats = iostats;
    out.push_back(std::move(dev));
  }
  closedir(d);
  std::sort(out.begin(), out.end(),
            [](const BlockDeviceInfo& a, const BlockDeviceInfo& b) { return a.name < b.name; });
  return out;
}

std::string DescribeBlockDevice(const BlockDeviceInfo& dev) {
  std::string head = absl::StrFormat("%-7s %-6s %7.1f GiB", dev.name, dev.majmin,
                                     dev.sectors * 512.0 / (1024.0 * 1024 * 1024));
  std::string meaning;
  if (dev.scheduler.empty()) {
    meaning = "bio-based (no scheduler): no block_rq_* events, not measured";
  } else if (dev.scheduler == "none") {
    meaning = "none: most requests skip block_rq_insert (I2D/I2C see few; D2C all)";
  } else {
    meaning = dev.scheduler + ": requests inserted, then issued (I2D, D2C, I2C)";
  }
  if (dev.iostats == 0) meaning += "; iostats off: no block_io_*";
  return head + "  " + meaning;
}

DoctorReport RunDoctor(const DoctorOptions& options) {
  DoctorReport report;
  struct utsname u;
  if (uname(&u) == 0) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    report.kernel = absl::StrFormat("Linux %s %s, %s", u.release, u.machine,
                                    Plural(cpus < 0 ? 0 : cpus, "CPU"));
  }
  auto add = [&](std::string topic, DoctorLevel level, std::string summary,
                 std::vector<std::string> details = {}) {
    report.items.push_back({std::move(topic), level, std::move(summary), std::move(details)});
  };

  // tracefs
  auto tracefs = FindTracefs(options.tracefs);
  if (tracefs.ok()) {
    add("tracefs", DoctorLevel::kOk, "mounted at " + *tracefs);
  } else {
    std::vector<std::string> d;
    if (!HintOf(tracefs.status()).empty()) d.push_back("fix: " + HintOf(tracefs.status()));
    add("tracefs", DoctorLevel::kFail, std::string(tracefs.status().message()), d);
  }

  // privileges
  absl::Status priv = CheckRecordPrivileges();
  const bool root = geteuid() == 0;
  if (priv.ok()) {
    std::vector<std::string> d;
    if (tracefs.ok() && access((*tracefs + "/instances").c_str(), W_OK) != 0) {
      d.push_back("cannot create tracefs instances: the ftrace backend needs root");
    }
    add("privileges", d.empty() ? DoctorLevel::kOk : DoctorLevel::kWarn,
        root ? "root" : "CAP_PERFMON or CAP_SYS_ADMIN (not root)", d);
  } else {
    add("privileges", DoctorLevel::kFail, std::string(priv.message()),
        {"fix: " + HintOf(priv)});
  }

  // perf_event_paranoid
  std::string paranoid = ReadTrimmed("/proc/sys/kernel/perf_event_paranoid");
  if (!paranoid.empty()) {
    add("perf paranoid", DoctorLevel::kInfo,
        paranoid + (root ? ": does not limit root" : ": limits users without CAP_PERFMON") +
            " (non-root needs CAP_PERFMON or -1)");
  }

  // block events and layout
  bool block_ok = false;
  if (tracefs.ok()) {
    auto available = ListAvailableEvents(*tracefs);
    std::vector<std::string> block;
    if (available.ok()) {
      for (const std::string& e : *available) {
        if (e.rfind("block:", 0) == 0) block.push_back(e.substr(6));
      }
    }
    auto has = [&](const char* n) { return std::find(block.begin(), block.end(), n) != block.end(); };
    block_ok = has("block_rq_issue") && has("block_rq_complete");
    std::vector<EventFormat> formats;
    auto resolved = ResolveEvents(*tracefs, {"block:block_rq_*", "block:block_io_*"});
    if (resolved.ok()) {
      for (TraceEventInfo& e : *resolved) formats.push_back(std::move(e.format));
    }
    add("block events", block_ok ? DoctorLevel::kOk : DoctorLevel::kFail,
        absl::StrFormat("%s%s", Plural(block.size(), "block tracepoint"),
                        block_ok ? "" : " (block_rq_issue/complete missing: nothing to measure)"),
        DescribeBlockLayout(formats, block));
  }

  // dynamic probes
  if (tracefs.ok()) {
    ProbeSupport ps = DetectProbeSupport(*tracefs);
    add("kprobes", ps.kprobes ? DoctorLevel::kOk : DoctorLevel::kWarn,
        ps.kprobes ? "kprobe_events present: --probe 'p:NAME SYMBOL[+OFFS] ...' works"
                   : "absent (CONFIG_KPROBE_EVENTS off): --probe on kernel functions fails");
    add("uprobes", ps.uprobes ? DoctorLevel::kOk : DoctorLevel::kWarn,
        ps.uprobes ? "uprobe_events present: --probe 'p:NAME /path/bin:SYMBOL ...' works"
                   : "not in this kernel (CONFIG_UPROBE_EVENTS off)");
  }

  // block devices
  std::vector<std::string> devs;
  for (const BlockDeviceInfo& d : ListBlockDevices(options.sys_block)) {
    devs.push_back(DescribeBlockDevice(d));
  }
  add("devices", devs.empty() ? DoctorLevel::kWarn : DoctorLevel::kInfo,
      devs.empty() ? "no block device with a size" : Plural(devs.size(), "block device"), devs);

  // live backend checks
  bool perf_works = false, ftrace_works = false;
  std::string perf_summary;
  CheckVerdict perf_verdict = CheckVerdict::kInconclusive;
  std::string ftrace_summary;
  CheckVerdict ftrace_verdict = CheckVerdict::kInconclusive;
  const bool can_check = tracefs.ok() && priv.ok() && options.check_ms > 0;
  const int64_t checked_at_s = RealtimeNs() / 1000000000;
  if (can_check) {
    auto per_cpu = [](const CompletenessCheck& c) {
      std::vector<std::string> d;
      for (const CpuCompleteness& cpu : c.cpus) {
        d.push_back(absl::StrFormat("CPU%d: counted %d, recorded %d, lost %d (+%d silently)",
                                    cpu.cpu, cpu.counted, cpu.recorded, cpu.reported_lost,
                                    cpu.Silent()));
      }
      return d;
    };
    auto perf = CheckPerfCompleteness(options.check_ms, *tracefs);
    if (perf.ok()) {
      perf_works = true;
      perf_verdict = perf->verdict;
      perf_summary = perf->summary;
      std::vector<std::string> d = per_cpu(*perf);
      d.insert(d.begin(), absl::StrFormat("%d ms on %s, interrupts arriving in idle",
                                          perf->duration_ms, perf->events));
      add("perf check",
          perf->verdict == CheckVerdict::kLossy ? DoctorLevel::kWarn : DoctorLevel::kOk,
          absl::StrFormat("%s: %s", CheckVerdictName(perf->verdict), perf->summary), d);
    } else {
      add("perf check", DoctorLevel::kWarn,
          "perf backend unusable: " + std::string(perf.status().message()));
    }
    auto ftrace = CheckFtraceCompleteness(options.check_ms, *tracefs);
    if (ftrace.ok()) {
      ftrace_works = true;
      ftrace_verdict = ftrace->verdict;
      ftrace_summary = ftrace->summary;
      std::vector<std::string> d = per_cpu(*ftrace);
      d.insert(d.begin(), absl::StrFormat("%d ms on %s in instance iotrace_check_<pid>",
                                          ftrace->duration_ms, ftrace->events));
      add("ftrace check",
          ftrace->verdict == CheckVerdict::kLossy ? DoctorLevel::kWarn : DoctorLevel::kOk,
          absl::StrFormat("%s: %s", CheckVerdictName(ftrace->verdict), ftrace->summary), d);
    } else {
      add("ftrace check", DoctorLevel::kWarn,
          "ftrace backend unusable: " + std::string(ftrace.status().message()));
    }
  } else {
    perf_works = ftrace_works = tracefs.ok() && priv.ok();
    add("backend check", DoctorLevel::kInfo,
        options.check_ms == 0 ? "skipped (--no-check)"
                              : "skipped: needs tracefs and recording privileges");
  }

  // What record --backend auto would do.
  report.auto_backend = AutoBackend(ftrace_works, ftrace_verdict, perf_works, perf_verdict);
  if (!can_check) {
    report.auto_reason = "no live check run";
  } else if (report.auto_backend == "ftrace" && ftrace_verdict != CheckVerdict::kLossy) {
    report.auto_reason = ftrace_summary + "; perf can drop samples silently";
  } else if (!report.auto_backend.empty()) {
    report.auto_reason = (ftrace_works ? ftrace_summary : "ftrace does not work here") + "; " +
                         (perf_works ? perf_summary : "perf does not work here");
  }
  // A fresh verdict replaces the kept one, under the same rule as record's: kept only when
  // ftrace's check ran.
  if (can_check && ftrace_works && !options.verdict_path.empty()) {
    KeptVerdict v;
    v.key = CurrentVerdictKey(*tracefs);
    v.backend = report.auto_backend == "perf" ? Backend::kPerf : Backend::kFtrace;
    v.reason = report.auto_reason;
    v.checked_at_s = checked_at_s;
    absl::Status kept = StoreVerdict(options.verdict_path, v);
    report.verdict_kept =
        kept.ok() ? "kept in " + options.verdict_path + " for this boot and kernel"
                  : "not kept: " + std::string(kept.message());
  }
  report.recording_works = tracefs.ok() && priv.ok() && block_ok && !report.auto_backend.empty();
  return report;
}

std::string FormatDoctorReport(const DoctorReport& report) {
  std::string out = "iotrace doctor: " + report.kernel + "\n\n";
  for (const DoctorItem& item : report.items) {
    absl::StrAppendFormat(&out, "  %-5s %-14s %s\n", DoctorLevelName(item.level), item.topic,
                          item.summary);
    for (const std::string& d : item.details) absl::StrAppendFormat(&out, "%23s%s\n", "", d);
  }
  out += "\n";
  if (!report.auto_backend.empty()) {
    absl::StrAppendFormat(&out, "record --backend auto would use: %s (%s)\n", report.auto_backend,
                          report.auto_reason);
    if (!report.verdict_kept.empty()) {
      absl::StrAppendFormat(&out, "  the verdict is %s\n", report.verdict_kept);
    }
  } else {
    out += "record --backend auto: no backend works here\n";
  }
  out += report.recording_works ? "recording would work: yes\n"
                                : "recording would work: NO (see FAIL above)\n";
  return out;
}

}  // namespace iotrace
