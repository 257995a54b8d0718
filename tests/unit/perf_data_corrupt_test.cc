// Truncated and corrupted perf.data files: each is an error naming the file and what is wrong,
// or a counted skip inside the data; never a crash, a hang or a file-driven allocation.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/perf_data_writer.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

namespace iotrace {
namespace {

using test::Slurp;
using test::Spit;
using test::CollectingSink;
using test::PerfRecordBuilder;
using test::SampleFields;

std::string TempPath(const std::string& name) {
  return test::ScratchPath("iotrace-perfdata-c", name);
}

void PutU64(std::string* bytes, size_t offset, uint64_t v) {
  std::memcpy(bytes->data() + offset, &v, 8);
}
uint64_t GetU64(const std::string& bytes, size_t offset) {
  uint64_t v;
  std::memcpy(&v, bytes.data() + offset, 8);
  return v;
}

// Header field offsets (struct perf_file_header).
constexpr size_t kAttrSizeAt = 16, kAttrsOffsetAt = 24, kAttrsSizeAt = 32, kDataOffsetAt = 40,
                 kDataSizeAt = 48;

class PerfDataCorruptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setup_ = test::LoadBlockSetup();
    ASSERT_GE(setup_.formats.size(), 2u);
    specs_ = test::BlockSpecs(setup_, 2);
    good_path_ = TempPath("good");
    test::SyntheticOptions o;
    o.samples = 40;
    ASSERT_TRUE(test::WriteSyntheticBlockFile(good_path_, o, nullptr).ok());
    good_ = Slurp(good_path_);
    bad_path_ = TempPath("bad");
  }
  void TearDown() override {
    ::unlink(good_path_.c_str());
    ::unlink(bad_path_.c_str());
  }

  // Opens `bytes` as a file and reads it all; returns the open error ("" if it opened).
  std::string OpenAndRead(std::string_view bytes, CollectingSink* sink = nullptr,
                          ReadStats* stats = nullptr) {
    Spit(bad_path_, bytes);
    auto reader = OpenPerfData(bad_path_);
    if (!reader.ok()) {
      std::string message(reader.status().message());
      EXPECT_FALSE(message.empty());
      return message;
    }
    CollectingSink local;
    EXPECT_TRUE((*reader)->ReadAll(sink != nullptr ? sink : &local).ok());
    if (stats != nullptr) *stats = (*reader)->stats();
    return "";
  }

  // A file whose data is `ring` (one append) written by the real writer.
  std::string FileWithData(const std::string& ring) {
    std::string path = TempPath("crafted");
    auto w = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost());
    EXPECT_TRUE(w.ok());
    EXPECT_TRUE((*w)->AppendData(ByteView(ring.data(), ring.size())).ok());
    EXPECT_TRUE((*w)->Finish().ok());
    std::string bytes = Slurp(path);
    ::unlink(path.c_str());
    return bytes;
  }

  SampleFields Sample(size_t event, uint64_t t) {
    SampleFields s;
    s.id = test::SyntheticId(event, 0, 2);
    s.time = t;
    s.raw = test::EncodeBlockRq(setup_.formats[event], test::BlockRq());
    return s;
  }

  test::BlockSetup setup_;
  std::vector<PerfEventSpec> specs_;
  std::string good_path_, bad_path_, good_;
};

TEST_F(PerfDataCorruptTest, TheUncorruptedFileReadsCleanly) {
  CollectingSink sink;
  ReadStats stats;
  EXPECT_EQ(OpenAndRead(good_, &sink, &stats), "");
  EXPECT_EQ(sink.events.size(), 40u);
  EXPECT_TRUE(stats.problems.empty());
}

// A file cut short used to be an error at every length. Now the records before the cut are
// read, and the file says it was cut (file_cut_short in its data, file_cut_after_data in the
// feature sections after it); a cut before the data is an error that names the file and the
// damaged part, with a hint.
TEST_F(PerfDataCorruptTest, EveryTruncationReadsUpToTheCutOrIsAnErrorWithAHint) {
  const uint64_t data_offset = GetU64(good_, kDataOffsetAt);
  const uint64_t data_end = data_offset + GetU64(good_, kDataSizeAt);
  for (size_t len = 0; len < good_.size(); ++len) {
    Spit(bad_path_, std::string_view(good_).substr(0, len));
    auto reader = OpenPerfData(bad_path_);
    if (!reader.ok()) {
      EXPECT_LE(len, data_offset) << "a " << len << "-byte prefix did not open: "
                                  << reader.status();
      EXPECT_NE(reader.status().message().find(bad_path_), std::string::npos) << reader.status();
      EXPECT_NE(HintOf(reader.status()), "") << reader.status();
      continue;
    }
    CollectingSink sink;
    ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
    const ReadStats& stats = (*reader)->stats();
    EXPECT_LE(sink.events.size(), 40u);
    if (len < data_end) {
      EXPECT_EQ(stats.Problem(kProblemFileCut), 1u) << len;
    } else {
      EXPECT_EQ(sink.events.size(), 40u) << len;
      EXPECT_EQ(stats.Problem("file_cut_after_data"), 1u) << len;
    }
  }
}

