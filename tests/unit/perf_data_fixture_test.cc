// The reader on real `perf record` files from this kernel (scripts/capture-perf-fixtures.sh):
// it must deliver what `perf script` showed when the fixtures were captured: the same samples
// per event, timestamps, CPUs, threads and decoded block fields.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

namespace iotrace {
namespace {

using test::CollectingSink;

// One sample as `perf script -F comm,pid,tid,cpu,time,event,trace --ns` printed it.
struct ScriptLine {
  std::string comm;
  int32_t pid = 0, tid = 0;
  uint32_t cpu = 0;
  uint64_t ts = 0;
  std::string event;
  std::string trace;
};

std::vector<ScriptLine> ParseScript(const std::string& text) {
  static const std::regex kLine(
      R"(^\s*(.*?)\s+(-?\d+)/(-?\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}):\s+(\S+):\s*(.*)$)");
  std::vector<ScriptLine> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    start = nl + 1;
    std::smatch m;
    if (!std::regex_match(line, m, kLine)) {
      ADD_FAILURE() << "unparsed perf script line: " << line;
      continue;
    }
    ScriptLine s;
    s.comm = m[1];
    s.pid = std::stoi(m[2]);
    s.tid = std::stoi(m[3]);
    s.cpu = static_cast<uint32_t>(std::stoul(m[4]));
    s.ts = std::stoull(m[5]) * 1000000000ull + std::stoull(m[6]);
    s.event = m[7];
    s.trace = m[8];
    lines.push_back(s);
  }
  return lines;
}

// The fields block_rq_* print first: "MAJ,MIN RWBS ... SECTOR + NR_SECTOR ...".
struct BlockFields {
  uint32_t major = 0, minor = 0;
  std::string rwbs;
  uint64_t sector = 0;
  uint32_t nr_sector = 0;
  bool operator==(const BlockFields& o) const {
    return std::tie(major, minor, rwbs, sector, nr_sector) ==
           std::tie(o.major, o.minor, o.rwbs, o.sector, o.nr_sector);
  }
};

std::ostream& operator<<(std::ostream& os, const BlockFields& f) {
  return os << f.major << "," << f.minor << " " << f.rwbs << " " << f.sector << " + "
            << f.nr_sector;
}

bool ParseBlockTrace(const std::string& trace, BlockFields* out) {
  static const std::regex kBlock(R"(^(\d+),(\d+) (\S+) .*?\) (\d+) \+ (\d+) .*$)");
  std::smatch m;
  if (!std::regex_match(trace, m, kBlock)) return false;
  out->major = static_cast<uint32_t>(std::stoul(m[1]));
  out->minor = static_cast<uint32_t>(std::stoul(m[2]));
  out->rwbs = m[3];
  out->sector = std::stoull(m[4]);
  out->nr_sector = static_cast<uint32_t>(std::stoul(m[5]));
  return true;
}

BlockFields DecodeBlock(const EventFormat& f, const std::string& payload) {
  BlockFields b;
  const uint64_t dev = test::FieldOf(f, payload, "dev");
  b.major = static_cast<uint32_t>(dev >> 20);  // kernel dev_t: MAJOR << 20 | MINOR
  b.minor = static_cast<uint32_t>(dev & ((1u << 20) - 1));
  b.sector = test::FieldOf(f, payload, "sector");
  b.nr_sector = static_cast<uint32_t>(test::FieldOf(f, payload, "nr_sector"));
  if (const FieldInfo* rwbs = f.FindField("rwbs"); rwbs && rwbs->offset < payload.size()) {
    std::string s = payload.substr(rwbs->offset, rwbs->size);
    b.rwbs = s.substr(0, s.find('\0'));
  }
  return b;
}

class PerfDataFixtureTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::string DataPath() const {
    return std::string(IOTRACE_FIXTURES) + "/perf/" + GetParam() + ".data";
  }
  std::string ScriptText() const {
    return test::ReadFixtureFile(std::string("perf/") + GetParam() + ".script.txt");
  }
};

