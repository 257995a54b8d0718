// Block device identities: the kernel's dev_t encoding used by block tracepoints
// (MAJOR << 20 | MINOR, include/linux/kdev_t.h), parsing of --dev arguments and device names.
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

// True when the event has a `dev` field of type dev_t (the block events): the ones a --dev
// filter applies to. A probe argument that happens to be named dev is not one.
bool HasBlockDevField(const EventFormat& format);

// "MAJ:MIN", "/dev/NAME" or "NAME" (looked up as /dev/NAME) -> kernel dev_t. Errors say why
// (not a block device, no such file, bad numbers).
absl::StatusOr<uint32_t> ParseDevSpec(std::string_view spec);

// "7:0"
std::string DevNumbers(uint32_t dev);

}  // namespace iotrace

#endif  // IOTRACE_EVENT_BLOCK_DEV_H_
