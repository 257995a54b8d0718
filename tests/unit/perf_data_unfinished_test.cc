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

namespace iotrace {
namespace {

constexpr size_t kDataOffsetAt = 40, kDataSizeAt = 48, kFeaturesAt = 72, kFeaturesSize = 32;

uint64_t GetU64(const std::string& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

// The file as it is on disk when its writer dies before Finish: the same bytes up to the end of
// the data, header without data size or features, no feature table after the data.
std::string Unfinished(const std::string& finished) {
  std::string b = finished.substr(0, GetU64(finished, kDataOffsetAt) + GetU64(finished, kDataSizeAt));
  std::memset(b.data() + kDataSizeAt, 0, 8);
  std::memset(b.data() + kFeaturesAt, 0, kFeaturesSize);
  return b;
}

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

  const std::string path_ = "/tmp/iotrace-unfinished-test-" + std::to_string(getpid());
};

TEST_F(UnfinishedPerfDataTest, IotracesKilledRecordingIsReadAndSaysSo) {
  const std::string finished = test::ReadFixture("golden/iotrace_mq.data");
  ASSERT_GT(finished.size(), 1000u);
  Result full = Read(finished);
  ASSERT_TRUE(full.opened) << full.error;
  EXPECT_EQ(full.stats.Problem(kProblemUnfinishedFile), 0u);

  Result killed = Read(Unfinished(finished));
  ASSERT_TRUE(killed.opened) << killed.error;
  EXPECT_EQ(killed.events, full.events);
  EXPECT_EQ(killed.stats.Problem(kProblemUnfinishedFile), 1u);

  // Killed in the middle of a write: the records before the cut are read.
  const std::string cut = Unfinished(finished);
  Result partial = Read(cut.substr(0, cut.size() - (cut.size() - GetU64(cut, kDataOffsetAt)) / 3));
  ASSERT_TRUE(partial.opened) << partial.error;
  EXPECT_GT(partial.events, 0u);
  EXPECT_LT(partial.events, full.events);
  EXPECT_EQ(partial.stats.Problem(kProblemUnfinishedFile), 1u);
}

TEST_F(UnfinishedPerfDataTest, PerfsOwnUnfinishedFileStillLacksItsFormats) {
  // perf record writes its tracing data after the data: nothing to decode the samples with.
  Result r = Read(Unfinished(test::ReadFixture("perf/block-mq-deadline.data")));
  EXPECT_FALSE(r.opened);
  EXPECT_NE(r.error.find("no tracing data"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace iotrace
