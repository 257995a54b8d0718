// Names of block devices for the report ("loop0", "vda"), looked up once per device from
// /sys/dev/block/MAJ:MIN/uevent (DEVNAME), else /proc/partitions (read once), else shown as
// "MAJ:MIN".
// Names come from the machine running the report, which may not be the recording machine.
#ifndef IOTRACE_SYS_DEVICE_NAMES_H_
#define IOTRACE_SYS_DEVICE_NAMES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"

namespace iotrace {

class DeviceNames {
 public:
  // The roots are parameters so that tests can point them at a fixture tree.
  explicit DeviceNames(std::string sysfs_root = "/sys", std::string procfs_root = "/proc");

  // The kernel name of `dev` (kernel dev_t encoding), "" when unknown. Cached.
  const std::string& NameOf(uint32_t dev);
  // NameOf(dev), or "MAJ:MIN" when the name is unknown.
  std::string Label(uint32_t dev);
  // The model the device's driver reports (sysfs device/model, a partition's from its disk:
  // SCSI, ATA, NVMe), blanks trimmed; "" when there is none (loop, virtio). Not cached.
  std::string ModelOf(uint32_t dev) const;
  // True when a --dev spec names `dev`: "MAJ:MIN", "NAME" or "/dev/NAME".
  bool Matches(std::string_view spec, uint32_t dev);

 private:
  std::string Lookup(uint32_t dev);

  std::string sysfs_root_;
  std::string procfs_root_;
  absl::flat_hash_map<uint32_t, std::string> cache_;
  // /proc/partitions, read at the first lookup that needs it (its devices' names by dev).
  bool partitions_read_ = false;
  absl::flat_hash_map<uint32_t, std::string> partitions_;
};

}  // namespace iotrace

#endif  // IOTRACE_SYS_DEVICE_NAMES_H_
