// `iotrace doctor`: one screen on what this machine supports and what iotrace will do. The
// facts are collected into a DoctorReport (tracefs, privileges, perf_event_paranoid, block
// event layouts, probe support, block devices, live backend checks) and formatted separately;
// the pure parts (layout quirks, device meanings, formatting) are unit-tested on fixtures.
#ifndef IOTRACE_CLI_DOCTOR_H_
#define IOTRACE_CLI_DOCTOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "iotrace/event/event_format.h"

namespace iotrace {

enum class DoctorLevel { kOk, kInfo, kWarn, kFail };
const char* DoctorLevelName(DoctorLevel level);  // "ok", "info", "warn", "FAIL"

struct DoctorItem {
  std::string topic;                // "tracefs", "privileges", ...
  DoctorLevel level = DoctorLevel::kInfo;
  std::string summary;              // the first line
  std::vector<std::string> details; // further lines, indented
};

// One line per layout fact of the block_rq_* events that iotrace must adapt to: ioprio field
// (6.11+), rwbs length, block_io_* presence, dev encoding, complete/requeue differences.
std::vector<std::string> DescribeBlockLayout(const std::vector<EventFormat>& block_formats,
                                             const std::vector<std::string>& block_event_names);

struct BlockDeviceInfo {
  std::string name;          // "vda"
  std::string majmin;        // "254:0"
  uint64_t sectors = 0;      // 512-byte sectors
  std::string scheduler;     // the active one ("none", "mq-deadline", ...); "" = no scheduler file
  int iostats = -1;          // queue/iostats; -1 unknown
};
// Block devices with a non-zero size under `sys_block` (/sys/block).
std::vector<BlockDeviceInfo> ListBlockDevices(const std::string& sys_block = "/sys/block");
// What the device's settings mean for iotrace's report, one line.
std::string DescribeBlockDevice(const BlockDeviceInfo& dev);

struct DoctorOptions {
  std::string tracefs;       // "" = find it
  uint32_t check_ms = 200;   // per backend check; 0 = skip the live checks
  std::string sys_block = "/sys/block";
  // Where the checks' verdict is kept for `record --backend auto` (backend_verdict.h); "": not
  // kept.
  std::string verdict_path = "/run/iotrace/backend-verdict";
};

struct DoctorReport {
  std::string kernel;          // "Linux 6.18.44 x86_64, 2 CPUs"
  std::vector<DoctorItem> items;
  bool recording_works = false;
  std::string auto_backend;    // "perf", "ftrace" or "" when neither works
  std::string auto_reason;
  std::string verdict_kept;    // where the verdict was kept for record and live, or why not
};

DoctorReport RunDoctor(const DoctorOptions& options);
std::string FormatDoctorReport(const DoctorReport& report);

}  // namespace iotrace

#endif  // IOTRACE_CLI_DOCTOR_H_
