#include "iotrace/event/block_event.h"

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "synthetic_trace.h"

namespace iotrace {
namespace {

using synthetic::EncodeRecord;
using synthetic::LoadFormats;
using synthetic::RecordFields;
using synthetic::ThisKernelFormats;

struct RwbsCase {
  const char* rwbs;
  bool ok;
  BlockOp op;
  uint8_t flags;
};

TEST(BlockEventTest, ParsesRwbsAsBlkFillRwbsWritesIt) {
  const RwbsCase cases[] = {
      {"R", true, BlockOp::kRead, 0},
      {"RA", true, BlockOp::kRead, kBlockFlagReadahead},
      {"RS", true, BlockOp::kRead, kBlockFlagSync},
      {"W", true, BlockOp::kWrite, 0},
      {"WS", true, BlockOp::kWrite, kBlockFlagSync},
      {"WSM", true, BlockOp::kWrite, kBlockFlagSync | kBlockFlagMeta},
      {"WFS", true, BlockOp::kWrite, kBlockFlagFua | kBlockFlagSync},
      {"FWFS", true, BlockOp::kWrite, kBlockFlagPreflush | kBlockFlagFua | kBlockFlagSync},
      {"FWS", true, BlockOp::kWrite, kBlockFlagPreflush | kBlockFlagSync},
      {"FF", true, BlockOp::kFlush, kBlockFlagPreflush},
      {"F", true, BlockOp::kFlush, 0},
      {"FS", true, BlockOp::kFlush, kBlockFlagSync},
      {"D", true, BlockOp::kDiscard, 0},
      {"DE", true, BlockOp::kDiscard, 0},
      {"DS", true, BlockOp::kDiscard, kBlockFlagSync},
      {"N", true, BlockOp::kOther, 0},
      {"WZ", true, BlockOp::kWriteZeroes, 0},
      {"WZS", true, BlockOp::kWriteZeroes, kBlockFlagSync},
      {"ZA", true, BlockOp::kOther, 0},
      {"ZRA", true, BlockOp::kOther, 0},  // zone reset all, not readahead
      {"ZR", true, BlockOp::kOther, 0},
      {"WSa", true, BlockOp::kWrite, kBlockFlagSync},  // atomic letter ignored
      {"WSU", true, BlockOp::kWrite, kBlockFlagSync},
      {"", false, BlockOp::kOther, 0},
      {"X", false, BlockOp::kOther, 0},
      {"S", false, BlockOp::kOther, kBlockFlagSync},
  };
  for (const RwbsCase& c : cases) {
    BlockOp op = BlockOp::kRead;
    uint8_t flags = 0xff;
    EXPECT_EQ(ParseRwbs(c.rwbs, &op, &flags), c.ok) << c.rwbs;
    EXPECT_EQ(op, c.op) << c.rwbs;
    EXPECT_EQ(flags, c.flags) << c.rwbs;
  }
}

TEST(BlockEventTest, RwbsStopsAtNulAndAtTheEndOfTheArray) {
  BlockOp op;
  uint8_t flags;
  const char padded[10] = {'W', 'S', '\0', 'M', 'F', 0, 0, 0, 0, 0};
  ASSERT_TRUE(ParseRwbs(std::string_view(padded, sizeof(padded)), &op, &flags));
  EXPECT_EQ(op, BlockOp::kWrite);
  EXPECT_EQ(flags, kBlockFlagSync);
  // A full array without NUL (a corrupt record): only its bytes are read.
  const char full[3] = {'R', 'A', 'S'};
  ASSERT_TRUE(ParseRwbs(std::string_view(full, sizeof(full)), &op, &flags));
  EXPECT_EQ(op, BlockOp::kRead);
  EXPECT_EQ(flags, kBlockFlagReadahead | kBlockFlagSync);
}

// Lays out an issue record by the offsets docs/kernel-notes.md gives for 6.18, independently of the
// format parser: dev@8/4, sector@16/8, nr_sector@24/4, bytes@28, ioprio@32, rwbs[10]@34,
// comm[16]@44, cmd@60.
std::vector<uint8_t> HandMadeIssue(uint16_t id) {
  std::vector<uint8_t> rec(64, 0);
  uint32_t dev = KernelDev(7, 0);
  uint64_t sector = 123456789012ULL;
  uint32_t nr = 16, bytes = 8192;
  int32_t pid = 4242;
  std::memcpy(&rec[0], &id, 2);
  std::memcpy(&rec[4], &pid, 4);
  std::memcpy(&rec[8], &dev, 4);
  std::memcpy(&rec[16], &sector, 8);
  std::memcpy(&rec[24], &nr, 4);
  std::memcpy(&rec[28], &bytes, 4);
  std::memcpy(&rec[34], "FWFS", 4);
  std::memcpy(&rec[44], "kworker/1:1H", 12);
  return rec;
}

TEST(BlockEventTest, DecodesThisKernelsIssueAtMisalignedAddress) {
  std::vector<EventFormat> formats = ThisKernelFormats();
  BlockDecoder decoder(formats);
  ASSERT_TRUE(decoder.Has(BlockEventKind::kIssue));
  const uint16_t id = static_cast<uint16_t>(decoder.FormatId(BlockEventKind::kIssue));
  std::vector<uint8_t> rec = HandMadeIssue(id);
  // 4 bytes past an 8-byte boundary, like raw data in a perf sample.
  alignas(8) uint8_t buffer[128];
  std::memcpy(buffer + 4, rec.data(), rec.size());
  RawEvent raw;
  raw.ts = 1000;
  raw.cpu = 1;
  raw.pid = -1;  // ftrace: the decoder takes common_pid
  raw.type = id;
  raw.payload = ByteView(buffer + 4, rec.size());
  BlockEvent e;
  ASSERT_TRUE(decoder.Decode(raw, &e));
  EXPECT_EQ(e.kind, BlockEventKind::kIssue);
  EXPECT_EQ(e.ts, 1000u);
  EXPECT_EQ(e.cpu, 1u);
  EXPECT_EQ(e.dev, KernelDev(7, 0));
  EXPECT_EQ(e.sector, 123456789012ULL);
  EXPECT_EQ(e.nr_sector, 16u);
  EXPECT_EQ(e.bytes, 8192u);
  EXPECT_EQ(e.op, BlockOp::kWrite);
  EXPECT_EQ(e.flags, kBlockFlagPreflush | kBlockFlagFua | kBlockFlagSync);
  EXPECT_STREQ(e.comm, "kworker/1:1H");
  EXPECT_EQ(e.pid, 4242);
  EXPECT_EQ(decoder.stats().decoded[static_cast<int>(BlockEventKind::kIssue)], 1u);

  raw.pid = 77;  // perf: the sample's pid wins over common_pid
  ASSERT_TRUE(decoder.Decode(raw, &e));
  EXPECT_EQ(e.pid, 77);
}

// The decoder parses each distinct rwbs once and remembers it by its bytes up to the NUL: the
// stale bytes after it must not matter, strings filling the field must not be cut, and the
// problem counter must count every event whose rwbs has no op.
TEST(BlockEventTest, CachedRwbsDecodesLikeParseRwbs) {
  std::vector<EventFormat> formats = ThisKernelFormats();
  BlockDecoder decoder(formats);
  const uint16_t id = static_cast<uint16_t>(decoder.FormatId(BlockEventKind::kIssue));
  struct Case {
    char bytes[10];  // the 10 bytes of rwbs[10] (a shorter literal is padded with zeros)
  } cases[] = {
      {"R\0\0\0\0\0\0\0\0"}, {"R\0WSFA\0\0\0"}, {"WS\0\0\0\0\0\0\0"},
      {"WS\0RRRRRR"},        {"FF\0\0\0\0\0\0\0"}, {"\0RRRRRRRR"},
      {"XY\0\0\0\0\0\0\0"}, {"WFSMa\0\0\0\0"}, {"WZFSM\0\0\0\0"},
      {"FWFSMAab"},             {"RFASMaUU\0"},     {"RFASMaUUS"},
      {"R\0\0\0\0\0\0\0\0"}, {"XY\0RR\0\0\0\0"},
  };
  uint64_t no_op = 0;
  for (const Case& c : cases) {
    std::vector<uint8_t> rec = HandMadeIssue(id);
    std::memcpy(&rec[34], c.bytes, 10);
    RawEvent raw;
    raw.pid = 77;  // a perf sample: the pid is known, the fast path applies
    raw.type = id;
    raw.payload = ByteView(rec.data(), rec.size());
    BlockEvent e;
    ASSERT_TRUE(decoder.Decode(raw, &e));
    BlockOp op;
    uint8_t flags;
    const bool found = ParseRwbs(std::string_view(c.bytes, 10), &op, &flags);
    no_op += !found;
    EXPECT_EQ(e.op, op) << c.bytes;
    EXPECT_EQ(e.flags, flags) << c.bytes;
    EXPECT_EQ(decoder.stats().problems[static_cast<int>(DecodeProblem::kUnknownOp)], no_op)
        << c.bytes;
  }
  EXPECT_EQ(no_op, 3u);
}

TEST(BlockEventTest, CommIsLeftAloneWhenNotDecoded) {
  std::vector<EventFormat> formats = ThisKernelFormats();
  BlockDecoder decoder(formats);
  decoder.set_decode_comm(false);
  const uint16_t id = static_cast<uint16_t>(decoder.FormatId(BlockEventKind::kIssue));
  std::vector<uint8_t> rec = HandMadeIssue(id);
  for (int32_t pid : {77, -1}) {  // the fast path and the general one
    RawEvent raw;
    raw.pid = pid;
    raw.type = id;
    raw.payload = ByteView(rec.data(), rec.size());
    BlockEvent e;
    std::memcpy(e.comm, "mine", 5);
    ASSERT_TRUE(decoder.Decode(raw, &e));
    EXPECT_STREQ(e.comm, "mine");
    EXPECT_EQ(e.sector, 123456789012ULL);
  }
}

TEST(BlockEventTest, DecodesFlushCompleteWithErrorAndNoComm) {
  std::vector<EventFormat> formats = ThisKernelFormats();
  BlockDecoder decoder(formats);
  const EventFormat* complete = nullptr;
  for (const auto& f : formats) {
    if (f.name == "block_rq_complete") complete = &f;
  }
  ASSERT_NE(complete, nullptr);
  RecordFields f;
  f.dev = KernelDev(254, 0);
  f.sector = BlockEvent::kFlushCompleteSector;
  f.nr_sector = 0;
  f.rwbs = "FF";
  f.error = -5;
  std::vector<uint8_t> rec = EncodeRecord(*complete, f);
  RawEvent raw;
  raw.type = static_cast<uint16_t>(complete->id);
  raw.payload = ByteView(rec.data(), rec.size());
  BlockEvent e;
  ASSERT_TRUE(decoder.Decode(raw, &e));
  EXPECT_EQ(e.kind, BlockEventKind::kComplete);
  EXPECT_EQ(e.error, -5);
  EXPECT_EQ(e.sector, BlockEvent::kFlushCompleteSector);
  EXPECT_STREQ(e.comm, "");
  EXPECT_EQ(e.bytes, 0u);  // no bytes field: nr_sector * 512
  EXPECT_TRUE(e.IsFlush());
}

TEST(BlockEventTest, FlushIsOpFlushOrEmptyPreflushOrCompleteAtMinusOne) {
  BlockEvent e;
  e.op = BlockOp::kFlush;
  EXPECT_TRUE(e.IsFlush());
  e.op = BlockOp::kWrite;
  e.nr_sector = 0;
  e.flags = kBlockFlagPreflush;
  EXPECT_TRUE(e.IsFlush());
  e.flags = 0;
  e.sector = BlockEvent::kFlushCompleteSector;
  EXPECT_TRUE(e.IsFlush());
  e.sector = 0;
  EXPECT_FALSE(e.IsFlush());
  e.nr_sector = 8;
  e.flags = kBlockFlagPreflush;  // data write with a preflush: paired by sector
  EXPECT_FALSE(e.IsFlush());
}

struct OlderLayout {
  const char* kernel;  // a folder of tests/fixtures/formats
  uint32_t dev_offset;
};
// Named in test output by its kernel (gtest would otherwise print the struct's bytes,
// padding included, which valgrind flags as uninitialised).
void PrintTo(const OlderLayout& l, std::ostream* os) { *os << l.kernel; }

class OlderLayoutTest : public ::testing::TestWithParam<OlderLayout> {};

TEST_P(OlderLayoutTest, FindsEveryFieldByName) {
  std::vector<EventFormat> formats =
      LoadFormats(GetParam().kernel, {"block_rq_insert", "block_rq_issue", "block_rq_complete"});
  ASSERT_EQ(formats.size(), 3u);
  for (const auto& f : formats) {
    ASSERT_NE(f.FindField("dev"), nullptr) << f.name;
    EXPECT_EQ(f.FindField("dev")->offset, GetParam().dev_offset) << f.name;
  }
  BlockDecoder decoder(formats);
  EXPECT_TRUE(decoder.format_problems().empty());
  for (const auto& f : formats) {
    RecordFields fields;
    fields.dev = KernelDev(8, 16);
    fields.sector = 2048;
    fields.nr_sector = 8;
    fields.bytes = 4096;
    fields.rwbs = "RA";
    fields.comm = "dd";
    fields.error = 0;
    std::vector<uint8_t> rec = EncodeRecord(f, fields);
    RawEvent raw;
    raw.type = static_cast<uint16_t>(f.id);
    raw.pid = 9;
    raw.payload = ByteView(rec.data(), rec.size());
    BlockEvent e;
    ASSERT_TRUE(decoder.Decode(raw, &e)) << f.name;
    EXPECT_EQ(e.dev, KernelDev(8, 16)) << f.name;
    EXPECT_EQ(e.sector, 2048u) << f.name;
    EXPECT_EQ(e.nr_sector, 8u) << f.name;
    EXPECT_EQ(e.op, BlockOp::kRead) << f.name;
    EXPECT_EQ(e.flags, kBlockFlagReadahead) << f.name;
    if (f.name != "block_rq_complete") EXPECT_STREQ(e.comm, "dd") << f.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, OlderLayoutTest,
                         ::testing::Values(OlderLayout{"6.10", 8}, OlderLayout{"3.x", 12}));

TEST(BlockEventTest, CountsShortRecordsAtEveryLengthWithoutCrashing) {
  std::vector<EventFormat> formats = ThisKernelFormats();
  BlockDecoder decoder(formats);
  const uint16_t id = static_cast<uint16_t>(decoder.FormatId(BlockEventKind::kIssue));
  std::vector<uint8_t> rec = HandMadeIssue(id);
  // Required: dev, sector, nr_sector, rwbs (ends at 44). Shorter records are rejected.
  uint64_t rejected = 0;
  for (size_t len = 0; len <= rec.size(); ++len) {
    // A heap copy of exactly `len` bytes, so a read past the end is caught by ASan builds.
    std::vector<uint8_t> copy(rec.begin(), rec.begin() + len);
    RawEvent raw;
    raw.type = id;
    raw.payload = ByteView(copy.data(), copy.size());
    BlockEvent e;
    bool ok = decoder.Decode(raw, &e);
    EXPECT_EQ(ok, len >= 44) << len;
    if (!ok) ++rejected;
    if (ok && len < 60) EXPECT_STREQ(e.comm, "") << "comm past the record end at " << len;
  }
  EXPECT_EQ(decoder.stats().problems[static_cast<int>(DecodeProblem::kShortRecord)], rejected);
  EXPECT_EQ(decoder.stats().rejected[static_cast<int>(BlockEventKind::kIssue)], rejected);
}

TEST(BlockEventTest, FormatLackingANeededFieldIsReportedAndItsEventsCounted) {
  const char* text =
      "name: block_rq_issue\nID: 900\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
      "\tfield:unsigned int nr_sector;\toffset:12;\tsize:4;\tsigned:0;\n"
      "\tfield:char rwbs[8];\toffset:16;\tsize:8;\tsigned:1;\n\n"
      "print fmt: \"%d\", REC->dev\n";
  auto format = ParseEventFormat("block", text);
  ASSERT_TRUE(format.ok()) << format.status();
  BlockDecoder decoder({*format});
  EXPECT_FALSE(decoder.Has(BlockEventKind::kIssue));
  ASSERT_EQ(decoder.format_problems().size(), 1u);
  EXPECT_NE(decoder.format_problems()[0].find("block:block_rq_issue: no field 'sector'"),
            std::string::npos)
      << decoder.format_problems()[0];
  std::vector<uint8_t> rec(24, 0);
  RawEvent raw;
  raw.type = 900;
  raw.payload = ByteView(rec.data(), rec.size());
  BlockEvent e;
  EXPECT_FALSE(decoder.Decode(raw, &e));
  EXPECT_EQ(decoder.stats().problems[static_cast<int>(DecodeProblem::kFormatUnusable)], 1u);
}

TEST(BlockEventTest, OtherEventsAreCountedNotDecoded) {
  std::vector<EventFormat> formats = ThisKernelFormats();
  BlockDecoder decoder(formats);
  std::vector<uint8_t> rec(64, 0);
  RawEvent raw;
  raw.payload = ByteView(rec.data(), rec.size());
  BlockEvent e;
  raw.type = 1;  // not a block format
  EXPECT_FALSE(decoder.Decode(raw, &e));
  raw.type = 65535;  // past the id table
  EXPECT_FALSE(decoder.Decode(raw, &e));
  EXPECT_EQ(decoder.stats().other_events, 2u);
  EXPECT_FALSE(decoder.Has(BlockEventKind::kBioQueue));
  EXPECT_EQ(decoder.FormatId(BlockEventKind::kBioQueue), -1);
}

TEST(BlockEventTest, RwbsWithoutOpDecodesAsOtherAndIsCounted) {
  std::vector<EventFormat> formats = ThisKernelFormats();
  BlockDecoder decoder(formats);
  const uint16_t id = static_cast<uint16_t>(decoder.FormatId(BlockEventKind::kIssue));
  std::vector<uint8_t> rec = HandMadeIssue(id);
  std::memcpy(&rec[34], "??\0\0", 4);
  RawEvent raw;
  raw.type = id;
  raw.payload = ByteView(rec.data(), rec.size());
  BlockEvent e;
  ASSERT_TRUE(decoder.Decode(raw, &e));
  EXPECT_EQ(e.op, BlockOp::kOther);
  EXPECT_EQ(decoder.stats().problems[static_cast<int>(DecodeProblem::kUnknownOp)], 1u);
}

}  // namespace
}  // namespace iotrace
