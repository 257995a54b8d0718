// Live tests of `iotrace report` on real recordings: fio on a scratch loop device, recorded by
// each backend; the report's request counts against what fio says it did, and the two backends
// against each other on the same run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "live_util.h"

namespace iotrace::live {
namespace {

const int kIos = 20000;

std::vector<std::string> Fio(const ScratchLoop& loop, const std::string& json_out) {
  return {"fio", "--name=t", "--filename=" + loop.device(), "--rw=randread", "--bs=4k",
          "--iodepth=16", "--ioengine=libaio", "--direct=1",
          "--number_ios=" + std::to_string(kIos), "--output-format=json", "--output=" + json_out};
}

uint64_t FioReads(const std::string& json_path) { return FioIos(json_path, "read"); }

// Runs of spaces and newlines as one space: the text report's paragraphs, whatever their
// wrapping at 80 columns.
std::string Squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  return out;
}

// Rows of a summary CSV: "dev,device,op,phase" -> count.
std::map<std::string, uint64_t> SummaryCounts(const std::string& csv_path) {
  std::map<std::string, uint64_t> out;
  std::ifstream in(csv_path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string x;
    while (std::getline(ls, x, ',')) f.push_back(x);
    if (f.size() >= 5) out[f[2] + " " + f[3]] = std::stoull(f[4]);
  }
  return out;
}

// The losses the report shows (JSON completeness.losses), summed, via python (no JSON parser
// in the C++ tests).
uint64_t ReportLosses(const std::string& file) {
  CommandResult r = Sh(Binary() + " report -i " + file +
                       " --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); "
                       "print(sum(l[\"count\"] for l in d[\"completeness\"][\"losses\"]))'");
  return r.exit_code == 0 ? std::stoull(r.out) : ~uint64_t{0};
}

class ReportLiveTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    IOTRACE_REQUIRE_LIVE();
    IOTRACE_REQUIRE_TOOL("fio");
    IOTRACE_REQUIRE_TOOL("python3");
  }
  std::string Out(const std::string& name) const {
    return dir_.File(name + (GetParam() == "ftrace" ? ".dat" : ".data"));
  }
  TempDir dir_;
};

TEST_P(ReportLiveTest, MqDeadlineCountsMatchWhatFioDidWithinTheLossesShown) {
  ScratchLoop loop("mq-deadline", 512);
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string out = Out("mq"), json = dir_.File("fio.json"), csv = dir_.File("summary.csv");
  std::vector<std::string> argv = {Binary(), "record", "-b", GetParam(), "--dev",
                                   loop.device(), "-o", out, "--"};
  for (const std::string& a : Fio(loop, json)) argv.push_back(a);
  CommandResult rec = RunCmd(argv);
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  uint64_t fio_reads = FioReads(json);
  ASSERT_EQ(fio_reads, static_cast<uint64_t>(kIos));
  CommandResult rep = RunCmd({Binary(), "report", "-i", out, "--summary-csv", csv});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  std::map<std::string, uint64_t> counts = SummaryCounts(csv);
  uint64_t losses = ReportLosses(out);
  ASSERT_NE(losses, ~uint64_t{0});
  for (const char* phase : {"read I2D", "read D2C", "read I2C"}) {
    EXPECT_LE(counts[phase], fio_reads) << phase << "\n" << rep.out;
    EXPECT_GE(counts[phase] + losses, fio_reads) << phase << "\n" << rep.out;
  }
  if (losses > 0) {
    EXPECT_NE(rep.out.find("incomplete"), std::string::npos) << rep.out;
  } else {
    EXPECT_EQ(counts["read D2C"], fio_reads);
    EXPECT_EQ(counts["read I2D"], fio_reads);
  }
}