TEST_F(PerfDataCorruptTest, BadHeaderSizesAndOffsetsAreErrorsNotCrashes) {
  const uint64_t size = good_.size();
  const uint64_t values[] = {0,
                             1,
                             7,
                             8,
                             16,
                             72,
                             104,
                             size - 1,
                             size,
                             size + 1,
                             uint64_t{1} << 40,
                             INT64_MAX,
                             UINT64_MAX,
                             UINT64_MAX - 7};
  for (size_t word = 0; word < sizeof(perf::FileHeader) / 8; ++word) {
    for (uint64_t v : values) {
      std::string bytes = good_;
      PutU64(&bytes, word * 8, v);
      OpenAndRead(bytes);  // must not crash or hang; either outcome is fine here
    }
  }
  std::string bytes = good_;
  PutU64(&bytes, kAttrsOffsetAt, size);
  const uint64_t attrs_size = GetU64(good_, kAttrsSizeAt);
  EXPECT_EQ(OpenAndRead(bytes),
            "read " + bad_path_ + ": attr section (bytes " + std::to_string(size) + " to " +
                std::to_string(size + attrs_size) + ") runs past the end of the file (" +
                std::to_string(size) + " bytes)");
  // A data section past the end of the file is read up to it (as a file cut short).
  bytes = good_;
  PutU64(&bytes, kDataSizeAt, size);
  ReadStats stats;
  EXPECT_EQ(OpenAndRead(bytes, nullptr, &stats), "");
  EXPECT_EQ(stats.Problem(kProblemFileCut), 1u);
  bytes = good_;
  PutU64(&bytes, kDataOffsetAt, size);
  EXPECT_EQ(OpenAndRead(bytes),
            "read " + bad_path_ + ": data section (bytes " + std::to_string(size) + " to " +
                std::to_string(size + GetU64(good_, kDataSizeAt)) +
                ") runs past the end of the file (" + std::to_string(size) +
                " bytes): no event is in the file");
  bytes = good_;
  PutU64(&bytes, kAttrSizeAt, 0);
  EXPECT_NE(OpenAndRead(bytes).find("attr size 0 is not valid"), std::string::npos);
  bytes = good_;
  PutU64(&bytes, kAttrsSizeAt, 0);
  EXPECT_NE(OpenAndRead(bytes).find("no event attrs"), std::string::npos);
  bytes = good_;
  PutU64(&bytes, kDataSizeAt, GetU64(good_, kDataSizeAt) - 8);  // moves the feature table
  EXPECT_NE(OpenAndRead(bytes), "");
}

TEST_F(PerfDataCorruptTest, BadIdSectionsAreErrors) {
  const uint64_t attrs = GetU64(good_, kAttrsOffsetAt);
  const uint64_t ids_at = attrs + sizeof(perf_event_attr);  // first attr's ids section
  std::string bytes = good_;
  PutU64(&bytes, ids_at, good_.size());
  PutU64(&bytes, ids_at + 8, 16);
  EXPECT_EQ(OpenAndRead(bytes), "read " + bad_path_ + ": ids of attr 0 (bytes " +
                                    std::to_string(good_.size()) + " to " +
                                    std::to_string(good_.size() + 16) +
                                    ") runs past the end of the file (" +
                                    std::to_string(good_.size()) + " bytes)");
  bytes = good_;
  PutU64(&bytes, ids_at + 8, 12);
  EXPECT_NE(OpenAndRead(bytes).find("not a multiple of 8"), std::string::npos);
  bytes = good_;
  // Both attrs claim the same ids: samples could not be told apart.
  PutU64(&bytes, ids_at + sizeof(perf::FileAttr), GetU64(good_, ids_at));
  EXPECT_NE(OpenAndRead(bytes).find("belongs to attrs"), std::string::npos);
}

TEST_F(PerfDataCorruptTest, TooManyAttrsIsAnErrorBeforeAnyAllocation) {
  test::SyntheticOptions o;
  o.samples = 6000;  // ~ 500 KB: room for > 4096 attrs of 80 bytes
  std::string path = TempPath("big");
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, nullptr).ok());
  std::string bytes = Slurp(path);
  ::unlink(path.c_str());
  PutU64(&bytes, kAttrSizeAt, 80);
  PutU64(&bytes, kAttrsOffsetAt, 0);
  PutU64(&bytes, kAttrsSizeAt, bytes.size());
  EXPECT_NE(OpenAndRead(bytes).find("too many"), std::string::npos);
}

