#include "iotrace/output/event_dump.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/event/block_dev.h"

namespace iotrace {
namespace {

using test::ReadFixture;

EventFormat Format(const std::string& system, const std::string& text) {
  auto f = ParseEventFormat(system, text);
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : EventFormat();
}

// A uprobe's format as this kernel (6.18) wrote it for
// 'p:grp/tgt /tmp/t:0x11c0 v=%di:s32 w=%si:x64 c=$comm'.
constexpr char kUprobeFormat[] =
    "name: tgt\n"
    "ID: 2326\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:s32 v;\toffset:16;\tsize:4;\tsigned:1;\n"
    "\tfield:u64 w;\toffset:20;\tsize:8;\tsigned:0;\n"
    "\tfield:__data_loc char[] c;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\n"
    "print fmt: \"(%lx) v=%d w=0x%Lx c=\\\"%s\\\"\", REC->__probe_ip, REC->v, REC->w, "
    "__get_str(c)\n";

// Hand-made: byte and int arrays, a pointer, unsigned long, a signed short, __rel_loc and
// __data_loc arrays, a char array.
constexpr char kHandFormat[] =
    "name: iotrace_hand\n"
    "ID: 901\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:__u8 src[4];\toffset:8;\tsize:4;\tsigned:0;\n"
    "\tfield:int vals[2];\toffset:12;\tsize:8;\tsigned:1;\n"
    "\tfield:const void * ptr;\toffset:20;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long flags;\toffset:28;\tsize:8;\tsigned:0;\n"
    "\tfield:short delta;\toffset:36;\tsize:2;\tsigned:1;\n"
    "\tfield:__rel_loc char[] name;\toffset:38;\tsize:4;\tsigned:1;\n"
    "\tfield:__data_loc u32[] ids;\toffset:42;\tsize:4;\tsigned:0;\n"
    "\tfield:char tag[6];\toffset:46;\tsize:6;\tsigned:0;\n"
    "\n"
    "print fmt: \"src=%s ptr=%p\", REC->src, REC->ptr\n";

class Record {
 public:
  Record(uint16_t type, size_t size) : bytes_(size, 0) { Put<uint16_t>(0, type); }
  template <typename T>
  Record& Put(size_t at, T v) {
    std::memcpy(&bytes_[at], &v, sizeof(v));
    return *this;
  }
  Record& Str(size_t at, const std::string& s) {
    std::memcpy(&bytes_[at], s.data(), s.size());
    return *this;
  }
  // __data_loc word: offset | len << 16.
  Record& Loc(size_t at, uint16_t offset, uint16_t len) {
    return Put<uint32_t>(at, offset | (uint32_t{len} << 16));
  }
  void Truncate(size_t size) { bytes_.resize(size); }
  RawEvent Event(uint64_t ts, uint32_t cpu, int32_t pid, int32_t tid) const {
    RawEvent e;
    e.ts = ts;
    e.cpu = cpu;
    e.pid = pid;
    e.tid = tid;
    e.type = static_cast<uint16_t>(bytes_[0] | bytes_[1] << 8);
    e.payload = ByteView(bytes_.data(), bytes_.size());
    return e;
  }

 private:
  std::vector<uint8_t> bytes_;
};

class EventDumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    formats_.push_back(Format("block", test::ReadBlockFormat("block_rq_issue")));
    formats_.push_back(Format("block", test::ReadBlockFormat("block_rq_complete")));
    formats_.push_back(Format("grp", kUprobeFormat));
    formats_.push_back(Format("hand", kHandFormat));
    issue_id_ = static_cast<uint16_t>(formats_[0].id);
    complete_id_ = static_cast<uint16_t>(formats_[1].id);
  }

  // block_rq_issue by dd on loop3: dev 7,3, sector 2048 + 8, 4096 bytes, W, cmd "".
  Record Issue() const {
    Record r(issue_id_, 68);
    r.Put<int32_t>(4, 4321)
        .Put<uint32_t>(8, KernelDev(7, 3))
        .Put<uint64_t>(16, 2048)
        .Put<uint32_t>(24, 8)
        .Put<uint32_t>(28, 4096)
        .Put<uint16_t>(32, 0x4000)
        .Str(34, "WS")
        .Str(44, "dd")
        .Loc(60, 64, 1);
    return r;
  }

