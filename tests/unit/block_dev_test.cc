// block_dev: the kernel's dev_t encoding, its two printed forms, and parsing --dev arguments.
#include "iotrace/event/block_dev.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

TEST(BlockDevTest, KernelEncodingIsMajorShiftedByTwenty) {
  EXPECT_EQ(KernelDev(7, 0), 7u << 20);
  EXPECT_EQ(KernelDev(254, 16), (254u << 20) | 16u);
  EXPECT_EQ(KernelDevMajor(KernelDev(259, 3)), 259u);
  EXPECT_EQ(KernelDevMinor(KernelDev(259, 3)), 3u);
  EXPECT_EQ(DevString(KernelDev(8, 17)), "8:17");
  auto d = ParseDevSpec("8:17");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, KernelDev(8, 17));
  // Not glibc's makedev encoding: major 7 minor 0 is 0x700000 here, not 0x700.
  EXPECT_EQ(*ParseDevSpec("7:0"), 0x700000u);
}

TEST(BlockDevTest, TracedFormIsMajorCommaMinor) {
  std::string out = "dev=";
  AppendTracedDev(KernelDev(259, 65537), &out);
  EXPECT_EQ(out, "dev=259,65537");
  out.clear();
  AppendTracedDev((8u << 20) | 16, &out);
  EXPECT_EQ(out, "8,16");
}

TEST(BlockDevTest, DevNumbersTakeOnlyMajMinWithinTheirBits) {
  uint32_t dev = 0;
  ASSERT_TRUE(ParseDevNumbers("8:17", &dev));
  EXPECT_EQ(dev, KernelDev(8, 17));
  ASSERT_TRUE(ParseDevNumbers("4095:1048575", &dev));
  EXPECT_EQ(dev, KernelDev(4095, 1048575));
  EXPECT_FALSE(ParseDevNumbers("4096:0", &dev));
  EXPECT_FALSE(ParseDevNumbers("0:1048576", &dev));
  EXPECT_FALSE(ParseDevNumbers("vda", &dev));
  EXPECT_FALSE(ParseDevNumbers("/dev/vda", &dev));
  EXPECT_FALSE(ParseDevNumbers("a:b", &dev));
  // Bad numbers after a colon are a usage error of --dev, not a device name.
  EXPECT_FALSE(ParseDevSpec("8:x").ok());
}

TEST(BlockDevTest, CharacterDeviceIsNotABlockDevice) {
  auto d = ParseDevSpec("/dev/null");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("not a block device"), std::string::npos);
}

}  // namespace
}  // namespace iotrace
