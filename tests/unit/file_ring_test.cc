#include "iotrace/base/file_ring.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/batch_read.h"
#include "iotrace/base/fd.h"
#include "test_files.h"

namespace iotrace {
namespace {

// A scratch file holding bytes whose value depends on their offset, so that any byte read from
// the wrong place shows.
class FileRingTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    path_ = test::TmpPath("iotrace-file-ring");
    bytes_ = test::WriteOffsetPattern(path_, kSize);
    ASSERT_EQ(bytes_.size(), kSize);
    fd_ = UniqueFd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd_.valid());
  }
  void TearDown() override { ::unlink(path_.c_str()); }

  // The ring, reading ahead on its own thread when the test's parameter says so.
  FileRing Make(uint64_t begin, size_t capacity, size_t step) {
    auto ring = FileRing::Create(fd_.get(), begin, kSize, capacity, step);
    EXPECT_TRUE(ring.ok()) << ring.status();
    if (!ring.ok()) return FileRing();
    if (GetParam()) EXPECT_TRUE(ring->StartReadAhead());
    return std::move(*ring);
  }

  bool Same(const FileRing& ring, uint64_t offset, size_t n) const {
    return std::memcmp(ring.At(offset), bytes_.data() + offset, n) == 0;
  }

  // Shares of the caller's memory: a guard page of a pattern no file byte read there would
  // leave whole, then the share (`each` bytes), then the next guard page, and so on, each
  // share `stride` bytes after the one before: a ring that writes past its share, or before
  // it, changes a guard.
  static constexpr size_t kGuard = 4096;
  static uint8_t GuardByte(size_t i) { return static_cast<uint8_t>(0xa5 ^ (i * 131)); }
  static uint8_t* Share(uint8_t* base, int ring, size_t stride) {
    return base + kGuard + ring * stride;
  }
  static void FillGuards(uint8_t* base, int rings, size_t stride) {
    for (int r = 0; r <= rings; ++r) {
      for (size_t i = 0; i < kGuard; ++i) base[r * stride + i] = GuardByte(i);
    }
  }
  static void ExpectGuardsIntact(const uint8_t* base, int rings, size_t stride) {
    for (int r = 0; r <= rings; ++r) {
      size_t changed = 0;
      for (size_t i = 0; i < kGuard; ++i) changed += base[r * stride + i] != GuardByte(i);
      EXPECT_EQ(changed, 0u) << "a ring wrote into the guard page "
                             << (r == 0 ? std::string("before the first share")
                                        : "after share " + std::to_string(r - 1));
    }
  }

  static constexpr size_t kSize = size_t{3} << 20;
  std::string path_;
  std::vector<uint8_t> bytes_;
  UniqueFd fd_;
};

TEST_P(FileRingTest, RecordsAcrossTheWrapAreContiguous) {
  FileRing r = Make(100, 64 << 10, 16 << 10);
  FileRing* ring = &r;
  EXPECT_EQ(ring->capacity(), size_t{64} << 10);
  // Walk the file in 3000-byte records, releasing behind: the ring wraps ~45 times, and
  // records cross its end at many different points.
  uint64_t wrapped = 0;
  for (uint64_t pos = 100; pos + 3000 <= kSize; pos += 3000) {
    ring->Release(pos);
    ASSERT_GE(ring->Fill(pos, 3000), 3000u) << pos;
    ASSERT_TRUE(Same(*ring, pos, 3000)) << "record at " << pos;
    if ((pos & (ring->capacity() - 1)) + 3000 > ring->capacity()) ++wrapped;
  }
  EXPECT_GT(wrapped, 20u);
  EXPECT_EQ(ring->capacity(), size_t{64} << 10) << "released behind: no need to grow";
  EXPECT_TRUE(ring->error().empty()) << ring->error();
}

