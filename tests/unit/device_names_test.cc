// DeviceNames: names from sysfs's uevent files, else /proc/partitions, else "MAJ:MIN"; a uevent
// file opened only for a device that /sys/dev/block lists.
#include "iotrace/sys/device_names.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "iotrace/event/block_dev.h"
#include "test_files.h"

namespace iotrace {
namespace {

class DeviceNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::MakeTempDir("iotrace-device-names-");
    ASSERT_FALSE(root_.empty());
    std::filesystem::create_directories(root_ + "/sys/dev/block");
    std::filesystem::create_directories(root_ + "/proc");
  }
  void TearDown() override { test::RemoveTree(root_); }

  // A device sysfs has, named `name` in its uevent file.
  void AddSysfsDevice(uint32_t major, uint32_t minor, const std::string& name) {
    const std::string dir =
        root_ + "/sys/dev/block/" + std::to_string(major) + ":" + std::to_string(minor);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/uevent")
        << "MAJOR=" << major << "\nMINOR=" << minor << "\nDEVNAME=" << name << "\nDEVTYPE=disk\n";
  }
  void WritePartitions(const std::string& rows) {
    std::ofstream(root_ + "/proc/partitions") << "major minor  #blocks  name\n\n" << rows;
  }

  std::string root_;
};

TEST_F(DeviceNamesTest, ListedDevicesAreNamedFromTheirUeventOthersWithoutOpeningOne) {
  AddSysfsDevice(259, 0, "nvme0n1");
  AddSysfsDevice(7, 3, "loop3");
  WritePartitions("   8        0   1000 sda\n");
  DeviceNames names(root_ + "/sys", root_ + "/proc");
  EXPECT_EQ(names.Label(KernelDev(259, 0)), "nvme0n1");
  EXPECT_EQ(names.Label(KernelDev(7, 3)), "loop3");
  EXPECT_EQ(names.uevents_opened(), 2u);
  // Not in /sys/dev/block: /proc/partitions names sda, nobody names the rest.
  EXPECT_EQ(names.Label(KernelDev(8, 0)), "sda");
  for (uint32_t minor = 1; minor <= 1000; ++minor) {
    EXPECT_EQ(names.Label(KernelDev(259, minor)), "259:" + std::to_string(minor));
  }
  EXPECT_EQ(names.uevents_opened(), 2u) << "no uevent file opened for an unlisted device";
  // Listed once, not for every device it lacks (a few times at most, were this loop to take
  // seconds: a listing is read again once it is kRelistAfter old).
  EXPECT_LT(names.listings(), 10u);
  // Cached: asked again, nothing is read.
  EXPECT_EQ(names.Label(KernelDev(259, 0)), "nvme0n1");
  EXPECT_EQ(names.uevents_opened(), 2u);
}

TEST_F(DeviceNamesTest, ADeviceAddedAfterTheListingIsFoundOnceTheListingIsOld) {
  AddSysfsDevice(7, 0, "loop0");
  DeviceNames names(root_ + "/sys", root_ + "/proc");
  EXPECT_EQ(names.Label(KernelDev(7, 0)), "loop0");
  EXPECT_EQ(names.listings(), 1u);
  // A device plugged in later (a live view's): once the listing is kRelistAfter old, a device it
  // lacks has the directory listed again.
  AddSysfsDevice(7, 2, "loop2");
  std::this_thread::sleep_for(DeviceNames::kRelistAfter + std::chrono::milliseconds(50));
  EXPECT_EQ(names.Label(KernelDev(7, 2)), "loop2");
  EXPECT_EQ(names.listings(), 2u);
  EXPECT_TRUE(names.Matches("loop2", KernelDev(7, 2)));
  EXPECT_TRUE(names.Matches("/dev/loop0", KernelDev(7, 0)));
}

TEST_F(DeviceNamesTest, WithoutADirectoryToListEveryUeventIsTried) {
  // A sysfs root without dev/block (a container, a fixture): the uevent path is tried as before.
  std::filesystem::remove_all(root_ + "/sys/dev/block");
  WritePartitions("   8       16   1000 sdb\n");
  DeviceNames names(root_ + "/sys", root_ + "/proc");
  EXPECT_EQ(names.Label(KernelDev(8, 16)), "sdb");
  EXPECT_EQ(names.Label(KernelDev(8, 32)), "8:32");
  EXPECT_EQ(names.uevents_opened(), 2u);
  EXPECT_EQ(names.listings(), 1u)
      << "a directory that is not there is not looked for again at once";
}

TEST(DeviceNamesFixtureTest, TheFixtureTreeNamesLoop0) {
  DeviceNames names(std::string(IOTRACE_FIXTURES) + "/devices/sys",
                    std::string(IOTRACE_FIXTURES) + "/devices/proc");
  EXPECT_EQ(names.Label(KernelDev(7, 0)), "loop0");
  // 254:0's uevent has no DEVNAME: /proc/partitions names it.
  EXPECT_EQ(names.Label(KernelDev(254, 0)), "vda");
  EXPECT_EQ(names.Label(KernelDev(254, 1)), "vda1");
  EXPECT_EQ(names.uevents_opened(), 2u);
}

}  // namespace
}  // namespace iotrace
