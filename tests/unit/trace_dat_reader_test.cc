#include "iotrace/formats/trace_dat_reader.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "ftrace_page_builder.h"
#include "gtest/gtest.h"
#include "iotrace/base/batch_read.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/trace_dat_writer.h"
#include "iotrace/formats/trace_reader_open.h"
#include "test_files.h"
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
  // The fixtures' CPUSTATs say overrun 0, dropped 0 (trace-cmd's: tracedat/*.stat.txt).
  EXPECT_TRUE(sink.losses.empty());
}

TEST(TraceDatReaderTest, DirectWritesV6MatchTraceCmdReport) { ExpectSameEventsAsTraceCmd("dd_v6"); }

TEST(TraceDatReaderTest, BufferedWritesV6MatchTraceCmdReport) {
  ExpectSameEventsAsTraceCmd("dd_buffered_v6");
}

TEST(TraceDatReaderTest, UncompressedV7MatchesTraceCmdReport) {
  ExpectSameEventsAsTraceCmd("dd_v7_none");
}

// trace-cmd's default output: version 7, every section and the per-CPU data zstd-compressed.
TEST(TraceDatReaderTest, ZstdCompressedV7MatchesTraceCmdReport) {
  ExpectSameEventsAsTraceCmd("dd_v7_zstd");
}