TEST_P(ReportLiveTest, SchedulerNoneGivesD2COnlyAndSaysWhy) {
  ScratchLoop loop("none", 512);
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string out = Out("none"), json = dir_.File("fio.json"), csv = dir_.File("summary.csv");
  std::vector<std::string> argv = {Binary(), "record", "-b", GetParam(), "--dev",
                                   loop.device(), "-o", out, "--"};
  for (const std::string& a : Fio(loop, json)) argv.push_back(a);
  CommandResult rec = RunCmd(argv);
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  CommandResult rep = RunCmd({Binary(), "report", "-i", out, "--summary-csv", csv});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  std::map<std::string, uint64_t> counts = SummaryCounts(csv);
  uint64_t losses = ReportLosses(out);
  EXPECT_EQ(counts.count("read I2D"), 0u) << rep.out;
  EXPECT_LE(counts["read D2C"], FioReads(json));
  EXPECT_GE(counts["read D2C"] + losses, FioReads(json));
  EXPECT_NE(Squeezed(rep.out).find("no I2D/I2C: the device showed no block_rq_insert at all"),
            std::string::npos)
      << rep.out;
  // Every issue is one without an insert, for that reason; each is a D2C unless its completion
  // was lost (perf drops a sample now and then even here).
  std::smatch issues_m, no_insert_m;
  ASSERT_TRUE(std::regex_search(rep.out, issues_m, std::regex("block_rq_issue (\\d+)")))
      << rep.out;
  ASSERT_TRUE(std::regex_search(rep.out, no_insert_m, std::regex("no_insert_on_device (\\d+)")))
      << rep.out;
  const uint64_t issues = std::stoull(issues_m[1]);
  EXPECT_EQ(std::stoull(no_insert_m[1]), issues) << rep.out;
  EXPECT_GE(issues, counts["read D2C"]) << rep.out;
  EXPECT_LE(issues, counts["read D2C"] + losses) << rep.out;
}

INSTANTIATE_TEST_SUITE_P(Backends, ReportLiveTest, ::testing::Values("perf", "ftrace"),
                         [](const auto& info) { return info.param; });

