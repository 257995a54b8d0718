// Live tests of the ftrace capture: root, tracefs and a scratch loop device (each test skips
// with the reason otherwise). Every test records only its own loop device (a dev filter), so
// other I/O on the machine does not change the counts.
#include "iotrace/capture/ftrace_capture.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "../unit/trace_dat_test_util.h"
#include "gtest/gtest.h"
#include "iotrace/formats/trace_dat_reader.h"
#include "live_util.h"

namespace iotrace::live {
namespace {

using iotrace::testing::CollectingSink;
using iotrace::testing::Ev;
using iotrace::testing::ParseReport;
using iotrace::testing::RunTraceCmdReport;

const char kTracefs[] = "/sys/kernel/tracing";

std::vector<TraceEventInfo> BlockEvents() {
  auto events = ResolveEvents(
      kTracefs, {"block:block_rq_insert", "block:block_rq_issue", "block:block_rq_complete"});
  EXPECT_TRUE(events.ok()) << events.status();
  return events.ok() ? *events : std::vector<TraceEventInfo>{};
}

FtraceCaptureOptions Options(const ScratchLoop& loop, const std::string& output,
                             uint32_t buffer_kb = 4096) {
  FtraceCaptureOptions o;
  o.tracefs = kTracefs;
  o.events = BlockEvents();
  o.output = output;
  o.buffer_kb = buffer_kb;
  o.instance_name = "iotrace_tracedat_live_" + std::to_string(getpid());
  // The kernel's dev_t: MAJOR << 20 | MINOR.
  o.dev_filter = "dev == " + std::to_string((loop.major() << 20) | loop.minor());
  return o;
}

bool InstanceExists(const std::string& name) {
  return access((std::string(kTracefs) + "/instances/" + name).c_str(), F_OK) == 0;
}

// Runs `command` (sh -c) to its end; with `poll`, drains the capture while it runs.
int RunWhileCapturing(FtraceCapture* capture, const std::string& command, bool poll) {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (poll) {
      auto r = capture->Poll(20);
      EXPECT_TRUE(r.ok()) << r.status();
    } else {
      usleep(20000);
    }
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A small tmpfs mounted for one test, unmounted on every path (lazily if something is open).
class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& dir, const std::string& size) : dir_(dir) {
    ok_ = Sh("mkdir -p " + dir_ + " && mount -t tmpfs -o size=" + size + " iotrace_tracedat_full " +
             dir_)
              .exit_code == 0;
  }
  ~SmallTmpfs() {
    if (ok_ && Sh("umount " + dir_).exit_code != 0) Sh("umount -l " + dir_);
  }
  bool ok() const { return ok_; }

