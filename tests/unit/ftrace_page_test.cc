#include "iotrace/formats/ftrace_page.h"

#include <random>
#include <string>
#include <vector>

#include "ftrace_page_builder.h"
#include "gtest/gtest.h"

namespace iotrace {
namespace {

using testing::FtracePageBuilder;
using testing::HeaderPageText;
using testing::ReadFixtureFile;

FtracePageLayout Layout(uint32_t page_size = 4096) {
  auto layout = ParseHeaderPage(HeaderPageText(page_size), 4096);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

std::vector<FtraceRecord> WalkAll(FtracePageWalker* w) {
  std::vector<FtraceRecord> out;
  FtraceRecord rec;
  while (w->Next(&rec)) out.push_back(rec);
  return out;
}

TEST(FtracePageTest, ParsesHeaderPageOfThisKernel) {
  auto layout = ParseHeaderPage(ReadFixtureFile("formats/6.18/events/header_page"), 1234);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->timestamp_offset, 0u);
  EXPECT_EQ(layout->commit_offset, 8u);
  EXPECT_EQ(layout->commit_size, 8u);
  EXPECT_EQ(layout->data_offset, 16u);
  EXPECT_EQ(layout->page_size, 4096u);  // 16 + 4080, not the fallback
}

TEST(FtracePageTest, SubBufferSizeComesFromHeaderPage) {
  // What an instance with buffer_subbuf_size_kb=8 prints (measured on this kernel).
  auto layout = ParseHeaderPage(HeaderPageText(8192), 4096);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->page_size, 8192u);
  EXPECT_EQ(layout->data_capacity(), 8176u);
}

TEST(FtracePageTest, RejectsHeaderPageWithoutCommit) {
  EXPECT_FALSE(
      ParseHeaderPage("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n", 4096).ok());
  EXPECT_FALSE(ParseHeaderPage("", 4096).ok());
}

TEST(FtracePageTest, RejectsHeaderPageWhoseOffsetsWrapAround) {
  // Found by review while fuzzing: offset + size was summed in 32 bits, so a field at
  // 4294967288 (timestamp) or 4294967292 (commit) passed the "before the data" check.
  const std::string commit = "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n";
  const std::string data = "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
  EXPECT_FALSE(
      ParseHeaderPage(
          "\tfield: u64 timestamp;\toffset:4294967288;\tsize:8;\tsigned:0;\n" + commit + data, 4096)
          .ok());
  EXPECT_FALSE(
      ParseHeaderPage("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
                      "\tfield: local_t commit;\toffset:4294967292;\tsize:4;\tsigned:1;\n" +
                          data,
                      4096)
          .ok());
}

TEST(FtracePageTest, AcceptsHeaderEventOfThisKernelAndRejectsOthers) {
  EXPECT_TRUE(CheckHeaderEvent(ReadFixtureFile("formats/6.18/events/header_event")).ok());
  std::string other = ReadFixtureFile("formats/6.18/events/header_event");
  other.replace(other.find("27 bits"), 7, "26 bits");
  EXPECT_FALSE(CheckHeaderEvent(other).ok());
  EXPECT_FALSE(CheckHeaderEvent("").ok());
}

TEST(FtracePageTest, YieldsEventsWithTimestampsFromDeltas) {
  FtracePageBuilder b(1000);
  ASSERT_TRUE(b.AddEvent(1000, std::string(12, 'a')));
  ASSERT_TRUE(b.AddEvent(1500, std::string(40, 'b')));
  ASSERT_TRUE(b.AddEvent(1500, std::string(7, 'c')));  // rounded up to 8
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  EXPECT_EQ(w.page_timestamp(), 1000u);
  EXPECT_FALSE(w.missed_events());
  auto recs = WalkAll(&w);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].ts, 1000u);
  EXPECT_EQ(recs[0].payload.size, 12u);
  EXPECT_EQ(recs[0].payload.data[0], 'a');
  EXPECT_EQ(recs[1].ts, 1500u);
  EXPECT_EQ(recs[1].payload.size, 40u);
  EXPECT_EQ(recs[2].payload.size, 8u);
  EXPECT_EQ(recs[2].payload.data[0], 'c');
  EXPECT_EQ(w.problem(), FtracePageProblem::kNone);
}

