// Names of block devices for the report ("loop0", "vda"), from /sys/dev/block/MAJ:MIN/uevent
// (DEVNAME), else /proc/partitions (read once), else shown as "MAJ:MIN"; a name found is kept.
// Names come from the machine running the report, which may not be the recording machine. The
// devices sysfs has are listed first (/sys/dev/block): a uevent file is opened only for a device
// listed there. A report of another machine's 1,024 devices opened 1,024 files that were not
// there, ~5 ms before its rows could be made. A device not named is looked for again once the
// listing is kRelistAfter old, so that one plugged in later (a live view's) gets its name.
#ifndef IOTRACE_SYS_DEVICE_NAMES_H_
#define IOTRACE_SYS_DEVICE_NAMES_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace iotrace {

class DeviceNames {
 public:
  // The roots are parameters so that tests can point them at a fixture tree; so is the age at
  // which a listing of /sys/dev/block is read again.
  explicit DeviceNames(std::string sysfs_root = "/sys", std::string procfs_root = "/proc",
                       std::chrono::milliseconds relist_after = kRelistAfter);

  // The kernel name of `dev` (kernel dev_t encoding), "" when unknown. Cached.
  const std::string& NameOf(uint32_t dev);
  // NameOf(dev), or "MAJ:MIN" when the name is unknown.
  std::string Label(uint32_t dev);
  // The model the device's driver reports (sysfs device/model, a partition's from its disk:
  // SCSI, ATA, NVMe), blanks trimmed; "" when there is none (loop, virtio). Not cached.
  std::string ModelOf(uint32_t dev) const;
  // True when a --dev spec names `dev`: "MAJ:MIN", "NAME" or "/dev/NAME".
  bool Matches(std::string_view spec, uint32_t dev);

  // A listing of /sys/dev/block is read again for a device it lacks once it is this old: a
  // device plugged in after it is named within a second, at most one listing (~50 us) a second.
  static constexpr std::chrono::milliseconds kRelistAfter{1000};
  // uevent files opened so far (for tests).
  uint64_t uevents_opened() const { return uevents_opened_; }
  // Listings of /sys/dev/block read so far (for tests).
  uint64_t listings() const { return listings_; }

 private:
  // The name of `dev`, looked up now ("" when none); `in_sysfs`: whether sysfs may have it.
  std::string Lookup(uint32_t dev, bool* in_sysfs);
  // Whether sysfs may have `dev`: false when the listing of /sys/dev/block lacks it (read again
  // when it is relist_after_ old and lacks `dev`) or there is no such directory; true when the
  // directory cannot be read.
  bool MayBeInSysfs(uint32_t dev);
  // Whether the listing is old enough to be read again.
  bool ListingStale() const;

  std::string sysfs_root_;
  std::string procfs_root_;
  // Names found, and the listing they were looked up with: a device found unnamed and not in
  // that listing is looked up again once there is a newer listing, or the listing is stale (one
  // that sysfs has, but without a DEVNAME, will not gain one: its uevent file is not read again
  // at every ask, a metrics export's ten a second).
  struct Cached {
    std::string name;
    uint64_t listing = 0;
    bool in_sysfs = false;
  };
  absl::flat_hash_map<uint32_t, Cached> cache_;
  std::chrono::milliseconds relist_after_;
  // The devices of the last listing of /sys/dev/block, read at listed_at_ (nullopt: none yet,
  // or the directory could not be read; empty where there is none).
  std::optional<absl::flat_hash_set<uint32_t>> listed_;
  std::chrono::steady_clock::time_point listed_at_;
  uint64_t uevents_opened_ = 0;
  uint64_t listings_ = 0;
  // /proc/partitions, read at the first lookup that needs it (its devices' names by dev).
  bool partitions_read_ = false;
  absl::flat_hash_map<uint32_t, std::string> partitions_;
};

}  // namespace iotrace

#endif  // IOTRACE_SYS_DEVICE_NAMES_H_