TEST(TraceDatReaderTest, OpensThroughTraceReaderSniffing) {
  auto reader = OpenTraceReader(FixturePath("dd_v6.dat"));
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

// ---- Files made by TraceDatWriter from synthetic pages: losses, corruption, truncation. ----

class SyntheticFile {
 public:
  explicit SyntheticFile(int cpus = 2) {
    dir_ = test::MakeTempDir("iotrace_tracedat_reader_test.");
    if (dir_.empty()) ADD_FAILURE() << "mkdtemp in " << test::TestTmpDir();
    meta_.header_page = testing::HeaderPageText(4096);
    meta_.header_event = ReadFixtureFile("formats/6.18/events/header_event");
    meta_.event_formats.push_back({"block", test::ReadBlockFormat("block_rq_issue")});
    issue_ = *ParseEventFormat("block", meta_.event_formats[0].text);
    pages_.resize(cpus);
    stats_.resize(cpus);
  }
  ~SyntheticFile() { test::RemoveTree(dir_); }

  // A payload whose sector says which event it is.
  std::string Payload(uint64_t sector, int cpu) const {
    return testing::BlockPayload(issue_, {100 + cpu, 7u << 20, sector, 8, "W"});
  }
  // A page on `cpu` holding events at `times` (sectors numbered from `first_sector`).
  testing::FtracePageBuilder Page(uint64_t page_ts, const std::vector<uint64_t>& times,
                                  uint64_t first_sector, int cpu) const {
    testing::FtracePageBuilder b(page_ts);
    for (size_t i = 0; i < times.size(); ++i) {
      EXPECT_TRUE(b.AddEvent(times[i], Payload(first_sector + i, cpu)));
    }
    return b;
  }
  void Add(int cpu, const std::string& page) { pages_[cpu] += page; }
  void SetStats(int cpu, std::string text) { stats_[cpu] = std::move(text); }

  std::string Write() {
    std::string path = dir_ + "/t.dat";
    data_start_ = testing::WriteTraceDat(path, meta_, pages_, stats_);
    return path;
  }
  uint64_t data_start() const { return data_start_; }

 private:
  std::string dir_;
  TracingMetadata meta_;
  EventFormat issue_;
  std::vector<std::string> pages_;
  std::vector<std::string> stats_;
  uint64_t data_start_ = 0;
};

// Records the order of events and losses as one sequence.
class SequenceSink : public EventSink {
 public:
  void OnEvent(const RawEvent& ev) override {
    uint64_t sector = 0;
    LoadAt(ev.payload, 16, &sector);
    items.push_back("e" + std::to_string(ev.cpu) + ":" + std::to_string(sector));
    times.push_back(ev.ts);
  }
  void OnLoss(const LossRecord& loss) override {
    const char* kind = loss.kind == LossRecord::Kind::kFtraceDropped   ? "dropped"
                       : loss.kind == LossRecord::Kind::kFtraceOverrun ? "overrun"
                                                                       : "other";
    items.push_back(std::string(kind) + std::to_string(loss.cpu) + ":" +
                    std::to_string(loss.count));
    losses.push_back(loss);
  }
  std::vector<std::string> items;
  std::vector<uint64_t> times;
  std::vector<LossRecord> losses;
};

std::vector<std::string> Items(std::initializer_list<const char*> l) {
  return std::vector<std::string>(l.begin(), l.end());
}

TEST(TraceDatReaderTest, PageLossesComeInTimeOrderAndStatsAddOnlyTheRest) {
  SyntheticFile f;
  f.Add(0, f.Page(100, {100, 300}, 0, 0).Build());
  testing::FtracePageBuilder p0b = f.Page(500, {500}, 2, 0);
  p0b.SetMissedEvents(0, false);  // the kernel had no room for the count
  f.Add(0, p0b.Build());
  f.Add(1, f.Page(200, {200}, 10, 1).Build());
  testing::FtracePageBuilder p1b = f.Page(400, {400, 600}, 11, 1);
  p1b.SetMissedEvents(100, true);
  f.Add(1, p1b.Build());
  f.SetStats(1, "entries: 0\noverrun: 150\ncommit overrun: 5\ndropped events: 3\n");
  f.SetStats(0, "entries: 0\noverrun: 0\ncommit overrun: 0\ndropped events: 0\n");
  std::string path = f.Write();

  auto reader = OpenTraceDat(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  SequenceSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ(sink.items, Items({"e0:0", "e1:10", "e0:1", "dropped1:100", "e1:11", "dropped0:0",
                               "e0:2", "e1:12", "overrun1:55", "dropped1:3"}));
  ASSERT_EQ(sink.losses.size(), 4u);
  EXPECT_EQ(sink.losses[0].ts, 400u);  // the page's timestamp
  EXPECT_EQ((*reader)->stats().Problem("ftrace_missed_events_uncounted"), 1u);
  EXPECT_EQ((*reader)->stats().events, 6u);

  // trace-cmd sees the same losses on the same pages.
  std::string text;
  int code = 0;
  if (testing::RunTraceCmdReport(path, &text, &code)) {
    EXPECT_NE(text.find("[100 EVENTS DROPPED]"), std::string::npos) << text;
    EXPECT_EQ(ParseReport(text).size(), 6u);
  }
}

TEST(TraceDatReaderTest, CorruptPagesAreCountedAndSkippedAndReadingGoesOn) {
  SyntheticFile f;
  f.Add(0, f.Page(1000, {1000, 1100}, 0, 0).Build());  // good
  testing::FtracePageBuilder bad_commit = f.Page(1200, {1200}, 100, 0);
  bad_commit.OverrideCommit(5000);
  f.Add(0, bad_commit.Build());                  // commit past the page end
  f.Add(0, f.Page(1300, {1300}, 2, 0).Build());  // good
  testing::FtracePageBuilder past_end = f.Page(1400, {1400}, 3, 0);
  past_end.AddRaw(std::string("\x1c\x00\x00\x00", 4));  // claims 112 bytes, none follow
  f.Add(0, past_end.Build());                    // first event good, then a length past the end
  f.Add(0, f.Page(900, {900}, 200, 0).Build());  // starts before the previous page ended
  f.Add(0, f.Page(1600, {1600, 1700}, 4, 0).Build());  // good
  std::string path = f.Write();

  auto reader = OpenTraceDat(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  SequenceSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ(sink.items, Items({"e0:0", "e0:1", "e0:2", "e0:3", "e0:4", "e0:5"}));
  const ReadStats& stats = (*reader)->stats();
  EXPECT_EQ(stats.Problem("ftrace_commit_past_page_end"), 1u);
  EXPECT_EQ(stats.Problem("ftrace_event_past_page_end"), 1u);
  EXPECT_EQ(stats.Problem("ftrace_time_backwards"), 1u);
  EXPECT_EQ(stats.events, 6u);
}

TEST(TraceDatReaderTest, EqualTimestampsGoToTheLowerCpuFirst) {
  SyntheticFile f;
  f.Add(1, f.Page(50, {50, 70}, 10, 1).Build());
  f.Add(0, f.Page(50, {50, 70}, 0, 0).Build());
  auto reader = OpenTraceDat(f.Write());
  ASSERT_TRUE(reader.ok()) << reader.status();
  SequenceSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ(sink.items, Items({"e0:0", "e1:10", "e0:1", "e1:11"}));
}

TEST(TraceDatReaderTest, TruncatedFileYieldsTheWholePagesThatRemain) {
  SyntheticFile f;
  for (int i = 0; i < 4; ++i) f.Add(0, f.Page(1000 * (i + 1), {1000 * (i + 1u)}, i, 0).Build());
  f.Add(1, f.Page(10, {10}, 50, 1).Build());
  std::string path = f.Write();
  // CPU0's data starts at data_start(); keep two and a half of its pages (CPU1 is cut off).
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(f.data_start() + 2 * 4096 + 2048)), 0);
  auto reader = OpenTraceDat(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  SequenceSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ(sink.items, Items({"e0:0", "e0:1"}));
  EXPECT_EQ((*reader)->stats().Problem("trace_dat_cpu_data_truncated"), 2u);
  EXPECT_EQ((*reader)->stats().Problem("ftrace_partial_page"), 1u);
}

TEST(TraceDatReaderTest, EveryTruncationOrFlippedByteIsHandledWithoutCrashing) {
  SyntheticFile f;
  f.Add(0, f.Page(1000, {1000, 2000, 3000}, 0, 0).Build());
  f.Add(1, f.Page(1500, {1500}, 9, 1).Build());
  std::string path = f.Write();
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), f.data_start());
  std::string mutated_path = path + ".m";
  auto try_read = [&](const std::string& content) {
    {
      std::ofstream out(mutated_path, std::ios::binary | std::ios::trunc);
      out.write(content.data(), static_cast<std::streamsize>(content.size()));
    }
    auto reader = OpenTraceDat(mutated_path);
    if (!reader.ok()) return;
    SequenceSink sink;
    EXPECT_TRUE((*reader)->ReadAll(&sink).ok());
    EXPECT_LE(sink.times.size(), 4u);
  };
  for (size_t len = 0; len < bytes.size(); len += (len < 4096 ? 13 : 509)) {
    try_read(bytes.substr(0, len));
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string m = bytes;
    // Flip a byte in the header or in the page headers and first events.
    size_t pos = i % 2 == 0 ? rng() % f.data_start() : f.data_start() + rng() % 8192;
    if (pos >= m.size()) continue;
    m[pos] = static_cast<char>(m[pos] ^ (1 + rng() % 255));
    try_read(m);
  }
}