// Every sample `perf script` printed for fixture `name`, delivered by the reader that
// OpenTraceReader picks for it, with the same fields.
void ExpectWhatPerfScriptShows(const std::string& name) {
  std::vector<ScriptLine> script =
      ParseScript(test::ReadFixtureFile("perf/" + name + ".script.txt"));
  ASSERT_GT(script.size(), 100u) << "fixture script text missing or empty";
  auto reader = OpenTraceReader(std::string(IOTRACE_FIXTURES) + "/perf/" + name + ".data");
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());

  std::map<uint32_t, const EventFormat*> by_id;
  for (const EventFormat& f : (*reader)->formats()) by_id[f.id] = &f;

  // Samples per event.
  std::map<std::string, uint64_t> want_counts, got_counts;
  uint64_t non_tracepoint = 0;
  for (const ScriptLine& s : script) {
    if (s.event.find(':') == std::string::npos) {
      ++non_tracepoint;  // e.g. cpu-clock/period=10000000/
    } else {
      ++want_counts[s.event];
    }
  }
  for (const auto& e : sink.events) {
    ASSERT_TRUE(by_id.count(e.type)) << "no format for type " << e.type;
    ++got_counts[by_id[e.type]->FullName()];
  }
  EXPECT_EQ(got_counts, want_counts);
  EXPECT_EQ((*reader)->stats().Problem("non_tracepoint_sample"), non_tracepoint);
  EXPECT_EQ((*reader)->stats().problems.size(), non_tracepoint > 0 ? 1u : 0u);

  // Delivered in time order.
  for (size_t i = 1; i < sink.events.size(); ++i) {
    ASSERT_LE(sink.events[i - 1].ts, sink.events[i].ts) << "event " << i;
  }

  // Same samples: (time, cpu, pid, tid, event) and the decoded block fields. Ties in time may
  // come out in either order, so both sides are sorted.
  using Key = std::tuple<uint64_t, uint32_t, int32_t, int32_t, std::string, std::string>;
  std::vector<Key> want, got;
  size_t block_checked = 0;
  for (const ScriptLine& s : script) {
    if (s.event.find(':') == std::string::npos) continue;
    std::string fields = s.trace;
    BlockFields b;
    if (s.event.rfind("block:", 0) == 0) {
      EXPECT_TRUE(ParseBlockTrace(s.trace, &b)) << s.trace;
      std::ostringstream os;
      os << b;
      fields = os.str();
    }
    want.emplace_back(s.ts, s.cpu, s.pid, s.tid, s.event, fields);
  }
  for (const auto& e : sink.events) {
    const EventFormat& f = *by_id[e.type];
    std::string fields;
    if (f.system == "block") {
      std::ostringstream os;
      os << DecodeBlock(f, e.payload);
      fields = os.str();
      ++block_checked;
    } else {
      // Non-block tracepoints: match on perf script's own text for them.
      for (const ScriptLine& s : script) {
        if (s.ts == e.ts && s.event == f.FullName()) fields = s.trace;
      }
      EXPECT_NE(fields.find("pid=" + std::to_string(test::FieldOf(f, e.payload, "pid"))),
                std::string::npos)
          << fields;
    }
    got.emplace_back(e.ts, e.cpu, e.pid, e.tid, f.FullName(), fields);
  }
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "sample " << i;
  }
  EXPECT_GT(block_checked, 100u);

  // Threads named by COMM records, as perf script names them.
  for (const ScriptLine& s : script) {
    if (s.comm == "dd") EXPECT_EQ((*reader)->CommOf(s.tid), "dd") << s.tid;
  }
}

TEST_P(PerfDataFixtureTest, DeliversWhatPerfScriptShows) { ExpectWhatPerfScriptShows(GetParam()); }

// perf record -o - > FILE: the pipe-mode stream is converted, then read like any perf.data.
TEST(PerfPipeFixtureTest, PipeModeDeliversWhatPerfScriptShows) {
  ExpectWhatPerfScriptShows("block-pipe");
}

TEST_P(PerfDataFixtureTest, ExposesThePerfHeader) {
  auto reader = OpenPerfData(DataPath());
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::map<std::string, std::string> info;
  for (const auto& [k, v] : (*reader)->Info()) info[k] = v;
  EXPECT_EQ(info["perf_version"].rfind("6.", 0), 0u) << info["perf_version"];
  EXPECT_FALSE(info["hostname"].empty());
  EXPECT_FALSE(info["os_release"].empty());
  EXPECT_NE(info["cmdline"].find("perf record"), std::string::npos) << info["cmdline"];
  EXPECT_NE(info["events"].find("block:block_rq_issue"), std::string::npos) << info["events"];
  EXPECT_GE((*reader)->nr_cpus(), 1);
  EXPECT_NE((*reader)->metadata().header_page.find("timestamp"), std::string::npos);
  bool has_issue = false;
  for (const EventFormat& f : (*reader)->formats()) {
    if (f.FullName() == "block:block_rq_issue") {
      has_issue = true;
      EXPECT_NE(f.FindField("sector"), nullptr);
      EXPECT_NE(f.print_fmt.find("REC->sector"), std::string::npos);
    }
  }
  EXPECT_TRUE(has_issue);
}

// perf writes its tracing data (the event formats) after the data: a cut anywhere before the
// end of that section is an error naming the lost formats, with a hint (the reader is given no
// formats to fall back on here). A cut after it reads every event and says the file was cut.
// (Until the reader read cut files, every prefix was an error.)
TEST_P(PerfDataFixtureTest, EveryTruncationOfTheRealFileIsAnErrorWithAHintOrSaysItWasCut) {
  std::string bytes = test::ReadFixtureFile(std::string("perf/") + GetParam() + ".data");
  ASSERT_GT(bytes.size(), 1000u);
  // tmpfs when there is one: thousands of rewrites of one file.
  const std::string path = test::ScratchPath("iotrace-perfdata-fx", GetParam());
  std::mt19937 rng(99);
  // Every length is too slow on a 150 KB file with formats to parse; cover the header, the
  // attrs and the end byte by byte, and the middle at random.
  std::vector<size_t> lengths;
  for (size_t n = 0; n < 2048; ++n) lengths.push_back(n);
  for (size_t n = bytes.size() - 2048; n < bytes.size(); ++n) lengths.push_back(n);
  for (int i = 0; i < 500; ++i) lengths.push_back(rng() % bytes.size());
  for (size_t len : lengths) {
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(len));
    }
    auto reader = OpenPerfData(path);
    if (!reader.ok()) {
      EXPECT_NE(HintOf(reader.status()), "") << len << ": " << reader.status();
      continue;
    }
    struct Counter : EventSink {
      void OnEvent(const RawEvent&) override {}
    } sink;
    ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
    EXPECT_EQ((*reader)->stats().Problem("file_cut_after_data"), 1u) << len;
  }
  ::unlink(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PerfDataFixtureTest,
                         ::testing::Values("block-mq-deadline", "block-callchain-mixed"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace iotrace