  std::vector<EventFormat> formats_;
  uint16_t issue_id_ = 0;
  uint16_t complete_id_ = 0;
};

TEST_F(EventDumpTest, TextLineHasTimeCpuPidCommEventAndEveryField) {
  EventDumper dumper(formats_, DumpFormat::kText);
  std::string out;
  dumper.Append(Issue().Event(1234567890123ull, 1, 4321, 4321), "", &out);
  EXPECT_EQ(out,
            "1234.567890 [001]    4321 dd               block:block_rq_issue dev=7,3 "
            "sector=2048 nr_sector=8 bytes=4096 ioprio=16384 rwbs=WS comm=dd cmd=\n");
  EXPECT_EQ(dumper.short_records(), 0u);
  EXPECT_EQ(dumper.Header(), "");
}

TEST_F(EventDumpTest, CommComesFromTheReaderElseTheEventElsePlaceholder) {
  EventDumper dumper(formats_, DumpFormat::kText);
  std::string out;
  dumper.Append(Issue().Event(1000, 0, 10, 11), "fio", &out);
  EXPECT_NE(out.find("  10/11 fio "), std::string::npos) << out;
  out.clear();
  Record complete(complete_id_, 52);
  complete.Put<uint32_t>(8, KernelDev(253, 1)).Put<uint64_t>(16, ~0ull).Put<int32_t>(28, -5);
  dumper.Append(complete.Event(5000000, 0, 0, 0), "", &out);
  EXPECT_NE(out.find(" <...> "), std::string::npos) << out;
  EXPECT_NE(out.find("dev=253,1 sector=18446744073709551615 nr_sector=0 error=-5"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.substr(0, 18), "0.005000 [000]    ");
}

TEST_F(EventDumpTest, UprobeFieldsFollowTheirTypesAndPrintFormat) {
  EventDumper dumper(formats_, DumpFormat::kText);
  Record r(2326, 40);
  r.Put<uint64_t>(8, 0x5581c0a011c0ull)
      .Put<int32_t>(16, -42)
      .Put<uint64_t>(20, 0xbeef)
      .Loc(28, 32, 3)
      .Str(32, "t\0");
  std::string out;
  dumper.Append(r.Event(2000000000, 1, 77, 77), "t", &out);
  EXPECT_NE(out.find("grp:tgt __probe_ip=0x5581c0a011c0 v=-42 w=0xbeef c=t\n"),
            std::string::npos)
      << out;
}

TEST_F(EventDumpTest, ArraysPointersSignedAndRelativeLocations) {
  EventDumper dumper(formats_, DumpFormat::kText);
  Record r(901, 72);
  r.Put<uint8_t>(8, 10).Put<uint8_t>(9, 0).Put<uint8_t>(10, 0xff).Put<uint8_t>(11, 1);
  r.Put<int32_t>(12, -1).Put<int32_t>(16, 7);
  r.Put<uint64_t>(20, 0xffff888012345678ull).Put<uint64_t>(28, 0x10);
  r.Put<int16_t>(36, -300);
  // __rel_loc: offset 10 from the end of the field (38 + 4) -> 52.
  r.Put<uint32_t>(38, 10 | (4u << 16)).Str(52, "abc");
  r.Loc(42, 56, 8).Put<uint32_t>(56, 5).Put<uint32_t>(60, 0xffffffffu);
  r.Str(46, "tagged");  // fills char[6] with no NUL: printed up to the end of the array
  std::string out;
  dumper.Append(r.Event(0, 0, 1, 1), "x", &out);
  EXPECT_NE(out.find("hand:iotrace_hand src=[0xa, 0x0, 0xff, 0x1] vals=[-1, 7] "
                     "ptr=0xffff888012345678 flags=0x10 delta=-300 name=abc "
                     "ids=[5, 4294967295] tag=tagged\n"),
            std::string::npos)
      << out;
}

TEST_F(EventDumpTest, ShortRecordPrintsWhatFitsAndSaysSo) {
  EventDumper dumper(formats_, DumpFormat::kText);
  Record r = Issue();
  r.Truncate(30);  // dev, sector, nr_sector fit; bytes (28..32) does not
  std::string out;
  dumper.Append(r.Event(0, 0, 1, 1), "dd", &out);
  EXPECT_NE(out.find("dev=7,3 sector=2048 nr_sector=8 bytes=<short> ioprio=<short>"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("[short record: 30 of 64 bytes]\n"), std::string::npos) << out;
  EXPECT_EQ(dumper.short_records(), 1u);
}

TEST_F(EventDumpTest, DataLocPointingOutsideTheRecordIsShortNotARead) {
  EventDumper dumper(formats_, DumpFormat::kText);
  Record r = Issue();
  r.Loc(60, 66, 100);  // 100 bytes at 66 in a 68-byte record
  std::string out;
  dumper.Append(r.Event(0, 0, 1, 1), "dd", &out);
  EXPECT_NE(out.find("cmd=<short> [short record"), std::string::npos) << out;
  EXPECT_EQ(dumper.short_records(), 1u);
}

TEST_F(EventDumpTest, UnknownTypeIsCountedAndNamed) {
  EventDumper dumper(formats_, DumpFormat::kText);
  Record r(999, 16);
  std::string out;
  dumper.Append(r.Event(0, 2, 5, 5), "", &out);
  EXPECT_NE(out.find("unknown:type_999 len=16\n"), std::string::npos) << out;
  EXPECT_EQ(dumper.unknown_types(), 1u);
}

// The block events' fields (issue's and complete's here) each have a column, in the order
// blkparse users read them; the event's own comm is told apart from the process's.
constexpr char kCsvHeader[] =
    "time,cpu,pid,tid,comm,event,dev,sector,nr_sector,bytes,rwbs,event_comm,error,ioprio,cmd,"
    "problem,fields\n";

TEST_F(EventDumpTest, CsvHasAColumnPerBlockFieldAndQuotesCellsThatNeedIt) {
  EventDumper dumper(formats_, DumpFormat::kCsv);
  EXPECT_EQ(dumper.Header(), kCsvHeader);
  std::string out;
  dumper.Append(Issue().Event(1234567890123ull, 1, 4321, 4322), "my,\"tool\"", &out);
  // dev as MAJ:MIN (the report CSV's form); no error field in an issue; cmd empty.
  EXPECT_EQ(out,
            "1234.567890,1,4321,4322,\"my,\"\"tool\"\"\",block:block_rq_issue,7:3,2048,8,4096,WS,"
            "dd,,16384,,,\n");
  out.clear();
  Record complete(complete_id_, 64);
  complete.Put<uint32_t>(8, KernelDev(7, 3))
      .Put<uint64_t>(16, 2048)
      .Put<uint32_t>(24, 8)
      .Put<int32_t>(28, -5)
      .Put<uint16_t>(32, 0x4000)
      .Str(34, "WS")
      .Loc(44, 48, 1);
  dumper.Append(complete.Event(2000, 0, 0, 0), "swapper/0", &out);
  EXPECT_EQ(out, "0.000002,0,0,0,swapper/0,block:block_rq_complete,7:3,2048,8,,WS,,-5,16384,,,\n");
  out.clear();
  Record r = Issue();
  r.Truncate(30);
  dumper.Append(r.Event(0, 0, 1, 1), "dd", &out);
  EXPECT_EQ(out.substr(out.size() - 15), ",short record,\n") << out;
}

TEST_F(EventDumpTest, CsvKeepsTheFieldsOfOtherEventsInTheLastColumn) {
  EventDumper dumper(formats_, DumpFormat::kCsv);
  std::string out;
  Record r(2326, 40);
  r.Put<uint64_t>(8, 0x11c0).Put<int32_t>(16, -1).Put<uint64_t>(20, 255);
  r.Loc(28, 32, 2).Str(32, "t");
  dumper.Append(r.Event(0, 0, 1, 1), "t", &out);
  EXPECT_EQ(out, "0.000000,0,1,1,t,grp:tgt,,,,,,,,,,,__probe_ip=0x11c0 v=-1 w=0xff c=t\n");
  // Every line has as many cells as the header, an unknown type's too.
  out.clear();
  dumper.Append(Record(999, 16).Event(0, 2, 5, 5), "", &out);
  EXPECT_EQ(out, "0.000000,2,5,5,<...>,unknown:type_999,,,,,,,,,,unknown type,\n");
  EXPECT_EQ(std::count(out.begin(), out.end(), ','), std::count(kCsvHeader, kCsvHeader +
                                                                sizeof(kCsvHeader), ','));
}

TEST_F(EventDumpTest, QuotesAndBackslashesInsideFieldValuesAreEscapedPerFormat) {
  Record r = Issue();
  r.Str(44, "q\"x\\y\"");  // comm field: q"x\y"
  std::string out;
  EventDumper csv(formats_, DumpFormat::kCsv);
  csv.Append(r.Event(0, 0, 1, 1), "dd", &out);
  // CSV: the backslash escaped as in text, each quote doubled inside the quoted cell.
  EXPECT_NE(out.find(",WS,\"q\"\"x\\x5cy\"\"\",,16384,"), std::string::npos) << out;
  out.clear();
  EventDumper json(formats_, DumpFormat::kJson);
  json.Append(r.Event(0, 0, 1, 1), "dd", &out);
  EXPECT_NE(out.find("\"comm\":\"q\\\"x\\\\y\\\"\""), std::string::npos) << out;
  out.clear();
  EventDumper text(formats_, DumpFormat::kText);
  text.Append(r.Event(0, 0, 1, 1), "dd", &out);
  EXPECT_NE(out.find(" comm=q\"x\\x5cy\" cmd="), std::string::npos) << out;
}

TEST_F(EventDumpTest, JsonLinesCarryTypedValues) {
  EventDumper dumper(formats_, DumpFormat::kJson);
  std::string out;
  dumper.Append(Issue().Event(1234567890123ull, 1, 4321, 4321), "d\"d\n", &out);
  EXPECT_EQ(out,
            "{\"ts\":1234567890123,\"time\":1234.567890,\"cpu\":1,\"pid\":4321,\"tid\":4321,"
            "\"comm\":\"d\\\"d\\u000a\",\"event\":\"block:block_rq_issue\",\"fields\":{"
            "\"dev\":\"7,3\",\"sector\":2048,\"nr_sector\":8,\"bytes\":4096,\"ioprio\":16384,"
            "\"rwbs\":\"WS\",\"comm\":\"dd\",\"cmd\":\"\"}}\n");
  out.clear();
  Record r(2326, 40);
  r.Put<uint64_t>(8, 0x11c0).Put<int32_t>(16, -1).Put<uint64_t>(20, 255).Loc(28, 32, 2).Str(32, "t");
  dumper.Append(r.Event(0, 0, 1, 1), "t", &out);
  EXPECT_NE(out.find("\"fields\":{\"__probe_ip\":\"0x11c0\",\"v\":-1,\"w\":\"0xff\",\"c\":\"t\"}}"),
            std::string::npos)
      << out;
  out.clear();
  Record cut = Issue();
  cut.Truncate(12);
  dumper.Append(cut.Event(0, 0, 1, 1), "dd", &out);
  EXPECT_NE(out.find("\"sector\":null"), std::string::npos) << out;
  EXPECT_NE(out.find(",\"problem\":\"short record\"}\n"), std::string::npos) << out;
}

TEST_F(EventDumpTest, NonPrintableBytesStayOnOneLine) {
  EventDumper dumper(formats_, DumpFormat::kText);
  Record r = Issue();
  r.Str(44, std::string("a\nb\x01", 4));
  std::string out;
  dumper.Append(r.Event(0, 0, 1, 1), "", &out);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find("comm=a\\x0ab\\x01"), std::string::npos) << out;
}

TEST_F(EventDumpTest, AppendingReusesTheCallersBufferAfterWarmUp) {
  EventDumper dumper(formats_, DumpFormat::kCsv);
  std::string out;
  Record issue = Issue();
  auto run = [&] {
    for (int i = 0; i < 1000; ++i) {
      out.clear();
      dumper.Append(issue.Event(uint64_t(i) * 1000, i % 2, i, i), "", &out);
    }
  };
  run();  // warm-up grows the buffers to the longest line
  const char* data = out.data();
  const size_t capacity = out.capacity();
  run();
  EXPECT_EQ(out.data(), data);
  EXPECT_EQ(out.capacity(), capacity);
}

}  // namespace
}  // namespace iotrace
