#include "iotrace/capture/backend_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <memory>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/base/clock.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"
#include "iotrace/capture/backend_verdict.h"
#include "iotrace/capture/perf_capture.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {
namespace {

uint64_t NowMs() { return MonotonicNs() / 1000000; }

// The check events this kernel offers (all of them: each catches other idle-time contexts),
// or just `wanted`.
absl::StatusOr<std::vector<TraceEventInfo>> PickCheckEvents(const std::string& tracefs,
                                                            const std::string& wanted) {
  if (!wanted.empty()) {
    std::vector<std::string> specs;
    for (std::string_view spec : SplitText(wanted, ',')) specs.emplace_back(spec);
    return ResolveEvents(tracefs, specs);
  }
  std::vector<TraceEventInfo> out;
  for (const std::string& name : CompletenessCheckEvents()) {
    auto ev = ResolveEvents(tracefs, {name});
    if (ev.ok()) out.insert(out.end(), ev->begin(), ev->end());
  }
  if (out.empty()) {
    return absl::NotFoundError(absl::StrFormat("none of the check events (%s) exists here",
                                               absl::StrJoin(CompletenessCheckEvents(), ", ")));
  }
  return out;
}

std::string JoinNames(const std::vector<TraceEventInfo>& events) {
  std::vector<std::string> names;
  for (const TraceEventInfo& e : events) names.push_back(e.FullName());
  return absl::StrJoin(names, ",");
}

// While a check runs, this makes interrupts arrive on idle CPUs, the context in which perf
// drops samples. kDiskReads: one thread reads the running binary with O_DIRECT, 4 KiB at a
// time, and waits idle for each completion interrupt (read-only; no I/O where the file system
// refuses O_DIRECT, such as tmpfs). kTimerWakeups: one thread per CPU sleeps 1 ms at a time,
// an hrtimer interrupt per wakeup. (Measured here: the 1 ms sleepers made the disk-read case
// lose less, so the two are not combined.)
class IdleInterrupts {
 public:
  enum class Kind { kDiskReads, kTimerWakeups };
  IdleInterrupts(Kind kind, const std::vector<int>& cpus, uint32_t duration_ms)
      : end_ms_(NowMs() + duration_ms) {
    if (kind == Kind::kDiskReads) {
      threads_.emplace_back([this] { ReadDirect(); });
      return;
    }
    for (int cpu : cpus) {
      threads_.emplace_back([cpu, this] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        struct timespec nap = {0, 1000000};
        while (Running()) nanosleep(&nap, nullptr);
      });
    }
  }
  ~IdleInterrupts() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
  }

 private:
  bool Running() const { return !stop_.load(std::memory_order_relaxed) && NowMs() < end_ms_; }
  void ReadDirect() {
    UniqueFd fd(::open("/proc/self/exe", O_RDONLY | O_DIRECT | O_CLOEXEC));
    if (!fd.valid()) return;
    struct stat st;
    if (fstat(fd.get(), &st) != 0 || st.st_size < 4096) return;
    void* buf = nullptr;
    if (posix_memalign(&buf, 4096, 4096) != 0) return;
    const uint64_t blocks = static_cast<uint64_t>(st.st_size) / 4096;
    for (uint64_t i = 0; Running(); ++i) {
      // Stride through the file so that neighbouring reads do not merge.
      if (pread(fd.get(), buf, 4096, static_cast<off_t>(((i * 7) % blocks) * 4096)) < 0) break;
    }
    free(buf);
  }

  const uint64_t end_ms_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace

const char* CheckVerdictName(CheckVerdict v) {
  switch (v) {
    case CheckVerdict::kComplete: return "complete";
    case CheckVerdict::kLossy: return "lossy";
    case CheckVerdict::kInconclusive: break;
  }
  return "inconclusive";
}

const std::vector<std::string>& CompletenessCheckEvents() {
  // block_rq_complete, alone in its ring, is where perf loses most here (up to 98% of the
  // samples, see docs/kernel-notes.md); the check reads with O_DIRECT to make it fire. The timer
  // event is the fallback where that makes no disk I/O (tmpfs): it fires on any machine.
  static const auto* events = new std::vector<std::string>{"block:block_rq_complete",
                                                           "timer:hrtimer_expire_entry"};
  return *events;
}