TEST_F(PerfDataCorruptTest, PipeModeAndForeignMagicAreClearErrors) {
  std::string pipe = good_.substr(0, 16);
  PutU64(&pipe, 8, 16);
  pipe += std::string(64, '\0');
  EXPECT_NE(OpenAndRead(pipe).find("pipe-mode"), std::string::npos);
  std::string swapped = good_;
  PutU64(&swapped, 0, perf::kMagicSwapped);
  EXPECT_NE(OpenAndRead(swapped).find("big-endian"), std::string::npos);
  std::string other = good_;
  other[0] = 'X';
  EXPECT_NE(OpenAndRead(other).find("bad magic"), std::string::npos);
  EXPECT_NE(OpenAndRead("PERFILE2").find("too short"), std::string::npos);
}

TEST_F(PerfDataCorruptTest, AZeroSizeRecordStopsTheDataWithoutLooping) {
  PerfRecordBuilder b;
  b.AddSample(specs_[0].attr, Sample(0, 10));
  std::string ring = b.bytes();
  ring += std::string(8, '\0');  // type 0, size 0
  b.Clear();
  b.AddSample(specs_[0].attr, Sample(0, 20));
  ring += b.bytes();
  CollectingSink sink;
  ReadStats stats;
  EXPECT_EQ(OpenAndRead(FileWithData(ring), &sink, &stats), "");
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0].ts, 10u);
  EXPECT_EQ(stats.Problem("bad_record_size"), 1u);
}

TEST_F(PerfDataCorruptTest, ARecordRunningPastTheDataIsCounted) {
  PerfRecordBuilder b;
  b.AddSample(specs_[0].attr, Sample(0, 10));
  const size_t second = b.bytes().size();
  b.AddSample(specs_[0].attr, Sample(1, 20));
  std::string ring = b.bytes();
  ring[second + 6] = '\x7f';  // the second record's size (u16 at +6) grows past the end
  CollectingSink sink;
  ReadStats stats;
  EXPECT_EQ(OpenAndRead(FileWithData(ring), &sink, &stats), "");
  EXPECT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(stats.Problem("truncated_record"), 1u);
}

TEST_F(PerfDataCorruptTest, BadSamplesAreSkippedAndCountedByReason) {
  const perf_event_attr& attr = specs_[0].attr;
  PerfRecordBuilder b;
  b.AddSample(attr, Sample(0, 10));

  SampleFields unknown = Sample(0, 11);
  unknown.id = 999999;
  b.AddSample(attr, unknown);

  PerfRecordBuilder past;
  past.AddSample(attr, Sample(0, 12));
  std::string rec = past.bytes();
  uint32_t huge = 4000;
  const size_t raw_size_at = 8 + 8 + 8 + 8 + 8;  // header, id, pid/tid, time, cpu
  std::memcpy(rec.data() + raw_size_at, &huge, 4);
  b.AddRecord(perf::kRecordSample, 0, std::string_view(rec).substr(8), false);

  SampleFields tiny = Sample(0, 13);
  tiny.raw = "abc";  // shorter than the common header
  b.AddSample(attr, tiny);

  b.AddRecord(perf::kRecordLost, 0, "");         // no body at all
  b.AddRecord(perf::kRecordLostSamples, 0, "");  // no body at all
  b.AddRecord(perf::kRecordCompressed, 0, std::string(16, '\x55'));
  b.AddSample(attr, Sample(1, 14));

  CollectingSink sink;
  ReadStats stats;
  EXPECT_EQ(OpenAndRead(FileWithData(b.bytes()), &sink, &stats), "");
  ASSERT_EQ(sink.events.size(), 2u);
  EXPECT_EQ(sink.events[0].ts, 10u);
  EXPECT_EQ(sink.events[1].ts, 14u);
  EXPECT_EQ(stats.Problem("unknown_sample_id"), 1u);
  EXPECT_EQ(stats.Problem("raw_past_record"), 1u);
  EXPECT_EQ(stats.Problem("raw_too_short"), 1u);
  EXPECT_EQ(stats.Problem("short_record"), 2u);
  EXPECT_EQ(stats.Problem("compressed_record"), 1u);
  EXPECT_EQ(stats.records, 8u);
  EXPECT_EQ(stats.events, 2u);
}

