// Memory and file helpers of fd.h.
#include "iotrace/base/fd.h"

#include <unistd.h>

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

// From 2 MiB on 2 MiB-aligned (huge pages need it), below that page-aligned (no huge page to
// align for); zeroed, writable, and no larger than the size asked for rounded up to pages: a
// mapping that ran on to the next 2 MiB would take a whole huge page at its first touch where
// THP is "always".
TEST(MapHugeAnonymousTest, AlignedZeroedAndNoLargerThanAsked) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  constexpr size_t kHuge = size_t{2} << 20;
  for (size_t size : {size_t{1}, kHuge - 1, kHuge, size_t{4} << 20,
                      (size_t{8} << 20) + (64 << 10) + 5}) {
    auto m = MapHugeAnonymous(size);
    ASSERT_TRUE(m.ok()) << m.status();
    const size_t align = size >= kHuge ? kHuge : page;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m->addr()) % align, 0u) << size;
    EXPECT_EQ(m->size(), (size + page - 1) / page * page) << size;
    auto* bytes = static_cast<uint8_t*>(m->addr());
    EXPECT_EQ(bytes[0], 0);
    EXPECT_EQ(bytes[size - 1], 0);
    bytes[0] = 1;
    bytes[size - 1] = 2;
    EXPECT_EQ(bytes[size - 1], 2);
  }
}

// The whole of what is asked where the file holds it; up to the end of the file where it does
// not; nothing past it or on a bad descriptor.
TEST(PreadUpToTest, ReadsWhatIsThereUpToTheEnd) {
  std::string where;
  auto fd = OpenScratchFile(&where);
  ASSERT_TRUE(fd.ok()) << fd.status();
  const std::string text = "0123456789";
  ASSERT_EQ(::pwrite(fd->get(), text.data(), text.size(), 0), 10);
  char buf[16] = {};
  EXPECT_EQ(PreadUpTo(fd->get(), buf, 4, 3), 4u);
  EXPECT_EQ(std::string(buf, 4), "3456");
  EXPECT_EQ(PreadUpTo(fd->get(), buf, 16, 6), 4u);
  EXPECT_EQ(std::string(buf, 4), "6789");
  EXPECT_EQ(PreadUpTo(fd->get(), buf, 4, 10), 0u);
  EXPECT_EQ(PreadUpTo(-1, buf, 4, 0), 0u);
}

}  // namespace
}  // namespace iotrace
