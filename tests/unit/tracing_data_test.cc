#include "iotrace/formats/tracing_data.h"

#include <fstream>
#include <sstream>

#include "fixtures.h"
#include "gtest/gtest.h"

namespace iotrace {
namespace {

using test::ReadFixture;

TracingMetadata SampleMeta() {
  TracingMetadata meta;
  meta.header_page = ReadFixture("formats/6.18/events/header_page");
  meta.header_event = ReadFixture("formats/6.18/events/header_event");
  meta.event_formats.push_back({"block", test::ReadBlockFormat("block_rq_issue")});
  meta.event_formats.push_back({"sched", "name: x\nID: 1\nformat:\n"});
  meta.event_formats.push_back({"block", test::ReadBlockFormat("block_rq_complete")});
  meta.saved_cmdlines = "1 init\n42 fio\n";
  meta.printk_formats = "0xffff : \"hello\"\n";
  return meta;
}

TEST(TracingDataTest, RoundTripsEveryPart) {
  TracingMetadata meta = SampleMeta();
  std::string blob = EncodeTracingData(meta, "0.6");
  blob += "trailing bytes that belong to the next section";
  auto decoded = DecodeTracingData(ByteView(blob.data(), blob.size()));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->version, "0.6");
  EXPECT_EQ(decoded->meta.header_page, meta.header_page);
  EXPECT_EQ(decoded->meta.header_event, meta.header_event);
  ASSERT_EQ(decoded->meta.event_formats.size(), 3u);
  // Grouped by system: both block formats first, then sched.
  EXPECT_EQ(decoded->meta.event_formats[0].system, "block");
  EXPECT_EQ(decoded->meta.event_formats[0].text, meta.event_formats[0].text);
  EXPECT_EQ(decoded->meta.event_formats[1].text, meta.event_formats[2].text);
  EXPECT_EQ(decoded->meta.event_formats[2].system, "sched");
  EXPECT_EQ(decoded->meta.saved_cmdlines, meta.saved_cmdlines);
  EXPECT_EQ(decoded->meta.printk_formats, meta.printk_formats);
  EXPECT_EQ(decoded->meta.page_size, 4096u);
  EXPECT_EQ(decoded->meta.long_size, 8u);
  EXPECT_EQ(decoded->consumed, blob.size() - std::string("trailing bytes that belong to the next section").size());
}

// The readers skip kallsyms (megabytes they never use): everything after it still decodes.
TEST(TracingDataTest, KallsymsIsKeptOnlyWhenAskedFor) {
  TracingMetadata meta = SampleMeta();
  meta.kallsyms = "ffffffff81000000 T _text\nffffffff81001000 T do_one_initcall\n";
  std::string blob = EncodeTracingData(meta, "6");
  auto kept = DecodeTracingData(ByteView(blob.data(), blob.size()));
  auto skipped = DecodeTracingData(ByteView(blob.data(), blob.size()), /*keep_kallsyms=*/false);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_EQ(kept->meta.kallsyms, meta.kallsyms);
  EXPECT_EQ(skipped->meta.kallsyms, "");
  EXPECT_EQ(skipped->meta.printk_formats, meta.printk_formats);
  EXPECT_EQ(skipped->meta.saved_cmdlines, meta.saved_cmdlines);
  EXPECT_EQ(skipped->consumed, kept->consumed);
  EXPECT_EQ(skipped->consumed, blob.size());
  // A kallsyms size running past the block is still an error when it is skipped.
  for (size_t len = 0; len < blob.size(); ++len) {
    EXPECT_FALSE(DecodeTracingData(ByteView(blob.data(), len), false).ok()) << len;
  }
}

TEST(TracingDataTest, EveryTruncationIsAnErrorNotACrash) {
  std::string blob = EncodeTracingData(SampleMeta(), "6");
  for (size_t len = 0; len < blob.size(); ++len) {
    auto decoded = DecodeTracingData(ByteView(blob.data(), len));
    EXPECT_FALSE(decoded.ok()) << "prefix of " << len << " bytes decoded";
  }
  EXPECT_TRUE(DecodeTracingData(ByteView(blob.data(), blob.size())).ok());
}

TEST(TracingDataTest, HugeCountsAreRejectedWithoutAllocating) {
  std::string blob = EncodeTracingData(SampleMeta(), "6");
  // Corrupt the ftrace format count (right after header_event's text) to 0xffffffff.
  TracingMetadata meta = SampleMeta();
  size_t count_at = 10 + 2 + 1 + 1 + 4 + 12 + 8 + meta.header_page.size() + 13 + 8 +
                    meta.header_event.size();
  ASSERT_LT(count_at + 4, blob.size());
  blob[count_at] = blob[count_at + 1] = blob[count_at + 2] = blob[count_at + 3] = '\xff';
  auto decoded = DecodeTracingData(ByteView(blob.data(), blob.size()));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("ftrace format count"), std::string::npos);
}

TEST(TracingDataTest, RejectsWrongMagic) {
  std::string blob = "PERFILE2 and more bytes here";
  EXPECT_FALSE(DecodeTracingData(ByteView(blob.data(), blob.size())).ok());
}

}  // namespace
}  // namespace iotrace