TEST_F(PerfDataCorruptTest, RandomByteFlipsNeverCrashOrHang) {
  std::mt19937 rng(12345);
  const uint64_t data_offset = GetU64(good_, kDataOffsetAt);
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = good_;
    const int flips = 1 + rng() % 4;
    for (int f = 0; f < flips; ++f) {
      // Mostly the data section, sometimes anywhere.
      size_t at =
          (i % 4 == 0) ? rng() % bytes.size() : data_offset + rng() % (bytes.size() - data_offset);
      bytes[at] = static_cast<char>(rng());
    }
    CollectingSink sink;
    ReadStats stats;
    if (OpenAndRead(bytes, &sink, &stats).empty()) {
      EXPECT_LE(sink.events.size(), stats.records);
    }
  }
}

TEST_F(PerfDataCorruptTest, BadFeatureContentsAreCountedAndIgnored) {
  // The cmdline feature claims 2^31 arguments.
  auto w = PerfDataWriter::Create(bad_path_ + ".tmp", specs_, setup_.meta, test::TestHost());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Finish().ok());
  std::string bytes = Slurp(bad_path_ + ".tmp");
  ::unlink((bad_path_ + ".tmp").c_str());
  const uint64_t table = GetU64(bytes, kDataOffsetAt) + GetU64(bytes, kDataSizeAt);
  // Features present, in bit order: 1 3 4 5 6 7 8 9 10 11 12 23 29; cmdline (11) is the 10th.
  const uint64_t cmdline_at = GetU64(bytes, table + 9 * 16);
  uint32_t n = 0x80000000u;
  std::memcpy(bytes.data() + cmdline_at, &n, 4);
  ReadStats stats;
  EXPECT_EQ(OpenAndRead(bytes, nullptr, &stats), "");
  EXPECT_EQ(stats.Problem("bad_feature_cmdline"), 1u);
}

// [start, end) of the mapping of `path` in this process, or {0, 0}.
std::pair<uintptr_t, uintptr_t> MappingOf(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() < path.size() || line.compare(line.size() - path.size(), path.size(), path)) {
      continue;
    }
    uintptr_t start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &start, &end) == 2) return {start, end};
  }
  return {0, 0};
}

TEST_F(PerfDataCorruptTest, AnAuxtraceHeaderCutByTheEndOfTheFileIsCountedNotReadPast) {
  // Found by review while fuzzing: an AUXTRACE record's payload size (at +8) was read before the
  // record was known to fit. With the data ending exactly at a page-aligned end of the file, the
  // read fell off the end of the mapping.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  perf::FileHeader h;  // no features: a software attr needs no tracing data
  perf::FileAttr a{};
  a.attr.type = PERF_TYPE_SOFTWARE;
  a.attr.size = sizeof(a.attr);
  a.attr.sample_type = PERF_SAMPLE_TIME;
  h.attr_size = sizeof(a);
  h.attrs = {sizeof(h), sizeof(a)};
  h.data.offset = sizeof(h) + sizeof(a);
  h.data.size = page - h.data.offset;
  std::string bytes(page, '\0');
  std::memcpy(bytes.data(), &h, sizeof(h));
  std::memcpy(bytes.data() + sizeof(h), &a, sizeof(a));
  // A record of an unknown type fills the data but its last 8 bytes: an AUXTRACE header there.
  perf::EventHeader filler{1000, 0, static_cast<uint16_t>(h.data.size - 8)};
  perf::EventHeader aux{perf::kRecordAuxtrace, 0, 16};
  std::memcpy(bytes.data() + h.data.offset, &filler, 8);
  std::memcpy(bytes.data() + page - 8, &aux, 8);
  Spit(bad_path_, bytes);

  // The page after the reader's mapping is usually another mapping, which would hide the bad
  // read: map the file twice (the second mapping goes below the first), drop the first and put
  // an inaccessible page right after the second one.
  auto first = OpenPerfData(bad_path_);
  ASSERT_TRUE(first.ok()) << first.status();
  const auto [first_start, first_end] = MappingOf(bad_path_);
  auto reader = OpenPerfData(bad_path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  first->reset();
  const auto [start, end] = MappingOf(bad_path_);
  ASSERT_NE(end, 0u);
  void* guard = ::mmap(reinterpret_cast<void*>(end), page, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (guard != reinterpret_cast<void*>(end)) {
    if (guard != MAP_FAILED) ::munmap(guard, page);
    GTEST_SKIP() << "cannot place a guard page after the file's mapping (" << first_start << "-"
                 << first_end << ", " << start << "-" << end << ")";
  }
  CollectingSink sink;
  EXPECT_TRUE((*reader)->ReadAll(&sink).ok());
  ::munmap(guard, page);
  EXPECT_EQ((*reader)->stats().records, 1u);
  EXPECT_EQ((*reader)->stats().Problem("truncated_record"), 1u);
}

}  // namespace
}  // namespace iotrace
