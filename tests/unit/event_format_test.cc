#include "iotrace/event/event_format.h"

#include <fstream>
#include <sstream>
#include <string>

#include "fixtures.h"
#include "gtest/gtest.h"

namespace iotrace {
namespace {

using test::ReadFixture;

TEST(EventFormatTest, ParsesBlockRqIssueLayoutOfThisKernel) {
  auto fmt = ParseEventFormat("block", test::ReadBlockFormat("block_rq_issue"));
  ASSERT_TRUE(fmt.ok()) << fmt.status();
  EXPECT_EQ(fmt->name, "block_rq_issue");
  EXPECT_EQ(fmt->system, "block");
  EXPECT_EQ(fmt->FullName(), "block:block_rq_issue");
  EXPECT_GT(fmt->id, 0u);
  const FieldInfo* dev = fmt->FindField("dev");
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->offset, 8u);
  EXPECT_EQ(dev->size, 4u);
  const FieldInfo* sector = fmt->FindField("sector");
  ASSERT_NE(sector, nullptr);
  EXPECT_EQ(sector->offset, 16u);
  EXPECT_EQ(sector->size, 8u);
  const FieldInfo* rwbs = fmt->FindField("rwbs");
  ASSERT_NE(rwbs, nullptr);
  EXPECT_EQ(rwbs->offset, 34u);
  EXPECT_EQ(rwbs->size, 10u);
  EXPECT_TRUE(rwbs->is_string);
  const FieldInfo* cmd = fmt->FindField("cmd");
  ASSERT_NE(cmd, nullptr);
  EXPECT_TRUE(cmd->is_dynamic);
  const FieldInfo* common_pid = fmt->FindField("common_pid");
  ASSERT_NE(common_pid, nullptr);
  EXPECT_TRUE(common_pid->is_common);
  EXPECT_TRUE(common_pid->is_signed);
  EXPECT_EQ(fmt->FindField("no_such_field"), nullptr);
  EXPECT_NE(fmt->print_fmt.find("REC->rwbs"), std::string::npos);
}

TEST(EventFormatTest, CompleteHasErrorAndNoComm) {
  auto fmt = ParseEventFormat("block", test::ReadBlockFormat("block_rq_complete"));
  ASSERT_TRUE(fmt.ok()) << fmt.status();
  ASSERT_NE(fmt->FindField("error"), nullptr);
  EXPECT_EQ(fmt->FindField("error")->offset, 28u);
  EXPECT_EQ(fmt->FindField("comm"), nullptr);
}

TEST(EventFormatTest, RejectsGarbage) {
  EXPECT_FALSE(ParseEventFormat("block", "this is not a format").ok());
  EXPECT_FALSE(ParseEventFormat("block", "").ok());
}

TEST(EventFormatTest, OlderLayoutWithCharEightRwbs) {
  // A 6.10-style layout: no ioprio, rwbs[8]. Hand-built: iotrace must find fields by name.
  const char* text =
      "name: block_rq_issue\nID: 1234\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
      "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
      "\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n"
      "\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;\n"
      "\tfield:char rwbs[8];\toffset:32;\tsize:8;\tsigned:1;\n"
      "\tfield:char comm[16];\toffset:40;\tsize:16;\tsigned:1;\n"
      "\tfield:__data_loc char[] cmd;\toffset:56;\tsize:4;\tsigned:1;\n\n"
      "print fmt: \"%d,%d %s\", ((unsigned int) ((REC->dev) >> 20)), "
      "((unsigned int) ((REC->dev) & ((1U << 20) - 1))), REC->rwbs\n";
  auto fmt = ParseEventFormat("block", text);
  ASSERT_TRUE(fmt.ok()) << fmt.status();
  EXPECT_EQ(fmt->id, 1234u);
  EXPECT_EQ(fmt->FindField("rwbs")->offset, 32u);
  EXPECT_EQ(fmt->FindField("rwbs")->size, 8u);
  EXPECT_EQ(fmt->FindField("comm")->offset, 40u);
  EXPECT_EQ(fmt->FindField("ioprio"), nullptr);
}

}  // namespace
}  // namespace iotrace