uint64_t CompletenessCheck::TotalCounted() const {
  uint64_t n = 0;
  for (const CpuCompleteness& c : cpus) n += c.counted;
  return n;
}

uint64_t CompletenessCheck::TotalRecorded() const {
  uint64_t n = 0;
  for (const CpuCompleteness& c : cpus) n += c.recorded;
  return n;
}

uint64_t CompletenessCheck::TotalLost() const {
  uint64_t n = 0;
  for (const CpuCompleteness& c : cpus) n += c.reported_lost + c.Silent();
  return n;
}

std::string AutoBackend(bool ftrace_works, CheckVerdict ftrace, bool perf_works,
                        CheckVerdict perf) {
  if (ftrace_works && ftrace != CheckVerdict::kLossy) return "ftrace";
  if (perf_works && (!ftrace_works || perf != CheckVerdict::kLossy)) return "perf";
  return ftrace_works ? "ftrace" : "";
}

void JudgeCompleteness(CompletenessCheck* check) {
  const uint64_t counted = check->TotalCounted();
  uint64_t silent = 0, reported = 0;
  std::vector<std::string> where;
  for (const CpuCompleteness& c : check->cpus) {
    silent += c.Silent();
    reported += c.reported_lost;
    if (c.Silent() + c.reported_lost > 0) where.push_back(absl::StrFormat("CPU%d", c.cpu));
  }
  if (silent + reported > 0) {
    check->verdict = CheckVerdict::kLossy;
    std::string how;
    if (silent > 0) how = absl::StrFormat("%d silently", silent);
    if (reported > 0) {
      absl::StrAppendFormat(&how, "%s%d reported", how.empty() ? "" : ", ", reported);
    }
    check->summary = absl::StrFormat("%s lost %d of %s (%s) on %s", check->backend,
                                     silent + reported, Plural(counted, "event"), how,
                                     absl::StrJoin(where, ", "));
    const EventCompleteness* worst = nullptr;
    for (const EventCompleteness& e : check->per_event) {
      if (worst == nullptr || e.Lost() > worst->Lost()) worst = &e;
    }
    if (worst != nullptr && worst->Lost() > 0) {
      absl::StrAppendFormat(&check->summary, "; worst: %s, %d of %d lost", worst->event,
                            worst->Lost(), worst->counted);
    }
  } else if (counted == 0) {
    check->verdict = CheckVerdict::kInconclusive;
    check->summary = absl::StrFormat("%s: no check event fired in %d ms, nothing to compare",
                                     check->backend, check->duration_ms);
  } else {
    check->verdict = CheckVerdict::kComplete;
    check->summary = absl::StrFormat("%s recorded all %s on %s", check->backend,
                                     Plural(counted, "event"), Plural(check->cpus.size(), "CPU"));
  }
}

namespace {

IdleInterrupts::Kind LoadFor(const std::vector<TraceEventInfo>& events) {
  for (const TraceEventInfo& e : events) {
    if (e.system == "block") return IdleInterrupts::Kind::kDiskReads;
  }
  return IdleInterrupts::Kind::kTimerWakeups;
}

absl::StatusOr<CompletenessCheck> RunPerfCheck(const std::vector<TraceEventInfo>& events,
                                               uint32_t duration_ms) {
  PerfCaptureOptions opt;
  opt.events = events;
  opt.mmap_pages = 64;
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<PerfCapture> cap, PerfCapture::Open(opt));
  auto discard = [](int, ByteView, ByteView) { return absl::OkStatus(); };
  IOTRACE_RETURN_IF_ERROR(cap->Enable());
  {
    IdleInterrupts load(LoadFor(events), cap->cpus(), duration_ms);
    const uint64_t end = NowMs() + duration_ms;
    for (uint64_t now = NowMs(); now < end; now = NowMs()) {
      IOTRACE_RETURN_IF_ERROR(
          cap->Wait(static_cast<int>(std::min<uint64_t>(end - now, 20))).status());
      IOTRACE_RETURN_IF_ERROR(cap->DrainAll(discard));
    }
  }
  IOTRACE_RETURN_IF_ERROR(cap->Disable());
  // After the disable nothing more is counted or written: drain the rest, then read counts.
  IOTRACE_RETURN_IF_ERROR(cap->DrainAll(discard));
  IOTRACE_RETURN_IF_ERROR(cap->ReadCounts());

