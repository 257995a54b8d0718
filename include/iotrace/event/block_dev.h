// Block device identities, the one place that knows the kernel's dev_t as block tracepoints
// carry it (MAJOR << 20 | MINOR, include/linux/kdev_t.h: a 12-bit major, a 20-bit minor; not
// glibc's makedev encoding): building it, taking it apart, printing it ("7:0", and "7,0" as
// ftrace prints a dev field), and parsing --dev arguments.
#ifndef IOTRACE_EVENT_BLOCK_DEV_H_
#define IOTRACE_EVENT_BLOCK_DEV_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "iotrace/event/event_format.h"

namespace iotrace {

constexpr uint32_t KernelDev(uint32_t major, uint32_t minor) { return (major << 20) | minor; }
constexpr uint32_t KernelDevMajor(uint32_t dev) { return dev >> 20; }
constexpr uint32_t KernelDevMinor(uint32_t dev) { return dev & ((1u << 20) - 1); }

// "7:0": how lsblk, sysfs (/sys/dev/block/7:0) and the report name a device.
std::string DevString(uint32_t dev);
// Appends "7,0": how ftrace, perf script and trace-cmd print a block event's dev field.
void AppendTracedDev(uint32_t dev, std::string* out);

// Parses "MAJ:MIN" into a kernel dev_t; false when `spec` is not two numbers of that form, each
// within its encoding's bits.
bool ParseDevNumbers(std::string_view spec, uint32_t* dev);
// "MAJ:MIN", "/dev/NAME" or "NAME" (looked up as /dev/NAME) -> kernel dev_t. Errors say why
// (not a block device, no such file, bad numbers).
absl::StatusOr<uint32_t> ParseDevSpec(std::string_view spec);

// True when the event has a `dev` field of type dev_t (the block events): the ones a --dev
// filter applies to. A probe argument that happens to be named dev is not one.
bool HasBlockDevField(const EventFormat& format);

}  // namespace iotrace

#endif  // IOTRACE_EVENT_BLOCK_DEV_H_