// A ring of a few pages (trace.dat's per-CPU ring at 256 CPUs: 16 KiB, read 8 KiB at a time,
// pages of 4 KiB) stays that small and holds the right bytes across its wraps.
TEST_P(FileRingTest, ARingOfAFewPagesStaysSmall) {
  constexpr size_t kPage = 4096;
  auto made = FileRing::Create(fd_.get(), 0, kSize, 16 << 10, 8 << 10, kPage);
  ASSERT_TRUE(made.ok()) << made.status();
  FileRing ring = std::move(*made);
  if (GetParam()) ASSERT_TRUE(ring.StartReadAhead());
  EXPECT_EQ(ring.capacity(), size_t{16} << 10);
  for (uint64_t pos = 0; pos + kPage <= (1 << 20); pos += kPage) {
    ring.Release(pos);
    ASSERT_GE(ring.Fill(pos, kPage), kPage) << pos;
    ASSERT_TRUE(Same(ring, pos, kPage)) << "page at " << pos;
  }
  EXPECT_EQ(ring.capacity(), size_t{16} << 10) << "released behind: no need to grow";
  EXPECT_TRUE(ring.error().empty()) << ring.error();
}

// Records up to max_span (here far below the ring's size) are contiguous wherever they wrap:
// they end in the mirror after the ring. Also after the ring grew, which copies the live bytes
// over (into the new ring's first bytes too).
TEST_P(FileRingTest, RecordsUpToMaxSpanAcrossTheWrapAreContiguousAfterGrowingToo) {
  constexpr size_t kSpan = 4096;
  auto made = FileRing::Create(fd_.get(), 100, kSize, 64 << 10, 16 << 10, kSpan);
  ASSERT_TRUE(made.ok()) << made.status();
  FileRing ring = std::move(*made);
  if (GetParam()) ASSERT_TRUE(ring.StartReadAhead());
  uint64_t pos = 100;
  uint64_t wrapped = 0;
  uint64_t n = 0;
  auto walk = [&](uint64_t until, bool release) {
    for (; pos + kSpan <= until; ++n) {
      const uint64_t size = kSpan - (n * 337) % 3000;  // 1096 to 4096 bytes
      if (release) ring.Release(pos);
      ASSERT_GE(ring.Fill(pos, size), size) << pos;
      ASSERT_TRUE(Same(ring, pos, size)) << "record of " << size << " at " << pos;
      if ((pos & (ring.capacity() - 1)) + size > ring.capacity()) ++wrapped;
      pos += size;
    }
  };
  walk(100 << 10, true);
  EXPECT_EQ(ring.capacity(), size_t{64} << 10);
  EXPECT_GE(wrapped, 1u);
  // Nothing released for a while: the ring grows, with everything from 100 KiB on live.
  const uint64_t held = pos;
  walk(held + (200 << 10), false);
  EXPECT_GE(ring.capacity(), size_t{256} << 10);
  EXPECT_TRUE(Same(ring, held, 4096)) << "the first live record, copied into the bigger ring";
  const uint64_t wrapped_before = wrapped;
  walk(kSize, true);
  EXPECT_GE(wrapped - wrapped_before, 8u) << "the grown ring wraps too";
  EXPECT_TRUE(ring.error().empty()) << ring.error();
}

TEST_P(FileRingTest, GrowsWhenNothingIsReleasedAndKeepsOldPointersValid) {
  FileRing r = Make(0, 64 << 10, 16 << 10);
  FileRing* ring = &r;
  ASSERT_GE(ring->Fill(0, 1000), 1000u);
  const uint8_t* first = ring->At(0);
  // Hold on to offset 0 (no Release) while reading ten times the ring's size.
  for (uint64_t pos = 0; pos < (640 << 10); pos += 1000) ASSERT_GE(ring->Fill(pos, 1000), 1000u);
  EXPECT_GE(ring->capacity(), size_t{1} << 20);
  EXPECT_TRUE(Same(*ring, 0, 640 << 10)) << "every live byte copied into the bigger ring";
  EXPECT_EQ(std::memcmp(first, bytes_.data(), 1000), 0) << "the outgrown ring is still mapped";
}

