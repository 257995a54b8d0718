#include "iotrace/trace_dat_reader.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ftrace_page_builder.h"
#include "gtest/gtest.h"
#include "iotrace/status.h"

namespace iotrace {
namespace {

using testing::ReadFixtureFile;

// One event as trace-cmd report -t -R prints it, or as decoded from our reader.
struct Ev {
  std::string name;
  int cpu = -1;
  uint64_t ts = 0;
  int pid = -1;
  uint64_t dev = 0, sector = 0, nr_sector = 0;
  std::string rwbs;

  bool operator==(const Ev&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Ev& e) {
  return os << e.name << " cpu=" << e.cpu << " ts=" << e.ts << " pid=" << e.pid
            << " dev=" << e.dev << " sector=" << e.sector << " nr=" << e.nr_sector
            << " rwbs=" << e.rwbs;
}

// Parses lines like
// "buf:   dd-14181 [000]  1522.455649102: block_rq_insert:   dev=7340032 sector=0 ... rwbs=WS ..."
std::vector<Ev> ParseReport(const std::string& text) {
  std::vector<Ev> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    size_t open = line.find(" [");
    size_t close = line.find("] ", open == absl::string_view::npos ? 0 : open);
    if (open == absl::string_view::npos || close == absl::string_view::npos) continue;
    Ev e;
    absl::string_view task = line.substr(0, open);
    size_t dash = task.rfind('-');
    EXPECT_TRUE(dash != absl::string_view::npos && absl::SimpleAtoi(task.substr(dash + 1), &e.pid))
        << line;
    EXPECT_TRUE(absl::SimpleAtoi(line.substr(open + 2, close - open - 2), &e.cpu)) << line;
    absl::string_view rest = absl::StripLeadingAsciiWhitespace(line.substr(close + 1));
    size_t colon = rest.find(": ");
    absl::string_view ts = rest.substr(0, colon);
    size_t dot = ts.find('.');
    uint64_t sec = 0, nsec = 0;
    EXPECT_TRUE(dot != absl::string_view::npos && ts.size() - dot - 1 == 9 &&
                absl::SimpleAtoi(ts.substr(0, dot), &sec) &&
                absl::SimpleAtoi(ts.substr(dot + 1), &nsec))
        << "report must come from trace-cmd report -t: " << line;
    e.ts = sec * 1000000000ull + nsec;
    rest = rest.substr(colon + 2);
    colon = rest.find(':');
    e.name = std::string(absl::StripAsciiWhitespace(rest.substr(0, colon)));
    for (absl::string_view kv : absl::StrSplit(rest.substr(colon + 1), ' ', absl::SkipEmpty())) {
      size_t eq = kv.find('=');
      if (eq == absl::string_view::npos) continue;
      absl::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "dev") EXPECT_TRUE(absl::SimpleAtoi(v, &e.dev));
      if (k == "sector") EXPECT_TRUE(absl::SimpleAtoi(v, &e.sector));
      if (k == "nr_sector") EXPECT_TRUE(absl::SimpleAtoi(v, &e.nr_sector));
      if (k == "rwbs") e.rwbs = std::string(v);
    }
    out.push_back(e);
  }
  return out;
}

uint64_t Field(const EventFormat& fmt, const RawEvent& ev, const char* name) {
  const FieldInfo* f = fmt.FindField(name);
  uint64_t v = 0;
  if (f != nullptr) LoadUnsigned(ev.payload, f->offset, f->size, &v);
  return v;
}

class CollectingSink : public EventSink {
 public:
  explicit CollectingSink(const std::vector<EventFormat>& formats) {
    for (const EventFormat& f : formats) by_id_[f.id] = &f;
  }
  void OnEvent(const RawEvent& ev) override {
    Ev e;
    e.cpu = static_cast<int>(ev.cpu);
    e.ts = ev.ts;
    e.pid = ev.pid;
    auto it = by_id_.find(ev.type);
    if (it == by_id_.end()) {
      e.name = "unknown";
    } else {
      const EventFormat& fmt = *it->second;
      e.name = fmt.name;
      e.dev = Field(fmt, ev, "dev");
      e.sector = Field(fmt, ev, "sector");
      e.nr_sector = Field(fmt, ev, "nr_sector");
      const FieldInfo* rwbs = fmt.FindField("rwbs");
      if (rwbs != nullptr) {
        ByteView s = ev.payload.Sub(rwbs->offset, rwbs->size);
        e.rwbs = std::string(s.AsString().substr(0, s.AsString().find('\0')));
      }
    }
    events.push_back(e);
  }
  void OnLoss(const LossRecord& loss) override { losses.push_back(loss); }

