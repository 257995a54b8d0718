#include "iotrace/formats/trace_dat_inflate.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/trace_dat_reader.h"
#include "iotrace/formats/trace_reader.h"
#include "test_files.h"

namespace iotrace {
namespace {

std::string U32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

std::string ZstdBlock(const std::string& plain) {
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), plain.data(), plain.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return U32(static_cast<uint32_t>(n)) + U32(static_cast<uint32_t>(plain.size())) + out;
}

std::string ZlibBlock(const std::string& plain) {
  uLongf n = compressBound(plain.size());
  std::string out(n, '\0');
  EXPECT_EQ(compress(reinterpret_cast<Bytef*>(out.data()), &n,
                     reinterpret_cast<const Bytef*>(plain.data()), plain.size()),
            Z_OK);
  out.resize(n);
  return U32(static_cast<uint32_t>(n)) + U32(static_cast<uint32_t>(plain.size())) + out;
}

ByteView View(const std::string& s) { return ByteView(s.data(), s.size()); }

std::string Page(char fill) { return std::string(4096, fill); }

// The bytes written so far to a memfd.
std::string Contents(int fd) {
  std::string out;
  char buf[8192];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(TraceDatInflaterTest, ZstdAndZlibBlocksInflateToWhatWasCompressed) {
  const std::string plain = Page('a') + "tail";
  for (const char* algo : {"zstd", "zlib"}) {
    auto inf = TraceDatInflater::For(algo);
    ASSERT_TRUE(inf.ok()) << inf.status();
    std::string block = std::string(algo) == "zstd" ? ZstdBlock(plain) : ZlibBlock(plain);
    std::string out = "stale";
    size_t consumed = 0;
    ASSERT_TRUE(inf->Block(View(block + "trailing"), &consumed, &out).ok()) << algo;
    EXPECT_EQ(out, plain) << algo;
    EXPECT_EQ(consumed, block.size()) << algo;
  }
}

TEST(TraceDatInflaterTest, UnknownAlgorithmIsUnimplemented) {
  auto inf = TraceDatInflater::For("lz4");
  ASSERT_FALSE(inf.ok());
  EXPECT_EQ(inf.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(inf.status().message().find("lz4"), std::string::npos);
}

TEST(TraceDatInflaterTest, BadBlocksAreRefusedWithTheReason) {
  auto inf = TraceDatInflater::For("zstd");
  ASSERT_TRUE(inf.ok());
  const std::string good = ZstdBlock(Page('b'));
  std::string out;
  size_t consumed = 0;
  auto refuse = [&](const std::string& bytes, const std::string& why) {
    absl::Status st = inf->Block(View(bytes), &consumed, &out);
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << why << ": " << st;
    EXPECT_NE(st.message().find(why), std::string::npos) << st;
  };
  refuse(good.substr(0, 6), "block header");
  refuse(good.substr(0, good.size() - 1), "runs past");
  std::string longer = good;
  std::memcpy(longer.data() + 4, U32(8192).data(), 4);  // claims more than it holds
  refuse(longer, "shorter than its header");
  std::string huge = good;
  std::memcpy(huge.data() + 4, U32(0xfffffff0u).data(), 4);  // no 4 GiB buffer for this
  refuse(huge, "more than the");
  std::string garbage = good;
  garbage[12] ^= 0x55;
  absl::Status st = inf->Block(View(garbage), &consumed, &out);
  EXPECT_FALSE(st.ok());
}

TEST(TraceDatInflaterTest, ChunksAppendInOrderAndStopAtTheFirstBadOne) {
  auto inf = TraceDatInflater::For("zstd");
  ASSERT_TRUE(inf.ok());
  const std::string c1 = ZstdBlock(Page('1')), c2 = ZstdBlock(Page('2') + Page('3'));
  int fd = memfd_create("inflate_test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::string scratch;
  uint64_t written = 0;
  size_t consumed = 0;
  const std::string stream = U32(2) + c1 + c2;
  ASSERT_TRUE(inf->Chunks(View(stream + "next section"), fd, 1 << 20, &written, &consumed,
                          &scratch)
                  .ok());
  EXPECT_EQ(consumed, stream.size());
  EXPECT_EQ(written, 3u * 4096);
  EXPECT_EQ(Contents(fd), Page('1') + Page('2') + Page('3'));

  // The second chunk cut short: the first one stays written, the error says why.
  ASSERT_EQ(ftruncate(fd, 0), 0);
  lseek(fd, 0, SEEK_SET);
  written = 0;
  absl::Status st = inf->Chunks(View(stream.substr(0, stream.size() - 5)), fd, 1 << 20, &written,
                                &consumed, &scratch);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_EQ(written, 4096u);
  EXPECT_EQ(consumed, 4 + c1.size());
  EXPECT_EQ(Contents(fd), Page('1'));

  // A stream that would inflate past the budget stops before writing the chunk that crosses it.
  ASSERT_EQ(ftruncate(fd, 0), 0);
  lseek(fd, 0, SEEK_SET);
  written = 0;
  st = inf->Chunks(View(stream), fd, 2 * 4096, &written, &consumed, &scratch);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_NE(st.message().find("inflates to more than"), std::string::npos) << st;
  EXPECT_EQ(written, 4096u);

  // A chunk count no file could hold.
  st = inf->Chunks(View(U32(1000) + c1), fd, 1 << 20, &written, &consumed, &scratch);
  EXPECT_NE(st.message().find("more chunks than bytes"), std::string::npos) << st;
  close(fd);
}

// ---- The reader on trace-cmd's zstd file, damaged in various ways. ----

class CompressedFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = test::ReadFixture("tracedat/dd_v7_zstd.dat");
    ASSERT_FALSE(bytes_.empty());
    dir_ = test::MakeTempDir("iotrace_inflate_test.");
    ASSERT_FALSE(dir_.empty()) << "mkdtemp in " << test::TestTmpDir();
    // The per-CPU data is one chunk of one page: [count 1][csize][usize 4096][zstd frame]; the
    // metadata sections are single blocks of other sizes.
    size_t usize = bytes_.find(U32(4096) + "\x28\xb5\x2f\xfd");
    ASSERT_NE(usize, std::string::npos);
    frame_ = usize + 4;
    ASSERT_EQ(bytes_.substr(frame_ - 12, 4), U32(1));
  }
  void TearDown() override { test::RemoveTree(dir_); }

  std::string Write(const std::string& content) {
    std::string path = dir_ + "/f" + std::to_string(n_++) + ".dat";
    std::ofstream(path, std::ios::binary).write(content.data(),
                                                 static_cast<std::streamsize>(content.size()));
    return path;
  }
  uint64_t CountEvents(const std::string& path, absl::Status* status) {
    auto reader = OpenTraceDat(path);
    if (!reader.ok()) {
      *status = reader.status();
      return 0;
    }
    struct Counter : EventSink {
      uint64_t n = 0;
      void OnEvent(const RawEvent&) override { ++n; }
    } sink;
    *status = (*reader)->ReadAll(&sink);
    stats_ = (*reader)->stats();
    info_.clear();
    for (const auto& [k, v] : (*reader)->Info()) info_[k] = v;
    return sink.n;
  }

  std::string bytes_;
  std::string dir_;
  size_t frame_ = 0;
  int n_ = 0;
  ReadStats stats_;
  std::map<std::string, std::string> info_;
};

TEST_F(CompressedFixture, SaysItInflatedAndWhere) {
  absl::Status st;
  EXPECT_EQ(CountEvents(Write(bytes_), &st), 40u);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(info_["compression"], "zstd");
  EXPECT_NE(info_["inflated"].find("4096 bytes of trace data"), std::string::npos)
      << info_["inflated"];
}

TEST_F(CompressedFixture, AnUnknownAlgorithmIsRefusedWithTheConvertCommand) {
  std::string m = bytes_;
  size_t at = m.find(std::string("zstd\0", 5));
  ASSERT_NE(at, std::string::npos);
  m[at + 3] = 'x';  // "zstx"
  auto reader = OpenTraceDat(Write(m));
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(reader.status().message().find("zstx-compressed"), std::string::npos)
      << reader.status();
  EXPECT_NE(HintOf(reader.status()).find("trace-cmd convert"), std::string::npos);
}

TEST_F(CompressedFixture, ADamagedChunkIsCountedNotFatal) {
  std::string m = bytes_;
  m[frame_] ^= 0x5a;  // no zstd frame any more (a flipped literal would inflate unnoticed)
  absl::Status st;
  uint64_t events = CountEvents(Write(m), &st);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(events, 0u);  // the fixture's only chunk
  EXPECT_EQ(stats_.Problem("trace_dat_cpu_data_truncated"), 1u);
}

TEST_F(CompressedFixture, AChunkClaimingGigabytesIsRefusedWithoutAllocatingThem) {
  std::string m = bytes_;
  std::memcpy(m.data() + frame_ - 4, U32(0x7ffff000u).data(), 4);
  absl::Status st;
  EXPECT_EQ(CountEvents(Write(m), &st), 0u);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(stats_.Problem("trace_dat_cpu_data_truncated"), 1u);
}

TEST_F(CompressedFixture, NoRoomForTheInflatedDataIsAOneLineErrorWithAHint) {
  const char* old = getenv("TMPDIR");
  std::string saved = old ? old : "";
  setenv("TMPDIR", (dir_ + "/missing").c_str(), 1);
  auto reader = OpenTraceDat(Write(bytes_));
  if (old) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find(dir_ + "/missing"), std::string::npos)
      << reader.status();
  EXPECT_NE(HintOf(reader.status()).find("TMPDIR"), std::string::npos);
}

TEST_F(CompressedFixture, EveryTruncationOrFlippedByteIsHandledWithoutCrashing) {
  auto try_read = [&](const std::string& content) {
    absl::Status st;
    EXPECT_LE(CountEvents(Write(content), &st), 40u);
  };
  for (size_t len = 0; len < bytes_.size(); len += 97) try_read(bytes_.substr(0, len));
  std::mt19937 rng(11);
  for (int i = 0; i < 200; ++i) {
    std::string m = bytes_;
    m[rng() % m.size()] ^= static_cast<char>(1 + rng() % 255);
    try_read(m);
  }
}

}  // namespace
}  // namespace iotrace