  CompletenessCheck check;
  check.backend = "perf";
  check.events = JoinNames(events);
  check.duration_ms = duration_ms;
  for (size_t e = 0; e < events.size(); ++e) {
    EventCompleteness ec;
    ec.event = events[e].FullName();
    for (size_t c = 0; c < cap->cpus().size(); ++c) {
      const EventCpuCounts& n = cap->counts(e, c);
      ec.counted += n.kernel_count;
      ec.recorded += n.samples;
      ec.reported_lost += n.ring_lost;
    }
    check.per_event.push_back(ec);
  }
  for (size_t c = 0; c < cap->cpus().size(); ++c) {
    CpuCompleteness cc;
    cc.cpu = cap->cpus()[c];
    uint64_t format_lost = 0;
    for (size_t e = 0; e < events.size(); ++e) {
      const EventCpuCounts& n = cap->counts(e, c);
      cc.counted += n.kernel_count;
      cc.recorded += n.samples;
      format_lost += n.ring_lost;
    }
    // PERF_FORMAT_LOST and the ring's LOST records report the same losses: count them once.
    cc.reported_lost = std::max(format_lost, cap->lost_in_records(c));
    check.cpus.push_back(cc);
  }
  JudgeCompleteness(&check);
  return check;
}

absl::StatusOr<CompletenessCheck> RunFtraceCheck(const std::string& tracefs,
                                                 const std::vector<TraceEventInfo>& events,
                                                 uint32_t duration_ms) {
  IOTRACE_ASSIGN_OR_RETURN(std::vector<int> cpus, OnlineCpus());
  const std::string name = absl::StrFormat("iotrace_check_%d", ::getpid());
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TracefsInstance> inst,
                           TracefsInstance::Create(tracefs, name));
  IOTRACE_RETURN_IF_ERROR(inst->SetTracingOn(false));
  IOTRACE_RETURN_IF_ERROR(inst->SetBufferSizeKb(1024));
  for (const TraceEventInfo& e : events) {
    IOTRACE_RETURN_IF_ERROR(inst->EnableEvent(e.system, e.name));
  }
  IOTRACE_RETURN_IF_ERROR(inst->SetTracingOn(true));
  {
    IdleInterrupts load(LoadFor(events), cpus, duration_ms);
    ::usleep(duration_ms * 1000);
  }
  IOTRACE_RETURN_IF_ERROR(inst->SetTracingOn(false));

  CompletenessCheck check;
  check.backend = "ftrace";
  check.events = JoinNames(events);
  check.duration_ms = duration_ms;
  for (int cpu : cpus) {
    IOTRACE_ASSIGN_OR_RETURN(CpuBufferStats st, inst->ReadCpuStats(cpu));
    CpuCompleteness cc;
    cc.cpu = cpu;
    // ftrace has no independent count: what it wrote is what it kept plus what it says it lost.
    cc.reported_lost = st.overrun + st.commit_overrun + st.dropped_events;
    cc.recorded = st.entries;
    cc.counted = cc.recorded + cc.reported_lost;
    check.cpus.push_back(cc);
  }
  IOTRACE_RETURN_IF_ERROR(inst->Remove());
  JudgeCompleteness(&check);
  return check;
}

// Runs `run` on the wanted events, or on each check event in turn until one fires.
template <typename Run>
absl::StatusOr<CompletenessCheck> CheckWithFallbacks(const std::string& tracefs,
                                                     const std::string& wanted, Run run) {
  if (!wanted.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(std::vector<TraceEventInfo> events,
                             PickCheckEvents(tracefs, wanted));
    return run(events);
  }
  IOTRACE_ASSIGN_OR_RETURN(std::vector<TraceEventInfo> all, PickCheckEvents(tracefs, ""));
  absl::StatusOr<CompletenessCheck> last = absl::NotFoundError("no check event");
  for (const TraceEventInfo& event : all) {
    last = run(std::vector<TraceEventInfo>{event});
    if (!last.ok() || last->verdict != CheckVerdict::kInconclusive) return last;
  }
  return last;
}

}  // namespace

