#include "iotrace/sys/device_names.h"

#include <dirent.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "iotrace/event/block_dev.h"

namespace iotrace {

DeviceNames::DeviceNames(std::string sysfs_root, std::string procfs_root,
                         std::chrono::milliseconds relist_after)
    : sysfs_root_(std::move(sysfs_root)),
      procfs_root_(std::move(procfs_root)),
      relist_after_(relist_after) {}

bool DeviceNames::ListingStale() const {
  return listings_ == 0 || std::chrono::steady_clock::now() - listed_at_ >= relist_after_;
}

bool DeviceNames::MayBeInSysfs(uint32_t dev) {
  if (!ListingStale() || (listed_.has_value() && listed_->contains(dev))) {
    return !listed_.has_value() || listed_->contains(dev);
  }
  listed_at_ = std::chrono::steady_clock::now();
  ++listings_;
  listed_.reset();
  DIR* dir = ::opendir((sysfs_root_ + "/dev/block").c_str());
  if (dir == nullptr) {
    // No such directory (a container without sysfs, a fixture tree): no device is there. One
    // that cannot be read for another reason: its uevent files say.
    if (errno != ENOENT) return true;
    listed_.emplace();
    return false;
  }
  absl::flat_hash_set<uint32_t> devs;
  while (const dirent* e = ::readdir(dir)) {
    uint32_t numbers = 0;
    if (ParseDevNumbers(e->d_name, &numbers)) devs.insert(numbers);
  }
  ::closedir(dir);
  listed_ = std::move(devs);
  return listed_->contains(dev);
}

std::string DeviceNames::Lookup(uint32_t dev, bool* in_sysfs) {
  const std::string numbers = DevString(dev);
  *in_sysfs = MayBeInSysfs(dev);
  if (*in_sysfs) {
    ++uevents_opened_;
    std::ifstream uevent(sysfs_root_ + "/dev/block/" + numbers + "/uevent");
    std::string line;
    while (std::getline(uevent, line)) {
      absl::string_view v(line);
      if (absl::ConsumePrefix(&v, "DEVNAME=") && !v.empty()) return std::string(v);
    }
  }
  // /proc/partitions is read once, at the first device sysfs does not name: a report of 1024
  // devices unknown here (another machine's recording) read and split it 1024 times.
  if (!partitions_read_) {
    partitions_read_ = true;
    std::ifstream partitions(procfs_root_ + "/partitions");
    std::string line;
    while (std::getline(partitions, line)) {
      std::vector<absl::string_view> cols =
          absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      uint32_t major = 0, minor = 0;
      if (cols.size() == 4 && absl::SimpleAtoi(cols[0], &major) &&
          absl::SimpleAtoi(cols[1], &minor)) {
        partitions_.emplace(KernelDev(major, minor), std::string(cols[3]));  // the first kept
      }
    }
  }
  auto it = partitions_.find(dev);
  return it == partitions_.end() ? "" : it->second;
}

const std::string& DeviceNames::NameOf(uint32_t dev) {
  auto it = cache_.find(dev);
  if (it != cache_.end()) {
    const Cached& c = it->second;
    const bool again = c.name.empty() && !c.in_sysfs && (c.listing != listings_ || ListingStale());
    if (!again) return c.name;
  }
  bool in_sysfs = false;
  std::string name = Lookup(dev, &in_sysfs);  // (may list the directory again: listings_ after)
  Cached& c = cache_[dev];
  c.name = std::move(name);
  c.listing = listings_;
  c.in_sysfs = in_sysfs;
  return c.name;
}

std::string DeviceNames::Label(uint32_t dev) {
  const std::string& name = NameOf(dev);
  return name.empty() ? DevString(dev) : name;
}

std::string DeviceNames::ModelOf(uint32_t dev) const {
  const std::string base = sysfs_root_ + "/dev/block/" + DevString(dev);
  for (const char* path : {"/device/model", "/../device/model"}) {
    std::ifstream in(base + path);
    std::string line;
    if (std::getline(in, line)) {
      absl::string_view v = absl::StripAsciiWhitespace(line);
      if (!v.empty()) return std::string(v);
    }
  }
  return "";
}

bool DeviceNames::Matches(std::string_view spec, uint32_t dev) {
  uint32_t numbers = 0;
  if (ParseDevNumbers(spec, &numbers)) return numbers == dev;
  absl::string_view name(spec.data(), spec.size());
  absl::ConsumePrefix(&name, "/dev/");
  const std::string& known = NameOf(dev);
  return !known.empty() && known == name;
}

}  // namespace iotrace