// Both backends record the same fio run at once. ftrace keeps every event; perf's books must
// balance against the kernel's counts, and every silent drop must show in its report; for the
// requests both captured, the latency distributions agree.
TEST(ReportBackendsLiveTest, TheSameRunRecordedByBothBackendsAgrees) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  IOTRACE_REQUIRE_TOOL("perf");
  IOTRACE_REQUIRE_TOOL("trace-cmd");
  IOTRACE_REQUIRE_TOOL("python3");
  TempDir dir;
  ScratchLoop loop("mq-deadline", 512);
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string ft = dir.File("run.dat"), pf = dir.File("run.data"), json = dir.File("fio.json");
  std::string ft_err = dir.File("ftrace.err");
  pid_t pid = fork();
  if (pid == 0) {
    freopen(ft_err.c_str(), "w", stderr);
    execl(Binary().c_str(), "iotrace", "record", "-b", "ftrace", "--no-progress", "--dev",
          loop.device().c_str(), "-o", ft.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // the ftrace instance is on
  std::vector<std::string> argv = {Binary(), "record", "-b", "perf", "--dev", loop.device(), "-o",
                                   pf, "--"};
  for (const std::string& a : Fio(loop, json)) argv.push_back(a);
  CommandResult perf_rec = RunCmd(argv);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_EQ(perf_rec.exit_code, 0) << perf_rec.err;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << Sh("cat " + ft_err).out;
  const uint64_t fio_reads = FioReads(json);
  ASSERT_EQ(fio_reads, static_cast<uint64_t>(kIos));

  // perf's books: the kernel counted exactly the requests fio made; samples + losses = count.
  std::smatch m;
  std::regex row("block:block_rq_complete\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)");
  ASSERT_TRUE(std::regex_search(perf_rec.err, m, row)) << perf_rec.err;
  const uint64_t recorded = std::stoull(m[1]), kernel = std::stoull(m[2]);
  const uint64_t ring_lost = std::stoull(m[3]), silent = std::stoull(m[4]);
  EXPECT_EQ(kernel, fio_reads);
  EXPECT_EQ(recorded + ring_lost + silent, kernel);
  // ... and the perf report shows every one of those losses (LOST / LOST_SAMPLES in the file).
  EXPECT_EQ(ReportLosses(pf), ring_lost + silent) << "perf report must show the drops";

  // ftrace kept every completion: as many as the kernel counted for the workload.
  CommandResult ft_rep = RunCmd({Binary(), "report", "-i", ft, "--summary-csv", dir.File("f.csv")});
  ASSERT_EQ(ft_rep.exit_code, 0) << ft_rep.err;
  EXPECT_EQ(SummaryCounts(dir.File("f.csv"))["read D2C"], kernel);
  EXPECT_EQ(ReportLosses(ft), 0u);

  // The requests both captured: the referees' decodings paired by the independent reference,
  // matched request by request.
  std::string scripts = IOTRACE_SCRIPTS;
  std::string a = dir.File("perf.req"), b = dir.File("ftrace.req");
  ASSERT_EQ(Sh("perf script -i " + pf + " --ns -F cpu,time,event,trace 2>/dev/null | python3 " +
               scripts + "/reference_pairing.py --requests > " + a)
                .exit_code,
            0);
  ASSERT_EQ(Sh("trace-cmd report -t -i " + ft + " 2>/dev/null | python3 " + scripts +
               "/reference_pairing.py --requests > " + b)
                .exit_code,
            0);
  CommandResult cmp = Sh("python3 " + std::string(IOTRACE_SOURCE_DIR) +
                         "/tests/live/compare_backends.py " + a + " " + b);
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  std::regex matched("matched (\\d+) only_a (\\d+) only_b (\\d+) split (\\d+)");
  ASSERT_TRUE(std::regex_search(cmp.out, m, matched)) << cmp.out;
  EXPECT_EQ(std::stoull(m[1]), recorded) << "every request perf captured is in ftrace's file\n"
                                          << cmp.out;
  EXPECT_EQ(std::stoull(m[2]), 0u) << cmp.out;
  EXPECT_EQ(std::stoull(m[3]), kernel - recorded) << cmp.out;
  // A request whose issue the two backends stamped a vCPU stall apart (its insert and completion
  // stamps agree) is rare: one in 20,000 in the runs that showed it. A backend whose issue stamps
  // were off would make many.
  EXPECT_LE(std::stoull(m[4]), std::stoull(m[1]) / 1000) << cmp.out;
  // The two backends stamp the same event separately (one probe after the other, ~0.5 us
  // apart, more when an interrupt lands between them): medians and p90 agree within the
  // histogram's bucket error plus that offset.
  std::regex pct("(I2D|D2C) p(50|90) (\\d+) (\\d+)");
  for (auto it = std::sregex_iterator(cmp.out.begin(), cmp.out.end(), pct);
       it != std::sregex_iterator(); ++it) {
    double va = std::stod((*it)[3]), vb = std::stod((*it)[4]);
    EXPECT_LE(std::fabs(va - vb), std::max(va, vb) / 32 + 1000) << it->str() << "\n" << cmp.out;
  }
}

// Summary CSV rows keyed "op phase" -> all numeric fields.
std::map<std::string, std::vector<double>> SummaryRows(const std::string& csv_path) {
  std::map<std::string, std::vector<double>> out;
  std::ifstream in(csv_path);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string x;
    while (std::getline(ls, x, ',')) f.push_back(x);
    if (f.size() != 12) continue;
    std::vector<double> v;
    for (size_t i = 4; i < f.size(); ++i) v.push_back(std::stod(f[i]));
    out[f[2] + " " + f[3]] = v;
  }
  return out;
}

