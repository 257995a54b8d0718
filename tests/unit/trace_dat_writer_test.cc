#include "iotrace/formats/trace_dat_writer.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ftrace_page_builder.h"
#include "gtest/gtest.h"
#include "iotrace/formats/trace_dat_reader.h"
#include "iotrace/formats/trace_dat_recover.h"
#include "test_files.h"
#include "trace_dat_test_util.h"

namespace iotrace {
namespace {

using testing::BlockFields;
using testing::BlockPayload;
using testing::CollectingSink;
using testing::Ev;
using testing::FtracePageBuilder;
using testing::HeaderPageText;
using testing::ParseReport;
using testing::ReadFixtureFile;
using testing::RunTraceCmdReport;

class TempDir {
 public:
  TempDir() {
    path_ = test::MakeTempDir("iotrace_tracedat_test.");
    if (path_.empty()) ADD_FAILURE() << "mkdtemp in " << test::TestTmpDir();
  }
  ~TempDir() { test::RemoveTree(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct Synthetic {
  TracingMetadata meta;
  EventFormat issue, complete;
  std::vector<std::string> cpu_pages;  // page stream per CPU
  std::vector<Ev> expected;            // in the order a reader must deliver them
};

// Two CPUs: issues on CPU0, completes on CPU1 10 us later, `n` requests 3 us apart, on pages of
// `page_size` bytes.
Synthetic MakeSynthetic(int n, uint32_t page_size = 4096) {
  Synthetic s;
  s.meta.header_page = HeaderPageText(page_size);
  s.meta.header_event = ReadFixtureFile("formats/6.18/events/header_event");
  s.meta.event_formats.push_back({"block", test::ReadBlockFormat("block_rq_issue")});
  s.meta.event_formats.push_back({"block", test::ReadBlockFormat("block_rq_complete")});
  s.meta.saved_cmdlines = "4242 fio\n";
  s.issue = *ParseEventFormat("block", s.meta.event_formats[0].text);
  s.complete = *ParseEventFormat("block", s.meta.event_formats[1].text);
  s.cpu_pages.resize(2);
  std::vector<std::vector<Ev>> per_cpu(2);
  for (int cpu = 0; cpu < 2; ++cpu) {
    FtracePageBuilder page(0, page_size);
    bool first = true;
    for (int i = 0; i < n; ++i) {
      const uint64_t ts = 1'000'000'000ull + uint64_t(i) * 3000 + (cpu == 1 ? 10'000 : 0);
      BlockFields f{cpu == 0 ? 4242 : 0, (7u << 20) | 3u, uint64_t(i) * 8, 8u,
                    cpu == 0 ? "WS" : "W"};
      const EventFormat& fmt = cpu == 0 ? s.issue : s.complete;
      std::string payload = BlockPayload(fmt, f);
      if (first) page = FtracePageBuilder(ts, page_size), first = false;
      if (!page.AddEvent(ts, payload)) {
        s.cpu_pages[cpu] += page.Build();
        page = FtracePageBuilder(ts, page_size);
        EXPECT_TRUE(page.AddEvent(ts, payload));
      }
      per_cpu[cpu].push_back({fmt.name, cpu, ts, f.pid, f.dev, f.sector, f.nr_sector, f.rwbs});
    }
    s.cpu_pages[cpu] += page.Build();
  }
  // Merge: by time, CPU0 first on ties.
  size_t a = 0, b = 0;
  while (a < per_cpu[0].size() || b < per_cpu[1].size()) {
    if (b == per_cpu[1].size() || (a < per_cpu[0].size() && per_cpu[0][a].ts <= per_cpu[1][b].ts)) {
      s.expected.push_back(per_cpu[0][a++]);
    } else {
      s.expected.push_back(per_cpu[1][b++]);
    }
  }
  return s;
}

TraceDatWriterOptions Options(const Synthetic& s) {
  TraceDatWriterOptions o;
  o.meta = s.meta;
  o.nr_cpus = 2;
  o.trace_clock = "mono";
  return o;
}

const char kStats0[] =
    "entries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 100\n"
    "oldest event ts:  1.000000\nnow ts:  2.000000\ndropped events: 0\nread events: 10\n";

std::vector<Ev> ReadBack(const std::string& path, CollectingSink** sink_out = nullptr,
                         ReadStats* stats = nullptr) {
  auto reader = OpenTraceDat(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  static std::vector<std::unique_ptr<CollectingSink>> keep;
  keep.push_back(std::make_unique<CollectingSink>((*reader)->formats()));
  EXPECT_TRUE((*reader)->ReadAll(keep.back().get()).ok());
  if (sink_out != nullptr) *sink_out = keep.back().get();
  if (stats != nullptr) *stats = (*reader)->stats();
  return keep.back()->events;
}

absl::StatusOr<TraceDatWriteResult> WriteFile(const std::string& path, const Synthetic& s) {
  auto w = TraceDatWriter::Create(path, Options(s));
  if (!w.ok()) return w.status();
  for (int cpu = 0; cpu < 2; ++cpu) {
    absl::Status st =
        (*w)->AppendPages(cpu, ByteView(s.cpu_pages[cpu].data(), s.cpu_pages[cpu].size()));
    if (!st.ok()) return st;
    (*w)->SetCpuStats(cpu, kStats0);
  }
  return (*w)->Finish();
}

TEST(TraceDatWriterTest, RoundTripsSyntheticPagesThroughTheReader) {
  TempDir dir;
  Synthetic s = MakeSynthetic(500);
  auto result = WriteFile(dir.File("out.dat"), s);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->storage_error.ok());
  ASSERT_EQ(result->cpus.size(), 2u);
  EXPECT_EQ(result->cpus[0].bytes, s.cpu_pages[0].size());
  EXPECT_EQ(result->cpus[1].bytes, s.cpu_pages[1].size());
  EXPECT_GT(result->cpus[0].pages, 1u);
  EXPECT_EQ(result->cpus[0].offset % 4096, 0u);
  EXPECT_EQ(result->cpus[1].offset, result->cpus[0].offset + result->cpus[0].bytes);
  CollectingSink* sink = nullptr;
  ReadStats stats;
  std::vector<Ev> got = ReadBack(dir.File("out.dat"), &sink, &stats);
  ASSERT_EQ(got.size(), s.expected.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], s.expected[i]) << "event #" << i;
  EXPECT_TRUE(sink->losses.empty());
  EXPECT_TRUE(stats.problems.empty());
  auto reader = OpenTraceDat(dir.File("out.dat"));
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->CommOf(4242), "fio");
  std::map<std::string, std::string> info;
  for (const auto& [k, v] : (*reader)->Info()) info[k] = v;
  EXPECT_EQ(info["trace clock"], "mono");
  EXPECT_EQ(info["file version"], "6");
  EXPECT_NE(info["recorded by"].find("iotrace"), std::string::npos);
}

TEST(TraceDatWriterTest, OutputIsPrivateToItsOwner) {
  TempDir dir;
  std::string path = dir.File("out.dat");
  std::system(("touch '" + path + "' && chmod 0644 '" + path + "'").c_str());
  ASSERT_TRUE(WriteFile(path, MakeSynthetic(10)).ok());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(TraceDatWriterTest, LeavesNoTemporaryFilesBehind) {
  TempDir dir;
  ASSERT_TRUE(WriteFile(dir.File("out.dat"), MakeSynthetic(10)).ok());
  std::string listing;
  int code = 0;
  FILE* p = popen(("ls -A '" + dir.File("") + "'").c_str(), "r");
  char buf[256];
  while (fgets(buf, sizeof(buf), p) != nullptr) listing += buf;
  code = pclose(p);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(listing, "out.dat\n");
}

void ExpectTraceCmdReads(const std::string& path, const std::vector<Ev>& expected) {
  std::string text;
  int code = 0;
  if (!RunTraceCmdReport(path, &text, &code)) GTEST_SKIP() << "trace-cmd is not installed";
  ASSERT_EQ(code, 0) << text;
  std::vector<Ev> got = ParseReport(text);
  ASSERT_EQ(got.size(), expected.size()) << text.substr(0, 2000);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "event #" << i;
}

TEST(TraceDatWriterTest, TraceCmdReportReadsTheFile) {
  TempDir dir;
  Synthetic s = MakeSynthetic(300);
  ASSERT_TRUE(WriteFile(dir.File("out.dat"), s).ok());
  ExpectTraceCmdReads(dir.File("out.dat"), s.expected);
}

TEST(TraceDatWriterTest, LargerSubBuffersRoundTripAndTraceCmdReadsThem) {
  TempDir dir;
  Synthetic s = MakeSynthetic(400, 8192);
  auto result = WriteFile(dir.File("out.dat"), s);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->cpus[0].offset % 8192, 0u);
  EXPECT_EQ(result->cpus[0].pages * 8192, result->cpus[0].bytes);
  std::vector<Ev> got = ReadBack(dir.File("out.dat"));
  ASSERT_EQ(got.size(), s.expected.size());
  EXPECT_EQ(got, s.expected);
  ExpectTraceCmdReads(dir.File("out.dat"), s.expected);
}

TEST(TraceDatWriterTest, PartialTrailingPageIsCutAndStated) {
  TempDir dir;
  Synthetic s = MakeSynthetic(200);
  auto w = TraceDatWriter::Create(dir.File("out.dat"), Options(s));
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->AppendPages(0, ByteView(s.cpu_pages[0].data(), 4096 + 1000)).ok());
  auto result = (*w)->Finish();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->cpus[0].bytes, 4096u);
  EXPECT_EQ(result->cpus[0].partial_bytes_cut, 1000u);
  EXPECT_EQ(result->cpus[1].bytes, 0u);
  ReadStats stats;
  std::vector<Ev> got = ReadBack(dir.File("out.dat"), nullptr, &stats);
  EXPECT_FALSE(got.empty());
  for (const Ev& e : got) EXPECT_EQ(e.cpu, 0);
  EXPECT_EQ(stats.Problem("trace_dat_pages_not_written"), 1u);
}