  std::vector<Ev> events;
  std::vector<LossRecord> losses;

 private:
  std::map<uint32_t, const EventFormat*> by_id_;
};

std::string FixturePath(const std::string& name) {
  return std::string(IOTRACE_FIXTURES) + "/tracedat/" + name;
}

void ExpectSameEventsAsTraceCmd(const std::string& name) {
  auto reader = OpenTraceDat(FixturePath(name + ".dat"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink((*reader)->formats());
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  std::vector<Ev> want = ParseReport(ReadFixtureFile("tracedat/" + name + ".report.txt"));
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(sink.events.size(), want.size());
  std::map<std::string, int> got_counts, want_counts;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(sink.events[i], want[i]) << "event #" << i << " of " << name;
    ++got_counts[sink.events[i].name];
    ++want_counts[want[i].name];
  }
  EXPECT_EQ(got_counts, want_counts);
  EXPECT_EQ((*reader)->stats().events, want.size());
  EXPECT_TRUE((*reader)->stats().problems.empty());
  EXPECT_TRUE(sink.losses.empty());  // the fixtures' CPUSTATs say overrun 0, dropped 0
}

TEST(TraceDatReaderTest, DirectWritesV6MatchTraceCmdReport) { ExpectSameEventsAsTraceCmd("dd_v6"); }

TEST(TraceDatReaderTest, BufferedWritesV6MatchTraceCmdReport) {
  ExpectSameEventsAsTraceCmd("dd_buffered_v6");
}

TEST(TraceDatReaderTest, UncompressedV7MatchesTraceCmdReport) {
  ExpectSameEventsAsTraceCmd("dd_v7_none");
}

TEST(TraceDatReaderTest, CompressedV7IsRefusedWithTheConvertCommand) {
  auto reader = OpenTraceDat(FixturePath("dd_v7_zstd.dat"));
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(reader.status().message().find("version 7"), absl::string_view::npos);
  EXPECT_NE(reader.status().message().find("zstd"), absl::string_view::npos);
  EXPECT_NE(HintOf(reader.status()).find("trace-cmd convert"), std::string::npos);
  EXPECT_NE(HintOf(reader.status()).find("--file-version 6"), std::string::npos);
}

TEST(TraceDatReaderTest, OpensThroughTraceReaderSniffing) {
  auto reader = TraceReader::Open(FixturePath("dd_v6.dat"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->FileFormat(), "trace.dat");
}

TEST(TraceDatReaderTest, ExposesHeaderFactsCpusClockAndComms) {
  auto reader = OpenTraceDat(FixturePath("dd_v6.dat"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->nr_cpus(), 2);
  std::map<std::string, std::string> info;
  for (const auto& [k, v] : (*reader)->Info()) info[k] = v;
  EXPECT_EQ(info["file version"], "6");
  EXPECT_EQ(info["trace clock"], "mono");  // recorded with trace-cmd -C mono
  EXPECT_EQ(info["sub-buffer size"], "4096");
  EXPECT_EQ(info["buffer instances"], "iotrace_tracedat_fx");
  EXPECT_NE(info["uname"].find("Linux"), std::string::npos);
  std::vector<std::string> names;
  for (const EventFormat& f : (*reader)->formats()) names.push_back(f.FullName());
  EXPECT_NE(std::find(names.begin(), names.end(), "block:block_rq_issue"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "block:block_rq_complete"), names.end());
  // dd wrote the loop device: its pid is in the saved cmdlines.
  std::vector<Ev> want = ParseReport(ReadFixtureFile("tracedat/dd_v6.report.txt"));
  int dd_pid = -1;
  for (const Ev& e : want) {
    if (e.name == "block_rq_insert" && e.dev == (7u << 20)) dd_pid = e.pid;
  }
  ASSERT_GT(dd_pid, 0);
  EXPECT_EQ((*reader)->CommOf(dd_pid), "dd");
  EXPECT_EQ((*reader)->CommOf(-5), "");
}

TEST(TraceDatReaderTest, MissingFileIsAnErrorNamingIt) {
  auto reader = OpenTraceDat("/nonexistent/x.dat");
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("/nonexistent/x.dat"), absl::string_view::npos);
}

}  // namespace
}  // namespace iotrace
