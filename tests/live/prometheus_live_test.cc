// `iotrace live --listen` against a real Prometheus: tests/live/prometheus_live.py drives Debian's
// prometheus (native histograms on) and node_exporter's textfile collector against two
// exporters on two scratch loop devices (two hosts), and checks what Prometheus's HTTP API says
// against `iotrace report` on their recordings. Its output lists every check.
#include <string>

#include "gtest/gtest.h"
#include "live_util.h"

namespace iotrace::live {
namespace {

TEST(PrometheusLiveTest, ARealPrometheusHoldsWhatTheReportsSayAcrossTwoHosts) {
  IOTRACE_REQUIRE_LIVE();
  IOTRACE_REQUIRE_TOOL("prometheus");
  IOTRACE_REQUIRE_TOOL("prometheus-node-exporter");
  IOTRACE_REQUIRE_TOOL("fio");
  IOTRACE_REQUIRE_TOOL("python3");
  ScratchLoop a("none"), b("none");
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  const auto before = TracefsSnapshot();
  TempDir dir;
  CommandResult r = RunCmd({"python3", std::string(IOTRACE_SOURCE_DIR) +
                                           "/tests/live/prometheus_live.py",
                            Binary(), dir.path(), a.device(), b.device()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("0 checks failed"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(CountLines(r.out, "FAIL "), 0u) << r.out;
  // Every check ran: 11 per host (7 of the cumulative figures, 2 of a window, unpaired, in
  // flight) and 3 across them.
  EXPECT_EQ(CountLines(r.out, "ok   "), 1u + 2 * 11 + 3) << r.out;
  EXPECT_EQ(TracefsSnapshot(), before) << "tracefs state changed";
}

}  // namespace
}  // namespace iotrace::live
