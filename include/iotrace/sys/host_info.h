// The machine that records: uname, CPUs, memory, CPU model and clock references, for the
// header sections of the file it writes (HostInfo, event/event_format.h).
#ifndef IOTRACE_SYS_HOST_INFO_H_
#define IOTRACE_SYS_HOST_INFO_H_

#include <string>
#include <vector>

#include "iotrace/event/event_format.h"

namespace iotrace {

// Fills everything from uname, /proc and clocks; `cmdline` is the recording command's argv.
HostInfo ThisMachine(const std::vector<std::string>& cmdline);

}  // namespace iotrace

#endif  // IOTRACE_SYS_HOST_INFO_H_
