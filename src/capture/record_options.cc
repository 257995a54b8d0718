#include "iotrace/capture/record.h"

#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"
#include "iotrace/capture/record_control.h"
#include "iotrace/event/block_dev.h"

namespace iotrace {

const char* BackendName(Backend b) {
  switch (b) {
    case Backend::kAuto: return "auto";
    case Backend::kPerf: return "perf";
    case Backend::kFtrace: return "ftrace";
  }
  return "?";
}

const std::vector<std::string>& DefaultRecordEvents() {
  static const std::vector<std::string>* events = new std::vector<std::string>{
      "block:block_rq_insert", "block:block_rq_issue", "block:block_rq_complete",
      "block:block_rq_requeue", "block:block_rq_merge"};
  return *events;
}

absl::Status CheckRecordPrivileges(uid_t euid, uint64_t effective_caps) {
  constexpr int kCapPerfmon = 38;  // include/uapi/linux/capability.h
  if (euid == 0) return absl::OkStatus();
  bool perfmon = (effective_caps >> kCapPerfmon) & 1;
  bool sys_admin = (effective_caps >> CAP_SYS_ADMIN) & 1;
  if (perfmon || sys_admin) return absl::OkStatus();
  return WithHint(absl::PermissionDeniedError(
                      "recording needs root or CAP_PERFMON (tracepoints are kernel data)"),
                  "run it as root: sudo iotrace record ...");
}

absl::Status CheckRecordPrivileges() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  uint64_t caps = 0;
  if (syscall(SYS_capget, &header, data) == 0) {
    caps = uint64_t(data[0].effective) | (uint64_t(data[1].effective) << 32);
  }
  return CheckRecordPrivileges(geteuid(), caps);
}

std::vector<std::string> RecordOptionWarnings(const RecordOptions& opt,
                                              const std::string& sysfs_root) {
  std::vector<std::string> warnings;
  for (const std::string& d : opt.devs) {
    auto dev = ParseDevSpec(d);
    if (!dev.ok()) continue;  // ValidateRecordOptions refuses it
    const std::string numbers = DevString(*dev);
    struct stat st;
    if (::stat((sysfs_root + "/dev/block/" + numbers).c_str(), &st) != 0) {
      warnings.push_back(absl::StrFormat(
          "--dev %s: no block device has the number %s now (lsblk lists them); its events are "
          "recorded if it appears",
          d, numbers));
      continue;
    }
    // A device of size 0 has no medium (a loop device with no backing file, an empty drive):
    // it can do no I/O, so nothing of it would be recorded.
    std::ifstream size_file(sysfs_root + "/dev/block/" + numbers + "/size");
    uint64_t sectors = 0;
    if (size_file >> sectors && sectors == 0) {
      warnings.push_back(absl::StrFormat(
          "--dev %s: the device has no medium (size 0%s): it can do no I/O, so nothing of it "
          "will be recorded",
          d, numbers.rfind("7:", 0) == 0 ? ": a loop device with no backing file?" : ""));
    }
  }
  return warnings;
}

std::string OutputNameWarning(const std::string& path, Backend backend) {
  auto ends_with = [&path](std::string_view ext) {
    return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (backend == Backend::kFtrace && ends_with(".data")) {
    return absl::StrFormat("%s will be a trace.dat (ftrace backend), though .data names a "
                           "perf.data: read it with iotrace report or trace-cmd report, not perf "
                           "script (-b perf writes a perf.data)",
                           path);
  }
  if (backend == Backend::kPerf && ends_with(".dat")) {
    return absl::StrFormat("%s will be a perf.data (perf backend), though .dat names a "
                           "trace.dat: read it with iotrace report or perf script, not trace-cmd "
                           "report (-b ftrace writes a trace.dat)",
                           path);
  }
  return "";
}

absl::Status ValidateRecordOptions(const RecordOptions& opt) {
  if (opt.output == "-" && opt.backend == Backend::kFtrace) {
    return WithHint(absl::InvalidArgumentError(
                        "-o - with the ftrace backend: a trace.dat cannot be streamed (its "
                        "per-CPU table comes before the data)"),
                    "use --backend perf (or auto) for a stream in perf's pipe mode, or write a "
                    "file with -o FILE");
  }
  if (opt.output == "-" && isatty(STDOUT_FILENO)) {
    return WithHint(absl::InvalidArgumentError(
                        "-o -: standard output is a terminal, not a place for binary data"),
                    "pipe it: iotrace record -o - ... | perf script -i - (or iotrace report -i "
                    "-), or give -o FILE");
  }
  for (const std::string& d : opt.devs) {
    auto dev = ParseDevSpec(d);
    if (!dev.ok()) {
      return WithHint(absl::InvalidArgumentError("--dev: " + std::string(dev.status().message())),
                      HintOf(dev.status()));
    }
  }
  uint32_t pages = opt.mmap_pages;
  if (pages == 0 || (pages & (pages - 1)) != 0) {
    return WithHint(absl::InvalidArgumentError(
                        absl::StrFormat("--mmap-pages %u is not a power of two", pages)),
                    "use 256, 512, 1024 (the default), 2048 ...");
  }
  if (opt.delay_ms < -1) {
    return WithHint(absl::InvalidArgumentError(
                        absl::StrFormat("--delay %d: not a delay", opt.delay_ms)),
                    "use milliseconds, or -1 to start with events off until --control enables "
                    "them");
  }
  if (opt.delay_ms == -1 && opt.control.empty()) {
    return WithHint(absl::InvalidArgumentError(
                        "--delay -1: nothing could ever turn the events on"),
                    "add --control fifo:CTL[,ACK] and write 'enable' into it");
  }
  if (!opt.control.empty()) {
    auto spec = ParseControlSpec(opt.control);
    if (!spec.ok()) return spec.status();
  }
  if (opt.buffer_kb < 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--buffer-kb %u is too small (at least one 4 KiB page)", opt.buffer_kb));
  }
  if (opt.switch_output.on() && opt.output == "-") {
    return WithHint(absl::InvalidArgumentError(
                        "--switch-output with -o -: a stream cannot be switched to new files"),
                    "give -o FILE: the files are FILE.YYYYMMDDHHMMSSCC");
  }
  if (opt.switch_max_files < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--switch-max-files %d: not a number of files", opt.switch_max_files));
  }
  if (opt.switch_max_files > 0 && !opt.switch_output.on()) {
    return WithHint(absl::InvalidArgumentError(
                        "--switch-max-files without --switch-output: there is only one file"),
                    "add --switch-output=SIZE|TIME|signal, e.g. --switch-output=1m");
  }
  if (opt.max_size != 0 && opt.output == "-") {
    return WithHint(absl::InvalidArgumentError("--max-size with -o -: a stream has no files"),
                    "give -o FILE");
  }
  if (opt.events.empty() && opt.probes.empty()) {
    return WithHint(absl::InvalidArgumentError("no events to record"),
                    "drop --no-default-events or add -e SYS:EVENT");
  }
  return absl::OkStatus();
}

}  // namespace iotrace
