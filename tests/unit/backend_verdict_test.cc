// The kept verdict of `--backend auto`: its file, what makes it stale, and that a damaged or
// foreign file is never trusted. No root: a bogus tracefs makes every real check fail at once,
// so a run that reaches the checks is told apart from one that reused the verdict.
#include "iotrace/capture/backend_verdict.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "iotrace/base/fd.h"
#include "iotrace/capture/backend_check.h"
#include "test_files.h"

namespace iotrace {
namespace {

constexpr char kNoTracefs[] = "/nonexistent-tracefs";

class BackendVerdictTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::MakeTempDir("iotrace_verdict_");
    ASSERT_FALSE(dir_.empty()) << "mkdtemp in " << test::TestTmpDir();
    path_ = dir_ + "/state/backend-verdict";
  }
  void TearDown() override { test::RemoveTree(dir_); }

  // A verdict for this machine now, as a check would have kept it.
  static KeptVerdict Current() {
    KeptVerdict v;
    v.key = CurrentVerdictKey(kNoTracefs);
    v.backend = Backend::kPerf;
    v.reason = "ftrace lost 3 of 900 events (3 reported) on CPU1; perf recorded all 900 events";
    v.checked_at_s = 1796526612;  // 2026-12-06 03:10:12 UTC
    return v;
  }
  std::string Contents() const {
    auto text = ReadFileToString(path_);
    return text.ok() ? *text : "";
  }

  std::string dir_;
  std::string path_;
};

TEST_F(BackendVerdictTest, FileRoundTripsEveryField) {
  const KeptVerdict v = Current();
  absl::StatusOr<KeptVerdict> back = ParseVerdict(SerializeVerdict(v));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->key, v.key);
  EXPECT_EQ(back->backend, Backend::kPerf);
  EXPECT_EQ(back->reason, v.reason);
  EXPECT_EQ(back->checked_at_s, v.checked_at_s);
  EXPECT_EQ(FormatUtc(v.checked_at_s), "2026-12-06 03:10:12 UTC");
}

TEST_F(BackendVerdictTest, KeyNamesTheMachineStateTheChecksDependOn) {
  const VerdictKey k = CurrentVerdictKey(kNoTracefs);
  // This machine has all of these: an empty one would never match a kept key.
  EXPECT_EQ(k.boot_id.size(), 36u) << k.boot_id;
  EXPECT_FALSE(k.kernel.empty());
  EXPECT_FALSE(k.cpus.empty());
  EXPECT_NE(k.perf_limits.find("paranoid"), std::string::npos) << k.perf_limits;
  EXPECT_NE(k.events.find("block:block_rq_complete"), std::string::npos);
  EXPECT_EQ(k.tracefs, kNoTracefs);
  EXPECT_EQ(k.version, IOTRACE_VERSION);
  EXPECT_EQ(k, CurrentVerdictKey(kNoTracefs));
  EXPECT_NE(k, CurrentVerdictKey("/sys/kernel/tracing"));
}

TEST_F(BackendVerdictTest, DamagedTextIsRefused) {
  const std::string good = SerializeVerdict(Current());
  ASSERT_TRUE(ParseVerdict(good).ok());
  EXPECT_FALSE(ParseVerdict("").ok());
  EXPECT_FALSE(ParseVerdict(good.substr(0, good.size() / 2)).ok());      // cut short
  EXPECT_FALSE(ParseVerdict(good.substr(0, good.rfind("sum="))).ok());   // no checksum
  for (size_t at : {size_t{3}, good.find("backend=") + 8, good.find("boot_id=") + 9}) {
    std::string flipped = good;
    flipped[at] ^= 0x01;  // one bit: the checksum no longer matches
    EXPECT_FALSE(ParseVerdict(flipped).ok()) << "flipped at " << at;
  }
  std::string twice = good;
  twice.insert(twice.find("sum="), "extra=1\n");
  EXPECT_FALSE(ParseVerdict(twice).ok());
}

