// Live completeness checks of the two capture backends: does every event the kernel counts
// reach our buffers? perf can drop samples silently (those taken in the idle task's interrupt
// context, see docs/kernel-notes.md), so `record --backend auto` and `iotrace doctor` measure it on
// an event that fires in idle and interrupt context, per CPU, before trusting perf.
#ifndef IOTRACE_CAPTURE_BACKEND_CHECK_H_
#define IOTRACE_CAPTURE_BACKEND_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/capture/record.h"

namespace iotrace {

struct CpuCompleteness {
  int cpu = -1;
  uint64_t counted = 0;   // perf: read() on the fd; ftrace: entries + overrun + dropped
  uint64_t recorded = 0;  // perf: samples that reached the ring; ftrace: entries in the buffer
  uint64_t reported_lost = 0;  // losses the backend reports (perf LOST, ftrace overrun/dropped)
  // Counted by the kernel, neither recorded nor reported lost.
  uint64_t Silent() const {
    uint64_t accounted = recorded + reported_lost;
    return counted > accounted ? counted - accounted : 0;
  }
};

// Totals of one event over all CPUs (perf only: ftrace's statistics are per CPU).
struct EventCompleteness {
  std::string event;
  uint64_t counted = 0;
  uint64_t recorded = 0;
  uint64_t reported_lost = 0;
  uint64_t Lost() const {
    return counted > recorded ? counted - recorded : reported_lost;
  }
};

enum class CheckVerdict {
  kComplete,      // every counted event was recorded
  kLossy,         // some were lost (reported or silent)
  kInconclusive,  // the event did not fire: nothing to compare
};
const char* CheckVerdictName(CheckVerdict v);  // "complete", "lossy", "inconclusive"

struct CompletenessCheck {
  std::string backend;    // "perf" or "ftrace"
  std::string events;     // "timer:hrtimer_expire_entry,irq:irq_handler_entry"
  uint32_t duration_ms = 0;
  std::vector<CpuCompleteness> cpus;
  std::vector<EventCompleteness> per_event;
  CheckVerdict verdict = CheckVerdict::kInconclusive;
  std::string summary;    // one line for humans: "perf lost 11 of 2301 events silently (CPU1)"

  uint64_t TotalCounted() const;
  uint64_t TotalRecorded() const;
  uint64_t TotalLost() const;  // reported + silent
};

// The events the checks try, in order, one at a time, until one fires: they fire in interrupt
// context also while a CPU idles, which is where perf loses samples here.
const std::vector<std::string>& CompletenessCheckEvents();

// Judges per-CPU books: complete when nothing was lost on any CPU and something was counted.
void JudgeCompleteness(CompletenessCheck* check);

// The rule of `record --backend auto` (and of what `doctor` says it would do), from the two
// checks: "ftrace" wherever ftrace records without loss (it keeps the samples perf drops
// silently here, and costs less per event); "perf" where ftrace cannot record, or lost events
// in its check while perf lost none; "" when neither works.
std::string AutoBackend(bool ftrace_works, CheckVerdict ftrace, bool perf_works, CheckVerdict perf);

// `--backend auto`'s choice for a run that starts now (record, live).
struct AutoChoice {
  Backend backend = Backend::kFtrace;
  std::string reason;         // why, for the summary ("auto: ...")
  bool reused = false;        // a kept verdict was used: no check ran
  int64_t checked_at_s = 0;   // when the verdict's checks ran (Unix time)
  double check_cpu_s = 0;     // the CPU this process spent on checks now (0 when reused)
};
// The verdict kept at `verdict_path` (backend_verdict.h) when its key is this machine's now;
// otherwise checks ftrace and perf for a moment each (CheckFtraceCompleteness,
// CheckPerfCompleteness), applies AutoBackend and keeps the verdict when ftrace's check ran (a
// check that could not run may have met a passing condition). "" as path: always check, keep
// nothing.
AutoChoice ChooseBackend(const std::string& tracefs, const std::string& verdict_path);
// For the summaries: "the check ran at start (0.21 s CPU)", or "the verdict of 2026-12-06
// 03:10:12 UTC was reused (same boot, kernel, CPUs and perf settings; iotrace doctor checks
// again)".
std::string DescribeAutoCheck(const AutoChoice& choice);

// Opens a sampling perf event (sample_period 1) per CPU on a check event and runs
// `duration_ms` while making interrupts arrive on idle CPUs (1 ms sleeps pinned per CPU, and
// O_DIRECT reads of the running binary), draining the rings; then compares the kernel's counts
// with the samples per CPU. Every fd and mapping is closed on every path. The losses vary with
// what the machine does: a "complete" verdict is evidence, not proof.
// `events` ("sys:name[,sys:name...]") overrides CompletenessCheckEvents().
absl::StatusOr<CompletenessCheck> CheckPerfCompleteness(uint32_t duration_ms,
                                                        const std::string& tracefs = "",
                                                        const std::string& event = "");

// The same through a private ftrace instance (iotrace_check_<pid>), judged by the per-CPU ring
// statistics (overrun, dropped events). The instance is removed on every path.
absl::StatusOr<CompletenessCheck> CheckFtraceCompleteness(uint32_t duration_ms,
                                                          const std::string& tracefs = "",
                                                          const std::string& event = "");

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_BACKEND_CHECK_H_
