// iotrace recover on a perf.data whose writer was killed: the header and feature table written
// from the block the writer keeps before the data, the data ending at its last whole record.
#include "iotrace/formats/perf_data_recover.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_format.h"
#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

namespace iotrace {
namespace {

using test::Slurp;
using test::Spit;
struct Read {
  uint64_t events = 0;
  uint64_t unfinished = 0;
};

Read ReadFile(const std::string& path) {
  Read r;
  auto reader = OpenTraceReader(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return r;
  struct Counter : EventSink {
    uint64_t n = 0;
    void OnEvent(const RawEvent&) override { ++n; }
  } sink;
  EXPECT_TRUE((*reader)->ReadAll(&sink).ok());
  r.events = sink.n;
  r.unfinished = (*reader)->stats().Problem(kProblemUnfinishedFile);
  return r;
}

// perf script's sample lines, -1 when perf is not installed or fails.
int PerfScriptLines(const std::string& path) {
  if (access("/usr/bin/perf", X_OK) != 0) return -1;
  FILE* p = popen(absl::StrFormat("/usr/bin/perf script -i %s 2>/dev/null", path).c_str(), "r");
  if (p == nullptr) return -1;
  int lines = 0;
  char buf[4096];
  while (fgets(buf, sizeof(buf), p) != nullptr) lines += std::strstr(buf, "block:") != nullptr;
  return pclose(p) == 0 ? lines : -1;
}

class PerfDataRecoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::SyntheticOptions o;
    o.samples = 3000;
    ASSERT_TRUE(test::WriteSyntheticBlockFile(finished_path_, o, nullptr).ok());
    finished_ = Slurp(finished_path_);
    ASSERT_GT(finished_.size(), 10000u);
  }
  void TearDown() override {
    ::unlink(finished_path_.c_str());
    ::unlink(path_.c_str());
  }
  const std::string finished_path_ = test::TmpPath("iotrace-recover-done");
  const std::string path_ = test::TmpPath("iotrace-recover-test");
  std::string finished_;
};

TEST_F(PerfDataRecoverTest, AKilledFileBecomesTheFinishedOneMarkedRecovered) {
  Spit(path_, test::Unfinished(finished_));
  const Read killed = ReadFile(path_);
  EXPECT_EQ(killed.unfinished, 1u);
  auto r = RecoverPerfData(path_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->was_complete);
  EXPECT_EQ(r->bytes_cut, 0u);
  EXPECT_EQ(r->data_bytes, test::HeaderU64(finished_, test::kHeaderDataSizeAt));
  // Byte for byte what Finish wrote, but for the block's magic.
  const std::string recovered = Slurp(path_);
  ASSERT_EQ(recovered.size(), finished_.size());
  const size_t magic = finished_.find(std::string(perf::kRecoveryMagic, 16));
  ASSERT_NE(magic, std::string::npos);
  EXPECT_EQ(recovered.substr(magic, 16), std::string(perf::kRecoveredMagic, 16));
  EXPECT_EQ(recovered.substr(0, magic), finished_.substr(0, magic));
  EXPECT_EQ(recovered.substr(magic + 16), finished_.substr(magic + 16));
  const Read after = ReadFile(path_);
  EXPECT_EQ(after.events, killed.events);
  EXPECT_EQ(after.unfinished, 1u);  // still said: the losses counted last are not in it
  const int lines = PerfScriptLines(path_);
  if (lines >= 0) EXPECT_EQ(static_cast<uint64_t>(lines), after.events);
  auto again = RecoverPerfData(path_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->was_complete);
}

TEST_F(PerfDataRecoverTest, ARecordCutByTheKillIsDroppedAndCounted) {
  std::string killed = test::Unfinished(finished_);
  killed.resize(killed.size() - 5);  // the last record's write cut short
  Spit(path_, killed);
  auto r = RecoverPerfData(path_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->bytes_cut, 0u);
  EXPECT_EQ(r->data_bytes + r->bytes_cut, test::HeaderU64(finished_, test::kHeaderDataSizeAt) - 5);
  const Read after = ReadFile(path_);
  EXPECT_GT(after.events, 0u);
  EXPECT_EQ(after.unfinished, 1u);
  const int lines = PerfScriptLines(path_);
  if (lines >= 0) EXPECT_EQ(static_cast<uint64_t>(lines), after.events);
}

TEST_F(PerfDataRecoverTest, AFinishedFileIsCompleteAndPerfsOwnFileIsRefused) {
  Spit(path_, finished_);
  auto done = RecoverPerfData(path_);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->was_complete);
  EXPECT_EQ(Slurp(path_), finished_);
  EXPECT_EQ(ReadFile(path_).unfinished, 0u);

  Spit(path_, test::Unfinished(test::ReadFixture("perf/block-mq-deadline.data")));
  auto perfs = RecoverPerfData(path_);
  ASSERT_FALSE(perfs.ok());
  EXPECT_NE(std::string(perfs.status().message()).find("no iotrace recovery block"),
            std::string::npos)
      << perfs.status();
}

}  // namespace
}  // namespace iotrace