TEST_F(BackendVerdictTest, StoreCreatesTheDirectoryAndLoadReadsItBack) {
  EXPECT_EQ(LoadVerdict(path_).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(StoreVerdict(path_, Current()).ok());
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  absl::StatusOr<KeptVerdict> back = LoadVerdict(path_);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->key, Current().key);
  // A value with a newline would make another field: refused before anything is written.
  KeptVerdict bad = Current();
  bad.reason = "line one\nbackend=ftrace";
  EXPECT_FALSE(StoreVerdict(path_, bad).ok());
  EXPECT_EQ(Contents(), SerializeVerdict(Current()));
}

TEST_F(BackendVerdictTest, AFileOthersCanWriteIsNotTrusted) {
  ASSERT_TRUE(StoreVerdict(path_, Current()).ok());
  ASSERT_EQ(chmod(path_.c_str(), 0666), 0);
  EXPECT_EQ(LoadVerdict(path_).status().code(), absl::StatusCode::kPermissionDenied);
  ASSERT_EQ(unlink(path_.c_str()), 0);
  ASSERT_EQ(symlink("/proc/version", path_.c_str()), 0);
  EXPECT_FALSE(LoadVerdict(path_).ok());
}

TEST_F(BackendVerdictTest, AMatchingVerdictIsReusedWithoutACheck) {
  ASSERT_TRUE(StoreVerdict(path_, Current()).ok());
  const AutoChoice c = ChooseBackend(kNoTracefs, path_);
  EXPECT_TRUE(c.reused);
  EXPECT_EQ(c.backend, Backend::kPerf);  // the kept one: a check here would fail to ftrace
  EXPECT_EQ(c.check_cpu_s, 0);
  EXPECT_EQ(c.reason, "auto: " + Current().reason + " (checked 2026-12-06 03:10:12 UTC)");
  EXPECT_EQ(DescribeAutoCheck(c),
            "the backend check's verdict of 2026-12-06 03:10:12 UTC was reused (same boot, "
            "kernel, CPUs and perf settings; iotrace doctor checks again)");
}

TEST_F(BackendVerdictTest, AStaleVerdictIsCheckedAgain) {
  // Each fact on its own makes the kept verdict stale: another boot, kernel build, CPU set,
  // perf limit, check event list, tracefs mount or iotrace version.
  const std::vector<std::string VerdictKey::*> fields = {
      &VerdictKey::boot_id, &VerdictKey::kernel,  &VerdictKey::cpus,   &VerdictKey::perf_limits,
      &VerdictKey::events,  &VerdictKey::tracefs, &VerdictKey::version};
  for (std::string VerdictKey::*field : fields) {
    KeptVerdict old = Current();
    old.key.*field += "-before";
    ASSERT_TRUE(StoreVerdict(path_, old).ok());
    const AutoChoice c = ChooseBackend(kNoTracefs, path_);
    EXPECT_FALSE(c.reused) << old.key.*field;
    // The checks ran and failed (no tracefs): ftrace, whose start says what is wrong.
    EXPECT_EQ(c.backend, Backend::kFtrace);
    EXPECT_NE(c.reason.find("ftrace cannot record here"), std::string::npos) << c.reason;
    EXPECT_EQ(DescribeAutoCheck(c).rfind("the backend check ran at start (", 0), 0u);
    // A check that could not run is not kept: the stale file stays until a check succeeds.
    EXPECT_EQ(Contents(), SerializeVerdict(old));
  }
}

TEST_F(BackendVerdictTest, ACorruptFileIsNeverTrusted) {
  std::string text = SerializeVerdict(Current());
  text[text.find("backend=perf") + 8] = 'P';
  ASSERT_EQ(mkdir((dir_ + "/state").c_str(), 0755), 0);
  std::ofstream(path_) << text;
  ASSERT_EQ(chmod(path_.c_str(), 0644), 0);
  EXPECT_EQ(LoadVerdict(path_).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(ChooseBackend(kNoTracefs, path_).reused);
  // The way the engine keeps one is a whole new file over it.
  ASSERT_TRUE(StoreVerdict(path_, Current()).ok());
  EXPECT_TRUE(ChooseBackend(kNoTracefs, path_).reused);
}

}  // namespace
}  // namespace iotrace
