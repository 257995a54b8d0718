#include "iotrace/cli/doctor.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fixtures.h"
#include "gtest/gtest.h"
#include "test_files.h"

namespace iotrace {
namespace {

namespace fs = std::filesystem;

using test::ReadFixture;

std::vector<EventFormat> BlockFormats() {
  std::vector<EventFormat> out;
  for (const char* ev : {"block_rq_issue", "block_rq_complete", "block_rq_requeue"}) {
    auto f = ParseEventFormat("block", test::ReadBlockFormat(ev));
    EXPECT_TRUE(f.ok()) << f.status();
    if (f.ok()) out.push_back(*f);
  }
  return out;
}

bool HasLine(const std::vector<std::string>& lines, const std::string& needle) {
  for (const std::string& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(DescribeBlockLayoutTest, NamesTheQuirksOfThe618Layout) {
  std::vector<std::string> names = {"block_rq_insert", "block_rq_issue", "block_rq_complete",
                                    "block_rq_requeue", "block_rq_merge", "block_io_start",
                                    "block_io_done"};
  std::vector<std::string> lines = DescribeBlockLayout(BlockFormats(), names);
  EXPECT_TRUE(HasLine(lines, "block_rq_issue: dev@8 sector@16 nr_sector@24 bytes@28 ioprio@32 "
                             "rwbs@34 comm@44 cmd@60"));
  EXPECT_TRUE(HasLine(lines, "ioprio field: present"));
  EXPECT_TRUE(HasLine(lines, "rwbs: char[10]"));
  EXPECT_TRUE(HasLine(lines, "MAJOR<<20|MINOR"));
  EXPECT_TRUE(HasLine(lines, "(no comm, no bytes)"));
  EXPECT_TRUE(HasLine(lines, "block_rq_requeue: dev@8 sector@16 nr_sector@24 ioprio@28"));
  EXPECT_TRUE(HasLine(lines, "block_io_start/done: present"));
  EXPECT_FALSE(HasLine(lines, "MISSING"));
}

TEST(DescribeBlockLayoutTest, SeesAnOlderLayoutAndMissingEvents) {
  // A 6.6-style block_rq_issue: no ioprio, rwbs[8].
  const std::string old_issue =
      "name: block_rq_issue\nID: 1000\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
      "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
      "\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n"
      "\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;\n"
      "\tfield:char rwbs[8];\toffset:32;\tsize:8;\tsigned:0;\n"
      "\tfield:char comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
      "\tfield:__data_loc char[] cmd;\toffset:56;\tsize:4;\tsigned:0;\n\n"
      "print fmt: \"%d\", REC->dev\n";
  auto f = ParseEventFormat("block", old_issue);
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<std::string> lines =
      DescribeBlockLayout({*f}, {"block_rq_issue", "block_rq_complete"});
  EXPECT_TRUE(HasLine(lines, "ioprio field: absent"));
  EXPECT_TRUE(HasLine(lines, "rwbs: char[8]"));
  EXPECT_TRUE(HasLine(lines, "block_io_start/done: absent"));
  EXPECT_TRUE(HasLine(lines, "block_rq_insert: MISSING"));
  EXPECT_FALSE(HasLine(lines, "block_rq_issue: MISSING"));
}

class FakeSysBlock : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::MakeTempDir("iotrace_probes_sysblock_");
    ASSERT_FALSE(root_.empty()) << "mkdtemp in " << test::TestTmpDir();
    Dev("vda", "254:0", "536870912", "none [mq-deadline] kyber bfq", "1");
    Dev("loop4", "7:4", "2048", "[none] mq-deadline", "0");
    Dev("loop5", "7:5", "0", "[none] mq-deadline", "1");  // unattached: left out
    Dev("zram0", "253:0", "8192", "", "1");               // bio-based: no scheduler file
  }
  void TearDown() override { fs::remove_all(root_); }
  void Dev(const std::string& name, const std::string& majmin, const std::string& size,
           const std::string& sched, const std::string& iostats) {
    fs::create_directories(root_ + "/" + name + "/queue");
    std::ofstream(root_ + "/" + name + "/dev") << majmin << "\n";
    std::ofstream(root_ + "/" + name + "/size") << size << "\n";
    if (!sched.empty()) std::ofstream(root_ + "/" + name + "/queue/scheduler") << sched << "\n";
    std::ofstream(root_ + "/" + name + "/queue/iostats") << iostats << "\n";
  }
  std::string root_;
};

TEST_F(FakeSysBlock, ListsSizedDevicesWithSchedulerAndIostats) {
  std::vector<BlockDeviceInfo> devs = ListBlockDevices(root_);
  ASSERT_EQ(devs.size(), 3u);
  EXPECT_EQ(devs[0].name, "loop4");
  EXPECT_EQ(devs[0].scheduler, "none");
  EXPECT_EQ(devs[0].iostats, 0);
  EXPECT_EQ(devs[1].name, "vda");
  EXPECT_EQ(devs[1].majmin, "254:0");
  EXPECT_EQ(devs[1].sectors, 536870912u);
  EXPECT_EQ(devs[1].scheduler, "mq-deadline");
  EXPECT_EQ(devs[2].name, "zram0");
  EXPECT_EQ(devs[2].scheduler, "");
}

TEST_F(FakeSysBlock, SaysWhatEachSettingMeansForTheReport) {
  std::vector<BlockDeviceInfo> devs = ListBlockDevices(root_);
  ASSERT_EQ(devs.size(), 3u);
  std::string none = DescribeBlockDevice(devs[0]);
  EXPECT_NE(none.find("most requests skip block_rq_insert"), std::string::npos) << none;
  EXPECT_NE(none.find("iostats off: no block_io_*"), std::string::npos) << none;
  std::string deadline = DescribeBlockDevice(devs[1]);
  EXPECT_NE(deadline.find("mq-deadline: requests inserted, then issued (I2D, D2C, I2C)"), std::string::npos) << deadline;
  EXPECT_NE(deadline.find("256.0 GiB"), std::string::npos) << deadline;
  std::string bio = DescribeBlockDevice(devs[2]);
  EXPECT_NE(bio.find("no block_rq_* events"), std::string::npos) << bio;
}

TEST_F(FakeSysBlock, CountsOneDeviceInTheSingular) {
  fs::remove_all(root_ + "/vda");
  fs::remove_all(root_ + "/zram0");
  DoctorOptions opt;
  opt.tracefs = "/nonexistent/tracefs";
  opt.sys_block = root_;
  opt.check_ms = 0;
  DoctorReport r = RunDoctor(opt);
  bool found = false;
  for (const DoctorItem& item : r.items) {
    if (item.topic != "devices") continue;
    found = true;
    EXPECT_EQ(item.summary, "1 block device");
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(r.kernel.find(" 1 CPUs"), std::string::npos) << r.kernel;
}

TEST(FormatDoctorReportTest, ShowsEveryItemTheAutoBackendAndTheVerdict) {
  DoctorReport r;
  r.kernel = "Linux 6.18 x86_64, 2 CPUs";
  r.items.push_back({"tracefs", DoctorLevel::kOk, "mounted at /sys/kernel/tracing", {}});
  r.items.push_back({"kprobes", DoctorLevel::kWarn, "not in this kernel", {"detail one"}});
  r.auto_backend = "ftrace";
  r.auto_reason = "perf lost 3 of 100 events";
  r.recording_works = true;
  std::string out = FormatDoctorReport(r);
  EXPECT_NE(out.find("iotrace doctor: Linux 6.18 x86_64, 2 CPUs\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  ok    tracefs        mounted at /sys/kernel/tracing\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  warn  kprobes        not in this kernel\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n                       detail one\n"), std::string::npos) << out;
  EXPECT_NE(out.find("record --backend auto would use: ftrace (perf lost 3 of 100 events)"),
            std::string::npos);
  EXPECT_NE(out.find("recording would work: yes"), std::string::npos);
  r.recording_works = false;
  r.auto_backend.clear();
  out = FormatDoctorReport(r);
  EXPECT_NE(out.find("no backend works here"), std::string::npos);
  EXPECT_NE(out.find("recording would work: NO"), std::string::npos);
}

TEST(FormatDoctorReportTest, SaysWhereTheFreshVerdictIsKeptForRecord) {
  DoctorReport r;
  r.auto_backend = "ftrace";
  r.auto_reason = "ftrace recorded all 9 events on 2 CPUs";
  EXPECT_EQ(FormatDoctorReport(r).find("the verdict is"), std::string::npos);
  r.verdict_kept = "kept in /run/iotrace/backend-verdict for this boot and kernel";
  EXPECT_NE(FormatDoctorReport(r).find(
                "record --backend auto would use: ftrace (ftrace recorded all 9 events on 2 "
                "CPUs)\n  the verdict is kept in /run/iotrace/backend-verdict for this boot and "
                "kernel\n"),
            std::string::npos)
      << FormatDoctorReport(r);
}

TEST(RunDoctorTest, FailsWithoutTracefsAndSaysSo) {
  DoctorOptions opt;
  opt.tracefs = "/nonexistent/tracefs";
  opt.check_ms = 0;
  DoctorReport r = RunDoctor(opt);
  EXPECT_FALSE(r.recording_works);
  ASSERT_FALSE(r.items.empty());
  EXPECT_EQ(r.items[0].topic, "tracefs");
  EXPECT_EQ(r.items[0].level, DoctorLevel::kFail);
}

}  // namespace
}  // namespace iotrace