TEST_P(FileRingTest, SkipsWhatTheCallerJumpsOverAndStopsAtTheEnd) {
  FileRing r = Make(0, 64 << 10, 16 << 10);
  FileRing* ring = &r;
  ASSERT_GE(ring->Fill(0, 100), 100u);
  // An AUX payload of 2 MiB follows: the next record is read without the bytes in between.
  const uint64_t next = 2 << 20;
  ring->Release(100);
  ASSERT_GE(ring->Fill(next, 100), 100u);
  EXPECT_TRUE(Same(*ring, next, 100));
  ASSERT_GE(ring->Fill(next + 100, 100), 100u);
  EXPECT_TRUE(Same(*ring, next + 100, 100));
  // Something before the skip still live: the bytes in between are read, and the ring grows
  // to hold them all.
  ring->Release(next + 200);
  ASSERT_GE(ring->Fill(next + 200, 100), 100u);
  const uint64_t later = next + (256 << 10);
  ASSERT_GE(ring->Fill(later, 100), 100u);
  EXPECT_GE(ring->capacity(), size_t{256} << 10);
  EXPECT_TRUE(Same(*ring, next + 200, 100));
  EXPECT_TRUE(Same(*ring, later, 100));
  // Near the end, only what is left.
  EXPECT_EQ(ring->Fill(kSize - 10, 100), 10u);
  EXPECT_TRUE(Same(*ring, kSize - 10, 10));
  EXPECT_TRUE(ring->error().empty()) << "the end of the stretch is not an error";
}

TEST_P(FileRingTest, AFileThatShrankIsAnErrorNotAHang) {
  FileRing r = Make(0, 64 << 10, 16 << 10);
  FileRing* ring = &r;
  ASSERT_EQ(::truncate(path_.c_str(), 100000), 0);
  uint64_t pos = 0;
  while (pos < kSize) {
    ring->Release(pos);
    const uint64_t n = ring->Fill(pos, 4096);
    if (n < 4096) break;
    pos += 4096;
  }
  EXPECT_LT(pos, 100000u);
  EXPECT_GE(pos, 90000u);
  EXPECT_NE(ring->error().find("ends at offset 100000"), std::string::npos) << ring->error();
  EXPECT_TRUE(Same(*ring, pos, 100000 - pos)) << "what was there was read";
}

// Going away while the read-ahead thread waits for room (nothing released) or reads.
TEST_P(FileRingTest, GoesAwayWhileReadingAhead) {
  for (int i = 0; i < 20; ++i) {
    FileRing ring = Make(0, 64 << 10, 16 << 10);
    ASSERT_GE(ring.Fill(0, 100), 100u);
    EXPECT_TRUE(Same(ring, 0, 100));
    if (i % 2 == 0) usleep(1000);  // let the thread fill the ring and wait
  }
}

TEST_P(FileRingTest, ReadsAheadOnlyWhenAsked) {
  FileRing ring = Make(0, 64 << 10, 16 << 10);
  EXPECT_EQ(ring.reading_ahead(), GetParam());
  // A skip is out of the read-ahead's way: the ring goes on in the caller's thread.
  ASSERT_GE(ring.Fill(0, 100), 100u);
  ring.Release(100);
  ASSERT_GE(ring.Fill(1 << 20, 100), 100u);
  EXPECT_TRUE(Same(ring, 1 << 20, 100));
  EXPECT_FALSE(ring.reading_ahead());
}

