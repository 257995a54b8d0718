// A file that shrinks between opening and reading (another process truncating it, a recording
// being rewritten): the readers read their data with pread(), so they see the end early and
// say so ("read_error"), keeping every event before it, and neither crash nor hang.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "test_files.h"

namespace iotrace {
namespace {

class CountingSink : public EventSink {
 public:
  void OnEvent(const RawEvent&) override { ++events; }
  void OnLoss(const LossRecord&) override {}
  uint64_t events = 0;
};

std::string CopyFixture(const std::string& relative, const std::string& name) {
  const std::string bytes = test::ReadFixture(relative);
  std::string path = test::TmpPath("iotrace-shrink", "-" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

uint64_t EventsIn(const std::string& path) {
  auto reader = OpenTraceReader(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return 0;
  CountingSink sink;
  EXPECT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ((*reader)->stats().Problem("read_error"), 0u);
  return sink.events;
}

// Opens `path`, cuts it to `keep` bytes, reads (with the reader's read-ahead thread when
// `ahead`): the events before the cut, and a read_error.
void ExpectShrinkSeen(const std::string& path, uint64_t keep, uint64_t all_events,
                      bool ahead = false) {
  auto reader = OpenTraceReader(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  (*reader)->set_read_ahead(ahead);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(keep)), 0);
  CountingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ((*reader)->stats().Problem("read_error"), 1u);
  EXPECT_GT(sink.events, 0u);
  EXPECT_LT(sink.events, all_events);
}

TEST(ReaderShrinkTest, PerfDataCutInItsDataWhileOpen) {
  const std::string path = CopyFixture("perf/block-mq-deadline.data", "perf");
  const uint64_t all = EventsIn(path);
  ASSERT_GT(all, 100u);
  // The data section's place is in the file header: {offset, size} at byte 40.
  const std::string bytes = test::ReadFixture("perf/block-mq-deadline.data");
  uint64_t section[2];
  std::memcpy(section, bytes.data() + 40, sizeof(section));
  ASSERT_GT(section[1], 4096u);
  ExpectShrinkSeen(path, section[0] + section[1] / 2, all);
  // The same cut seen by the read-ahead thread (it stops; the reader goes on in its own thread
  // to the same end).
  const std::string again = CopyFixture("perf/block-mq-deadline.data", "perf-ahead");
  ExpectShrinkSeen(again, section[0] + section[1] / 2, all, /*ahead=*/true);
  ::unlink(path.c_str());
  ::unlink(again.c_str());
}

TEST(ReaderShrinkTest, TraceDatCutInItsLastCpuWhileOpen) {
  const std::string path = CopyFixture("tracedat/dd_v6.dat", "tracedat");
  const uint64_t all = EventsIn(path);
  ASSERT_GT(all, 100u);
  // The per-CPU pages are at the end of a v6 file: cut the last 3 pages.
  const uint64_t size = test::ReadFixture("tracedat/dd_v6.dat").size();
  ExpectShrinkSeen(path, size - 3 * 4096, all);
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace iotrace
