// Corrupt trace.dat files found by tests/fuzz/trace_file_fuzzer.cc (one test per finding): each is
// a clear error or a counted skip, never a crash, a hang or a file-driven allocation.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "fixtures.h"
#include "ftrace_page_builder.h"
#include "gtest/gtest.h"
#include "iotrace/formats/trace_dat_reader.h"
#include "iotrace/formats/trace_dat_writer.h"
#include "iotrace/formats/trace_reader.h"
#include "test_files.h"

namespace iotrace {
namespace {

using testing::ReadFixtureFile;

class CountingSink : public EventSink {
 public:
  void OnEvent(const RawEvent& ev) override {
    ++events;
    times.push_back(ev.ts);
  }
  void OnLoss(const LossRecord& loss) override { ++losses; }
  uint64_t events = 0;
  uint64_t losses = 0;
  std::vector<uint64_t> times;
};

class TraceDatCorruptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::MakeTempDir("iotrace_tracedat_corrupt_test.");
    ASSERT_FALSE(dir_.empty()) << "mkdtemp in " << test::TestTmpDir();
    path_ = dir_ + "/t.dat";
    meta_.header_page = testing::HeaderPageText(4096);
    meta_.header_event = ReadFixtureFile("formats/6.18/events/header_event");
    complete_text_ = test::ReadBlockFormat("block_rq_complete");
    auto complete = ParseEventFormat("block", complete_text_);
    ASSERT_TRUE(complete.ok()) << complete.status();
    complete_ = *complete;
  }
  void TearDown() override { test::RemoveTree(dir_); }

