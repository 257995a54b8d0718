// A report read as two time ranges on two threads and added up: the plan, the reads, and the
// builder's side of joining them (the matcher's is request_matcher's).
#include <algorithm>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_format.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/base/counters.h"
#include "report_steps.h"

namespace iotrace {

void LatencyReportBuilder::HoldUntil(uint64_t cut_ts, bool prime) {
  before_cut_ = true;
  slow_path_ = true;
  cut_ts_ = cut_ts;
  prime_ = prime;
  if (prime) matcher_->set_sink(&null_sink_);
}

void LatencyReportBuilder::ProbePriming(uint64_t from_ts) {
  probe_ts_ = from_ts;
  probe_started_ = false;
  priming_short_ = false;
}

void LatencyReportBuilder::StartProbe() {
  FlushEvents();  // the counts after every event before from_ts
  probe_ts_ = ~uint64_t{0};
  probe_started_ = true;
  probe_completes_ = matcher_->completes_seen();
  probe_unseen_ = matcher_->stats().completes_without_issue;
}

void LatencyReportBuilder::EndProbe() {  // at the cut (PassCut has handed every event over)
  probe_started_ = false;
  probe_completes_ = matcher_->completes_seen() - probe_completes_;
  probe_unseen_ = matcher_->stats().completes_without_issue - probe_unseen_;
  priming_short_ = probe_unseen_ >= kMinUnseen && probe_unseen_ * kUnseenShare > probe_completes_;
  if (priming_short_) RequestStop();
}

bool LatencyReportBuilder::StartedWhereEnded(const LatencyReportBuilder& earlier,
                                              uint64_t primed_from, size_t* older) {
  RequestMatcher::Older old;
  if (cut_ == nullptr || !earlier.matcher_->SplitOlder(cut_->state, primed_from, &old) ||
      !matcher_->Resolve(&old) || !matcher_->Adopt(old)) {
    return false;
  }
  *older = old.requests.size() + old.queued.size() + old.overlapped.size() +
           old.kept_apart.size() + old.collided.size();
  return true;
}

void LatencyReportBuilder::Absorb(LatencyReportBuilder& later) {
  RecordPending();
  later.RecordPending();
  AddCounters(decoder_.mutable_stats(), later.decoder_.stats(), later.cut_->decode);
  later.matcher_->TakeOver(later.cut_->counts, matcher_->counts());
  later.matcher_->set_sink(this);
  matcher_ = std::move(later.matcher_);
  // The later builder's --by classes in this one's numbers (names of processes get their ids
  // in the order each builder met them).
  auto key = [this, &later](uint32_t dev, uint32_t klass) {
    return dev | uint64_t{breakdown_.Translate(later.breakdown_, klass)} << 32;
  };
  for (const auto& g : later.groups_) {
    GroupFor(SlotFor(key(g->dev, g->klass)), g->op, g->phase)->total.Merge(g->total);
  }
  counters_.samples_filtered += later.counters_.samples_filtered;
  FilterCounts& f = counters_.filtered;
  const FilterCounts& lf = later.counters_.filtered;
  f.dev += lf.dev;
  f.op += lf.op;
  f.comm += lf.comm;
  f.pid += lf.pid;
  for (int op = 0; op < kBlockOpCount; ++op) requests_by_op_[op] += later.requests_by_op_[op];
  for (size_t i = 0; i < comm_hit_.size(); ++i) comm_hit_[i] |= later.comm_hit_[i];
  for (size_t i = 0; i < pid_hit_.size(); ++i) pid_hit_[i] |= later.pid_hit_[i];
  for (const auto& slot : later.slots_) {
    SlotFor(key(slot->dev, slot->klass)).requests += slot->requests;
  }
  longest_d2c_ = std::max(longest_d2c_, later.longest_d2c_);
  if (!started_ && later.started_) {
    // Nothing in the earlier range (a damaged file's page times can put the cut before every
    // event): the recording starts at the later range's first event, as in one pass.
    started_ = true;
    first_ts_ = later.first_ts_;
  }
  last_ts_ = std::max(last_ts_, later.last_ts_);
  for (const LossSummary& l : later.losses_) AddLoss(l.kind, l.cpu, l.event_id, l.count, l.placed);
}

namespace {

ReadStats AddReadStats(const ReadStats& a, const ReadStats& b) {
  ReadStats sum = b;
  sum.records += a.records;
  sum.events += a.events;
  sum.batched_reads += a.batched_reads;
  sum.coverage.Merge(a.coverage);
  for (const auto& [name, count] : a.problems) sum.AddProblem(name, count);
  return sum;
}

// The time ranges of a split read: the earlier one up to the cut, the later one primed for
// half a span before it (a span: 1/64 of the file's, at least 20 ms, at most the matcher's
// expiry and a second: an entry idle longer is gone from the earlier matcher too) and counted
// from the cut; and the rest of the file from the cut, for the earlier builder to read on when
// the later matcher did not start in its state.
struct SplitPlan {
  uint64_t cut = 0;
  TimeRange first, second, rest;
};

// perf.data's split is looked for again earlier in the file when the ranges would differ by
// more than this share of the file's time (twice it: one reads more, the other less).
constexpr double kMinRebalance = 0.02;

std::optional<SplitPlan> PlanSplit(TraceReader& reader, const ReportOptions& options,
                                   std::string* why_not) {
  const bool windowed =
      options.since_s.has_value() || options.until_s.has_value() || options.interval_s != 0;
  if (options.threads != 0 || options.split_min_bytes == 0 || windowed || options.events ||
      !options.assume_gaps.empty()) {
    *why_not = "one pass";
    return std::nullopt;
  }
  if (UsableCpus() < 2 && !options.split_on_one_cpu) {
    *why_not = "one pass: one CPU";
    return std::nullopt;
  }
  std::optional<TraceTimeSpan> span = reader.TimeSpan();
  if (!span.has_value()) {
    *why_not = "one pass: the reader cannot read time ranges";
    return std::nullopt;
  }
  if (span->data_bytes < options.split_min_bytes) {
    *why_not = "one pass: a small file";
    return std::nullopt;
  }
  const uint64_t max_prime = SecondsToNs(options.expiry_s) + 1'000'000'000;
  // The priming of a plan cut at `s`: twice a round's time at least (perf.data), since the
  // later range primes from half the priming before the cut, past what the records before its
  // start may reach; nullopt where `s` leaves nothing to cut at, and why in `why` unless null.
  auto priming = [&](const TraceTimeSpan& s, std::string* why) -> std::optional<uint64_t> {
    auto none = [why](const char* reason) -> std::optional<uint64_t> {
      if (why != nullptr) *why = reason;
      return std::nullopt;
    };
    if (!(s.first_ts < s.middle_ts && s.middle_ts < s.last_ts)) {
      return none("one pass: no time to cut at");
    }
    const uint64_t prime = std::clamp<uint64_t>(
        std::max((s.last_ts - s.first_ts) / 64, 2 * s.late_ns), 20'000'000, max_prime);
    if (2 * s.late_ns > max_prime) return none("one pass: rounds longer than the priming may be");
    if (s.last_ts - s.middle_ts <= prime) return none("one pass: no time to cut at");
    return prime;
  };
  std::optional<uint64_t> prime = priming(*span, why_not);
  if (!prime.has_value()) return std::nullopt;
  if (!span->starts_anywhere) {
    // perf.data: the earlier range counts up to a whole priming past the round mark where the
    // later one starts, so with the mark at the middle the earlier range read ~63% of a 16-CPU
    // file's time and the later ~42% (bench/README.md). The cut at the middle, the mark lies a
    // priming before it (the file's time taken as spread like its bytes): it is looked for
    // again from half a round before there, as the first mark after a place lies up to a round
    // after it, and kept where that plan holds. (From 3/4 of a priming before the middle, the
    // mark found at 16 CPUs lay 3% of the file late, a round being 5% of it: the earlier range
    // counted 56% of the events and took 0.158 s of CPU against 0.138; cut at the middle,
    // 0.152 against 0.146, and 0.21 against 0.21 s at 1024 devices, where it was 0.22-0.23
    // against 0.19-0.22.)
    const double file_time = static_cast<double>(span->last_ts - span->first_ts);
    const double shift =
        (static_cast<double>(*prime) + static_cast<double>(span->late_ns) / 2) / file_time;
    if (shift > kMinRebalance) {
      std::optional<TraceTimeSpan> earlier = reader.TimeSpanFrom(std::max(0.25, 0.5 - shift));
      std::optional<uint64_t> earlier_prime;
      if (earlier.has_value()) earlier_prime = priming(*earlier, /*why=*/nullptr);
      // (A span from the start, where the marks are too far apart from there, is another
      // kind of plan, not this one moved earlier.)
      if (earlier_prime.has_value() && !earlier->starts_anywhere &&
          earlier->middle_ts < span->middle_ts) {
        span = earlier;
        prime = earlier_prime;
      }
    }
  }
  SplitPlan plan;
  // Half a span of priming. Where the later range may start anywhere, the cut lies a quarter
  // span after the middle, so that both threads read as much; else (perf.data) the priming
  // starts half a span after it, and the cut a whole span.
  plan.cut = span->middle_ts + (span->starts_anywhere ? *prime / 4 : *prime);
  plan.first.end_ts = plan.cut;
  plan.first.end_position = span->split_position;
  plan.second.start_ts = plan.cut - std::min(plan.cut, *prime / 2);
  plan.second.count_from_ts = plan.cut;
  plan.second.start_position = span->split_position;
  plan.rest = plan.second;
  plan.rest.start_ts = plan.cut;
  return plan;
}

}  // namespace

std::optional<absl::StatusOr<LatencyReport>> BuildSplit(TraceReader& reader,
                                                        const ReportOptions& options,
                                                        std::string* why_not) {
  const std::optional<SplitPlan> plan = PlanSplit(reader, options, why_not);
  if (!plan.has_value()) return std::nullopt;
  ReportOptions each = options;
  each.threads = 1;
  auto early = LatencyReportBuilder::Create(reader.formats(), each);
  if (!early.ok()) return early.status();
  auto late = LatencyReportBuilder::Create(reader.formats(), each);
  if (!late.ok()) return late.status();
  LatencyReportBuilder& a = **early;
  LatencyReportBuilder& b = **late;
  b.HoldUntil(plan->cut, /*prime=*/true);
  // Counted over the last quarter of the priming: what the later matcher meets there is what it
  // would meet after the cut, requests last seen before its priming began.
  b.ProbePriming(plan->second.start_ts + (plan->cut - plan->second.start_ts) / 4 * 3);
  reader.set_read_ahead(false);  // two threads already; read-ahead on top measured no gain
  // Where the reader shares work between the ranges, each range's read waits for the other's
  // part of it: both are read at once, below.
  TimeRange first = plan->first;
  TimeRange second = plan->second;
  if (reader.ShareRanges(first, second)) {
    first.shared_part = 0;
    second.shared_part = 1;
  }
  RangeReadResult ra, rb;
  absl::Status sb;
  std::thread later([&] {
    sb = b.ReadRange(reader, second, &rb);
    if (b.priming_short()) a.RequestStop();  // (the earlier range's work goes too)
  });
  absl::Status sa = a.ReadRange(reader, first, &ra);
  later.join();
  if (!sa.ok() || !sb.ok()) {
    *why_not = "one pass: a range could not be read";
    return std::nullopt;
  }
  if (b.priming_short()) {
    // Both ranges stopped where the later one met the cut (ProbePriming): one pass, which reads
    // ahead and pairs apart where that is faster, does better than the earlier range reading on
    // alone.
    const auto [completes, unseen] = b.priming_probe();
    *why_not = absl::StrFormat(
        "one pass: requests outlive the priming (%u of the %u completions at the end of the "
        "later range's priming were of requests it had not seen issued)",
        unseen, completes);
    return std::nullopt;
  }
  // (Records out of order are the readers' to find: every record they pass is compared with
  // the one before it.)
  std::string unfit = reader.RangesUnfit(plan->first, ra, rb);
  if (unfit.empty() && !(ra.stats.coverage.complete() && rb.stats.coverage.complete())) {
    unfit = "gaps in the data";
  }
  if (!unfit.empty()) {
    *why_not = "one pass: " + unfit;
    return std::nullopt;
  }
  size_t older = 0;
  if (b.StartedWhereEnded(a, plan->second.start_ts, &older)) {
    a.Absorb(b);
    LatencyReport report = FinishReport(a, reader, AddReadStats(ra.stats, rb.stats), options);
    report.read_plan = older == 0 ? "two ranges"
                                  : absl::StrFormat("two ranges, %u older requests carried over",
                                                    older);
    if (ra.shared_walk && rb.shared_walk) report.read_plan += ", one walk of the data shared";
    return report;
  }
  // The later matcher did not start where the earlier one ended (but for older requests it can
  // account for, RequestMatcher::Resolve): the earlier builder reads on from the cut, and the
  // later one's tables go first (with deep queues they are as large as the earlier's).
  late->reset();
  a.HoldUntil(plan->cut, /*prime=*/false);
  RangeReadResult rc;
  if (!a.ReadRange(reader, plan->rest, &rc).ok() ||
      !reader.RangesUnfit(plan->first, ra, rc).empty() || !rc.stats.coverage.complete()) {
    *why_not = "one pass: the first range could not read on";
    return std::nullopt;
  }
  LatencyReport report = FinishReport(a, reader, AddReadStats(ra.stats, rc.stats), options);
  report.read_plan = "two ranges, the first read on";
  if (ra.shared_walk && rb.shared_walk) report.read_plan += ", one walk of the data shared";
  return report;
}

}  // namespace iotrace
