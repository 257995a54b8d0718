#include "iotrace/sys/tracefs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "test_files.h"

namespace iotrace {
namespace {

namespace fs = std::filesystem;

using test::ReadFixture;

void WriteFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A fake tracefs tree: available_events plus events/<sys>/<event>/{id,format} for the block
// events whose real formats are fixtures, and a sched event with a hand-made format.
class FakeTracefs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::MakeTempDir("iotrace_fake_tracefs_");
    ASSERT_FALSE(root_.empty()) << "mkdtemp in " << test::TestTmpDir();
    std::string available;
    for (const char* ev : {"block_rq_insert", "block_rq_issue", "block_rq_complete",
                           "block_rq_requeue", "block_rq_merge", "block_bio_queue"}) {
      std::string format = test::ReadBlockFormat(ev);
      std::string id = format.substr(format.find("ID: ") + 4);
      id = id.substr(0, id.find('\n'));
      WriteFile(root_ / "events/block" / ev / "format", format);
      WriteFile(root_ / "events/block" / ev / "id", id + "\n");
      available += std::string("block:") + ev + "\n";
    }
    available += "sched:sched_switch\n";
    WriteFile(root_ / "available_events", available);
    WriteFile(root_ / "events/header_page", ReadFixture("formats/6.18/events/header_page"));
    WriteFile(root_ / "events/header_event", ReadFixture("formats/6.18/events/header_event"));
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
};

TEST_F(FakeTracefs, ResolvesExactNamesWithIdsAndFormats) {
  auto events = ResolveEvents(root_, {"block:block_rq_issue", "block:block_rq_complete"});
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].FullName(), "block:block_rq_issue");
  EXPECT_EQ((*events)[0].id, (*events)[0].format.id);
  EXPECT_GT((*events)[0].id, 0u);
  EXPECT_NE((*events)[0].format.FindField("rwbs"), nullptr);
  EXPECT_EQ((*events)[1].name, "block_rq_complete");
}

TEST_F(FakeTracefs, GlobsExpandInTracefsOrderWithoutDuplicates) {
  auto events = ResolveEvents(root_, {"block:block_rq_*", "block/block_rq_issue"});
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ(events->size(), 5u);
  auto bare = ResolveEvents(root_, {"block_bio_queue"});
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ((*bare)[0].FullName(), "block:block_bio_queue");
}

TEST_F(FakeTracefs, UnknownEventSuggestsCloseNames) {
  auto events = ResolveEvents(root_, {"block:block_rq_isue"});
  ASSERT_FALSE(events.ok());
  EXPECT_EQ(events.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(events.status().message().find("block:block_rq_isue"), std::string::npos);
  EXPECT_NE(HintOf(events.status()).find("block:block_rq_issue"), std::string::npos);
}

TEST_F(FakeTracefs, GlobMatchingNothingIsAnError) {
  auto events = ResolveEvents(root_, {"nosuch:*"});
  ASSERT_FALSE(events.ok());
  EXPECT_NE(events.status().message().find("matches no event"), std::string::npos);
}

TEST_F(FakeTracefs, MissingFormatFileIsAnErrorNamingTheFile) {
  fs::remove(root_ / "events/block/block_rq_merge/format");
  auto events = ResolveEvents(root_, {"block:block_rq_merge"});
  ASSERT_FALSE(events.ok());
  EXPECT_NE(events.status().message().find("block_rq_merge/format"), std::string::npos);
}

TEST_F(FakeTracefs, CollectsMetadataForTheChosenEvents) {
  auto events = ResolveEvents(root_, {"block:block_rq_issue"});
  ASSERT_TRUE(events.ok());
  auto meta = CollectTracingMetadata(root_, *events);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_NE(meta->header_page.find("commit"), std::string::npos);
  EXPECT_NE(meta->header_event.find("type_len"), std::string::npos);
  ASSERT_EQ(meta->event_formats.size(), 1u);
  EXPECT_EQ(meta->event_formats[0].system, "block");
}

TEST(FindTracefsTest, OverrideWithoutEventsDirIsAnError) {
  auto dir = FindTracefs("/nonexistent/iotrace/tracefs");
  EXPECT_FALSE(dir.ok());
}

TEST(FindTracefsTest, NotMountedButInTheKernelGivesTheMountCommand) {
  fs::path proc = test::MakeTempDir("iotrace_fake_proc_");
  ASSERT_FALSE(proc.empty()) << "mkdtemp in " << test::TestTmpDir();
  WriteFile(proc / "mounts", "proc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\n");
  WriteFile(proc / "filesystems", "nodev\tsysfs\nnodev\ttracefs\n\text4\n");
  auto dir = FindTracefs("", proc);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("tracefs is not mounted"), std::string::npos);
  EXPECT_NE(HintOf(dir.status()).find("mount -t tracefs nodev /sys/kernel/tracing"),
            std::string::npos);
  // Without tracefs in the kernel there is nothing to mount: say so, no mount hint.
  WriteFile(proc / "filesystems", "nodev\tsysfs\n\text4\n");
  dir = FindTracefs("", proc);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("no tracefs"), std::string::npos);
  EXPECT_TRUE(HintOf(dir.status()).empty());
  fs::remove_all(proc);
}

TEST(SuggestNamesTest, RanksByDistance) {
  std::vector<std::string> names = {"block:block_rq_issue", "block:block_rq_insert",
                                    "sched:sched_switch"};
  auto s = SuggestNames("block:block_rq_issu", names);
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s[0], "block:block_rq_issue");
  EXPECT_TRUE(SuggestNames("zzzzzzzzzzzz:qqqqqqq", names).empty());
}

TEST(CpuBufferStatsTest, ParsesKernelStatsText) {
  const char* text =
      "entries: 12\noverrun: 3\ncommit overrun: 0\nbytes: 4096\n"
      "oldest event ts:  1234.567890\nnow ts:  1240.000000\ndropped events: 7\nread events: 99\n";
  CpuBufferStats s = ParseCpuBufferStats(text);
  EXPECT_EQ(s.entries, 12u);
  EXPECT_EQ(s.overrun, 3u);
  EXPECT_EQ(s.bytes, 4096u);
  EXPECT_EQ(s.dropped_events, 7u);
  EXPECT_EQ(s.read_events, 99u);
  EXPECT_EQ(s.text, text);
}

}  // namespace
}  // namespace iotrace
