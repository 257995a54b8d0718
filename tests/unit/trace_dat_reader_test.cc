#include "iotrace/trace_dat_reader.h"

#include <map>
#include <string>
#include <vector>

#include "ftrace_page_builder.h"
#include "gtest/gtest.h"
#include "iotrace/status.h"
#include "trace_dat_test_util.h"

namespace iotrace {
namespace {

using testing::CollectingSink;
using testing::Ev;
using testing::ParseReport;
using testing::ReadFixtureFile;

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
