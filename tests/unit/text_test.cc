#include "iotrace/base/text.h"

#include "gtest/gtest.h"

namespace iotrace {
namespace {

TEST(TextTest, PluralTakesTheSingularOnlyForOne) {
  EXPECT_EQ(Plural(0, "request"), "0 requests");
  EXPECT_EQ(Plural(1, "request"), "1 request");
  EXPECT_EQ(Plural(2, "request"), "2 requests");
  EXPECT_EQ(Plural(18446744073709551615u, "CPU"), "18446744073709551615 CPUs");
  EXPECT_EQ(Plural(1, "entry", "entries"), "1 entry");
  EXPECT_EQ(Plural(3, "entry", "entries"), "3 entries");
}

TEST(TextTest, SplitAndTrim) {
  EXPECT_EQ(SplitText("a,,b", ','), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(SplitText("a,,b", ',', false), (std::vector<std::string_view>{"a", "", "b"}));
  EXPECT_EQ(TrimText(" \tx y\r\n"), "x y");
}

}  // namespace
}  // namespace iotrace
