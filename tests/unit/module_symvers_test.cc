#include "iotrace/sys/module_symvers.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "test_files.h"

namespace iotrace {
namespace {

namespace fs = std::filesystem;
const std::string kFixtures = std::string(IOTRACE_FIXTURES) + "/symvers/";

TEST(ModuleSymversTest, BlockRqInsertIsExportedAndBlockRqIssueIsNot) {
  auto s = ModuleSymvers::Load(kFixtures + "Module.symvers");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->size(), 20u);
  EXPECT_EQ(s->bad_lines(), 0u);
  EXPECT_EQ(s->TracepointHook("block_rq_insert"), HookStatus::kExported);
  EXPECT_EQ(s->TracepointHook("block_split"), HookStatus::kExported);
  EXPECT_EQ(s->TracepointHook("block_rq_issue"), HookStatus::kNotExported);
  EXPECT_EQ(s->TracepointHook("block_rq_complete"), HookStatus::kNotExported);
  const ExportedSymbol* tp = s->Find("__tracepoint_block_rq_insert");
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->module, "vmlinux");
  EXPECT_EQ(tp->export_type, "EXPORT_SYMBOL_GPL");
  EXPECT_EQ(tp->ns, "");
  const ExportedSymbol* ns = s->Find("some_ns_symbol");
  ASSERT_NE(ns, nullptr);
  EXPECT_EQ(ns->ns, "FOO_NS");
  EXPECT_EQ(ns->module, "drivers/foo/foo");
}

TEST(ModuleSymversTest, ReadsTheOlderLayouts) {
  auto old = ModuleSymvers::Load(kFixtures + "Module.symvers.4.19");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->size(), 2u);
  EXPECT_EQ(old->Find("submit_bio")->export_type, "EXPORT_SYMBOL");
  EXPECT_EQ(old->TracepointHook("block_rq_insert"), HookStatus::kExported);

  auto mid = ModuleSymvers::Load(kFixtures + "Module.symvers.5.4");
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(mid->size(), 2u);
  EXPECT_EQ(mid->bad_lines(), 1u);
  const ExportedSymbol* usb = mid->Find("usb_ns_symbol");
  ASSERT_NE(usb, nullptr);
  EXPECT_EQ(usb->ns, "USB_STORAGE");
  EXPECT_EQ(usb->module, "drivers/usb/storage/usb-storage");
  EXPECT_EQ(usb->export_type, "EXPORT_SYMBOL_GPL");
  EXPECT_EQ(mid->Find("__tracepoint_block_rq_insert")->module, "vmlinux");
}

TEST(ModuleSymversTest, CountsMalformedLines) {
  ModuleSymvers s = ModuleSymvers::Parse(
      "0x1\tgood\tvmlinux\tEXPORT_SYMBOL\t\n"
      "1234\tno_0x\tvmlinux\tEXPORT_SYMBOL\t\n"
      "0x1\t\tvmlinux\tEXPORT_SYMBOL\t\n"
      "0x1\tno_export\tvmlinux\tSYMBOL\t\n"
      "0x1\ttoo\tmany\tEXPORT_SYMBOL\tfields\there\n"
      "0x1 spaces vmlinux EXPORT_SYMBOL\n"
      "\n");
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(s.bad_lines(), 5u);
  EXPECT_NE(s.Find("good"), nullptr);
}

TEST(ModuleSymversTest, FindsTheFileForAReleaseBuildDirFirst) {
  const std::string root = test::MakeTempDir("iotrace_probes_modules_");
  ASSERT_FALSE(root.empty()) << "mkdtemp in " << test::TestTmpDir();
  EXPECT_EQ(ModuleSymvers::FindForRelease("6.1.0-test", root), "");
  fs::create_directories(root + "/6.1.0-test/build");
  std::ofstream(root + "/6.1.0-test/Module.symvers") << "";
  EXPECT_EQ(ModuleSymvers::FindForRelease("6.1.0-test", root),
            root + "/6.1.0-test/Module.symvers");
  std::ofstream(root + "/6.1.0-test/build/Module.symvers") << "";
  EXPECT_EQ(ModuleSymvers::FindForRelease("6.1.0-test", root),
            root + "/6.1.0-test/build/Module.symvers");
  fs::remove_all(root);
}

TEST(ModuleSymversTest, HookStatusNames) {
  EXPECT_STREQ(HookStatusName(HookStatus::kExported), "exported");
  EXPECT_STREQ(HookStatusName(HookStatus::kNotExported), "not exported");
  EXPECT_STREQ(HookStatusName(HookStatus::kUnknown), "unknown");
}

}  // namespace
}  // namespace iotrace