class NonAllocatingSink : public EventSink {
 public:
  void OnEvent(const RawEvent& ev) override { sum += ev.ts + ev.payload.size + ev.cpu; }
  void OnLoss(const LossRecord& loss) override { sum += loss.count; }
  uint64_t sum = 0;
};

// Read-ahead (a thread per long CPU stream filling its ring) through the smallest ring, 64 KiB,
// over a stream of 300 pages: the ring wraps ~18 times while its thread reads, and every event
// and loss comes out as when the caller's thread reads. The second CPU's stream is too short to
// read ahead (half a ring or less) and is read in the caller's thread beside the first's: one
// thread more than the test's own while the events come.
TEST(TraceDatReaderTest, ReadAheadDeliversTheSameSequenceThroughSmallRings) {
  SyntheticFile f;
  uint64_t sector = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint64_t> times;
    for (int e = 0; e < 40; ++e) times.push_back(uint64_t(i) * 100000 + e * 1000);
    testing::FtracePageBuilder page = f.Page(times.front(), times, sector, 0);
    if (i == 150) page.SetMissedEvents(7, true);
    f.Add(0, page.Build());
    sector += times.size();
  }
  for (int i = 0; i < 2; ++i) {
    std::vector<uint64_t> times;
    for (int e = 0; e < 40; ++e) times.push_back(uint64_t(i) * 13000000 + e * 777 + 1);
    f.Add(1, f.Page(times.front(), times, sector, 1).Build());
    sector += times.size();
  }
  const std::string path = f.Write();
  // Threads of this process while the first event is delivered.
  struct ThreadCountingSink : SequenceSink {
    void OnEvent(const RawEvent& ev) override {
      if (items.empty()) {
        threads = 0;
        if (DIR* d = opendir("/proc/self/task")) {
          while (const dirent* e = readdir(d)) threads += e->d_name[0] != '.';
          closedir(d);
        }
      }
      SequenceSink::OnEvent(ev);
    }
    int threads = 0;
  };
  int threads_here = 0;
  auto read = [&](bool ahead) {
    TraceDatReaderOptions options;
    options.read_ahead_ring_bytes = 64 << 10;
    auto reader = OpenTraceDat(path, options);
    EXPECT_TRUE(reader.ok()) << reader.status();
    (*reader)->set_read_ahead(ahead);
    ThreadCountingSink sink;
    EXPECT_TRUE((*reader)->ReadAll(&sink).ok());
    EXPECT_EQ((*reader)->stats().events, 302u * 40);
    EXPECT_TRUE((*reader)->stats().problems.empty());
    if (ahead) {
      EXPECT_EQ(sink.threads, threads_here + 1) << "one stream reads ahead";
    } else {
      threads_here = sink.threads;
    }
    return sink.items;
  };
  const std::vector<std::string> here = read(false);
  const std::vector<std::string> ahead = read(true);
  ASSERT_EQ(here.size(), 302u * 40 + 1);
  EXPECT_EQ(ahead, here);
  // In time order: the second CPU's events fall between the first's.
  EXPECT_EQ(std::vector<std::string>(here.begin(), here.begin() + 4),
            Items({"e0:0", "e1:12000", "e1:12001", "e0:1"}));
  EXPECT_EQ(std::count(here.begin(), here.end(), "dropped0:7"), 1);
}