  // A valid v6 file (TraceDatWriter) with meta_'s formats and one page of `events` events on
  // each of `cpus` CPUs.
  std::string WriteFile(int events = 3, int cpus = 1) {
    TraceDatWriterOptions o;
    o.meta = meta_;
    o.nr_cpus = cpus;
    o.uname = uname_;
    o.recorder = recorder_;
    auto w = TraceDatWriter::Create(path_, o);
    EXPECT_TRUE(w.ok()) << w.status();
    for (int cpu = 0; cpu < cpus; ++cpu) {
      testing::FtracePageBuilder page(1000);
      for (int i = 0; i < events; ++i) {
        EXPECT_TRUE(page.AddEvent(1000 + 10 * i,
                                  testing::BlockPayload(complete_, {1, 7u << 20, 8u * i, 8, "W"})));
      }
      const std::string bytes = page.Build();
      EXPECT_TRUE((*w)->AppendPages(cpu, ByteView(bytes.data(), bytes.size())).ok());
    }
    auto result = (*w)->Finish();
    EXPECT_TRUE(result.ok()) << result.status();
    return Slurp();
  }
  std::string Slurp() const {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void Spit(const std::string& bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  std::string dir_;
  std::string path_;
  std::string uname_ = "Linux test 6.18.0 x86_64";
  std::string recorder_ = "iotrace test";
  TracingMetadata meta_;
  std::string complete_text_;
  EventFormat complete_;
};

TEST_F(TraceDatCorruptTest, FormatTextThatCrashesLibtraceeventIsCountedAndSkipped) {
  // Found by trace_file_fuzzer: a field declaration with non-ASCII bytes ("char comm[" followed
  // by garbage) and a print fmt naming REC->comm made tep_parse_event dereference NULL.
  std::string issue = test::ReadBlockFormat("block_rq_issue");
  const size_t at = issue.find("16];\toff");
  ASSERT_NE(at, std::string::npos);
  issue.replace(at, 8, "\xc8\xc9\xa2\xc4\xf6\x90\x99\x99");
  meta_.event_formats = {{"block", complete_text_}, {"block", issue}};
  WriteFile();

  auto reader = OpenTraceDat(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ((*reader)->formats().size(), 1u);
  EXPECT_EQ((*reader)->formats()[0].name, "block_rq_complete");
  CountingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ(sink.events, 3u);
  EXPECT_EQ((*reader)->stats().Problem("event_format_unparsed"), 1u);
}

uint64_t GetU64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + at, 8);
  return v;
}
void PutU64(std::string* bytes, size_t at, uint64_t v) { std::memcpy(bytes->data() + at, &v, 8); }

TEST_F(TraceDatCorruptTest, CpuDataOverlappingAnotherCpusIsSkippedAndCounted) {
  // CPU 1's table entry made equal to CPU 0's: its pages would be read (and delivered) twice.
  std::string bytes = WriteFile(3, 2);
  const size_t table = bytes.rfind(std::string("flyrecord\0", 10)) + 10;
  ASSERT_NE(GetU64(bytes, table), GetU64(bytes, table + 16));
  PutU64(&bytes, table + 16, GetU64(bytes, table));
  PutU64(&bytes, table + 24, GetU64(bytes, table + 8));
  Spit(bytes);

  auto reader = OpenTraceDat(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CountingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ(sink.events, 3u);
  EXPECT_EQ((*reader)->stats().Problem("trace_dat_cpu_data_overlap"), 1u);
}

TEST_F(TraceDatCorruptTest, TwoBuffersSharingOneCpuTableAreAnError) {
  // dd_v6.dat has one BUFFER option (an instance); its UNAME option (id 5, 33 bytes) becomes a
  // second BUFFER option naming the same flyrecord, which would be read once per option.
  std::string bytes = test::ReadFixture("tracedat/dd_v6.dat");
  const size_t uname = bytes.find("Linux vm ");
  ASSERT_NE(uname, std::string::npos);
  const size_t buffer = bytes.find(std::string("iotrace_tracedat_fx\0", 20), uname) - 8;
  ASSERT_EQ(bytes[uname - 6], 5);  // the option id (u16) and size (u32) precede the text
  bytes[uname - 6] = 3;
  PutU64(&bytes, uname, GetU64(bytes, buffer));
  std::memcpy(bytes.data() + uname + 8, "dup", 4);
  Spit(bytes);

  auto reader = OpenTraceDat(path_);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("overlaps one already read"), std::string::npos)
      << reader.status();
}

TEST_F(TraceDatCorruptTest, V7OptionsChainLoopIsRejectedAtTheFirstRevisit) {
  // dd_v7_none.dat chains three options sections; the last one's "next" is pointed back at the
  // second. Rejecting it must cost less than opening the good file, not a thousand laps.
  const std::string good = test::ReadFixture("tracedat/dd_v7_none.dat");
  uint64_t first = 0;
  std::memcpy(&first, good.data() + 24, 8);  // magic(10) "7\0" endian long page "none\0" "\0"
  ASSERT_LT(first + 16, good.size());
  // Walk the chain: each section is {u16 0, u16 flags, u32 string, u64 size} then options.
  std::vector<uint64_t> sections;
  size_t last_next_at = 0;
  for (uint64_t at = first; at != 0 && sections.size() < 8;) {
    sections.push_back(at);
    size_t p = at + 16;
    for (;;) {
      uint16_t id = 0;
      uint32_t size = 0;
      std::memcpy(&id, good.data() + p, 2);
      std::memcpy(&size, good.data() + p + 2, 4);
      if (id == 0) {
        last_next_at = p + 6;
        at = GetU64(good, last_next_at);
        break;
      }
      p += 6 + size;
    }
  }
  ASSERT_EQ(sections.size(), 3u);
  std::string looping = good;
  PutU64(&looping, last_next_at, sections[1]);

  Spit(looping);
  {
    auto reader = OpenTraceDat(path_);
    ASSERT_FALSE(reader.ok());
    EXPECT_NE(reader.status().message().find("options chain"), std::string::npos)
        << reader.status();
  }
  // Rejected at the first revisit, with no more work than the good file: allocations as the
  // measure (not counted under AddressSanitizer, which owns operator new).
  IOTRACE_REQUIRE_ALLOCATION_COUNTER();
  Spit(good);
  uint64_t good_allocations = 0;
  {
    test::ScopedAllocationCount count;
    auto reader = OpenTraceDat(path_);
    ASSERT_TRUE(reader.ok()) << reader.status();
    good_allocations = count.count();
  }
  Spit(looping);
  test::ScopedAllocationCount count;
  auto reader = OpenTraceDat(path_);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("options chain"), std::string::npos) << reader.status();
  EXPECT_LE(count.count(), good_allocations);
}

TEST_F(TraceDatCorruptTest, TimestampOffsetsThatOverflowSaturate) {
  // Found by review while fuzzing: OFFSET options were summed into an int64 (signed overflow,
  // undefined behaviour; UBSan reports it). The writer's UNAME and VERSION options become two
  // OFFSET options (id 7) of INT64_MAX each: the sum saturates.
  uname_ = recorder_ = "9223372036854775807";
  meta_.event_formats = {{"block", complete_text_}};
  std::string bytes = WriteFile(1);
  size_t at = 0;
  for (int i = 0; i < 2; ++i) {
    at = bytes.find(uname_ + '\0', at + 1);
    ASSERT_NE(at, std::string::npos);
    ASSERT_TRUE(bytes[at - 6] == 5 || bytes[at - 6] == 9);  // UNAME or VERSION
    bytes[at - 6] = 7;
  }
  Spit(bytes);
  auto reader = OpenTraceDat(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CountingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  ASSERT_EQ(sink.times.size(), 1u);
  EXPECT_EQ(sink.times[0], 1000u + uint64_t{INT64_MAX});
}

}  // namespace
}  // namespace iotrace