TEST(FtracePageTest, TimeExtendCarriesLargeDeltas) {
  const uint64_t base = 5'000'000'000ull;
  FtracePageBuilder b(base);
  ASSERT_TRUE(b.AddEvent(base + 10, "xxxx"));
  ASSERT_TRUE(b.AddEvent(base + 10 + (uint64_t{3} << 27) + 12345, "yyyy"));  // needs an extend
  ASSERT_TRUE(b.AddEvent(base + 900'000'000'000ull, "zzzz"));                // 15 minutes later
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  auto recs = WalkAll(&w);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].ts, base + 10);
  EXPECT_EQ(recs[1].ts, base + 10 + (uint64_t{3} << 27) + 12345);
  EXPECT_EQ(recs[2].ts, base + 900'000'000'000ull);
}

TEST(FtracePageTest, LongFormEventsCarryTheirLengthInArrayZero) {
  FtracePageBuilder b(0);
  ASSERT_TRUE(b.AddEvent(1, std::string(200, 'L')));       // > 112 bytes: type_len 0
  ASSERT_TRUE(b.AddEvent(2, std::string(16, 's'), true));  // forced long form
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  auto recs = WalkAll(&w);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].payload.size, 200u);
  EXPECT_EQ(recs[0].payload.data[199], 'L');
  EXPECT_EQ(recs[1].payload.size, 16u);
  EXPECT_EQ(recs[1].payload.data[0], 's');
  EXPECT_EQ(recs[1].ts, 2u);
}

TEST(FtracePageTest, DiscardedEventsAreSkippedButTheirDeltaCounts) {
  FtracePageBuilder b(100);
  ASSERT_TRUE(b.AddEvent(110, "aaaa"));
  ASSERT_TRUE(b.AddDiscarded(150, 20));
  ASSERT_TRUE(b.AddEvent(170, "bbbb"));
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  auto recs = WalkAll(&w);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].ts, 110u);
  EXPECT_EQ(recs[1].ts, 170u);  // as libtraceevent's kbuffer (and trace-cmd report) count it
  EXPECT_EQ(recs[1].payload.data[0], 'b');
}

TEST(FtracePageTest, NullPaddingEndsThePage) {
  FtracePageBuilder b(0);
  ASSERT_TRUE(b.AddEvent(1, "aaaa"));
  b.AddRaw(std::string("\x1d\x00\x00\x00", 4));  // type 29, delta 0
  b.AddRaw(
      std::string("\x01\x00\x00\x00"
                  "zzzz",
                  8));  // would be an event; must not be read
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  EXPECT_EQ(WalkAll(&w).size(), 1u);
  EXPECT_EQ(w.problem(), FtracePageProblem::kNone);
}

