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

// A listing that is not read again within a test.
constexpr std::chrono::milliseconds kNever = std::chrono::hours(1);

TEST_F(DeviceNamesTest, ListedDevicesAreNamedFromTheirUeventOthersWithoutOpeningOne) {
  AddSysfsDevice(259, 0, "nvme0n1");
  AddSysfsDevice(7, 3, "loop3");
  WritePartitions("   8        0   1000 sda\n");
  DeviceNames names(root_ + "/sys", root_ + "/proc", kNever);
  EXPECT_EQ(names.Label(KernelDev(259, 0)), "nvme0n1");
  EXPECT_EQ(names.Label(KernelDev(7, 3)), "loop3");
  EXPECT_EQ(names.uevents_opened(), 2u);
  // Not in /sys/dev/block: /proc/partitions names sda, nobody names the rest.
  EXPECT_EQ(names.Label(KernelDev(8, 0)), "sda");
  for (uint32_t minor = 1; minor <= 1000; ++minor) {
    EXPECT_EQ(names.Label(KernelDev(259, minor)), "259:" + std::to_string(minor));
  }
  EXPECT_EQ(names.uevents_opened(), 2u) << "no uevent file opened for an unlisted device";
  EXPECT_EQ(names.listings(), 1u) << "listed once, not for every device it lacks";
  // Cached: asked again, nothing is read.
  EXPECT_EQ(names.Label(KernelDev(259, 0)), "nvme0n1");
  EXPECT_EQ(names.uevents_opened(), 2u);
}

TEST_F(DeviceNamesTest, ADeviceAddedAfterTheListingIsFoundOnceTheListingIsOld) {
  AddSysfsDevice(7, 0, "loop0");
  DeviceNames names(root_ + "/sys", root_ + "/proc", std::chrono::milliseconds(50));
  EXPECT_EQ(names.Label(KernelDev(7, 0)), "loop0");
  EXPECT_EQ(names.listings(), 1u);
  // Plugged in after the listing (a live view's devices): asked for at once, the listing may
  // still be fresh and lack them; once it is old, they are named, the one asked for before too
  // (its empty name is not kept for good).
  AddSysfsDevice(7, 1, "loop1");
  AddSysfsDevice(7, 2, "loop2");
  names.Label(KernelDev(7, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(names.Label(KernelDev(7, 1)), "loop1");
  EXPECT_EQ(names.Label(KernelDev(7, 2)), "loop2");
  EXPECT_GE(names.listings(), 2u);
  EXPECT_TRUE(names.Matches("loop2", KernelDev(7, 2)));
  EXPECT_TRUE(names.Matches("/dev/loop0", KernelDev(7, 0)));
  // A named device is not looked up again.
  const uint64_t opened = names.uevents_opened();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(names.Label(KernelDev(7, 0)), "loop0");
  EXPECT_EQ(names.uevents_opened(), opened);
}

TEST_F(DeviceNamesTest, AListedDeviceWithoutANameIsNotReadAgainAtEveryAsk) {
  // In sysfs, but its uevent file has no DEVNAME, and /proc/partitions does not name it either:
  // it will not gain a name, however often a live view or a metrics export asks.
  const std::string dir = root_ + "/sys/dev/block/254:7";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/uevent") << "MAJOR=254\nMINOR=7\nDEVTYPE=disk\n";
  WritePartitions("");
  DeviceNames names(root_ + "/sys", root_ + "/proc", std::chrono::milliseconds(0));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(names.Label(KernelDev(254, 7)), "254:7");
  EXPECT_EQ(names.uevents_opened(), 1u);
  EXPECT_EQ(names.listings(), 1u);
}

TEST_F(DeviceNamesTest, WithoutADirectoryToListNoUeventIsOpened) {
  // A sysfs root without dev/block (a container without sysfs): no uevent file is looked for;
  // /proc/partitions still names what it has.
  std::filesystem::remove_all(root_ + "/sys/dev/block");
  WritePartitions("   8       16   1000 sdb\n");
  DeviceNames names(root_ + "/sys", root_ + "/proc", kNever);
  EXPECT_EQ(names.Label(KernelDev(8, 16)), "sdb");
  EXPECT_EQ(names.Label(KernelDev(8, 32)), "8:32");
  EXPECT_EQ(names.uevents_opened(), 0u);
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