// Rings in the caller's memory, side by side (MemoryFor each): each reads its own stretch of
// the file through its own bytes (none writes past its share, mirror included), wraps, and one
// that must grow moves to a mapping of its own with the live bytes, the others undisturbed.
TEST_P(FileRingTest, RingsSideBySideInTheCallersMemory) {
  constexpr size_t kCapacity = 16 << 10, kSpan = 4096;
  const size_t each = FileRing::MemoryFor(kCapacity, kSpan);
  EXPECT_EQ(each, kCapacity + kSpan);
  constexpr int kRings = 3;
  const size_t stride = each + kGuard;
  auto memory = MapHugeAnonymous(kGuard + kRings * stride);
  ASSERT_TRUE(memory.ok()) << memory.status();
  uint8_t* base = static_cast<uint8_t*>(memory->addr());
  FillGuards(base, kRings, stride);
  std::vector<FileRing> rings;
  std::vector<uint64_t> pos;
  for (int i = 0; i < kRings; ++i) {
    const uint64_t begin = static_cast<uint64_t>(i) << 20;
    auto made = FileRing::Create(fd_.get(), begin, begin + (1 << 20), kCapacity, kCapacity / 2,
                                 kSpan, Share(base, i, stride));
    ASSERT_TRUE(made.ok()) << made.status();
    rings.push_back(std::move(*made));
    if (GetParam()) ASSERT_TRUE(rings.back().StartReadAhead());
    pos.push_back(begin);
  }
  // In turn, records of 1,000 to 4,000 bytes, each ring released behind: they wrap many times.
  for (int step = 0; step < 200; ++step) {
    for (int i = 0; i < kRings; ++i) {
      const uint64_t size = 1000 + (step * 7 + i * 13) % 3000;
      rings[i].Release(pos[i]);
      ASSERT_GE(rings[i].Fill(pos[i], size), size);
      const uint8_t* at = rings[i].At(pos[i]);
      ASSERT_TRUE(at >= Share(base, i, stride) && at + size <= Share(base, i, stride) + each)
          << "ring " << i << " reads outside its share";
      ASSERT_TRUE(Same(rings[i], pos[i], size)) << "ring " << i << " at " << pos[i];
      pos[i] += size;
    }
  }
  ExpectGuardsIntact(base, kRings, stride);
  // The middle ring holds on to a record (no Release) past its size: it grows elsewhere.
  const uint64_t held = pos[1];
  for (uint64_t p = held; p < held + 4 * kCapacity; p += 1000) {
    ASSERT_GE(rings[1].Fill(p, 1000), 1000u);
  }
  EXPECT_GT(rings[1].capacity(), kCapacity);
  const uint8_t* moved = rings[1].At(held);
  EXPECT_FALSE(moved >= base && moved < Share(base, kRings, stride))
      << "a grown ring left the memory";
  for (uint64_t p = held; p < held + 4 * kCapacity; p += 1000) {
    ASSERT_TRUE(Same(rings[1], p, 1000)) << "the grown ring's record at " << p;
  }
  for (int i : {0, 2}) {
    ASSERT_GE(rings[i].Fill(pos[i], 2000), 2000u);
    EXPECT_TRUE(Same(rings[i], pos[i], 2000)) << "ring " << i;
    EXPECT_TRUE(rings[i].error().empty()) << rings[i].error();
  }
}