// trace-cmd records the run in its own instance while iotrace's ftrace backend records it in
// another: iotrace report gives the same numbers on trace-cmd's trace.dat as on its own.
TEST(ReportTraceCmdLiveTest, TraceCmdsTraceDatGivesTheSameNumbersAsOurs) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  IOTRACE_REQUIRE_TOOL("trace-cmd");
  TempDir dir;
  ScratchLoop loop("mq-deadline", 512);
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string ours = dir.File("ours.dat"), theirs = dir.File("theirs.dat");
  pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stderr);
    execl(Binary().c_str(), "iotrace", "record", "-b", "ftrace", "--no-progress", "--dev",
          loop.device().c_str(), "-o", ours.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  // trace-cmd 3.1.6 needs -d --no-filter here (docs/kernel-notes.md) and leaves its instance
  // behind.
  const std::string instance = "iotrace_live_tc_" + std::to_string(getpid());
  std::vector<std::string> argv = {"trace-cmd", "record", "-d", "--no-filter", "-B", instance,
                                   "-C", "mono", "-e", "block:block_rq_insert", "-e",
                                   "block:block_rq_issue", "-e", "block:block_rq_complete",
                                   "-e", "block:block_rq_requeue", "-e", "block:block_rq_merge",
                                   "--file-version", "6", "-o", theirs, "--"};
  for (const std::string& a : Fio(loop, dir.File("fio.json"))) argv.push_back(a);
  CommandResult tc = RunCmd(argv);
  Sh("rmdir /sys/kernel/tracing/instances/" + instance + " 2>/dev/null");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  // trace-cmd 3.1.6 may exit 1 here after writing a complete file ("Cannot find description
  // for buffer"): what counts is that trace-cmd itself reads the file back.
  CommandResult tc_read = RunCmd({"trace-cmd", "report", "-i", theirs});
  ASSERT_EQ(tc_read.exit_code, 0) << tc.err << tc_read.err;
  ASSERT_GE(CountLines(tc_read.out, "block_rq_issue:"), static_cast<size_t>(kIos)) << tc.err;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // trace-cmd's -f filter fails here (it opens set_ftrace_filter): it records every disk, so
  // both reports are narrowed to the scratch device.
  ASSERT_EQ(RunCmd({Binary(), "report", "-i", ours, "--dev", loop.majmin(), "--summary-csv",
                    dir.File("ours.csv")})
                .exit_code,
            0);
  CommandResult rep = RunCmd({Binary(), "report", "-i", theirs, "--dev", loop.majmin(),
                              "--summary-csv", dir.File("theirs.csv")});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  auto a = SummaryRows(dir.File("ours.csv")), b = SummaryRows(dir.File("theirs.csv"));
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [key, va] : a) {
    ASSERT_TRUE(b.count(key)) << key;
    const std::vector<double>& vb = b[key];
    EXPECT_EQ(va[0], vb[0]) << key << ": counts differ";
    EXPECT_EQ(va[0], static_cast<double>(kIos)) << key;
    // Two instances stamp each event separately, one after the other (tens of ns apart, more
    // when an interrupt lands between them, which moves single requests and so the tail: p99
    // of a ~2 us I2D was seen 312 ns apart): p50 and p90 agree within the histogram's bucket
    // error plus that offset. The exact-equality check on the same events is
    // ReportTraceCmdLiveTest.TraceCmdRewritingOurFileChangesNothing.
    for (size_t i = 3; i <= 4; ++i) {  // p50, p90
      EXPECT_LE(std::fabs(va[i] - vb[i]), std::max(va[i], vb[i]) / 32 + 200) << key << " field "
                                                                              << i;
    }
  }
}