TEST(TraceDatWriterTest, EmptyRecordingIsAValidFile) {
  TempDir dir;
  Synthetic s = MakeSynthetic(1);
  {
    auto w = TraceDatWriter::Create(dir.File("out.dat"), Options(s));
    ASSERT_TRUE(w.ok()) << w.status();
    // Destroyed without Finish: the destructor finishes the file.
  }
  EXPECT_TRUE(ReadBack(dir.File("out.dat")).empty());
  ExpectTraceCmdReads(dir.File("out.dat"), {});
}

// Disk full while assembling, simulated with RLIMIT_FSIZE in a child process (no root needed):
// the file stays valid, each CPU keeps the pages that were stored, and the loss is stated.
TEST(TraceDatWriterTest, DiskFullKeepsWholePagesAndStatesTheLoss) {
  TempDir dir;
  Synthetic s = MakeSynthetic(2000);
  const std::string path = dir.File("out.dat");
  const uint64_t pages0 = s.cpu_pages[0].size() / 4096;
  ASSERT_GT(pages0, 10u);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    auto w = TraceDatWriter::Create(path, Options(s));
    if (!w.ok()) _exit(10);
    for (int cpu = 0; cpu < 2; ++cpu) {
      if (!(*w)->AppendPages(cpu, ByteView(s.cpu_pages[cpu].data(), s.cpu_pages[cpu].size()))
               .ok()) {
        _exit(11);
      }
    }
    // Room for the header and 10.5 pages of CPU0.
    struct rlimit lim;
    lim.rlim_cur = lim.rlim_max = (*w)->data_start() + 10 * 4096 + 2048;
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(12);
    auto result = (*w)->Finish();
    if (!result.ok()) _exit(13);
    if (result->storage_error.ok()) _exit(14);
    if (result->cpus[0].pages != 10 || result->cpus[1].pages != 0) _exit(15);
    if (result->cpus[0].pages_not_written != pages0 - 10) _exit(16);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);

  ReadStats stats;
  std::vector<Ev> got = ReadBack(path, nullptr, &stats);
  std::vector<Ev> want;
  for (const Ev& e : s.expected) {
    if (e.cpu == 0) want.push_back(e);
  }
  ASSERT_GT(want.size(), got.size());
  want.resize(got.size());
  EXPECT_EQ(got, want);  // exactly the first ten pages of CPU0
  const uint64_t pages1 = s.cpu_pages[1].size() / 4096;
  EXPECT_EQ(stats.Problem("trace_dat_pages_not_written"), (pages0 - 10) + pages1);
  ExpectTraceCmdReads(path, want);
}