// Rings in a group (FileRingGroup) refill together: each still reads only its own stretch into
// its own share, the ones reading ahead on a thread are left alone, a ring that grows is read
// where it moved, and the reads take a fraction of the system calls.
TEST_P(FileRingTest, GroupedRingsReadTheirOwnBytesInFewCalls) {
  absl::StatusOr<std::unique_ptr<BatchReader>> batch = BatchReader::Create(64);
  if (!batch.ok()) GTEST_SKIP() << "no io_uring here: " << batch.status();
  constexpr size_t kCapacity = 8 << 10, kSpan = 4096;
  const size_t each = FileRing::MemoryFor(kCapacity, kSpan);
  constexpr int kRings = 12;
  constexpr uint64_t kStretch = kSize / kRings;
  const size_t stride = each + kGuard;
  auto memory = MapHugeAnonymous(kGuard + kRings * stride);
  ASSERT_TRUE(memory.ok()) << memory.status();
  uint8_t* base = static_cast<uint8_t*>(memory->addr());
  FillGuards(base, kRings, stride);
  FileRingGroup group(*std::move(batch));
  std::vector<FileRing> rings;
  rings.reserve(kRings);  // the group knows them by address
  std::vector<uint64_t> pos;
  for (int i = 0; i < kRings; ++i) {
    const uint64_t begin = i * kStretch;
    auto made = FileRing::Create(fd_.get(), begin, begin + kStretch, kCapacity, kCapacity / 2,
                                 kSpan, Share(base, i, stride));
    ASSERT_TRUE(made.ok()) << made.status();
    rings.push_back(std::move(*made));
    // With the parameter, every third ring reads ahead on a thread: the group leaves it alone.
    if (GetParam() && i % 3 == 0) ASSERT_TRUE(rings.back().StartReadAhead());
    group.Add(&rings.back());
    group.Add(&rings.back());  // a second time: nothing (two reads into one ring's room would
                               // leave bytes never read behind its filled offset)
    pos.push_back(begin);
  }
  uint64_t fills = 0;
  for (int step = 0; step < 400; ++step) {
    for (int i = 0; i < kRings; ++i) {
      const uint64_t size = 1000 + (step * 7 + i * 13) % 3000;
      if (pos[i] + size > (i + 1) * kStretch) continue;
      // Ring 5 holds on to its records from step 20 to 30: it grows, away from the memory.
      if (i != 5 || step < 20 || step >= 30) rings[i].Release(pos[i]);
      ASSERT_GE(rings[i].Fill(pos[i], size), size);
      ++fills;
      const uint8_t* at = rings[i].At(pos[i]);
      if (rings[i].capacity() == kCapacity) {
        ASSERT_TRUE(at >= Share(base, i, stride) && at + size <= Share(base, i, stride) + each)
            << "ring " << i << " reads outside its share";
      }
      ASSERT_TRUE(Same(rings[i], pos[i], size)) << "ring " << i << " at " << pos[i];
      pos[i] += size;
    }
  }
  ExpectGuardsIntact(base, kRings, stride);
  EXPECT_GT(rings[5].capacity(), kCapacity) << "ring 5 did not grow: the test lost its point";
  for (const FileRing& r : rings) EXPECT_TRUE(r.error().empty()) << r.error();
  // 12 stretches of 256 KiB through 8 KiB rings: ~770 refills, nearly all through the group,
  // several a call.
  EXPECT_GT(group.batched_reads(), GetParam() ? 400u : 600u);
  EXPECT_LT(group.calls() * 3, group.batched_reads())
      << group.calls() << " calls for " << group.batched_reads() << " reads";
}

// A read that fails in the group is left to the ring's own pread, which says why.
TEST_P(FileRingTest, AGroupedRingStillSaysTheFileShrank) {
  absl::StatusOr<std::unique_ptr<BatchReader>> batch = BatchReader::Create(8);
  if (!batch.ok()) GTEST_SKIP() << "no io_uring here: " << batch.status();
  FileRingGroup group(*std::move(batch));
  // Read in this thread (the group leaves rings that read ahead alone), whatever the parameter.
  auto a = FileRing::Create(fd_.get(), 0, kSize, 64 << 10, 16 << 10);
  auto b = FileRing::Create(fd_.get(), 1 << 20, kSize, 64 << 10, 16 << 10);
  ASSERT_TRUE(a.ok() && b.ok());
  group.Add(&*a);
  group.Add(&*b);
  ASSERT_EQ(::truncate(path_.c_str(), (1 << 20) + 100000), 0);
  uint64_t pa = 0, pb = 1 << 20;
  bool b_ended = false;
  uint64_t batched_before_b_ended = 0;
  for (int i = 0; i < 200; ++i) {
    a->Release(pa);
    ASSERT_GE(a->Fill(pa, 4096), 4096u);
    ASSERT_TRUE(Same(*a, pa, 4096));
    pa += 4096;
    if (b_ended) continue;
    b->Release(pb);
    if (b->Fill(pb, 4096) < 4096) {
      b_ended = true;
      continue;
    }
    ASSERT_TRUE(Same(*b, pb, 4096));
    pb += 4096;
    batched_before_b_ended = group.batched_reads();
  }
  EXPECT_GT(batched_before_b_ended, 0u) << "the group read nothing: the test lost its point";
  EXPECT_TRUE(b_ended);
  EXPECT_GE(pb, (1u << 20) + 90000);
  EXPECT_NE(b->error().find("ends at offset 1148576"), std::string::npos) << b->error();
  EXPECT_TRUE(a->error().empty()) << a->error();
}

