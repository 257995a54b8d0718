#include "iotrace/base/batch_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/fd.h"
#include "test_files.h"

namespace iotrace {
namespace {

class BatchReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::TmpPath("iotrace-batch-read");
    bytes_ = test::WriteOffsetPattern(path_, kSize);
    ASSERT_EQ(bytes_.size(), kSize);
    fd_ = UniqueFd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd_.valid());
  }
  void TearDown() override { ::unlink(path_.c_str()); }

  static constexpr size_t kSize = size_t{1} << 20;
  std::string path_;
  std::vector<uint8_t> bytes_;
  UniqueFd fd_;
};

TEST_F(BatchReaderTest, ReadsManyOffsetsInFewCalls) {
  auto reader = BatchReader::Create(64);
  if (!reader.ok()) GTEST_SKIP() << "no io_uring here: " << reader.status();
  // 300 reads of 1 to 5 KiB at scattered offsets, more than the depth: five submissions.
  constexpr int kReads = 300;
  std::vector<std::vector<uint8_t>> bufs(kReads);
  std::vector<BatchReader::Read> reads(kReads);
  for (int i = 0; i < kReads; ++i) {
    const uint32_t len = 1000 + (i * 37) % 4096;
    bufs[i].assign(len, 0);
    reads[i].fd = fd_.get();
    reads[i].buf = bufs[i].data();
    reads[i].len = len;
    reads[i].offset = (static_cast<uint64_t>(i) * 7919 * 4099) % (kSize - len);
  }
  (*reader)->Run(absl::MakeSpan(reads));
  for (int i = 0; i < kReads; ++i) {
    ASSERT_EQ(reads[i].result, reads[i].len) << i;
    ASSERT_EQ(std::memcmp(bufs[i].data(), bytes_.data() + reads[i].offset, reads[i].len), 0)
        << "read " << i << " at " << reads[i].offset;
  }
  EXPECT_GE((*reader)->calls(), 5u);
  EXPECT_LE((*reader)->calls(), 5u + kReads / 8) << "the reads were not batched";
  EXPECT_FALSE((*reader)->broken());
}

TEST_F(BatchReaderTest, ShortAndFailedReadsSayWhat) {
  auto reader = BatchReader::Create(4);
  if (!reader.ok()) GTEST_SKIP() << "no io_uring here: " << reader.status();
  std::vector<uint8_t> a(4096), b(4096), c(4096);
  std::vector<BatchReader::Read> reads(3);
  reads[0] = {fd_.get(), a.data(), 4096, kSize - 1000, 0};  // runs past the end
  reads[1] = {fd_.get(), b.data(), 4096, kSize + 4096, 0};  // wholly past it
  reads[2] = {-1, c.data(), 4096, 0, 0};                    // no file
  (*reader)->Run(absl::MakeSpan(reads));
  EXPECT_EQ(reads[0].result, 1000);
  EXPECT_EQ(std::memcmp(a.data(), bytes_.data() + kSize - 1000, 1000), 0);
  EXPECT_EQ(reads[1].result, 0);
  EXPECT_EQ(reads[2].result, -EBADF);
  EXPECT_FALSE((*reader)->broken()) << "a failed read is the read's, not the reader's";
}

}  // namespace
}  // namespace iotrace