// A file cut short while its streams are read ahead: the threads stop at the cut, the reader
// keeps every whole page before it and says read_error, as without read-ahead.
TEST(TraceDatReaderTest, ReadAheadSeesAFileCutWhileOpen) {
  SyntheticFile f;
  for (int cpu = 0; cpu < 2; ++cpu) {
    for (int i = 0; i < 100; ++i) {
      std::vector<uint64_t> times;
      for (int e = 0; e < 40; ++e) times.push_back(uint64_t(i) * 100000 + e * 1000 + cpu);
      f.Add(cpu, f.Page(times.front(), times, uint64_t(cpu) * 10000 + uint64_t(i) * 40, cpu).Build());
    }
  }
  const std::string path = f.Write();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  for (bool ahead : {false, true}) {
    const std::string copy = path + (ahead ? ".ahead" : ".here");
    ASSERT_EQ(std::system(("cp '" + path + "' '" + copy + "'").c_str()), 0);
    TraceDatReaderOptions options;
    options.read_ahead_ring_bytes = 64 << 10;
    auto reader = OpenTraceDat(copy, options);
    ASSERT_TRUE(reader.ok()) << reader.status();
    (*reader)->set_read_ahead(ahead);
    // The second CPU's pages are last: cut its last 30 (and what follows them).
    ASSERT_EQ(::truncate(copy.c_str(), static_cast<off_t>(st.st_size) - 30 * 4096), 0);
    SequenceSink sink;
    ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
    EXPECT_EQ((*reader)->stats().Problem("read_error"), 1u) << "ahead " << ahead;
    EXPECT_EQ((*reader)->stats().events, 170u * 40) << "ahead " << ahead;
  }
}