 private:
  std::string dir_;
  bool ok_ = false;
};

std::string DdWrites(const ScratchLoop& loop, int count) {
  return "dd if=/dev/zero of=" + loop.device() + " bs=4k count=" + std::to_string(count) +
         " oflag=direct status=none";
}

uint64_t Recorded(const FtraceCaptureResult& r, const std::string& name) {
  uint64_t n = 0;
  for (const FtraceEventResult& e : r.events) {
    if (e.name == name) {
      for (uint64_t c : e.recorded) n += c;
    }
  }
  return n;
}

uint64_t TotalRecorded(const FtraceCaptureResult& r) {
  uint64_t n = 0;
  for (const FtraceEventResult& e : r.events) {
    for (uint64_t c : e.recorded) n += c;
  }
  return n;
}

TEST(FtraceCaptureLiveTest, RecordsEveryRequestAndTraceCmdReadsTheSameEvents) {
  IOTRACE_REQUIRE_LIVE();
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  TempDir dir;
  const std::string out = dir.File("dd.dat");
  auto snapshot_before = TracefsSnapshot();
  const int kRequests = 300;
  std::string instance;
  {
    auto capture = FtraceCapture::Create(Options(loop, out));
    ASSERT_TRUE(capture.ok()) << capture.status();
    instance = (*capture)->instance_name();
    EXPECT_TRUE(InstanceExists(instance));
    ASSERT_TRUE((*capture)->Start().ok());
    ASSERT_EQ(RunWhileCapturing(capture->get(), DdWrites(loop, kRequests), true), 0);
    auto result = (*capture)->Finish();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(result->cleanup_error.ok()) << result->cleanup_error;
    EXPECT_FALSE(result->disk_full);
    EXPECT_EQ(result->clock, "mono");
    // Every request, each seen inserted, issued and completed: the last partial pages too.
    EXPECT_EQ(Recorded(*result, "block:block_rq_insert"), uint64_t(kRequests));
    EXPECT_EQ(Recorded(*result, "block:block_rq_issue"), uint64_t(kRequests));
    EXPECT_EQ(Recorded(*result, "block:block_rq_complete"), uint64_t(kRequests));
    uint64_t flushed = 0;
    for (const FtraceCpuResult& c : result->cpus) {
      EXPECT_EQ(c.stats.overrun, 0u) << "cpu " << c.cpu;
      EXPECT_EQ(c.stats.dropped_events, 0u) << "cpu " << c.cpu;
      EXPECT_EQ(c.stats.entries, 0u) << "cpu " << c.cpu << ": events left in the ring";
      flushed += c.pages_flushed;
    }
    EXPECT_GT(flushed, 0u) << "the final partial pages were not read";
  }
  EXPECT_FALSE(InstanceExists(instance));
  EXPECT_EQ(TracefsSnapshot(), snapshot_before);

  struct stat st;
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto reader = OpenTraceDat(out);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink((*reader)->formats());
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_TRUE((*reader)->stats().problems.empty());
  EXPECT_TRUE(sink.losses.empty());
  // The completions cover the device's first kRequests x 8 sectors, in order.
  uint64_t next_sector = 0;
  for (const Ev& e : sink.events) {
    if (e.name != "block_rq_complete") continue;
    EXPECT_EQ(e.sector, next_sector);
    EXPECT_EQ(e.nr_sector, 8u);
    next_sector += 8;
  }
  std::string text;
  int code = 0;
  if (!RunTraceCmdReport(out, &text, &code)) GTEST_SKIP() << "trace-cmd is not installed";
  ASSERT_EQ(code, 0) << text;
  EXPECT_EQ(ParseReport(text), sink.events);
}

TEST(FtraceCaptureLiveTest, OverrunsBalanceTheKernelCountAndAreReportedByBothReaders) {
  IOTRACE_REQUIRE_LIVE();
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  TempDir dir;
  const std::string out = dir.File("overrun.dat");
  const int kRequests = 3000;
  FtraceCaptureResult result;
  {
    // A tiny buffer never drained while dd runs: the kernel must overwrite.
    auto capture = FtraceCapture::Create(Options(loop, out, 16));
    ASSERT_TRUE(capture.ok()) << capture.status();
    ASSERT_TRUE((*capture)->Start().ok());
    ASSERT_EQ(RunWhileCapturing(capture->get(), DdWrites(loop, kRequests), false), 0);
    auto r = (*capture)->Finish();
    ASSERT_TRUE(r.ok()) << r.status();
    result = *r;
  }
  uint64_t overrun = 0;
  for (const FtraceCpuResult& c : result.cpus) {
    overrun += c.stats.overrun + c.stats.commit_overrun + c.stats.dropped_events;
    EXPECT_EQ(c.stats.entries, 0u);
  }
  ASSERT_GT(overrun, 0u) << "the test needs overruns";
  std::fprintf(stderr, "overrun test: recorded %llu, overrun %llu of %d events\n",
               (unsigned long long)TotalRecorded(result), (unsigned long long)overrun,
               3 * kRequests);
  // Every event the kernel produced is either in the file or counted as overwritten.
  EXPECT_EQ(TotalRecorded(result) + overrun, uint64_t(3 * kRequests));

  auto reader = OpenTraceDat(out);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink((*reader)->formats());
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  uint64_t lost = 0;
  for (const LossRecord& l : sink.losses) lost += l.count;
  EXPECT_EQ(lost, overrun) << "the reader's losses must add up to the kernel's overruns";
  std::string text;
  int code = 0;
  if (!RunTraceCmdReport(out, &text, &code)) GTEST_SKIP() << "trace-cmd is not installed";
  ASSERT_EQ(code, 0) << text;
  EXPECT_NE(text.find("EVENTS DROPPED]"), std::string::npos);
  EXPECT_EQ(ParseReport(text), sink.events);
}

TEST(FtraceCaptureLiveTest, DiskFullKeepsAValidFileAndCountsWhatWasNotWritten) {
  IOTRACE_REQUIRE_LIVE();
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  TempDir dir;
  const std::string mnt = dir.File("small");
  SmallTmpfs tmpfs(mnt, "3m");
  ASSERT_TRUE(tmpfs.ok());
  const std::string out = mnt + "/full.dat";
  const int kRequests = 30000;  // ~90000 events, ~6.5 MB of pages
  FtraceCaptureResult result;
  {
    auto capture = FtraceCapture::Create(Options(loop, out, 4096));
    ASSERT_TRUE(capture.ok()) << capture.status();
    ASSERT_TRUE((*capture)->Start().ok());
    ASSERT_EQ(RunWhileCapturing(capture->get(), DdWrites(loop, kRequests), true), 0);
    EXPECT_TRUE((*capture)->disk_full());
    auto r = (*capture)->Finish();
    ASSERT_TRUE(r.ok()) << r.status();
    result = *r;
  }
  EXPECT_TRUE(result.disk_full);
  EXPECT_FALSE(result.storage_error.ok());
  uint64_t unwritten = 0, overrun = 0;
  for (const FtraceEventResult& e : result.events) {
    for (uint64_t n : e.unwritten) unwritten += n;
  }
  for (const FtraceCpuResult& c : result.cpus) overrun += c.stats.overrun + c.stats.dropped_events;
  const uint64_t recorded = TotalRecorded(result);
  std::fprintf(stderr,
               "disk full: recorded %llu, unwritten %llu, overrun %llu, unknown pages %llu\n",
               (unsigned long long)recorded, (unsigned long long)unwritten,
               (unsigned long long)overrun, (unsigned long long)result.unwritten_pages_unknown);
  EXPECT_GT(recorded, 1000u);
  EXPECT_GT(unwritten, 1000u);
  // Exact books but for pages cut while being written (their events are unknown).
  const uint64_t total = 3 * uint64_t(kRequests);
  EXPECT_LE(recorded + unwritten + overrun, total);
  EXPECT_GE(recorded + unwritten + overrun + result.unwritten_pages_unknown * 4096 / 72, total);

  {
    auto reader = OpenTraceDat(out);
    ASSERT_TRUE(reader.ok()) << reader.status();
    CollectingSink sink((*reader)->formats());
    ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
    EXPECT_EQ(sink.events.size(), recorded);
  }
  std::string text;
  int code = 0;
  if (RunTraceCmdReport(out, &text, &code)) {
    EXPECT_EQ(code, 0) << text.substr(0, 2000);
    EXPECT_EQ(ParseReport(text).size(), recorded);
  }
}

TEST(FtraceCaptureLiveTest, DestroyingWithoutFinishStillRemovesTheInstance) {
  IOTRACE_REQUIRE_LIVE();
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  TempDir dir;
  std::string instance;
  {
    auto capture = FtraceCapture::Create(Options(loop, dir.File("x.dat")));
    ASSERT_TRUE(capture.ok()) << capture.status();
    instance = (*capture)->instance_name();
    ASSERT_TRUE((*capture)->Start().ok());
    ASSERT_EQ(RunWhileCapturing(capture->get(), DdWrites(loop, 20), false), 0);
  }
  EXPECT_FALSE(InstanceExists(instance));
  auto reader = OpenTraceDat(dir.File("x.dat"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink((*reader)->formats());
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ(sink.events.size(), 60u);
}

}  // namespace
}  // namespace iotrace::live
