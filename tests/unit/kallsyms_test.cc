#include "iotrace/sys/kallsyms.h"

#include <string>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

const std::string kFixtures = std::string(IOTRACE_FIXTURES) + "/kallsyms/";

TEST(KallsymsTest, ParsesFixtureAndCountsBadLines) {
  auto k = Kallsyms::Load(kFixtures + "kallsyms.txt");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->size(), 41u);
  EXPECT_EQ(k->bad_lines(), 2u);  // the comment and "not a kallsyms line"
  EXPECT_FALSE(k->addresses_hidden());
  auto hits = k->Find("vfs_read");
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]->address, 0xffffffff816d80f0u);
  EXPECT_EQ(hits[0]->type, 'T');
  EXPECT_TRUE(hits[0]->IsText());
  EXPECT_TRUE(hits[0]->module.empty());
}

TEST(KallsymsTest, FindsModuleSymbolsOnlyInTheirModule) {
  auto k = Kallsyms::Load(kFixtures + "kallsyms.txt");
  ASSERT_TRUE(k.ok());
  auto in_ext4 = k->Find("ext4_sync_file", "ext4");
  ASSERT_EQ(in_ext4.size(), 1u);
  EXPECT_EQ(in_ext4[0]->module, "ext4");
  EXPECT_TRUE(k->Find("ext4_sync_file", "xfs").empty());
  EXPECT_TRUE(k->Find("vfs_read", "ext4").empty());
  EXPECT_EQ(k->Find("x2apic_send_IPI").size(), 2u);
  EXPECT_TRUE(k->Find("nothing_like_this").empty());
}

TEST(KallsymsTest, NextAddressAndSymbolAtGiveFunctionRanges) {
  auto k = Kallsyms::Load(kFixtures + "kallsyms.txt");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->NextAddressAfter(0xffffffff816d80f0u), 0xffffffff816d84c0u);
  // From inside a function, the next symbol is still the end.
  EXPECT_EQ(k->NextAddressAfter(0xffffffff816d8100u), 0xffffffff816d84c0u);
  EXPECT_EQ(k->NextAddressAfter(0xffffffffc0a01800u), 0u);  // the last one
  const KernelSymbol* at = k->SymbolAt(0xffffffff816d80f8u);
  ASSERT_NE(at, nullptr);
  EXPECT_EQ(at->name, "vfs_read");
  EXPECT_EQ(k->SymbolAt(0x1000), nullptr);  // below every symbol
  EXPECT_EQ(k->SymbolAt(0xffffffff816d84c0u)->name, "__pfx___kernel_write_iter");
}

TEST(KallsymsTest, TextNamesLeaveOutData) {
  auto k = Kallsyms::Load(kFixtures + "kallsyms.txt");
  ASSERT_TRUE(k.ok());
  std::vector<std::string> names = k->TextNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "vfs_write"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "__start_rodata"), names.end());
}

TEST(KallsymsTest, AllZeroAddressesMeanHidden) {
  auto k = Kallsyms::Load(kFixtures + "kallsyms_hidden.txt");
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(k->addresses_hidden());
  EXPECT_EQ(k->size(), 4u);
  EXPECT_TRUE(Kallsyms::Parse("").addresses_hidden());
}

TEST(KallsymsTest, RejectsMalformedLines) {
  Kallsyms k = Kallsyms::Parse(
      "ffffffff81000000 T ok\n"
      "zzzz T bad_address\n"
      "ffffffff81000010 TT bad_type\n"
      "ffffffff81000020 T\n"
      "ffffffff81000030 t mod_without_brackets ext4\n"
      "ffffffff81000040 t a b c d\n"
      "12345678901234567 T too_long_address\n");
  EXPECT_EQ(k.size(), 1u);
  EXPECT_EQ(k.bad_lines(), 6u);
}

TEST(KallsymsTest, LoadFailsWithThePathForMissingFiles) {
  auto k = Kallsyms::Load("/nonexistent/kallsyms");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(k.status().message().find("/nonexistent/kallsyms"), std::string::npos);
}

TEST(TraceableFunctionsTest, ParsesNamesWithAndWithoutModules) {
  auto t = LoadTraceableFunctions(kFixtures + "available_filter_functions");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->size(), 8u);
  EXPECT_TRUE(t->contains("vfs_read"));
  EXPECT_TRUE(t->contains("ext4_file_read_iter"));
  EXPECT_FALSE(t->contains("__kernel_read"));
  EXPECT_FALSE(t->contains("[ext4]"));
}

}  // namespace
}  // namespace iotrace
