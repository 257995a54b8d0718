#include "iotrace/formats/perf_pipe.h"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <string>

#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "test_files.h"

namespace iotrace {
namespace {

class PerfPipeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = test::ReadFixture("perf/block-pipe.data");
    ASSERT_GT(bytes_.size(), 1000u);
    path_ = test::TmpPath("iotrace-pipe-test");
  }
  void TearDown() override { ::unlink(path_.c_str()); }

  // Opens `content` as a file and reads it all: the events delivered, or -1 when it does not
  // open. `problems` gets the reader's problem counters.
  int64_t Read(const std::string& content, ReadStats* stats = nullptr) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc)
        .write(content.data(), static_cast<std::streamsize>(content.size()));
    auto reader = OpenTraceReader(path_);
    if (!reader.ok()) {
      last_error_ = std::string(reader.status().message());
      return -1;
    }
    struct Counter : EventSink {
      int64_t n = 0;
      void OnEvent(const RawEvent&) override { ++n; }
    } sink;
    EXPECT_TRUE((*reader)->ReadAll(&sink).ok());
    if (stats != nullptr) *stats = (*reader)->stats();
    return sink.n;
  }

  std::string bytes_;
  std::string path_;
  std::string last_error_;
};

TEST_F(PerfPipeTest, RecognisesThePipeHeaderOnly) {
  EXPECT_TRUE(IsPipePerfData(ByteView(bytes_.data(), bytes_.size())));
  std::string file_mode = test::ReadFixture("perf/block-mq-deadline.data");
  EXPECT_FALSE(IsPipePerfData(ByteView(file_mode.data(), file_mode.size())));
  EXPECT_FALSE(IsPipePerfData(ByteView(bytes_.data(), 15)));
}

TEST_F(PerfPipeTest, AStreamCutShortKeepsItsWholeRecordsAndSaysSo) {
  ReadStats full_stats;
  const int64_t all = Read(bytes_, &full_stats);
  ASSERT_GT(all, 100);
  EXPECT_EQ(full_stats.Problem("perf_pipe_stream_truncated"), 0u);
  // Cut in the middle of the samples: fewer events, none invented, the cut counted.
  ReadStats stats;
  const int64_t some = Read(bytes_.substr(0, bytes_.size() * 3 / 4 + 3), &stats);
  EXPECT_GT(some, 0);
  EXPECT_LT(some, all);
  EXPECT_EQ(stats.Problem("perf_pipe_stream_truncated"), 1u);
}

TEST_F(PerfPipeTest, AStreamWithoutItsFormatsIsAClearError) {
  EXPECT_EQ(Read(bytes_.substr(0, 16)), -1);
  EXPECT_NE(last_error_.find("without any attr record"), std::string::npos) << last_error_;
  // Attrs but no tracing data: cut right after the attr records.
  size_t pos = 16;
  for (;;) {
    perf::EventHeader h;
    ASSERT_TRUE(LoadAt(ByteView(bytes_.data(), bytes_.size()), pos, &h));
    if (h.type != perf::kRecordHeaderAttr) break;
    pos += h.size;
  }
  EXPECT_EQ(Read(bytes_.substr(0, pos)), -1);
  EXPECT_NE(last_error_.find("without tracing data"), std::string::npos) << last_error_;
}

TEST_F(PerfPipeTest, EveryTruncationOrFlippedByteIsHandledWithoutCrashing) {
  const int64_t all = Read(bytes_);
  for (size_t len = 0; len < bytes_.size(); len += 211) EXPECT_LE(Read(bytes_.substr(0, len)), all);
  std::mt19937 rng(5);
  for (int i = 0; i < 200; ++i) {
    std::string m = bytes_;
    m[16 + rng() % (m.size() - 16)] ^= static_cast<char>(1 + rng() % 255);
    Read(m);  // any outcome but a crash or a hang
  }
}

}  // namespace
}  // namespace iotrace