// 64 CPUs: the rings (64 KiB each) refill together (FileRingGroup) by default, each wrapping
// three times; the same events, in the same order, as when each reads alone (where io_uring
// cannot be had).
TEST(TraceDatReaderTest, ManyCpusReadTheSameWithTheirRingsReadTogetherOrAlone) {
  constexpr int kCpus = 64, kPages = 48;
  SyntheticFile f(kCpus);
  uint64_t sector = 0;
  for (int i = 0; i < kPages; ++i) {
    for (int cpu = 0; cpu < kCpus; ++cpu) {
      std::vector<uint64_t> times;
      for (int e = 0; e < 40; ++e) times.push_back(uint64_t(i) * 1000000 + e * 997 + cpu * 7);
      f.Add(cpu, f.Page(times.front(), times, sector, cpu).Build());
      sector += times.size();
    }
  }
  const std::string path = f.Write();
  const bool uring = BatchReader::Create(1).ok();
  auto read = [&](bool batch, bool ahead) {
    TraceDatReaderOptions options;
    options.batch_reads = batch;
    auto reader = OpenTraceDat(path, options);
    EXPECT_TRUE(reader.ok()) << reader.status();
    (*reader)->set_read_ahead(ahead);
    SequenceSink sink;
    EXPECT_TRUE((*reader)->ReadAll(&sink).ok());
    EXPECT_EQ((*reader)->stats().events, uint64_t{kCpus} * kPages * 40);
    EXPECT_TRUE((*reader)->stats().problems.empty());
    if (batch && uring) {
      EXPECT_GT((*reader)->stats().batched_reads, uint64_t{kCpus}) << "ahead " << ahead;
    } else {
      EXPECT_EQ((*reader)->stats().batched_reads, 0u);
    }
    return sink.items;
  };
  const std::vector<std::string> alone = read(false, false);
  ASSERT_EQ(alone.size(), size_t{kCpus} * kPages * 40);
  EXPECT_EQ(read(true, false), alone);
  EXPECT_EQ(read(true, true), alone);
}

class TraceDatAllocationTest : public ::testing::TestWithParam<int> {};

TEST_P(TraceDatAllocationTest, ReadAllAllocatesNothingPerEvent) {
  IOTRACE_REQUIRE_ALLOCATION_COUNTER();
  const int cpus = GetParam();  // 16: the rings refill together
  auto allocations_for = [cpus](int pages) {
    SyntheticFile f(cpus);
    for (int i = 0; i < pages; ++i) {
      for (int cpu = 0; cpu < cpus; ++cpu) {
        std::vector<uint64_t> times;
        for (int e = 0; e < 40; ++e) times.push_back(uint64_t(i) * 100000 + e * 100 + cpu);
        f.Add(cpu, f.Page(times.front(), times, uint64_t(i) * 40, cpu).Build());
      }
    }
    auto reader = OpenTraceDat(f.Write());
    EXPECT_TRUE(reader.ok()) << reader.status();
    NonAllocatingSink sink;
    const uint64_t before = test::Allocations();
    EXPECT_TRUE((*reader)->ReadAll(&sink).ok());
    const uint64_t used = test::Allocations() - before;
    EXPECT_EQ((*reader)->stats().events, uint64_t(pages) * 40 * cpus);
    return used;
  };
  const uint64_t small = allocations_for(1);
  const uint64_t large = allocations_for(200);  // 16000 events a 2 CPUs
  EXPECT_EQ(large, small);
  EXPECT_GT(small, 0u);   // the counter works: the cursors and the heap are allocated
  EXPECT_LT(small, 8u + 4u * cpus);  // setup only: a few a CPU (58 at 16 CPUs)
}

INSTANTIATE_TEST_SUITE_P(Cpus, TraceDatAllocationTest, ::testing::Values(2, 16));

}  // namespace
}  // namespace iotrace
