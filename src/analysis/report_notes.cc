// The English of the report: each phase's warnings (incomplete, partial), the notes that say
// what is absent and why, what the filters removed, and the fixes to try.
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/base/text.h"
#include "iotrace/formats/ftrace_page.h"
#include "report_steps.h"

namespace iotrace {
namespace {

// Reader problems that lose no block event: copies dropped whole, records delivered out of
// order (counted, and a phase warning of their own: a request whose events they crossed may be
// paired wrongly), samples of other kinds of event, formats that could not be parsed
// (a block event's shows as absent, with a note), and an unfinished file (a phase warning of
// its own). Any other problem, known or not, may have cost events (ftrace_time_backwards too:
// the rest of that page is skipped).
bool ReaderProblemMayLoseEvents(std::string_view name) {
  static constexpr std::string_view kHarmless[] = {
      "duplicate_record",      "out_of_order_beyond_window", "non_tracepoint_sample",
      "event_format_unparsed", kProblemUnfinishedFile,
      // perf.data cut short after its data: feature sections lost, every event read.
      "file_cut_after_data",
  };
  for (std::string_view h : kHarmless) {
    if (name == h) return false;
  }
  return true;
}

// Reader problems whose damage the reader placed in time, as gaps of its coverage: the data of
// a CPU (or of all, in perf.data's one stream) ends early, or a page of it was skipped. Samples
// across them are left out and counted (CoverageReport), so they leave phases partial, not
// incomplete. Per-record problems of perf.data (a sample that does not parse) are not placed.
bool ReaderProblemPlaced(std::string_view name) {
  static constexpr std::string_view kPlaced[] = {
      kProblemFileCut, "truncated_record", "perf_pipe_stream_truncated", "bad_record_size", "read_error",
      "trace_dat_cpu_data_truncated", "trace_dat_cpu_data_overlap", "ftrace_partial_page",
      "ftrace_short_record", "ftrace_missed_events_uncounted",
  };
  for (std::string_view p : kPlaced) {
    if (name == p) return true;
  }
  // The page problems of ftrace_page.h (bad header, record past the page, time backwards, ...).
  for (int i = 0; i < kFtracePageProblemCount; ++i) {
    if (name == FtracePageProblemName(static_cast<FtracePageProblem>(i))) return true;
  }
  return false;
}

// The phases with a histogram in the report.
std::array<bool, kPhaseCount> PhasesShown(const LatencyReport& r) {
  std::array<bool, kPhaseCount> present{};
  for (const LatencyGroup& g : r.groups) present[static_cast<int>(g.phase)] = true;
  return present;
}

// Notes that name the fix for what the warnings report: losses by kind (a bigger ring or buffer,
// or the ftrace backend against perf's silent drops), requests given up by the matcher's bounds.
void AddFixNotes(const Completeness& c, const ReportOptions& options,
                 std::vector<std::string>* notes) {
  std::array<uint64_t, kLossKindCount> lost{};
  for (const LossSummary& l : c.losses) lost[static_cast<int>(l.kind)] += l.count;
  const uint64_t ring = lost[static_cast<int>(LossRecord::Kind::kRingLost)];
  const uint64_t silent = lost[static_cast<int>(LossRecord::Kind::kSilentDrop)];
  const uint64_t ftrace = lost[static_cast<int>(LossRecord::Kind::kFtraceOverrun)] +
                          lost[static_cast<int>(LossRecord::Kind::kFtraceDropped)];
  if (ring != 0) {
    notes->push_back(absl::StrFormat(
        "%s lost because a perf ring was full (ring_lost): record with bigger rings, iotrace "
        "record -m 4096 (pages per CPU, default 1024) or perf record -m 4096, or with "
        "--backend ftrace",
        Plural(ring, "event")));
  }
  if (silent != 0) {
    notes->push_back(absl::StrFormat(
        "%s dropped by perf without a trace (silent_drop: perf drops samples taken in the idle "
        "task on some kernels, docs/kernel-notes.md): record with iotrace record --backend "
        "ftrace, which does not",
        Plural(silent, "event")));
  }
  if (ftrace != 0) {
    notes->push_back(absl::StrFormat(
        "%s lost because an ftrace buffer was full (ftrace_overrun, ftrace_dropped): record with "
        "a bigger buffer, iotrace record --buffer-kb 32768 (per CPU, default 8192) or trace-cmd "
        "record -b 32768",
        Plural(ftrace, "event")));
  }
  const MatchStats& m = c.match;
  uint64_t stale = 0, expired = 0, evicted = 0;
  for (int i = 0; i < kRequestStateCount; ++i) {
    stale += m.stale_at_end[i];
    expired += m.expired[i];
    evicted += m.evicted[i];
  }
  if (stale != 0 && silent == 0) {
    notes->push_back(absl::StrFormat(
        "%s left issued at the end of the file most likely lost %s completion: if perf "
        "recorded the file, record with iotrace record --backend ftrace, which does not drop "
        "events silently (iotrace's perf backend counts perf's drops)",
        Plural(stale, "request"), stale == 1 ? "its" : "their"));
  }
  if (expired != 0) {
    notes->push_back(absl::StrFormat(
        "%s expired, idle for over %s s of trace time: if a device really takes that long, "
        "report with a longer --expiry",
        Plural(expired, "request"), absl::StrFormat("%g", options.expiry_s)));
  }
  if (evicted != 0) {
    notes->push_back(absl::StrFormat(
        "%s evicted from the full table of requests in flight (--max-inflight %u): report with "
        "a larger --max-inflight",
        Plural(evicted, "request"), options.max_inflight));
  }
}

}  // namespace

void AddIncompleteWarnings(const ReadStats& reader_stats, const LossTally& losses,
                           LatencyReport& r) {
  const std::array<bool, kPhaseCount> present = PhasesShown(r);
  const Completeness& c = r.completeness;
  const DecodeStats& ds = c.decode;
  const auto& lost_by = losses.lost_by;
  const auto& unknown_by = losses.unknown_by;
  auto breakdown = [](const std::array<uint64_t, kLossKindCount>& by) {
    std::vector<std::string> parts;
    for (int i = 0; i < kLossKindCount; ++i) {
      if (by[i] != 0) parts.push_back(absl::StrFormat("%s %u", LossKindName(static_cast<LossRecord::Kind>(i)), by[i]));
    }
    return absl::StrJoin(parts, ", ");
  };
  const MatchStats& ms = c.match;
  const bool unfinished = reader_stats.Problem(kProblemUnfinishedFile) != 0;
  const uint64_t out_of_order = reader_stats.Problem("out_of_order_beyond_window");
  // Reader problems after which events may be missing: a record, a page or the rest of a CPU's
  // data that could not be read (a file cut short or damaged). Which events were in it is
  // unknown, so every phase is incomplete.
  std::vector<std::string> unreadable;
  for (const auto& [name, count] : reader_stats.problems) {
    if (count != 0 && ReaderProblemMayLoseEvents(name) &&
        !(ReaderProblemPlaced(name) && !r.coverage.complete)) {
      unreadable.push_back(absl::StrFormat("%s %u", name, count));
    }
  }
  const int issued = static_cast<int>(RequestState::kIssued);
  const int inserted = static_cast<int>(RequestState::kInserted);
  const int requeued = static_cast<int>(RequestState::kRequeued);
  for (int p = 0; p < kPhaseCount; ++p) {
    // A phase with no histogram at all is still reported when both of its events were recorded:
    // losing every completion must not read as "no D2C to show".
    const bool recorded = c.recorded[static_cast<int>(kPhaseInputs[p][0])] &&
                          c.recorded[static_cast<int>(kPhaseInputs[p][1])];
    if (!present[p] && !recorded) continue;
    std::vector<std::string> why;
    for (BlockEventKind kind : kPhaseInputs[p]) {
      const int k = static_cast<int>(kind);
      if (c.lost[k] != 0) {
        // (Losses placed in time are gaps of the coverage; these are not: any request may
        // have lost an event to them.)
        why.push_back(absl::StrFormat(
            "%s lost (%s), not placed in time",
            Plural(c.lost[k], std::string(BlockEventKindName(kind)) + " event"),
            breakdown(lost_by[k])));
      }
      if (ds.rejected[k] != 0) {
        why.push_back(absl::StrFormat(
            "%s could not be decoded",
            Plural(ds.rejected[k], std::string(BlockEventKindName(kind)) + " record")));
      }
    }
    if (c.lost_unknown != 0) {
      why.push_back(absl::StrFormat("%s of unknown type lost (%s), not placed in time",
                                    Plural(c.lost_unknown, "event"), breakdown(unknown_by)));
    }
    if (unfinished) {
      why.push_back(
          "the file was not finished (its writer was killed?): the losses it counts "
          "last are not in it (iotrace recover makes an iotrace recording a file perf "
          "and trace-cmd read)");
    }
    if (out_of_order != 0) {
      why.push_back(absl::StrFormat(
          "%s handed on out of time order (rounds of the file larger than the reader's merge "
          "window, as a perf.data of many busy CPUs writes them): a request whose events they "
          "crossed may be paired wrongly or not at all",
          Plural(out_of_order, "record")));
    }
    if (!unreadable.empty()) {
      why.push_back(absl::StrFormat("parts of the file could not be read (%s): it is cut short "
                                    "or damaged, and the events in those parts are missing",
                                    absl::StrJoin(unreadable, ", ")));
    }
    // Requests given up in a state the phase had started in and not ended: inserted ones for
    // the phases that end at the issue, issued (or requeued) ones for D2C, both for I2C / Q2C.
    const Phase phase = static_cast<Phase>(p);
    const bool ends_at_issue = phase == Phase::kI2D || phase == Phase::kQ2D;
    const bool starts_at_issue = phase == Phase::kD2C;
    auto given_up_in = [&ms](int state) {
      return ms.expired[state] + ms.evicted[state] + ms.collided[state];
    };
    const uint64_t given_up_inserted = starts_at_issue ? 0 : given_up_in(inserted);
    const uint64_t given_up_issued = ends_at_issue ? 0 : given_up_in(issued) + given_up_in(requeued);
    const uint64_t stale_issued =
        ends_at_issue ? 0 : ms.stale_at_end[issued] + ms.stale_at_end[requeued];
    if (stale_issued != 0) {
      why.push_back(absl::StrFormat(
          "%s issued before the end of the file had waited over %d times the longest D2C "
          "seen (and over %d ms) for a completion that is not in the file: most likely not "
          "recorded (perf drops samples without counting them on some kernels), else the device "
          "is stuck",
          Plural(stale_issued, "request"), kStaleFactor, kStaleFloorNs / 1000000));
    }
    if (given_up_inserted + given_up_issued != 0) {
      why.push_back(absl::StrFormat(
          "%u %s %s never %s (expired, evicted from the table or given up at a collision)",
          given_up_inserted + given_up_issued,
          ends_at_issue ? "inserted" : starts_at_issue ? "issued" : "inserted or issued",
          given_up_inserted + given_up_issued == 1 ? "request" : "requests",
          ends_at_issue ? "issued" : "completed"));
    }
    if (why.empty()) continue;
    r.warnings.push_back(
        {phase, absl::StrFormat("%s is incomplete: %s; %s", PhaseName(phase),
                                absl::StrJoin(why, "; "),
                                present[p] ? "its histograms miss those requests"
                                           : "no request of it could be measured")});
    for (LatencyGroup& g : r.groups) {
      if (g.phase == phase) g.incomplete = true;
    }
    for (LatencyInterval& iv : r.intervals) {
      for (LatencyGroup& g : iv.groups) {
        if (g.phase == phase) g.incomplete = true;
      }
    }
  }
}

// Partial phases: the file's data does not cover the whole recording on every CPU.
void AddPartialWarnings(LatencyReport& r) {
  const std::array<bool, kPhaseCount> present = PhasesShown(r);
  if (!r.coverage.complete) {
    const CoverageReport& cov = r.coverage;
    for (int p = 0; p < kPhaseCount; ++p) {
      uint64_t outside = 0;
      std::vector<std::string> by;
      for (int g = 0; g < kGapCauseCount; ++g) {
        const uint64_t n = cov.outside[p][g];
        outside += n;
        if (n != 0) by.push_back(absl::StrFormat("%s %u", GapCauseName(static_cast<GapCause>(g)), n));
      }
      if (!present[p] && outside == 0) continue;
      const Phase phase = static_cast<Phase>(p);
      const std::string left_out =
          outside == 0 ? std::string()
                       : absl::StrFormat("; %u %s across a gap or past the end of some CPU's data "
                                         "(%s) %s left out, never drawn",
                                         outside, outside == 1 ? "request" : "requests",
                                         absl::StrJoin(by, ", "), outside == 1 ? "is" : "are");
      if (!cov.has_window) {
        r.warnings.push_back({phase, absl::StrFormat("%s cannot be shown: no time is covered by "
                                                     "every CPU's data (a CPU has none)%s",
                                                     PhaseName(phase), left_out)});
      } else {
        r.warnings.push_back(
            {phase, absl::StrFormat("%s is partial: it holds only requests wholly inside "
                                    "%.3f-%.3f s, the time every CPU's data covers%s%s",
                                    PhaseName(phase), (cov.window_start_ns - r.first_ts_ns) / 1e9,
                                    (cov.window_end_ns - r.first_ts_ns) / 1e9,
                                    cov.gap_count == 0 ? "" : ", less the gaps inside it",
                                    left_out)});
      }
    }
  }
}

// Notes: phases that are absent, and why.
void LatencyReportBuilder::AddNotes(const ReadStats& reader_stats, LatencyReport& r) {
  const Completeness& c = r.completeness;
  ExplainFilters(r);
  uint64_t block_events = 0;
  for (uint64_t n : c.events) block_events += n;
  if (block_events == 0) {
    r.notes.emplace_back("the file holds no decodable block events: nothing to pair");
  }
  if (r.ioprio_absent) {
    r.notes.emplace_back(
        "--by ioprio: the file's block_rq_insert/issue events have no ioprio field (it came with "
        "Linux 6.11): every row's priority is shown as -");
  }
  // Which devices have D2C and I2D rows: one pass over the rows (one per device was quadratic:
  // 31 k instructions a device at 1024 devices, bench/scale).
  std::map<uint32_t, std::pair<bool, bool>> phases_of;  // dev -> (has D2C, has I2D)
  for (const LatencyGroup& g : r.groups) {
    auto& [d2c, i2d] = phases_of[g.dev];
    d2c |= g.phase == Phase::kD2C;
    i2d |= g.phase == Phase::kI2D;
  }
  for (const DeviceSummary& d : c.devices) {
    const auto found = phases_of.find(d.dev);
    const bool has_d2c = found != phases_of.end() && found->second.first;
    const bool has_i2d = found != phases_of.end() && found->second.second;
    if (has_d2c && !has_i2d) {
      // Without inserts, the time a request waited before the driver took it shows only from
      // the bio's submission on (Q2D).
      std::string queueing;
      if (d.no_insert_reason == NoInsertReason::kNoInsertOnDevice) {
        queueing = c.recorded[static_cast<int>(BlockEventKind::kBioQueue)]
                       ? "; queueing then shows only in Q2D (bio queued -> issue)"
                       : "; queueing is then only visible as Q2D, through -e block:block_bio_queue";
      }
      r.notes.push_back(absl::StrFormat("%s (%s): no I2D/I2C: %s%s", d.device, DevString(d.dev),
                                        NoInsertReasonText(d.no_insert_reason), queueing));
    } else if (d.issues_without_insert != 0) {
      r.notes.push_back(absl::StrFormat(
          "%s (%s): %s issued without an insert (D2C only): %s", d.device, DevString(d.dev),
          Plural(d.issues_without_insert, "request"), NoInsertReasonText(d.no_insert_reason)));
    }
  }
  if (!c.recorded[static_cast<int>(BlockEventKind::kBioQueue)]) {
    r.notes.emplace_back(
        "no Q2D/Q2C: block_bio_queue was not recorded; record with -e block:block_bio_queue to "
        "see them");
  }
  std::vector<std::string> parts;
  for (const auto& [name, count] : reader_stats.problems) {
    if (name == "duplicate_record") {
      // Dropped whole: what is left is what the kernel produced, so nothing is incomplete.
      r.notes.push_back(absl::StrFormat(
          "%s twice in the file, byte for byte (perf record writes some samples "
          "again in its next drain of the same CPU's ring): %s used once",
          count == 1 ? "1 record appears" : absl::StrFormat("%u records appear", count),
          count == 1 ? "it was" : "each was"));
    } else {
      parts.push_back(absl::StrFormat("%s %u", name, count));
    }
  }
  if (!parts.empty()) {
    r.notes.push_back(absl::StrFormat("the reader met problems in the file (%s); pairing may be "
                                      "affected",
                                      absl::StrJoin(parts, ", ")));
  }
  for (const std::string& f : c.format_problems) {
    r.notes.push_back(absl::StrFormat("unusable event format: %s", f));
  }
  if (c.late_interval_samples != 0) {
    r.notes.push_back(
        absl::StrFormat("%s after %s interval closed and %s counted in a later one",
                        c.late_interval_samples == 1
                            ? "1 sample arrived"
                            : absl::StrFormat("%u samples arrived", c.late_interval_samples),
                        c.late_interval_samples == 1 ? "its" : "their",
                        c.late_interval_samples == 1 ? "was" : "were"));
  }
  AddFixNotes(c, options_, &r.notes);
}

void LatencyReportBuilder::ExplainFilters(LatencyReport& r) {
  const Completeness& c = r.completeness;
  const std::string& file = options_.input;
  auto label = [this](uint32_t dev) {
    const std::string name = names_.Label(dev);
    return name == DevString(dev) ? name : absl::StrFormat("%s (%s)", name, DevString(dev));
  };
  // "--op discard" or "--op discard, --op flush".
  auto flags = [](std::string_view flag, const std::vector<std::string>& values) {
    std::vector<std::string> parts;
    for (const std::string& v : values) parts.push_back(absl::StrFormat("--%s %s", flag, v));
    return absl::StrJoin(parts, ", ");
  };
  auto matches = [](size_t n) { return n == 1 ? "matches" : "match"; };

  // Values that match nothing in the file.
  std::vector<std::string> no_dev;
  for (const std::string& spec : options_.devices) {
    bool found = false;
    for (const DeviceSummary& d : c.devices) found = found || names_.Matches(spec, d.dev);
    if (!found) no_dev.push_back(spec);
  }
  if (!no_dev.empty()) {
    std::vector<std::string> held;
    for (const DeviceSummary& d : c.devices) held.push_back(label(d.dev));
    r.filter_warnings.push_back(absl::StrFormat(
        "%s %s no device in %s; %s", flags("dev", no_dev), matches(no_dev.size()), file,
        held.empty() ? "it holds no block device events"
                     : "it holds " + absl::StrJoin(held, ", ")));
    r.devices_unmatched = no_dev;
  }
  // What the file holds per op, and per device: "read 600, write 634".
  std::vector<std::string> by_op, by_dev;
  for (int op = 0; op < kBlockOpCount; ++op) {
    if (requests_by_op_[op] != 0) {
      by_op.push_back(
          absl::StrFormat("%s %u", BlockOpName(static_cast<BlockOp>(op)), requests_by_op_[op]));
    }
  }
  // Per device (with --by, a device has a slot per class).
  std::map<uint32_t, uint64_t> requests_by_dev;
  for (const auto& slot : slots_) requests_by_dev[slot->dev] += slot->requests;
  for (const auto& [dev, requests] : requests_by_dev) {
    if (requests != 0) by_dev.push_back(absl::StrFormat("%s %u", label(dev), requests));
  }
  auto holds = [](const std::vector<std::string>& held) {
    return held.empty() ? std::string("no completed request") : absl::StrJoin(held, ", ");
  };
  std::vector<std::string> ops, comms, pids;
  for (BlockOp op : options_.ops) {
    if (requests_by_op_[static_cast<int>(op)] == 0) ops.emplace_back(BlockOpName(op));
  }
  for (size_t i = 0; i < options_.comms.size(); ++i) {
    if (comm_hit_[i] == 0) comms.push_back(options_.comms[i]);
  }
  for (size_t i = 0; i < options_.pids.size(); ++i) {
    if (pid_hit_[i] == 0) pids.push_back(absl::StrFormat("%d", options_.pids[i]));
  }
  if (!ops.empty()) {
    r.filter_warnings.push_back(absl::StrFormat("%s %s no request in %s (it holds %s)",
                                                flags("op", ops), matches(ops.size()), file,
                                                holds(by_op)));
  }
  if (!comms.empty()) {
    r.filter_warnings.push_back(absl::StrFormat(
        "%s %s no request in %s (no request was inserted or issued by a process of that name)",
        flags("comm", comms), matches(comms.size()), file));
  }
  if (!pids.empty()) {
    r.filter_warnings.push_back(absl::StrFormat(
        "%s %s no request in %s (no request was inserted or issued by that process)",
        flags("pid", pids), matches(pids.size()), file));
  }
  for (const std::string& w : r.filter_warnings) r.notes.push_back(w);

  // Nothing left to show: which filter removed what.
  if (!r.groups.empty()) return;
  const FilterCounts& f = c.filtered;
  std::vector<std::string> ops_given, pids_given;
  for (BlockOp op : options_.ops) ops_given.emplace_back(BlockOpName(op));
  for (int32_t pid : options_.pids) pids_given.push_back(absl::StrFormat("%d", pid));
  struct Removed {
    std::string flag;
    uint64_t count;
    std::string_view what;
    std::string held;  // what the file holds, when it says more
  };
  const std::string span = absl::StrFormat("the trace spans %.3f s", r.duration_s());
  std::vector<Removed> removed;
  auto add = [&removed](std::string flag, uint64_t count, std::string_view what, std::string held) {
    if (count != 0) removed.push_back({std::move(flag), count, what, std::move(held)});
  };
  add(flags("dev", options_.devices), f.dev, "request", "the file holds " + holds(by_dev));
  add(flags("op", ops_given), f.op, "request", "the file holds " + holds(by_op));
  add(flags("comm", options_.comms), f.comm, "request", "");
  add(flags("pid", pids_given), f.pid, "request", "");
  if (options_.since_s) {
    add(absl::StrFormat("--since %g", *options_.since_s), f.since, "phase sample", span);
  }
  if (options_.until_s) {
    add(absl::StrFormat("--until %g", *options_.until_s), f.until, "phase sample", span);
  }
  std::vector<std::string> parts;
  for (const Removed& x : removed) {
    // The only filter that removed anything removed all there was (else a group would be left).
    parts.push_back(absl::StrFormat("%s removed %s%s%s", x.flag, removed.size() == 1 ? "all " : "",
                                    Plural(x.count, std::string(x.what)),
                                    x.held.empty() ? "" : " (" + x.held + ")"));
  }
  if (parts.empty()) return;
  r.empty_reason = absl::StrJoin(parts, ", ");
  r.notes.push_back("no request latencies to show: " + r.empty_reason);
}

}  // namespace iotrace
