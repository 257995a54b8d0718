#include "iotrace/sys/host_info.h"

#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace iotrace {

HostInfo ThisMachine(const std::vector<std::string>& cmdline) {
  HostInfo h;
  struct utsname u;
  if (uname(&u) == 0) {
    h.hostname = u.nodename;
    h.os_release = u.release;
    h.version = u.version;
    h.arch = u.machine;
  }
  h.nr_cpus_online = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN));
  h.nr_cpus_available = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF));
  struct sysinfo si;
  if (sysinfo(&si) == 0) h.total_mem_kb = uint64_t{si.totalram} * si.mem_unit / 1024;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, vendor, family, model, stepping;
  while (std::getline(cpuinfo, line)) {
    std::vector<std::string> kv = absl::StrSplit(line, absl::MaxSplits(':', 1));
    if (kv.size() != 2) continue;
    std::string key(absl::StripAsciiWhitespace(kv[0]));
    std::string value(absl::StripAsciiWhitespace(kv[1]));
    if (key == "model name" && h.cpu_desc.empty()) h.cpu_desc = value;
    if (key == "vendor_id" && vendor.empty()) vendor = value;
    if (key == "cpu family" && family.empty()) family = value;
    if (key == "model" && model.empty()) model = value;
    if (key == "stepping" && stepping.empty()) stepping = value;
  }
  if (!vendor.empty()) h.cpuid = absl::StrCat(vendor, ",", family, ",", model, ",", stepping);
  h.tool_version = absl::StrCat("iotrace ", IOTRACE_VERSION);
  h.cmdline = cmdline;
  h.clockid = CLOCK_MONOTONIC;
  struct timespec wall, mono;
  clock_gettime(CLOCK_REALTIME, &wall);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  h.clock_ref_wall_ns = uint64_t(wall.tv_sec) * 1000000000ull + uint64_t(wall.tv_nsec);
  h.clock_ref_clock_ns = uint64_t(mono.tv_sec) * 1000000000ull + uint64_t(mono.tv_nsec);
  return h;
}

}  // namespace iotrace
