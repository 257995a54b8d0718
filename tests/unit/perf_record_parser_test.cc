#include "iotrace/formats/perf_record_parser.h"

#include <linux/perf_event.h>

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

PerfAttrInfo TracepointAttr(uint64_t config, std::vector<uint64_t> ids) {
  PerfAttrInfo a;
  a.attr.type = PERF_TYPE_TRACEPOINT;
  a.attr.size = sizeof(perf_event_attr);
  a.attr.config = config;
  a.attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                       PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
  a.ids = std::move(ids);
  return a;
}

// Ids close together (what the kernel hands out) and ids spread over a range too wide for a
// bounded table (what a crafted file can claim) find their attr the same way.
TEST(PerfRecordParserTest, IdsFindTheirAttrWhetherCloseTogetherOrSpreadOut) {
  for (uint64_t stride : {uint64_t{1}, uint64_t{7}, uint64_t{1} << 30}) {
    std::vector<uint64_t> even, odd;
    constexpr uint64_t kIds = 100000;
    for (uint64_t i = 0; i < kIds; ++i) (i % 2 ? odd : even).push_back(1000 + i * stride);
    absl::StatusOr<PerfRecordParser> p =
        PerfRecordParser::Create({TracepointAttr(10, even), TracepointAttr(11, odd)});
    ASSERT_TRUE(p.ok()) << p.status();
    for (uint64_t i = 0; i < kIds; i += 997) {
      EXPECT_EQ(p->AttrOfId(1000 + i * stride), static_cast<int>(i % 2)) << stride << " " << i;
    }
    EXPECT_EQ(p->AttrOfId(999), -1);
    EXPECT_EQ(p->AttrOfId(1000 + kIds * stride), -1);
    if (stride > 1) EXPECT_EQ(p->AttrOfId(1001), -1);
  }
}

TEST(PerfRecordParserTest, AnIdClaimedByTwoAttrsIsRefused) {
  absl::StatusOr<PerfRecordParser> p =
      PerfRecordParser::Create({TracepointAttr(10, {5, 6}), TracepointAttr(11, {6, 7})});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("event id 6 belongs to attrs 0 and 1"), std::string::npos)
      << p.status();
}

}  // namespace
}  // namespace iotrace
