// Live tests of `--backend auto`'s kept verdict (record, live, doctor) and of the own-CPU line
// of the summaries. They replace /run/iotrace/backend-verdict, a cache: what they leave there is
// a fresh verdict of this machine, as any run would.
#include <unistd.h>

#include <regex>
#include <string>

#include "gtest/gtest.h"
#include "iotrace/base/clock.h"
#include "iotrace/capture/backend_verdict.h"
#include "live_util.h"

namespace iotrace::live {
namespace {

constexpr char kCheckRan[] = "--backend auto: the backend check ran at start (";
constexpr char kReused[] = "--backend auto: the backend check's verdict of ";

class BackendVerdictLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    IOTRACE_REQUIRE_LIVE();
    before_ = TracefsSnapshot();
    ASSERT_TRUE(loop_.ok()) << loop_.error();
  }
  void TearDown() override {
    if (!IsSkipped()) EXPECT_EQ(TracefsSnapshot(), before_) << "tracefs state changed";
  }
  // iotrace record (auto) of 2000 direct 4k reads on the scratch device; its stderr.
  std::string Record(const std::string& name) {
    CommandResult r = RunCmd({Binary(), "record", "--no-progress", "--dev", loop_.device(), "-o",
                              dir_.File(name), "--", "sh", "-c",
                              "dd if=" + loop_.device() +
                                  " of=/dev/null bs=4k iflag=direct count=2000 status=none"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.err;
  }
  static void Forget() { unlink(DefaultVerdictPath()); }
  static int64_t KeptAt() {
    absl::StatusOr<KeptVerdict> v = LoadVerdict(DefaultVerdictPath());
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? v->checked_at_s : -1;
  }

  ScratchLoop loop_;
  TempDir dir_;
  std::map<std::string, std::string> before_;
};

// The own-CPU line agrees with itself: user + system = total, and the figure per event is the
// total over the events of the table's total row.
void ExpectConsistentOwnCpu(const std::string& err) {
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(
      R"(own CPU ([0-9.]+) s \(user ([0-9.]+) s, system ([0-9.]+) s\), ([0-9]+) ns per event )"
      R"(recorded)")))
      << err;
  const double total = std::stod(m[1]), user = std::stod(m[2]), sys = std::stod(m[3]);
  const double per_event_ns = std::stod(m[4]);
  std::smatch t;
  ASSERT_TRUE(std::regex_search(err, t, std::regex(R"(\n\s+total\s+(\d+)\s)"))) << err;
  const double events = std::stod(t[1]);
  ASSERT_GT(events, 0);
  EXPECT_GT(total, 0);
  EXPECT_NEAR(user + sys, total, 0.011);  // each printed to 0.01 s
  // The figure per event (rounded to 1 ns) is of the unrounded total (printed to 0.005 s).
  EXPECT_NEAR(per_event_ns * events / 1e9, total, 0.005 + events * 0.5e-9) << err;
}

TEST_F(BackendVerdictLiveTest, TheSecondRecordReusesTheFirstOnesVerdict) {
  Forget();
  const int64_t before = RealtimeNs() / 1000000000;
  const std::string first = Record("first.dat");
  EXPECT_NE(first.find(kCheckRan), std::string::npos) << first;
  EXPECT_EQ(first.find(kReused), std::string::npos) << first;
  ExpectConsistentOwnCpu(first);
  const int64_t kept = KeptAt();
  EXPECT_GE(kept, before);

  const std::string second = Record("second.dat");
  EXPECT_EQ(second.find(kCheckRan), std::string::npos) << second;
  EXPECT_NE(second.find(kReused + FormatUtc(kept) + " was reused"), std::string::npos) << second;
  // The start says so too, with the reason the check gave.
  EXPECT_NE(second.find("(checked " + FormatUtc(kept) + ")"), std::string::npos) << second;
  ExpectConsistentOwnCpu(second);
  EXPECT_EQ(KeptAt(), kept);  // reused, not rewritten
}

TEST_F(BackendVerdictLiveTest, AStaleOrCorruptVerdictIsCheckedAgainAndReplaced) {
  const std::string tracefs = "/sys/kernel/tracing";
  KeptVerdict stale;
  stale.key = CurrentVerdictKey(tracefs);
  stale.key.boot_id = "00000000-0000-0000-0000-000000000000";  // another boot
  stale.backend = Backend::kPerf;
  stale.reason = "from another boot";
  stale.checked_at_s = 1;
  ASSERT_TRUE(StoreVerdict(DefaultVerdictPath(), stale).ok());
  std::string err = Record("stale.dat");
  EXPECT_NE(err.find(kCheckRan), std::string::npos) << err;
  absl::StatusOr<KeptVerdict> now = LoadVerdict(DefaultVerdictPath());
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(now->key, CurrentVerdictKey(tracefs));

  ASSERT_EQ(Sh(std::string("printf 'garbage\\n' > ") + DefaultVerdictPath()).exit_code, 0);
  err = Record("corrupt.dat");
  EXPECT_NE(err.find(kCheckRan), std::string::npos) << err;
  EXPECT_TRUE(LoadVerdict(DefaultVerdictPath()).ok());
}

TEST_F(BackendVerdictLiveTest, DoctorChecksAfreshAndLiveReusesItsVerdict) {
  const int64_t before = RealtimeNs() / 1000000000;
  Record("warm.dat");  // a verdict is kept (or was already)
  CommandResult doctor = RunCmd({Binary(), "doctor"});
  EXPECT_NE(doctor.out.find(std::string("the verdict is kept in ") + DefaultVerdictPath()),
            std::string::npos)
      << doctor.out << doctor.err;
  const int64_t kept = KeptAt();
  EXPECT_GE(kept, before);

  CommandResult live = RunCmd({Binary(), "live", "-d", "0.5", "--dev", loop_.device(), "--",
                               "sh", "-c", "dd if=" + loop_.device() +
                                               " of=/dev/null bs=4k iflag=direct count=500"});
  EXPECT_EQ(live.exit_code, 0) << live.err;
  EXPECT_NE(live.err.find("iotrace live: " + std::string(kReused) + FormatUtc(kept)),
            std::string::npos)
      << live.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(live.err, m, std::regex(
      R"(([0-9]+) events paired, .* own CPU ([0-9.]+) s, ([0-9]+) ns per event)")))
      << live.err;
  const double events = std::stod(m[1]), total = std::stod(m[2]), per = std::stod(m[3]);
  ASSERT_GT(events, 0);
  EXPECT_NEAR(per * events / 1e9, total, 0.0005 + events * 0.5e-9) << live.err;
}

}  // namespace
}  // namespace iotrace::live