// fio randrw with 4k reads and 16k writes over 4 MiB of a disk with no scheduler, offsets drawn
// with repeats (--norandommap): a request is often issued at the sector of one still in flight
// (a read and a write of one block, two reads of it). Every request fio made is paired, and the
// report agrees row by row with the independent reference reading trace-cmd's decoding of the
// same file.
TEST(ReportLiveOverlapTest, RequestsInFlightAtOneSectorArePairedAsTheReferenceDoes) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("fio");
  IOTRACE_REQUIRE_TOOL("trace-cmd");
  IOTRACE_REQUIRE_TOOL("python3");
  TempDir dir;
  ScratchLoop loop("none", 512);
  ASSERT_TRUE(loop.ok()) << loop.error();
  const std::string out = dir.File("rw.dat");
  CommandResult rec = RunCmd({Binary(), "record", "-b", "ftrace", "--no-progress", "--dev",
                              loop.device(), "-o", out, "--", "fio", "--name=t",
                              "--filename=" + loop.device(), "--rw=randrw", "--bs=4k,16k",
                              "--size=4m", "--io_size=1g", "--norandommap", "--iodepth=16",
                              "--ioengine=libaio", "--direct=1",
                              "--number_ios=" + std::to_string(kIos), "--output-format=json",
                              "--output=" + dir.File("fio.json")});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  CommandResult rep = RunCmd({Binary(), "report", "-i", out, "--summary-csv", dir.File("ours.csv")});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  std::smatch m;
  const std::string text = Squeezed(rep.out);
  ASSERT_TRUE(std::regex_search(text, m, std::regex("\\+(\\d+) kept apart"))) << rep.out;
  EXPECT_GT(std::stoull(m[1]), 0u) << "the workload must put two requests at one sector";
  std::string scripts = IOTRACE_SCRIPTS;
  ASSERT_EQ(Sh("trace-cmd report -t -i " + out + " 2>/dev/null | python3 " + scripts +
               "/reference_pairing.py > " + dir.File("ref.csv"))
                .exit_code,
            0);
  auto ours = SummaryRows(dir.File("ours.csv")), ref = SummaryRows(dir.File("ref.csv"));
  ASSERT_FALSE(ref.empty());
  ASSERT_EQ(ours.size(), ref.size());
  for (const auto& [key, a] : ours) {
    ASSERT_TRUE(ref.count(key)) << key;
    const std::vector<double>& b = ref[key];
    EXPECT_EQ(a[0], b[0]) << key << ": count\n" << rep.out;
    EXPECT_EQ(a[1], b[1]) << key << ": min";
    EXPECT_EQ(a[7], b[7]) << key << ": max";
    EXPECT_NEAR(a[2], b[2], 0.1) << key << ": mean";
  }
  // The recording is lossless: every read and write fio made is a D2C sample.
  const std::string fio_json = dir.File("fio.json");
  ASSERT_GT(FioIos(fio_json, "read"), 0u);
  ASSERT_GT(FioIos(fio_json, "write"), 0u);
  EXPECT_EQ(ours["read D2C"][0], static_cast<double>(FioIos(fio_json, "read"))) << rep.out;
  EXPECT_EQ(ours["write D2C"][0], static_cast<double>(FioIos(fio_json, "write"))) << rep.out;
  EXPECT_NE(text.find("collisions 0 "), std::string::npos) << rep.out;
}

