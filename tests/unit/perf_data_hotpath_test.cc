// The reader's hot path: no allocation per event after warm-up, and resident memory of the file
// mapping bounded by the merge limits rather than by the file size.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "allocation_counter.h"
#include "gtest/gtest.h"
#include "iotrace/formats/perf_data_reader.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

namespace iotrace {
namespace {

std::string TempPath(const std::string& name) {
  return test::ScratchPath("iotrace-perfdata-h", name);
}

// Counts events and remembers the allocation count at event `mark` and at the last event.
class AllocationWatchingSink : public EventSink {
 public:
  explicit AllocationWatchingSink(uint64_t mark) : mark_(mark) {}
  void OnEvent(const RawEvent& e) override {
    if (++events == mark_) at_mark = test::Allocations();
    at_last = test::Allocations();
    checksum += e.ts + e.payload.size;
  }
  void OnLoss(const LossRecord&) override { at_last = test::Allocations(); }
  uint64_t events = 0;
  uint64_t at_mark = 0;
  uint64_t at_last = 0;
  uint64_t checksum = 0;

 private:
  uint64_t mark_;
};

class PerfDataHotPathTest : public ::testing::TestWithParam<bool> {};

TEST_P(PerfDataHotPathTest, ReadingAllocatesNothingAfterWarmUp) {
  IOTRACE_REQUIRE_ALLOCATION_COUNTER();
  std::string path = TempPath(GetParam() ? "alloc-rounds" : "alloc-norounds");
  test::SyntheticOptions o;
  o.samples = 40000;
  o.cpus = 4;
  o.drain_stagger_ns = 5000;
  o.round_marks = GetParam();
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, nullptr).ok());
  auto reader = OpenPerfData(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  AllocationWatchingSink sink(2000);
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  ::unlink(path.c_str());
  EXPECT_EQ(sink.events, o.samples);
  EXPECT_EQ(sink.at_last - sink.at_mark, 0u) << "allocations between event 2000 and the last";
}

INSTANTIATE_TEST_SUITE_P(RoundMarks, PerfDataHotPathTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "WithRoundMarks" : "WithoutRoundMarks";
                         });

// Resident kB of this process (VmRSS in /proc/self/status).
uint64_t ProcessRssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

class RssWatchingSink : public EventSink {
 public:
  void OnEvent(const RawEvent&) override {
    if (++events % 10000 == 0) max_kb = std::max(max_kb, ProcessRssKb());
  }
  uint64_t events = 0;
  uint64_t max_kb = 0;
};

// The data goes through a ring of memory (FileRing), not through the file's mapping: what the
// reader holds stays bounded by the merge window, however large the file.
TEST(PerfDataMemoryTest, ReadMemoryStaysBoundedWhateverTheFileSize) {
  std::string path = TempPath("rss");
  test::SyntheticOptions o;
  o.samples = 600000;     // ~ 62 MiB of data
  o.round_marks = false;  // the window, not the rounds, bounds what is held
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, nullptr).ok());
  PerfReadOptions options;
  options.merge.window_bytes = 1 << 20;
  options.merge.max_span_bytes = 2 << 20;
  options.merge.release_step = 256 << 10;
  options.read_ring_bytes = 1 << 20;  // grows to what the span needs: 4 MiB at most here
  const uint64_t before_kb = ProcessRssKb();
  ASSERT_GT(before_kb, 0u) << "no VmRSS in /proc/self/status";
  auto reader = OpenPerfData(path, options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  RssWatchingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  ::unlink(path.c_str());
  ASSERT_EQ(sink.events, o.samples);
  // The rings (1 MiB, then the bigger ones the span needed, kept while pointers into them may
  // live) and a few header pages of the file's mapping; the file is seven times larger. At
  // least the first ring, which the read goes through whole: the measure sees the reader.
  const uint64_t added_kb = sink.max_kb - std::min(sink.max_kb, before_kb);
  EXPECT_GE(added_kb, 1024u) << "the first ring does not show in VmRSS";
  EXPECT_LT(added_kb, 9u * 1024) << "resident kB the read added: " << sink.max_kb << " - "
                                 << before_kb;
  EXPECT_EQ((*reader)->stats().Problem("out_of_order_beyond_window"), 0u);
}

}  // namespace
}  // namespace iotrace
