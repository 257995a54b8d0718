// The books of the backend completeness checks, and the backend `record --backend auto` takes
// from them.
#include "iotrace/capture/backend_check.h"

#include <string>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

CompletenessCheck Books(const std::string& backend, std::vector<CpuCompleteness> cpus) {
  CompletenessCheck c;
  c.backend = backend;
  c.duration_ms = 200;
  c.cpus = std::move(cpus);
  JudgeCompleteness(&c);
  return c;
}

TEST(JudgeCompletenessTest, SilentAndReportedLossesMakeACheckLossyAndSayWhere) {
  // CPU1: 3001 counted, 14 recorded, nothing reported: what perf does in the idle task here.
  CompletenessCheck c = Books("perf", {{0, 500, 500, 0}, {1, 3001, 14, 0}});
  EXPECT_EQ(c.verdict, CheckVerdict::kLossy);
  EXPECT_EQ(c.TotalLost(), 2987u);
  EXPECT_EQ(c.summary, "perf lost 2987 of 3501 events (2987 silently) on CPU1");

  c = Books("ftrace", {{0, 100, 90, 10}, {1, 50, 50, 0}});
  EXPECT_EQ(c.verdict, CheckVerdict::kLossy);
  EXPECT_EQ(c.summary, "ftrace lost 10 of 150 events (10 reported) on CPU0");
}

TEST(JudgeCompletenessTest, CompleteOnlyWhenSomethingWasCounted) {
  CompletenessCheck c = Books("ftrace", {{0, 100, 100, 0}, {1, 7, 7, 0}});
  EXPECT_EQ(c.verdict, CheckVerdict::kComplete);
  EXPECT_EQ(c.summary, "ftrace recorded all 107 events on 2 CPUs");
  c = Books("ftrace", {{0, 1, 1, 0}});
  EXPECT_EQ(c.summary, "ftrace recorded all 1 event on 1 CPU");
  c = Books("perf", {{0, 0, 0, 0}, {1, 0, 0, 0}});
  EXPECT_EQ(c.verdict, CheckVerdict::kInconclusive);
  EXPECT_EQ(c.summary, "perf: no check event fired in 200 ms, nothing to compare");
}

TEST(AutoBackendTest, FtraceWhereverItRecordsWithoutLoss) {
  constexpr CheckVerdict kComplete = CheckVerdict::kComplete;
  constexpr CheckVerdict kLossy = CheckVerdict::kLossy;
  constexpr CheckVerdict kNone = CheckVerdict::kInconclusive;
  // A clean perf check does not win over ftrace: perf may still drop samples afterwards.
  EXPECT_EQ(AutoBackend(true, kComplete, true, kComplete), "ftrace");
  EXPECT_EQ(AutoBackend(true, kComplete, true, kLossy), "ftrace");
  EXPECT_EQ(AutoBackend(true, kNone, true, kComplete), "ftrace");
  EXPECT_EQ(AutoBackend(true, kComplete, false, kNone), "ftrace");
  // ftrace lost events in its check: perf if it lost none, else ftrace (its losses are counted).
  EXPECT_EQ(AutoBackend(true, kLossy, true, kComplete), "perf");
  EXPECT_EQ(AutoBackend(true, kLossy, true, kNone), "perf");
  EXPECT_EQ(AutoBackend(true, kLossy, true, kLossy), "ftrace");
  EXPECT_EQ(AutoBackend(true, kLossy, false, kNone), "ftrace");
  // No ftrace: perf whatever its check says (its drops are counted and shown).
  EXPECT_EQ(AutoBackend(false, kNone, true, kComplete), "perf");
  EXPECT_EQ(AutoBackend(false, kNone, true, kLossy), "perf");
  EXPECT_EQ(AutoBackend(false, kNone, false, kNone), "");
}

}  // namespace
}  // namespace iotrace
