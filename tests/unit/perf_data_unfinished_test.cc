// A perf.data whose writer was killed: iotrace record's file still holds its tracing data (written
// first) and its records, but the header says "no data, no features".
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

namespace iotrace {
namespace {

class UnfinishedPerfDataTest : public ::testing::Test {
 protected:
  void TearDown() override { ::unlink(path_.c_str()); }

  struct Result {
    bool opened = false;
    std::string error;
    uint64_t events = 0;
    ReadStats stats;
  };
  Result Read(const std::string& bytes) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    Result r;
    auto reader = OpenTraceReader(path_);
    if (!reader.ok()) {
      r.error = std::string(reader.status().message());
      return r;
    }
    r.opened = true;
    struct Counter : EventSink {
      uint64_t n = 0;
      void OnEvent(const RawEvent&) override { ++n; }
    } sink;
    EXPECT_TRUE((*reader)->ReadAll(&sink).ok());
    r.events = sink.n;
    r.stats = (*reader)->stats();
    EXPECT_GE((*reader)->nr_cpus(), 1);
    return r;
  }

  const std::string path_ = test::TmpPath("iotrace-unfinished-test");
};

TEST_F(UnfinishedPerfDataTest, IotracesKilledRecordingIsReadAndSaysSo) {
  const std::string finished = test::ReadFixture("golden/iotrace_mq.data");
  ASSERT_GT(finished.size(), 1000u);
  Result full = Read(finished);
  ASSERT_TRUE(full.opened) << full.error;
  EXPECT_EQ(full.stats.Problem(kProblemUnfinishedFile), 0u);

  Result killed = Read(test::Unfinished(finished));
  ASSERT_TRUE(killed.opened) << killed.error;
  EXPECT_EQ(killed.events, full.events);
  EXPECT_EQ(killed.stats.Problem(kProblemUnfinishedFile), 1u);

  // Killed in the middle of a write: the records before the cut are read.
  const std::string cut = test::Unfinished(finished);
  Result partial = Read(cut.substr(0, cut.size() - (cut.size() - test::HeaderU64(cut, test::kHeaderDataOffsetAt)) / 3));
  ASSERT_TRUE(partial.opened) << partial.error;
  EXPECT_GT(partial.events, 0u);
  EXPECT_LT(partial.events, full.events);
  EXPECT_EQ(partial.stats.Problem(kProblemUnfinishedFile), 1u);
}

TEST_F(UnfinishedPerfDataTest, PerfsOwnUnfinishedFileStillLacksItsFormats) {
  // perf record writes its tracing data after the data: nothing to decode the samples with.
  Result r = Read(test::Unfinished(test::ReadFixture("perf/block-mq-deadline.data")));
  EXPECT_FALSE(r.opened);
  EXPECT_NE(r.error.find("no tracing data"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace iotrace