TEST(FtracePageTest, AbsoluteTimestampSetsTheClock) {
  FtracePageBuilder b(1000);
  ASSERT_TRUE(b.AddEvent(1000, "aaaa"));
  ASSERT_TRUE(b.AddAbsoluteTimestamp(123'456'789'012ull));
  ASSERT_TRUE(b.AddEvent(123'456'789'112ull, "bbbb"));
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  auto recs = WalkAll(&w);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[1].ts, 123'456'789'112ull);
}

TEST(FtracePageTest, AbsoluteTimestampGoingBackIsAProblem) {
  FtracePageBuilder b(1'000'000);
  ASSERT_TRUE(b.AddEvent(1'000'000, "aaaa"));
  ASSERT_TRUE(b.AddAbsoluteTimestamp(10));
  ASSERT_TRUE(b.AddEvent(20, "bbbb"));
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  EXPECT_EQ(WalkAll(&w).size(), 1u);
  EXPECT_EQ(w.problem(), FtracePageProblem::kTimeBackwards);
}

TEST(FtracePageTest, ReportsStoredMissedEventCount) {
  FtracePageBuilder b(0);
  ASSERT_TRUE(b.AddEvent(5, "aaaa"));
  b.SetMissedEvents(4242, true);
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  EXPECT_TRUE(w.missed_events());
  EXPECT_TRUE(w.missed_count_known());
  EXPECT_EQ(w.missed_count(), 4242u);
  EXPECT_EQ(WalkAll(&w).size(), 1u);  // the count after the data is not an event
}

TEST(FtracePageTest, MissedEventsWithoutRoomHaveNoCount) {
  FtracePageBuilder b(0);
  ASSERT_TRUE(b.AddEvent(5, std::string(4072, 'f'), true));  // 8 + 4072: all 4080 data bytes
  EXPECT_EQ(b.free_bytes(), 0u);
  b.SetMissedEvents(7, true);  // no room: only RB_MISSED_EVENTS is set
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  EXPECT_TRUE(w.missed_events());
  EXPECT_FALSE(w.missed_count_known());
  EXPECT_EQ(WalkAll(&w).size(), 1u);
}

TEST(FtracePageTest, CommitLargerThanThePageIsRejected) {
  FtracePageBuilder b(0);
  ASSERT_TRUE(b.AddEvent(5, "aaaa"));
  b.OverrideCommit(4081);
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  EXPECT_FALSE(w.Reset(ByteView(page.data(), page.size())));
  EXPECT_EQ(w.problem(), FtracePageProblem::kCommitPastEnd);
  FtraceRecord rec;
  EXPECT_FALSE(w.Next(&rec));
}

TEST(FtracePageTest, ShortPageIsRejected) {
  std::string page(10, '\0');
  FtracePageWalker w(Layout());
  EXPECT_FALSE(w.Reset(ByteView(page.data(), page.size())));
  EXPECT_EQ(w.problem(), FtracePageProblem::kShortPage);
}

TEST(FtracePageTest, EventRunningPastCommitStopsThePageAfterTheGoodOnes) {
  FtracePageBuilder b(0);
  ASSERT_TRUE(b.AddEvent(5, "aaaa"));
  b.AddRaw(
      std::string("\x08\x00\x00\x00"
                  "bb",
                  6));  // claims 32 bytes, 2 present
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  EXPECT_EQ(WalkAll(&w).size(), 1u);
  EXPECT_EQ(w.problem(), FtracePageProblem::kEventPastEnd);
}

TEST(FtracePageTest, LongEventWithLengthBelowFourIsBad) {
  FtracePageBuilder b(0);
  b.AddRaw(std::string("\x00\x00\x00\x00\x02\x00\x00\x00", 8));
  std::string page = b.Build();
  FtracePageWalker w(Layout());
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  EXPECT_TRUE(WalkAll(&w).empty());
  EXPECT_EQ(w.problem(), FtracePageProblem::kBadLength);
}

TEST(FtracePageTest, LargerSubBufferHoldsMoreThanFourKilobytes) {
  FtracePageBuilder b(0, 8192);
  int added = 0;
  while (b.AddEvent(added, std::string(64, 'e'))) ++added;
  EXPECT_GT(added * 68, 4096);
  std::string page = b.Build();
  FtracePageWalker w(Layout(8192));
  ASSERT_TRUE(w.Reset(ByteView(page.data(), page.size())));
  EXPECT_EQ(static_cast<int>(WalkAll(&w).size()), added);
  // The same page read with a 4 KiB layout is corrupt, not silently truncated.
  FtracePageWalker small(Layout(4096));
  EXPECT_FALSE(small.Reset(ByteView(page.data(), 4096)));
  EXPECT_EQ(small.problem(), FtracePageProblem::kCommitPastEnd);
}

TEST(FtracePageTest, RandomBytesNeverReadOutsideThePageOrLoop) {
  std::mt19937_64 rng(42);
  FtracePageLayout layout = Layout();
  FtracePageWalker w(layout);
  for (int i = 0; i < 20000; ++i) {
    std::string page(layout.page_size, '\0');
    for (char& c : page) c = static_cast<char>(rng());
    // Keep the commit plausible half of the time so the event walk is exercised.
    if (i % 2 == 0) {
      uint64_t commit = rng() % (layout.data_capacity() + 1);
      std::memcpy(&page[8], &commit, 8);
    }
    // Hand the walker exactly the page bytes (ASan would catch reads past them).
    std::vector<uint8_t> exact(page.begin(), page.end());
    if (!w.Reset(ByteView(exact.data(), exact.size()))) continue;
    FtraceRecord rec;
    int n = 0;
    while (w.Next(&rec)) {
      ASSERT_GE(rec.payload.data, exact.data() + layout.data_offset);
      ASSERT_LE(rec.payload.data + rec.payload.size, exact.data() + exact.size());
      ASSERT_LT(++n, 1100);  // at most one record per 4 bytes of data
    }
  }
}

}  // namespace
}  // namespace iotrace