// A disk whose completions arrive by interrupt (the root disk here: virtio-blk, interrupts on
// CPU1) while the issuing CPU sleeps between writes: on this kernel perf loses the completion
// samples taken in the idle task. Whatever it loses, the books must balance, the file must say
// so, and the report must show it and mark D2C incomplete.
TEST(ReportBackendsLiveTest, PerfSilentDropsOnAnInterruptDrivenDiskAreCountedAndShown) {
  IOTRACE_REQUIRE_LIVE();
  TempDir dir;
  CommandResult df = Sh("df --output=source " + dir.path() + " | tail -1");
  std::string source = df.out.substr(0, df.out.find('\n'));
  if (source.rfind("/dev/", 0) != 0) GTEST_SKIP() << dir.path() << " is not on a block device";
  // The whole disk of that filesystem (vda for vda1): --dev takes the device node.
  std::string data = dir.File("perf.data");
  std::string work = dir.File("writes.bin");
  CommandResult rec = RunCmd(
      {Binary(), "record", "-b", "perf", "--dev", source, "-o", data, "--", "taskset", "-c", "0",
       "sh", "-c",
       "for i in $(seq 300); do dd if=/dev/zero of=" + work +
           " bs=4k count=1 seek=$i oflag=direct conv=notrunc status=none; sleep 0.002; done"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  std::smatch m;
  std::regex row("block:block_rq_complete\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)");
  ASSERT_TRUE(std::regex_search(rec.err, m, row)) << rec.err;
  const uint64_t recorded = std::stoull(m[1]), kernel = std::stoull(m[2]);
  const uint64_t ring_lost = std::stoull(m[3]), silent = std::stoull(m[4]);
  EXPECT_GE(kernel, 300u);
  EXPECT_EQ(recorded + ring_lost + silent, kernel) << rec.err;
  CommandResult rep = RunCmd({Binary(), "report", "-i", data});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_GE(ReportLosses(data), ring_lost + silent);
  if (silent > 0) {
    EXPECT_NE(rec.err.find("dropped " + std::to_string(silent) +
                           (silent == 1 ? " sample silently" : " samples silently")),
              std::string::npos)
        << rec.err;
    EXPECT_NE(rep.out.find("silent_drop"), std::string::npos) << rep.out;
    EXPECT_NE(rep.out.find("incomplete"), std::string::npos) << rep.out;
  }
  std::printf("perf lost %llu of %llu completions silently here\n",
              static_cast<unsigned long long>(silent), static_cast<unsigned long long>(kernel));
}

// --backend auto says which backend it chose and why, and the choice follows its checks
// (AutoBackend's rule: ftrace wherever it records without loss).
TEST(ReportBackendsLiveTest, AutoBackendSaysWhichAndWhy) {
  IOTRACE_REQUIRE_LIVE();
  TempDir dir;
  std::string out = dir.File("auto.out");
  CommandResult rec = RunCmd({Binary(), "record", "-d", "0.3", "-o", out});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  std::smatch m;
  std::regex line("recording with the (perf|ftrace) backend \\(auto: ([^)]*)");
  ASSERT_TRUE(std::regex_search(rec.err, m, line)) << rec.err;
  std::string backend = m[1], reason = m[2];
  if (backend == "ftrace") {
    // Taken wherever it records: its check's books come first.
    EXPECT_TRUE(reason.find("ftrace recorded all") == 0 ||
                reason.find("ftrace: no check event fired") == 0 ||
                reason.find("ftrace lost") == 0 || reason.find("ftrace cannot record") == 0)
        << reason;
  } else {
    // perf only where ftrace cannot record, or lost events in its check.
    EXPECT_TRUE(reason.find("ftrace cannot record") == 0 || reason.find("ftrace lost") == 0)
        << reason;
  }
  // The file is what the backend writes.
  std::string magic = Sh("head -c 10 " + out + " | od -An -c | tr -d ' '").out;
  EXPECT_NE(magic.find(backend == "perf" ? "PERFILE2" : "tracing"), std::string::npos)
      << backend << ": " << magic;
  std::printf("auto chose %s: %s\n", backend.c_str(), reason.c_str());
}

// trace-cmd rewrites iotrace's trace.dat (trace-cmd convert, to v6 and to uncompressed v7): the
// same events in a file trace-cmd wrote give exactly the same numbers.
// perf record -o - | iotrace report -i -: the pipe-mode stream read from standard input gives
// the report of the same stream saved to a file, and the reads dd made.
TEST(ReportPerfPipeLiveTest, PerfsPipeModeStreamOnStandardInput) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("perf");
  TempDir dir;
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  const std::string saved = dir.File("saved.data"), a = dir.File("a.csv"), b = dir.File("b.csv");
  CommandResult piped = Sh(
      "perf record -e block:block_rq_insert -e block:block_rq_issue -e block:block_rq_complete "
      "-a -o - -- dd if=" + loop.device() + " of=/dev/null bs=4k count=500 iflag=direct "
      "status=none 2>/dev/null | tee " + saved + " | " + Binary() +
      " report -i - --dev " + loop.majmin() + " --summary-csv " + a);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_NE(piped.out.find("iotrace report: -"), std::string::npos) << piped.out;
  CommandResult file = RunCmd({Binary(), "report", "-i", saved, "--dev", loop.majmin(),
                               "--summary-csv", b});
  ASSERT_EQ(file.exit_code, 0) << file.err;
  const std::string from_stdin = Sh("cat " + a).out;
  EXPECT_EQ(from_stdin, Sh("cat " + b).out);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(from_stdin, m, std::regex(",read,D2C,(\\d+),"))) << from_stdin;
  EXPECT_LE(std::stoull(m[1]), 500u);
  EXPECT_GE(std::stoull(m[1]) + ReportLosses(saved), 500u);
}

