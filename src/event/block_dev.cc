#include "iotrace/event/block_dev.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <charconv>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"

namespace iotrace {

std::string DevString(uint32_t dev) {
  return absl::StrFormat("%u:%u", KernelDevMajor(dev), KernelDevMinor(dev));
}

void AppendTracedDev(uint32_t dev, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), KernelDevMajor(dev));
  *r.ptr++ = ',';
  r = std::to_chars(r.ptr, buf + sizeof(buf), KernelDevMinor(dev));
  out->append(buf, r.ptr);
}

bool ParseDevNumbers(std::string_view spec, uint32_t* dev) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return false;
  uint32_t major = 0, minor = 0;
  absl::string_view s(spec.data(), spec.size());
  if (!absl::SimpleAtoi(s.substr(0, colon), &major) ||
      !absl::SimpleAtoi(s.substr(colon + 1), &minor)) {
    return false;
  }
  if (major >= (1u << 12) || minor >= (1u << 20)) return false;
  *dev = KernelDev(major, minor);
  return true;
}

absl::StatusOr<uint32_t> ParseDevSpec(std::string_view spec) {
  std::string s(TrimText(spec));
  if (s.empty()) return absl::InvalidArgumentError("empty device");
  if (s.find(':') != std::string::npos && s[0] != '/') {
    uint32_t dev = 0;
    if (!ParseDevNumbers(s, &dev)) {
      return WithHint(absl::InvalidArgumentError(absl::StrFormat("bad device '%s'", s)),
                      "give MAJ:MIN (as lsblk shows it, e.g. 7:0) or /dev/NAME");
    }
    return dev;
  }
  std::string path = s[0] == '/' ? s : "/dev/" + s;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return WithHint(ErrnoError(errno, "bad device: stat", path),
                    "give MAJ:MIN (as lsblk shows it, e.g. 7:0) or /dev/NAME");
  }
  if (!S_ISBLK(st.st_mode)) {
    return WithHint(
        absl::InvalidArgumentError(absl::StrFormat("bad device '%s': not a block device", path)),
        "give a disk or partition such as /dev/vda or /dev/loop0 (lsblk lists them)");
  }
  return KernelDev(major(st.st_rdev), minor(st.st_rdev));
}

bool HasBlockDevField(const EventFormat& format) {
  const FieldInfo* f = format.FindField("dev");
  return f != nullptr && f->type == "dev_t" && f->size == 4;
}

}  // namespace iotrace