// What a kill leaves: the writer's process ends with pages appended and no Finish (_exit runs
// no destructor): CPU0's first `pages0` pages, CPU1's first page and half of its second (cut by
// the kill mid-write).
void KillWhileWriting(const std::string& path, const Synthetic& s, size_t pages0) {
  pid_t pid = fork();
  if (pid == 0) {
    auto w = TraceDatWriter::Create(path, Options(s));
    if (!w.ok()) _exit(10);
    if (!(*w)->AppendPages(0, ByteView(s.cpu_pages[0].data(), pages0 * 4096)).ok()) _exit(11);
    if (!(*w)->AppendPages(1, ByteView(s.cpu_pages[1].data(), 4096 + 2048)).ok()) _exit(12);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// The events of those whole pages, from a file written and finished with just them.
std::vector<Ev> EventsOfStoredPages(const TempDir& dir, const Synthetic& s, size_t pages0) {
  const std::string path = dir.File("reference.dat");
  auto w = TraceDatWriter::Create(path, Options(s));
  EXPECT_TRUE(w.ok());
  EXPECT_TRUE((*w)->AppendPages(0, ByteView(s.cpu_pages[0].data(), pages0 * 4096)).ok());
  EXPECT_TRUE((*w)->AppendPages(1, ByteView(s.cpu_pages[1].data(), 4096)).ok());
  EXPECT_TRUE((*w)->Finish().ok());
  return ReadBack(path);
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

TEST(TraceDatKillTest, AKilledRecordingIsReadFromItsSpoolsAndMarkedUnfinished) {
  TempDir dir;
  Synthetic s = MakeSynthetic(2000);
  ASSERT_GE(s.cpu_pages[0].size() / 4096, 4u);
  ASSERT_GE(s.cpu_pages[1].size() / 4096, 2u);
  const std::string path = dir.File("killed.dat");
  KillWhileWriting(path, s, 3);
  ASSERT_TRUE(Exists(TraceDatSpoolPath(path, 0)));
  ASSERT_TRUE(Exists(TraceDatSpoolPath(path, 1)));
  const std::vector<Ev> want = EventsOfStoredPages(dir, s, 3);
  ASSERT_GT(want.size(), 100u);

  ReadStats stats;
  EXPECT_EQ(ReadBack(path, nullptr, &stats), want);
  EXPECT_EQ(stats.Problem(kProblemUnfinishedFile), 1u);
  EXPECT_EQ(stats.Problem("trace_dat_spool_page_cut"), 1u);  // CPU1's half page
  // Every CPU's data ends early: an open gap after each one's last record.
  EXPECT_FALSE(stats.coverage.complete());
  auto reader = OpenTraceDat(path);
  ASSERT_TRUE(reader.ok());
  std::map<std::string, std::string> info;
  for (const auto& [k, v] : (*reader)->Info()) info[k] = v;
  EXPECT_NE(info["unfinished"].find("iotrace recover " + path), std::string::npos)
      << info["unfinished"];
}

TEST(TraceDatKillTest, RecoverMakesACompleteFileThatTraceCmdReadsAndRemovesTheSpools) {
  TempDir dir;
  Synthetic s = MakeSynthetic(2000);
  const std::string path = dir.File("killed.dat");
  KillWhileWriting(path, s, 3);
  const std::vector<Ev> want = EventsOfStoredPages(dir, s, 3);

  auto r = RecoverTraceDat(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->was_complete);
  EXPECT_EQ(r->spools, 2);
  ASSERT_EQ(r->written.cpus.size(), 2u);
  EXPECT_EQ(r->written.cpus[0].pages, 3u);
  EXPECT_EQ(r->written.cpus[1].pages, 1u);
  EXPECT_EQ(r->written.cpus[1].partial_bytes_cut, 2048u);
  EXPECT_FALSE(Exists(TraceDatSpoolPath(path, 0)));
  EXPECT_FALSE(Exists(TraceDatSpoolPath(path, 1)));

  ReadStats stats;
  EXPECT_EQ(ReadBack(path, nullptr, &stats), want);
  EXPECT_EQ(stats.Problem(kProblemUnfinishedFile), 1u);  // still said: losses are not known
  ExpectTraceCmdReads(path, want);

  auto again = RecoverTraceDat(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->was_complete);
}

// With the flush interval in its header, an idle CPU of a killed recording (no pages at all) is
// known complete up to two intervals before the newest record of any CPU, before and after
// recover: the report still has a window to show.
TEST(TraceDatKillTest, AnIdleCpuIsCoveredUpToTwoFlushIntervalsBeforeTheEnd) {
  TempDir dir;
  Synthetic s = MakeSynthetic(2000);
  const std::string path = dir.File("killed.dat");
  pid_t pid = fork();
  if (pid == 0) {
    TraceDatWriterOptions o = Options(s);
    o.flush_interval_ms = 10;
    auto w = TraceDatWriter::Create(path, o);
    if (!w.ok()) _exit(10);
    if (!(*w)->AppendPages(0, ByteView(s.cpu_pages[0].data(), s.cpu_pages[0].size())).ok()) {
      _exit(11);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (bool recovered : {false, true}) {
    if (recovered) ASSERT_TRUE(RecoverTraceDat(path).ok());
    ReadStats stats;
    ReadBack(path, nullptr, &stats);
    ASSERT_EQ(stats.coverage.cpus.size(), 1u) << recovered;
    const uint64_t newest = stats.coverage.cpus[0].last_ts;
    bool idle_gap = false;
    for (const DataGap& g : stats.coverage.gaps) {
      if (g.cpu == 1) {
        EXPECT_TRUE(g.open_end());
        EXPECT_EQ(g.after_ts, newest - 20'000'000) << recovered;
        idle_gap = true;
      }
    }
    EXPECT_TRUE(idle_gap) << recovered;
  }
}

TEST(TraceDatKillTest, AFinishedFileIsCompleteAndAKilledOneWithoutSpoolsSaysSo) {
  TempDir dir;
  Synthetic s = MakeSynthetic(200);
  ASSERT_TRUE(WriteFile(dir.File("done.dat"), s).ok());
  auto done = RecoverTraceDat(dir.File("done.dat"));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->was_complete);
  ReadStats stats;
  EXPECT_EQ(ReadBack(dir.File("done.dat"), nullptr, &stats), s.expected);
  EXPECT_EQ(stats.Problem(kProblemUnfinishedFile), 0u);

  const std::string path = dir.File("killed.dat");
  KillWhileWriting(path, s, 1);
  ASSERT_EQ(unlink(TraceDatSpoolPath(path, 0).c_str()), 0);
  ASSERT_EQ(unlink(TraceDatSpoolPath(path, 1).c_str()), 0);
  auto reader = OpenTraceDat(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(std::string(reader.status().message()).find("did not finish"), std::string::npos)
      << reader.status();
  auto r = RecoverTraceDat(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("spool files"), std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace iotrace