// SIGKILL cannot be caught: the perf backend's file then has its tracing data and records but no
// finished header. The report reads what is there and marks every phase incomplete.
TEST(ReportBackendsLiveTest, AKilledPerfRecordingIsReportedWithItsGap) {
  IOTRACE_REQUIRE_LIVE();
  TempDir dir;
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  const std::string out = dir.File("killed.data");
  pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stderr);
    execl(Binary().c_str(), "iotrace", "record", "-b", "perf", "--no-progress", "--dev",
          loop.device().c_str(), "-o", out.c_str(), "--", "sh", "-c",
          ("while :; do dd if=" + loop.device() +
           " of=/dev/null bs=4k count=200 iflag=direct status=none; done")
              .c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  Sh("pkill -f 'of=/dev/null bs=4k count=200 iflag=direct'");
  CommandResult rep = RunCmd({Binary(), "report", "-i", out, "--summary-csv", dir.File("s.csv")});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const std::string text = Squeezed(rep.out);
  EXPECT_NE(text.find("file_not_finished 1"), std::string::npos) << rep.out;
  EXPECT_NE(text.find("D2C is incomplete"), std::string::npos) << rep.out;
  EXPECT_NE(text.find("the file was not finished"), std::string::npos) << rep.out;
  std::smatch m;
  const std::string csv = Sh("cat " + dir.File("s.csv")).out;
  ASSERT_TRUE(std::regex_search(csv, m, std::regex(",read,D2C,(\\d+),"))) << csv;
  EXPECT_GT(std::stoull(m[1]), 100u);
}

TEST(ReportTraceCmdLiveTest, TraceCmdRewritingOurFileChangesNothing) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("trace-cmd");
  TempDir dir;
  ScratchLoop loop("mq-deadline");
  ASSERT_TRUE(loop.ok()) << loop.error();
  std::string ours = dir.File("ours.dat");
  CommandResult rec = RunCmd({Binary(), "record", "-b", "ftrace", "--dev", loop.device(), "-o",
                              ours, "--", "sh", "-c",
                              "dd if=" + loop.device() + " of=/dev/null bs=4k iflag=direct "
                              "count=2000 status=none"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  auto report = [&](const std::string& file) {
    std::string csv = file + ".csv";
    CommandResult r = RunCmd({Binary(), "report", "-i", file, "--summary-csv", csv});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Sh("cat " + csv).out;
  };
  std::string expected = report(ours);
  ASSERT_NE(expected.find(",read,D2C,2000,"), std::string::npos) << expected;
  // v6; v7 uncompressed; v7 as trace-cmd writes it by default (zstd-compressed).
  for (const char* variant : {"6", "7none", "7"}) {
    const std::string v(variant);
    std::string theirs = dir.File("theirs_v" + v + ".dat");
    std::vector<std::string> argv = {"trace-cmd", "convert", "-i", ours, "-o", theirs,
                                     "--file-version", v.substr(0, 1)};
    if (v == "7none") {
      argv.push_back("--compression");
      argv.push_back("none");
    }
    CommandResult conv = RunCmd(argv);
    ASSERT_EQ(conv.exit_code, 0) << conv.err;
    EXPECT_EQ(report(theirs), expected) << "trace-cmd's v" << v << " file";
  }
  // No room to inflate the compressed one: a one-line error that says where, and a hint.
  std::string tiny = dir.File("tiny");
  ASSERT_EQ(Sh("mkdir -p " + tiny + " && mount -t tmpfs -o size=4k iotrace_live_tiny " + tiny)
                .exit_code,
            0);
  CommandResult full = Sh("TMPDIR=" + tiny + " " + Binary() + " report -i " +
                          dir.File("theirs_v7.dat"));
  Sh("umount " + tiny);
  EXPECT_EQ(full.exit_code, 1) << full.out;
  EXPECT_NE(full.err.find("iotrace: error: read trace.dat"), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("hint: set TMPDIR"), std::string::npos) << full.err;
}

}  // namespace
}  // namespace iotrace::live
