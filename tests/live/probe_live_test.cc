// Dynamic probes on this kernel. REQUIRES: root, tracefs at /sys/kernel/tracing with
// uprobe_events, a C compiler (cc) for the probed test program, x86-64 (the arguments are read
// from %di/%si). A uprobe on a function called N times with known arguments must record exactly
// N hits with those values through perf and through an ftrace instance, and be gone from
// uprobe_events/dynamic_events afterwards; a kprobe must fail with the clear error where the
// kernel has no kprobe support (and record where it has).
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/bytes.h"
#include "iotrace/base/status.h"
#include "iotrace/capture/perf_capture.h"
#include "iotrace/sys/probe.h"
#include "iotrace/sys/tracefs.h"
#include "live_util.h"

namespace iotrace {
namespace {

constexpr char kTracefs[] = "/sys/kernel/tracing";
constexpr int kCalls = 1000;

// The probed program: iotrace_probe_target(1000 + i, -3 * i) for i in [0, N).
constexpr char kProgram[] = R"(#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline, used)) int iotrace_probe_target(int v, long w) {
  __asm__ volatile("" ::: "memory");
  return v + (int)w;
}
int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 0;
  long sum = 0;
  for (int i = 0; i < n; ++i) sum += iotrace_probe_target(1000 + i, -3L * i);
  printf("%ld\n", sum);
  return 0;
}
)";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ProbeBlocker() {
#if !defined(__x86_64__)
  return "the probed arguments are read from x86-64 registers";
#endif
  if (geteuid() != 0) return "needs root (dynamic probe events, perf tracepoints)";
  if (access((std::string(kTracefs) + "/events").c_str(), R_OK) != 0) {
    return "needs tracefs at /sys/kernel/tracing";
  }
  if (access((std::string(kTracefs) + "/uprobe_events").c_str(), W_OK) != 0) {
    return "needs uprobe_events (CONFIG_UPROBE_EVENTS)";
  }
  if (!live::HaveTool("cc")) return "needs a C compiler (cc) to build the probed program";
  return "";
}

#define REQUIRE_PROBES()                                    \
  do {                                                      \
    std::string blocker_ = ProbeBlocker();                  \
    if (!blocker_.empty()) GTEST_SKIP() << blocker_;        \
  } while (0)

class ProbeLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_PROBES();
    program_ = dir_.File("probe_target");
    std::ofstream(dir_.File("probe_target.c")) << kProgram;
    live::CommandResult cc =
        live::RunCmd({"cc", "-O2", "-o", program_, dir_.File("probe_target.c")});
    ASSERT_EQ(cc.exit_code, 0) << cc.err;
  }
  // Runs the program; returns its pid-independent output (the sum) for a sanity check.
  void RunProgram(int calls) {
    live::CommandResult r = live::RunCmd({program_, std::to_string(calls)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static bool GroupGone(const std::string& group) {
    struct stat st;
    return ReadAll(std::string(kTracefs) + "/uprobe_events").find(group + "/") ==
               std::string::npos &&
           ReadAll(std::string(kTracefs) + "/dynamic_events").find(group + "/") ==
               std::string::npos &&
           stat((std::string(kTracefs) + "/events/" + group).c_str(), &st) != 0;
  }

  live::TempDir dir_;
  std::string program_;
};

struct Hit {
  int32_t pid = 0;
  int32_t v = 0;
  int64_t w = 0;
};

// Walks perf records (IDENTIFIER|TID|TIME|CPU|RAW samples, see TracepointAttr) and decodes
// the probe's v and w from each sample's raw data.
void ParseSamples(const std::string& bytes, const EventFormat& format, std::vector<Hit>* hits,
                  int* bad) {
  const FieldInfo* v = format.FindField("v");
  const FieldInfo* w = format.FindField("w");
  ASSERT_NE(v, nullptr);
  ASSERT_NE(w, nullptr);
  ByteView all(bytes.data(), bytes.size());
  size_t at = 0;
  while (at + sizeof(perf_event_header) <= all.size) {
    perf_event_header h;
    LoadAt(all, at, &h);
    if (h.size < sizeof(h) || !all.Contains(at, h.size)) {
      ++*bad;
      return;
    }
    if (h.type == PERF_RECORD_SAMPLE) {
      ByteReader r(all.Sub(at + sizeof(h), h.size - sizeof(h)));
      uint64_t id, time;
      uint32_t pid, tid, cpu, res, raw_size;
      r.Read(&id);
      r.Read(&pid);
      r.Read(&tid);
      r.Read(&time);
      r.Read(&cpu);
      r.Read(&res);
      r.Read(&raw_size);
      ByteView raw;
      r.ReadBytes(raw_size, &raw);
      Hit hit;
      hit.pid = static_cast<int32_t>(pid);
      if (!r.ok() || !LoadAt(raw, v->offset, &hit.v) || !LoadAt(raw, w->offset, &hit.w)) {
        ++*bad;
      } else {
        hits->push_back(hit);
      }
    }
    at += h.size;
  }
}

void ExpectTheProgramsArguments(const std::vector<int32_t>& vs, const std::vector<int64_t>& ws) {
  ASSERT_EQ(vs.size(), static_cast<size_t>(kCalls));
  std::set<int32_t> seen(vs.begin(), vs.end());
  EXPECT_EQ(seen.size(), static_cast<size_t>(kCalls)) << "every call once";
  EXPECT_EQ(*seen.begin(), 1000);
  EXPECT_EQ(*seen.rbegin(), 1000 + kCalls - 1);
  for (size_t i = 0; i < vs.size() && i < ws.size(); ++i) {
    EXPECT_EQ(ws[i], -3L * (vs[i] - 1000)) << "call with v=" << vs[i];
  }
}

TEST_F(ProbeLiveTest, UprobeRecordsEveryCallWithItsArgumentsThroughPerf) {
  const std::string def =
      "p:hit " + program_ + ":iotrace_probe_target v=%di:s32 w=%si:s64";
  DynamicProbeOptions opt;
  opt.tracefs = kTracefs;
  auto probes = DynamicProbes::Create({def}, opt);
  ASSERT_TRUE(probes.ok()) << probes.status();
  ASSERT_EQ((*probes)->events().size(), 1u);
  const TraceEventInfo& ev = (*probes)->events()[0];
  const std::string group = DefaultProbeGroup();
  EXPECT_EQ(ev.system, group);
  EXPECT_EQ(ev.name, "hit");
  EXPECT_NE(ReadAll(std::string(kTracefs) + "/uprobe_events").find(group + "/hit"),
            std::string::npos);

  std::vector<Hit> hits;
  int bad = 0;
  uint64_t counted = 0;
  {
    PerfCaptureOptions popt;
    popt.events = {ev};
    popt.mmap_pages = 256;
    auto cap = PerfCapture::Open(popt);
    ASSERT_TRUE(cap.ok()) << cap.status();
    ASSERT_TRUE((*cap)->Enable().ok());
    RunProgram(kCalls);
    ASSERT_TRUE((*cap)->Disable().ok());
    std::map<int, std::string> per_cpu;
    ASSERT_TRUE((*cap)
                    ->DrainAll([&](int cpu, ByteView a, ByteView b) {
                      per_cpu[cpu].append(a.AsString()).append(b.AsString());
                      return absl::OkStatus();
                    })
                    .ok());
    ASSERT_TRUE((*cap)->ReadCounts().ok());
    for (size_t c = 0; c < (*cap)->cpus().size(); ++c) counted += (*cap)->counts(0, c).kernel_count;
    for (const auto& [cpu, bytes] : per_cpu) ParseSamples(bytes, ev.format, &hits, &bad);
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(counted, static_cast<uint64_t>(kCalls));
  std::vector<int32_t> vs;
  std::vector<int64_t> ws;
  std::set<int32_t> pids;
  for (const Hit& h : hits) {
    vs.push_back(h.v);
    ws.push_back(h.w);
    pids.insert(h.pid);
  }
  EXPECT_EQ(pids.size(), 1u) << "all hits from the one program run";
  ExpectTheProgramsArguments(vs, ws);

  ASSERT_TRUE((*probes)->Remove().ok());
  EXPECT_TRUE(GroupGone(group));
}

TEST_F(ProbeLiveTest, UprobeRecordsEveryCallThroughAnFtraceInstance) {
  DynamicProbeOptions opt;
  opt.tracefs = kTracefs;
  opt.default_group = "iotrace_probes_ftrace_" + std::to_string(getpid());
  auto probes = DynamicProbes::Create(
      {"p:hit " + program_ + ":iotrace_probe_target v=%di:s32 w=%si:s64"}, opt);
  ASSERT_TRUE(probes.ok()) << probes.status();
  const TraceEventInfo ev = (*probes)->events()[0];
  EXPECT_EQ(ev.system, opt.default_group);

  std::string trace;
  uint64_t entries = 0, lost = 0;
  {
    auto inst = TracefsInstance::Create(kTracefs, "iotrace_probes_live_" + std::to_string(getpid()));
    ASSERT_TRUE(inst.ok()) << inst.status();
    ASSERT_TRUE((*inst)->SetBufferSizeKb(1024).ok());
    ASSERT_TRUE((*inst)->EnableEvent(ev.system, ev.name).ok());
    ASSERT_TRUE((*inst)->SetTracingOn(true).ok());
    RunProgram(kCalls);
    ASSERT_TRUE((*inst)->SetTracingOn(false).ok());
    auto cpus = OnlineCpus();
    ASSERT_TRUE(cpus.ok()) << cpus.status();
    for (int cpu : *cpus) {
      auto st = (*inst)->ReadCpuStats(cpu);
      ASSERT_TRUE(st.ok()) << st.status();
      entries += st->entries;
      lost += st->overrun + st->dropped_events;
    }
    auto text = (*inst)->ReadFile("trace");
    ASSERT_TRUE(text.ok()) << text.status();
    trace = *text;
  }
  EXPECT_EQ(entries, static_cast<uint64_t>(kCalls));
  EXPECT_EQ(lost, 0u);
  // Lines like "probe_target-123 [001] ..... 12.34: hit: (0x55d0c0a011c0) v=1000 w=0".
  std::vector<int32_t> vs;
  std::vector<int64_t> ws;
  std::istringstream lines(trace);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#' || line.find(" hit: ") == std::string::npos) continue;
    size_t vp = line.find(" v="), wp = line.find(" w=");
    ASSERT_NE(vp, std::string::npos) << line;
    ASSERT_NE(wp, std::string::npos) << line;
    vs.push_back(std::stoi(line.substr(vp + 3)));
    ws.push_back(std::stoll(line.substr(wp + 3)));
  }
  ExpectTheProgramsArguments(vs, ws);
  ASSERT_TRUE((*probes)->Remove().ok());
  EXPECT_TRUE(GroupGone(opt.default_group));
}

TEST_F(ProbeLiveTest, DestructorRemovesProbesInAUserGivenGroup) {
  const std::string group = "iotrace_probes_user_" + std::to_string(getpid());
  DynamicProbeOptions opt;
  opt.tracefs = kTracefs;
  {
    auto probes = DynamicProbes::Create(
        {"p:" + group + "/entry " + program_ + ":iotrace_probe_target",
         "r:" + group + "/ret " + program_ + ":iotrace_probe_target rv=$retval:s32"},
        opt);
    ASSERT_TRUE(probes.ok()) << probes.status();
    ASSERT_EQ((*probes)->events().size(), 2u);
    EXPECT_EQ((*probes)->events()[1].FullName(), group + ":ret");
    EXPECT_NE((*probes)->events()[1].format.FindField("rv"), nullptr);
    EXPECT_FALSE(GroupGone(group));
  }
  EXPECT_TRUE(GroupGone(group));
}

TEST_F(ProbeLiveTest, KernelRejectionShowsItsErrorLogAndUndoesEarlierProbes) {
  const std::string group = "iotrace_probes_reject_" + std::to_string(getpid());
  DynamicProbeOptions opt;
  opt.tracefs = kTracefs;
  opt.default_group = group;
  // Our parser lets "$comm:u32" through; the kernel refuses it ("$comm and immediate-string
  // only accepts string type"), after the first probe was created.
  auto probes = DynamicProbes::Create(
      {"p:first " + program_ + ":iotrace_probe_target",
       "p:second " + program_ + ":iotrace_probe_target c=$comm:u32"},
      opt);
  ASSERT_FALSE(probes.ok());
  const std::string msg(probes.status().message());
  EXPECT_NE(msg.find("create uprobe " + group + ":second"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the kernel says:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("string type"), std::string::npos) << msg;
  EXPECT_TRUE(GroupGone(group)) << "the first probe was removed again";
}

TEST_F(ProbeLiveTest, ExistingEventIsNotTakenOverOrRemoved) {
  const std::string group = "iotrace_probes_exist_" + std::to_string(getpid());
  DynamicProbeOptions opt;
  opt.tracefs = kTracefs;
  auto first = DynamicProbes::Create({"p:" + group + "/e " + program_ + ":iotrace_probe_target"}, opt);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = DynamicProbes::Create({"p:" + group + "/e " + program_ + ":iotrace_probe_target"}, opt);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists) << second.status();
  EXPECT_NE(HintOf(second.status()).find("iotrace reset"), std::string::npos);
  EXPECT_FALSE(GroupGone(group)) << "the failed second set must not remove the first's probe";
  ASSERT_TRUE((*first)->Remove().ok());
  EXPECT_TRUE(GroupGone(group));
}

TEST(ProbeLiveKprobeTest, KprobeFailsClearlyWithoutKprobeSupportElseRecords) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  if (access((std::string(kTracefs) + "/events").c_str(), R_OK) != 0) {
    GTEST_SKIP() << "needs tracefs at /sys/kernel/tracing";
  }
  DynamicProbeOptions opt;
  opt.tracefs = kTracefs;
  auto probes = DynamicProbes::Create({"p:kread vfs_read"}, opt);
  if (!DetectProbeSupport(kTracefs).kprobes) {
    ASSERT_FALSE(probes.ok());
    EXPECT_EQ(probes.status().code(), absl::StatusCode::kFailedPrecondition);
    const std::string msg(probes.status().message());
    EXPECT_NE(msg.find("this kernel has no kprobe support"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    EXPECT_NE(HintOf(probes.status()).find("CONFIG_KPROBE_EVENTS"), std::string::npos);
  } else {
    ASSERT_TRUE(probes.ok()) << probes.status();
    PerfCaptureOptions popt;
    popt.events = (*probes)->events();
    popt.mmap_pages = 64;
    auto cap = PerfCapture::Open(popt);
    ASSERT_TRUE(cap.ok()) << cap.status();
    ASSERT_TRUE((*cap)->Enable().ok());
    ReadAll("/proc/self/status");
    ASSERT_TRUE((*cap)->Disable().ok());
    ASSERT_TRUE((*cap)->ReadCounts().ok());
    uint64_t counted = 0;
    for (size_t c = 0; c < (*cap)->cpus().size(); ++c) counted += (*cap)->counts(0, c).kernel_count;
    EXPECT_GT(counted, 0u);
  }
  EXPECT_EQ(ReadAll(std::string(kTracefs) + "/dynamic_events").find("kread"), std::string::npos);
}

}  // namespace
}  // namespace iotrace