// A grouped ring released past what it holds (a skip) is not topped up by the others' reads: the
// bytes skipped are never read, and the ring does not grow to hold them.
TEST_P(FileRingTest, AGroupedRingStillSkips) {
  absl::StatusOr<std::unique_ptr<BatchReader>> batch = BatchReader::Create(8);
  if (!batch.ok()) GTEST_SKIP() << "no io_uring here: " << batch.status();
  FileRingGroup group(*std::move(batch));
  auto skipper = FileRing::Create(fd_.get(), 0, kSize, 16 << 10, 8 << 10);
  auto other = FileRing::Create(fd_.get(), 2 << 20, kSize, 16 << 10, 8 << 10);
  ASSERT_TRUE(skipper.ok() && other.ok());
  group.Add(&*skipper);
  group.Add(&*other);
  ASSERT_GE(skipper->Fill(0, 4096), 4096u);
  const uint64_t skip_to = 256 << 10;
  skipper->Release(skip_to);                                           // all of it: nothing live
  for (uint64_t p = 2 << 20; p < (2 << 20) + (64 << 10); p += 4096) {  // the other reads on
    other->Release(p);
    ASSERT_GE(other->Fill(p, 4096), 4096u);
    ASSERT_TRUE(Same(*other, p, 4096));
  }
  EXPECT_GT(group.batched_reads(), 0u);
  ASSERT_GE(skipper->Fill(skip_to, 4096), 4096u);
  EXPECT_TRUE(Same(*skipper, skip_to, 4096));
  EXPECT_EQ(skipper->capacity(), size_t{16} << 10) << "the skipped bytes were read";
}

// A batch that breaks (the kernel refuses its reads) leaves the rings to read alone.
TEST_P(FileRingTest, GroupedRingsReadAloneOnceTheBatchBreaks) {
  absl::StatusOr<std::unique_ptr<BatchReader>> batch = BatchReader::Create(8);
  if (!batch.ok()) GTEST_SKIP() << "no io_uring here: " << batch.status();
  BatchReader* reader = batch->get();
  FileRingGroup group(*std::move(batch));
  std::vector<FileRing> rings;
  rings.reserve(4);
  for (int i = 0; i < 4; ++i) {
    auto made = FileRing::Create(fd_.get(), uint64_t(i) << 19, kSize, 16 << 10, 8 << 10);
    ASSERT_TRUE(made.ok());
    rings.push_back(std::move(*made));
    group.Add(&rings.back());
  }
  std::vector<uint64_t> pos = {0, 1 << 19, 2 << 19, 3 << 19};
  for (int step = 0; step < 64; ++step) {
    if (step == 16) {
      EXPECT_GT(group.batched_reads(), 0u);
      reader->Break();
    }
    for (int i = 0; i < 4; ++i) {
      rings[i].Release(pos[i]);
      ASSERT_GE(rings[i].Fill(pos[i], 3000), 3000u);
      ASSERT_TRUE(Same(rings[i], pos[i], 3000)) << "ring " << i << " at " << pos[i];
      pos[i] += 3000;
    }
    if (step == 16) EXPECT_FALSE(group.batching());
  }
  for (const FileRing& r : rings) EXPECT_TRUE(r.error().empty()) << r.error();
}

INSTANTIATE_TEST_SUITE_P(ReadAhead, FileRingTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "OnAThread" : "InTheCaller";
                         });

}  // namespace
}  // namespace iotrace