absl::StatusOr<CompletenessCheck> CheckPerfCompleteness(uint32_t duration_ms,
                                                        const std::string& tracefs_dir,
                                                        const std::string& wanted) {
  IOTRACE_ASSIGN_OR_RETURN(std::string tracefs, FindTracefs(tracefs_dir));
  return CheckWithFallbacks(tracefs, wanted, [&](const std::vector<TraceEventInfo>& events) {
    return RunPerfCheck(events, duration_ms);
  });
}

absl::StatusOr<CompletenessCheck> CheckFtraceCompleteness(uint32_t duration_ms,
                                                          const std::string& tracefs_dir,
                                                          const std::string& wanted) {
  IOTRACE_ASSIGN_OR_RETURN(std::string tracefs, FindTracefs(tracefs_dir));
  return CheckWithFallbacks(tracefs, wanted, [&](const std::vector<TraceEventInfo>& events) {
    return RunFtraceCheck(tracefs, events, duration_ms);
  });
}

// auto (AutoBackend's rule): ftrace wherever it records. A clean perf check would be no
// promise for the recording after it: one passed here, and perf then dropped 36 events of a
// 10 s fio run silently.
AutoChoice ChooseBackend(const std::string& tracefs, const std::string& verdict_path) {
  AutoChoice out;
  const VerdictKey key = CurrentVerdictKey(tracefs);
  if (!verdict_path.empty()) {
    // An error (corrupt, not ours) is the same as no verdict: check, and write a good one.
    absl::StatusOr<KeptVerdict> kept = LoadVerdict(verdict_path);
    if (kept.ok() && kept->key == key) {
      out.backend = kept->backend;
      out.reused = true;
      out.checked_at_s = kept->checked_at_s;
      out.reason = absl::StrFormat("auto: %s (checked %s)", kept->reason,
                                   FormatUtc(kept->checked_at_s));
      return out;
    }
  }
  const double cpu_before = ProcessCpuSeconds();
  out.checked_at_s = RealtimeNs() / 1000000000;
  auto ftrace = CheckFtraceCompleteness(200, tracefs);
  std::string found;
  if (ftrace.ok() && ftrace->verdict != CheckVerdict::kLossy) {
    out.backend = Backend::kFtrace;
    found = ftrace->summary + " in a 200 ms check; perf can drop samples silently";
  } else {
    auto perf = CheckPerfCompleteness(200, tracefs);
    const std::string choice =
        AutoBackend(ftrace.ok(), ftrace.ok() ? ftrace->verdict : CheckVerdict::kInconclusive,
                    perf.ok(), perf.ok() ? perf->verdict : CheckVerdict::kInconclusive);
    found = absl::StrFormat(
        "%s; %s",
        ftrace.ok() ? ftrace->summary + " in a 200 ms check"
                    : "ftrace cannot record here: " + std::string(ftrace.status().message()),
        perf.ok() ? perf->summary : "perf check failed: " + std::string(perf.status().message()));
    // Neither works: ftrace's start says what fails.
    out.backend = choice == "perf" ? Backend::kPerf : Backend::kFtrace;
  }
  out.check_cpu_s = ProcessCpuSeconds() - cpu_before;
  out.reason = "auto: " + found;
  if (!verdict_path.empty() && ftrace.ok()) {
    // Not kept (no root, a read-only /run): the next run checks again, which is all it costs.
    StoreVerdict(verdict_path, {key, out.backend, found, out.checked_at_s}).IgnoreError();
  }
  return out;
}

std::string DescribeAutoCheck(const AutoChoice& c) {
  if (c.reused) {
    return absl::StrFormat("the backend check's verdict of %s was reused (same boot, kernel, "
                           "CPUs and perf settings; iotrace doctor checks again)",
                           FormatUtc(c.checked_at_s));
  }
  return absl::StrFormat("the backend check ran at start (%.2f s CPU)", c.check_cpu_s);
}

}  // namespace iotrace
