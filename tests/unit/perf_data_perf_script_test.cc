// perf itself (perf script / perf report --header-only, no root needed for a file) reads what
// PerfDataWriter writes: every sample with its decoded fields, and every header feature.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/perf_data_writer.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

namespace iotrace {
namespace {

constexpr char kPerf[] = "/usr/bin/perf";

// Runs `command` through the shell; its stdout.
std::string RunShell(const std::string& command, int* status) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *status = ::pclose(p);
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl > start) lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

class PerfDataPerfScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kPerf, X_OK) != 0) GTEST_SKIP() << kPerf << " is not installed (linux-perf)";
    setup_ = test::LoadBlockSetup();
    ASSERT_GE(setup_.formats.size(), 2u);
    path_ = test::TmpPath("iotrace-perfdata-ps");
  }
  void TearDown() override { ::unlink(path_.c_str()); }

  test::BlockSetup setup_;
  std::string path_;
};

TEST_F(PerfDataPerfScriptTest, PerfScriptDecodesEverySample) {
  const uint32_t cpus = 2;
  std::vector<PerfEventSpec> specs = test::BlockSpecs(setup_, cpus);
  auto w = PerfDataWriter::Create(path_, specs, setup_.meta, test::TestHost());
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->AppendComm(4242, 4242, "dd", perf::SampleId()).ok());

  struct Want {
    uint64_t ts;
    uint32_t cpu;
    size_t event;
    uint64_t sector;
    std::string rwbs;
  };
  std::vector<Want> want;
  const char* kRwbs[] = {"W", "RA", "WS", "FWS", "R"};
  uint64_t t = 5000000123;
  for (int drain = 0; drain < 5; ++drain) {
    for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
      test::PerfRecordBuilder b;
      for (int i = 0; i < 7; ++i) {
        const size_t e = (i + cpu) % 2;
        test::BlockRq rq;
        rq.common_pid = 4242;
        rq.sector = 1000000 + want.size() * 8;
        rq.rwbs = kRwbs[want.size() % 5];
        rq.comm = "dd";
        test::SampleFields s;
        s.id = test::SyntheticId(e, cpu, cpus);
        s.pid = s.tid = 4242;
        s.time = t + drain * 1000000 + cpu * 333 + i * 10007;
        s.cpu = cpu;
        s.raw = test::EncodeBlockRq(setup_.formats[e], rq);
        b.AddSample(specs[e].attr, s);
        want.push_back({s.time, cpu, e, rq.sector, rq.rwbs});
      }
      ASSERT_TRUE((*w)->AppendData(b.view()).ok());
    }
    perf::SampleId id;
    id.id = test::SyntheticId(1, 1, cpus);
    id.time = t + drain * 1000000 + 999000;
    id.cpu = 1;
    ASSERT_TRUE((*w)->AppendLostSamples(1, 3, id).ok());
    ASSERT_TRUE((*w)->AppendFinishedRound().ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
  std::stable_sort(want.begin(), want.end(),
                   [](const Want& a, const Want& b) { return a.ts < b.ts; });

  int status = 0;
  std::string out =
      RunShell(absl::StrFormat("%s script -i %s -F comm,tid,cpu,time,event,trace --ns "
                               "2>/dev/null",
                               kPerf, path_),
               &status);
  ASSERT_EQ(status, 0) << out;
  std::vector<std::string> lines = Lines(out);
  ASSERT_EQ(lines.size(), want.size()) << out;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string& line = lines[i];
    const Want& w = want[i];
    // e.g. "dd  4242 [001] 5.000010130: block:block_rq_issue: 7,3 RA 4096 () 1000008 + 8 ..."
    const std::string time = absl::StrFormat("%d.%09d:", w.ts / 1000000000, w.ts % 1000000000);
    EXPECT_NE(line.find(time), std::string::npos) << line << " wants " << time;
    EXPECT_NE(line.find(absl::StrFormat("[%03d]", w.cpu)), std::string::npos) << line;
    EXPECT_EQ(line.find("dd "), line.find_first_not_of(' ')) << line;
    EXPECT_NE(line.find(" 4242 "), std::string::npos) << line;
    EXPECT_NE(line.find(setup_.formats[w.event].FullName() + ":"), std::string::npos) << line;
    EXPECT_NE(line.find(absl::StrFormat("7,3 %s ", w.rwbs)), std::string::npos) << line;
    EXPECT_NE(line.find(absl::StrFormat(" %d + 8 ", w.sector)), std::string::npos) << line;
  }
}

TEST_F(PerfDataPerfScriptTest, PerfReportReadsEveryHeaderFeature) {
  test::SyntheticOptions o;
  o.samples = 20;
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path_, o, nullptr).ok());
  int status = 0;
  std::string out =
      RunShell(absl::StrFormat("%s report --header-only -i %s 2>&1", kPerf, path_), &status);
  ASSERT_EQ(status, 0) << out;
  HostInfo host = test::TestHost();
  for (const std::string& want :
       {"# hostname : " + host.hostname, "# os release : " + host.os_release,
        "# perf version : " + host.tool_version, "# arch : " + host.arch,
        std::string("# nrcpus online : 2"), std::string("# nrcpus avail : 2"),
        "# cpudesc : " + host.cpu_desc, "# cpuid : " + host.cpuid,
        std::string("# total memory : 1048576 kB"),
        std::string("# cmdline : iotrace record -o test.data"),
        std::string("# event : name = block:block_rq_issue, , id = { 1000, 1001 }"),
        std::string("# event : name = block:block_rq_complete, , id = { 1002, 1003 }"),
        std::string("# clockid: monotonic (1)"), std::string("# reference time: ")}) {
    EXPECT_NE(out.find(want), std::string::npos) << "missing '" << want << "' in\n" << out;
  }
  const std::string missing = out.substr(out.find("# missing features:"));
  for (const char* present :
       {"TRACING_DATA", " HOSTNAME", "EVENT_DESC", "CLOCKID", "CLOCK_DATA ", "CMDLINE"}) {
    EXPECT_EQ(missing.find(present), std::string::npos) << present << " reported missing";
  }
}

}  // namespace
}  // namespace iotrace
