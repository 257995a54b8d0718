#include "iotrace/output/report_format.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "format_cells.h"
#include "iotrace/base/run_on_threads.h"
#include "iotrace/base/text.h"
#include "iotrace/output/svg_plot.h"
#include "iotrace/sys/cpus.h"

namespace iotrace {
namespace {

constexpr int kBarWidth = 40;

double UnitDivisor(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kNs: return 1;
    case TimeUnit::kUs: return 1e3;
    case TimeUnit::kMs: return 1e6;
  }
  return 1;
}

std::string GroupLabel(const LatencyGroup& g) {
  return g.device == DevString(g.dev) ? g.device
                                      : absl::StrFormat("%s (%s)", g.device, DevString(g.dev));
}

// The device and, with --by, the class ("loop0 (7:0) size 4K").
std::string GroupLabel(const LatencyGroup& g, const std::string& by) {
  return by.empty() ? GroupLabel(g) : absl::StrFormat("%s %s %s", GroupLabel(g), by, g.by);
}

std::string HistogramTitle(const LatencyGroup& g, const std::string& by) {
  return Wrapped("",
                 absl::StrFormat("%s %s %s%s: %s", GroupLabel(g, by), BlockOpName(g.op),
                                 PhaseName(g.phase), g.incomplete ? " (INCOMPLETE)" : "",
                                 Plural(g.summary.count, "request")),
                 2);
}

// Both views lay their rows out as bcc's biolatency does: a title, a head naming the unit, then
// "lo -> hi : count |bar|" (80 columns). `by`: --by's dimension ("" without --by).
void WriteBarHead(const LatencyGroup& g, const std::string& by, TimeUnit unit,
                  std::ostream& out) {
  out << HistogramTitle(g, by);
  out << absl::StrFormat("%24s : %-10s distribution\n", TimeUnitName(unit), "count");
}

// "%10s -> %-10s : %-10u |%-40s|", put together by hand: a report of 1024 devices has ~45 k of
// these rows, and a format string parsed for each was most of their time.
void WriteBarRow(std::string_view lo, std::string_view hi, uint64_t count, uint64_t peak,
                 std::ostream& out) {
  const size_t stars = peak == 0 ? 0 : static_cast<size_t>(count * kBarWidth / peak);
  std::string line;
  line.reserve(96);
  AppendAligned(&line, lo, 10, /*align_left=*/false);
  line.append(" -> ");
  AppendAligned(&line, hi, 10, /*align_left=*/true);
  line.append(" : ");
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), count);
  AppendAligned(&line, std::string_view(digits, end - digits), 10, /*align_left=*/true);
  line.append(" |");
  line.append(stars, '*');
  line.append(stars < kBarWidth ? kBarWidth - stars : 0, ' ');
  line.append("|\n");
  out.write(line.data(), static_cast<std::streamsize>(line.size()));
}

// The log2 row of the values [lo, hi) in units of `div` ns: the row of their middle value.
int Log2RowOf(uint64_t lo, uint64_t hi, double div) {
  const double mid = (static_cast<double>(lo) + static_cast<double>(hi - 1)) / 2 / div;
  return mid < 2 ? 0 : static_cast<int>(std::floor(std::log2(mid)));
}

// Log2RowOf a bucket: for a bucket of the scale (LatencyBuckets::ScaleIndex), from a table made
// once for each unit by Log2RowOf itself (a log2 for each of 1024 devices' 0.85 M buckets was ~15
// ms).
int Log2RowOf(const LatencyBucket& b, TimeUnit unit) {
  static const std::array<std::vector<int8_t>, 3> kRows = [] {
    std::array<std::vector<int8_t>, 3> rows;
    for (int u = 0; u < 3; ++u) {
      const double div = UnitDivisor(static_cast<TimeUnit>(u));
      rows[u].resize(LatencyBuckets::kScaleBuckets);
      for (size_t i = 0; i < LatencyBuckets::kScaleBuckets; ++i) {
        const LatencyBucket k = LatencyBuckets::ScaleBucket(i);
        rows[u][i] = static_cast<int8_t>(Log2RowOf(k.lo_ns, k.hi_ns, div));
      }
    }
    return rows;
  }();
  if (const std::optional<size_t> i = LatencyBuckets::ScaleIndex(b.lo_ns, b.hi_ns)) {
    return kRows[static_cast<int>(unit)][*i];
  }
  return Log2RowOf(b.lo_ns, b.hi_ns, UnitDivisor(unit));
}

// biolatency-style power-of-two rows in `unit`: row k holds values in [2^k, 2^(k+1)) units,
// row 0 also holds values below 1 unit. A fine bucket goes to the row of its middle value.
void WriteLog2Histogram(const LatencyGroup& g, const std::string& by, TimeUnit unit,
                        std::ostream& out) {
  std::vector<uint64_t> rows;
  for (const LatencyBucket& b : g.buckets) {
    const int row = Log2RowOf(b, unit);
    if (row >= static_cast<int>(rows.size())) rows.resize(row + 1, 0);
    rows[row] += b.count;
  }
  uint64_t peak = 0;
  size_t first = rows.size();
  for (size_t i = 0; i < rows.size(); ++i) {
    peak = std::max(peak, rows[i]);
    if (rows[i] != 0 && first == rows.size()) first = i;
  }
  WriteBarHead(g, by, unit, out);
  for (size_t i = first; i < rows.size(); ++i) {
    const uint64_t lo = i == 0 ? 0 : uint64_t{1} << i;
    const uint64_t hi = (uint64_t{1} << (i + 1)) - 1;
    WriteBarRow(absl::StrCat(lo), absl::StrCat(hi), rows[i], peak, out);
  }
  out << "\n";
}

// A bucket bound in `unit` to the nanosecond: 41471 ns is "41471", "41.471" us, "0.041471" ms.
std::string BucketBound(uint64_t ns, TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kNs: return absl::StrCat(ns);
    case TimeUnit::kUs: return absl::StrFormat("%u.%03u", ns / 1000, ns % 1000);
    case TimeUnit::kMs: return absl::StrFormat("%u.%06u", ns / 1000000, ns % 1000000);
  }
  return "";
}

// The report's own log-linear buckets, the non-empty ones (as the CSV lists them), each from its
// lowest to its highest nanosecond.
void WriteFullHistogram(const LatencyGroup& g, const std::string& by, TimeUnit unit,
                        std::ostream& out) {
  uint64_t peak = 0;
  for (const LatencyBucket& b : g.buckets) peak = std::max(peak, b.count);
  WriteBarHead(g, by, unit, out);
  for (const LatencyBucket& b : g.buckets) {
    WriteBarRow(BucketBound(b.lo_ns, unit), BucketBound(b.hi_ns - 1, unit), b.count, peak, out);
  }
  out << "\n";
}

// The summary table, laid out for 80 columns: a heading line per device (and --by's class),
// then a row per op x phase under one head. A column is as wide as its widest value, and
// numbers take at least kMinNumberWidth, so that ordinary values (up to 6 characters: 9999.9 us)
// fit 80 columns with both marks (" partial *").
class SummaryTable {
 public:
  static constexpr size_t kNumbers = 8;
  static constexpr size_t kMinNumberWidth = 6;

  explicit SummaryTable(TimeUnit unit) : unit_(unit) {
    for (size_t i = 0; i < kNumbers; ++i) widths_[i] = std::max(kMinNumberWidth, Head(i).size());
  }

  // Widens the columns to hold the rows of `groups`.
  void Fit(const std::vector<LatencyGroup>& groups) {
    for (const LatencyGroup& g : groups) {
      op_width_ = std::max(op_width_, BlockOpName(g.op).size());
      const std::array<std::string, kNumbers> cells = Numbers(g.summary);
      for (size_t i = 0; i < kNumbers; ++i) widths_[i] = std::max(widths_[i], cells[i].size());
    }
  }

  void WriteHead(std::ostream& out) const {
    std::string line = absl::StrFormat("  %-*s %-5s", static_cast<int>(op_width_), "OP", "PHASE");
    for (size_t i = 0; i < kNumbers; ++i) {
      absl::StrAppendFormat(&line, " %*s", static_cast<int>(widths_[i]), Head(i));
    }
    out << line << "\n";
  }

  // The rows of `groups` (sorted by device and class), each device's (each class's, with `by`,
  // --by's dimension) under a line naming it after `lead`.
  void WriteRows(const std::vector<LatencyGroup>& groups, const std::string& by,
                 std::string_view lead, std::ostream& out) const {
    const LatencyGroup* previous = nullptr;
    for (const LatencyGroup& g : groups) {
      if (previous == nullptr || previous->dev != g.dev || previous->device != g.device ||
          previous->by != g.by) {
        out << Wrapped(lead, GroupLabel(g, by), 2);
      }
      previous = &g;
      // "  %-*s %-5s" and " %*s" a number, by hand (6,144 rows at 1024 devices).
      std::string line = "  ";
      AppendAligned(&line, BlockOpName(g.op), op_width_, /*align_left=*/true);
      line += ' ';
      AppendAligned(&line, PhaseName(g.phase), 5, /*align_left=*/true);
      const std::array<std::string, kNumbers> cells = Numbers(g.summary);
      for (size_t i = 0; i < kNumbers; ++i) {
        line += ' ';
        AppendAligned(&line, cells[i], widths_[i], /*align_left=*/false);
      }
      if (g.partial) line += " partial";
      if (g.incomplete) line += " *";
      line += '\n';
      out.write(line.data(), static_cast<std::streamsize>(line.size()));
    }
  }

 private:
  static std::string_view Head(size_t i) {
    static constexpr std::string_view kHeads[kNumbers] = {"COUNT", "MIN", "MEAN",  "P50",
                                                          "P90",   "P99", "P99.9", "MAX"};
    return kHeads[i];
  }

  std::array<std::string, kNumbers> Numbers(const LatencySummary& s) const {
    return {absl::StrCat(s.count),
            FormatLatency(s.min_ns, unit_),
            FormatLatency(static_cast<uint64_t>(std::llround(s.mean_ns)), unit_),
            FormatLatency(s.p50_ns, unit_),
            FormatLatency(s.p90_ns, unit_),
            FormatLatency(s.p99_ns, unit_),
            FormatLatency(s.p999_ns, unit_),
            FormatLatency(s.max_ns, unit_)};
  }

  TimeUnit unit_;
  size_t op_width_ = 2;  // "OP"
  std::array<size_t, kNumbers> widths_{};
};

// Seconds from the report's first event.
std::string Since(const LatencyReport& r, uint64_t ts, int decimals = 3) {
  return absl::StrFormat("%.*f", decimals, ts > r.first_ts_ns ? (ts - r.first_ts_ns) / 1e9 : 0.0);
}

// The coverage lines of the text header (nothing when the data covers the whole recording).
void WriteCoverage(const LatencyReport& r, std::ostream& out) {
  const CoverageReport& c = r.coverage;
  if (c.complete) return;
  if (c.has_window) {
    out << Wrapped("coverage:",
                   absl::StrFormat("PARTIAL: every CPU's data covers %s-%s s of the %.3f s%s",
                                   Since(r, c.window_start_ns), Since(r, c.window_end_ns),
                                   r.duration_s(),
                                   c.gap_count == 0
                                       ? ""
                                       : absl::StrFormat(", less %u %s inside", c.gap_count,
                                                         c.gap_count == 1 ? "gap" : "gaps")),
                   2);
  } else {
    out << Wrapped("coverage:",
                   "NONE: no time is covered by every CPU's data, so no latency can be trusted",
                   2);
  }
  for (const CpuCoverage& cpu : c.cpus) {
    if (!cpu.ends_early) continue;
    const std::string name = cpu.cpu < 0 ? std::string("CPU ?") : absl::StrCat("CPU ", cpu.cpu);
    if (cpu.records == 0) {
      out << Wrapped("  " + name + ":",
                     absl::StrFormat("no data (%s)", GapCauseText(cpu.end_cause)), 4);
    } else {
      out << Wrapped("  " + name + ":",
                     absl::StrFormat("data ends at %s s (%s)", Since(r, cpu.last_ts_ns),
                                     GapCauseText(cpu.end_cause)),
                     4);
    }
  }
  // The first few gaps (JSON input.coverage lists up to CoverageReport::kMaxListedGaps).
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < c.gaps.size() && i < kShown; ++i) {
    const DataGap& g = c.gaps[i];
    out << Wrapped(absl::StrFormat("  CPU %d:", g.cpu),
                   absl::StrFormat("gap %s-%s s (%s%s)",
                                   g.after_ts == 0 ? std::string("start") : Since(r, g.after_ts, 6),
                                   Since(r, g.before_ts, 6), GapCauseText(g.cause),
                                   g.events == 0 ? ""
                                   : g.events == 1 ? ", 1 event"
                                                   : absl::StrFormat(", %u events", g.events)),
                   4);
  }
  if (c.gap_count > kShown) {
    out << absl::StrFormat("  ... and %u more %s (see --format json)\n", c.gap_count - kShown,
                           c.gap_count - kShown == 1 ? "gap" : "gaps");
  }
  const uint64_t outside = c.outside_total();
  out << Wrapped(
      "  ",
      absl::StrFormat(
          "%s; %u phase %s across a gap or past the end of some CPU's data %s left out (see "
          "warnings)",
          c.has_window ? "the histograms hold only requests wholly inside what is covered"
                   : "no histogram can be trusted",
          outside, outside == 1 ? "sample" : "samples", outside == 1 ? "is" : "are"),
      4);
}

std::string Counts(const std::vector<std::pair<std::string_view, uint64_t>>& items) {
  std::vector<std::string> parts;
  for (const auto& [name, count] : items) parts.push_back(absl::StrFormat("%s %u", name, count));
  return absl::StrJoin(parts, ", ");
}

template <size_t N>
std::string StateCounts(const std::array<uint64_t, N>& by_state) {
  std::vector<std::pair<std::string_view, uint64_t>> items;
  for (size_t i = 0; i < N; ++i) {
    items.emplace_back(RequestStateName(static_cast<RequestState>(i)), by_state[i]);
  }
  return Counts(items);
}

// A line of the completeness block: `label`, its value from column 27 on (the values line up),
// wrapped under that column.
std::string Field(std::string_view label, std::string_view value) {
  constexpr size_t kValueColumn = 27;
  std::string lead = std::string(label) + " ";
  if (lead.size() < kValueColumn) lead.resize(kValueColumn, ' ');
  return Wrapped(lead, value, kValueColumn);
}

// What each filter given removed: requests (at their completion) by --dev, --op, --comm and
// --pid; phase samples by --since and --until.
void WriteFilteredOut(const LatencyReport& r, std::ostream& out) {
  const FilterCounts& f = r.completeness.filtered;
  std::vector<std::string> requests, phases;
  auto given = [&r](std::string_view name) {
    for (const auto& [k, v] : r.filters) {
      if (k == name) return true;
    }
    return false;
  };
  const std::pair<std::string_view, uint64_t> by_request[] = {
      {"dev", f.dev}, {"op", f.op}, {"comm", f.comm}, {"pid", f.pid}};
  const std::pair<std::string_view, uint64_t> by_phase[] = {{"since", f.since}, {"until", f.until}};
  for (const auto& [name, count] : by_request) {
    if (given(name)) requests.push_back(absl::StrFormat("--%s %u", name, count));
  }
  for (const auto& [name, count] : by_phase) {
    if (given(name)) phases.push_back(absl::StrFormat("--%s %u", name, count));
  }
  std::vector<std::string> parts;
  if (!requests.empty()) parts.push_back("requests by " + absl::StrJoin(requests, ", "));
  if (!phases.empty()) parts.push_back("phase samples by " + absl::StrJoin(phases, ", "));
  if (parts.empty()) return;
  out << Field("  filtered out:", absl::StrJoin(parts, "; "));
}

void WriteCompleteness(const LatencyReport& r, std::ostream& out) {
  const Completeness& c = r.completeness;
  const MatchStats& m = c.match;
  out << "completeness\n";
  std::vector<std::pair<std::string_view, uint64_t>> events;
  for (int k = 0; k < kBlockEventKindCount; ++k) {
    if (c.recorded[k] || c.events[k] != 0) {
      events.emplace_back(BlockEventKindName(static_cast<BlockEventKind>(k)), c.events[k]);
    }
  }
  events.emplace_back("other", c.other_events);
  out << Field("  events:", Counts(events));
  std::vector<std::pair<std::string_view, uint64_t>> paired;
  for (int p = 0; p < kPhaseCount; ++p) {
    paired.emplace_back(PhaseName(static_cast<Phase>(p)), m.paired[p]);
  }
  out << Field("  paired:", Counts(paired));
  std::vector<std::pair<std::string_view, uint64_t>> reasons;
  for (int i = 0; i < kNoInsertReasonCount; ++i) {
    reasons.emplace_back(NoInsertReasonName(static_cast<NoInsertReason>(i)),
                         m.issues_without_insert[i]);
  }
  out << Field("  issues without insert:", Counts(reasons));
  out << Field("  completes without issue:",
               absl::StrFormat("%u (and %s by the flush machinery)", m.completes_without_issue,
                               Plural(m.flush_sequence_completions, "zero-length completion")));
  out << Wrapped(
      "  ",
      absl::StrFormat(
      "flushes %u, requeues %u (unmatched %u), merges %u (+%u merged while being inserted, "
      "%u of requests not seen), bio merges front %u back %u, partial completions %u, "
      "collisions %u (+%u kept apart), completion errors %u",
      m.flushes, m.requeues, m.requeues_unmatched, m.merges, m.merges_before_insert,
      m.merges_unmatched,
      m.bio_front_merges, m.bio_back_merges, m.partial_completions, m.collisions,
      m.overlapping, m.completion_errors),
      4);
  uint64_t at_gap = 0;
  for (uint64_t n : m.flushes_at_gap) at_gap += n;
  if (at_gap != 0) {
    out << Field("  flushes given up at gaps:",
                 StateCounts(m.flushes_at_gap) +
                     " (in flight where a gap in the data ended: their FIFO pairing cannot be "
                     "trusted past it)");
  }
  uint64_t across_gap = 0;
  for (uint64_t n : m.across_gap) across_gap += n;
  if (across_gap != 0) {
    out << Field("  across gaps:",
                 StateCounts(m.across_gap) +
                     " (last seen before a gap in the data ended, never completed: their events "
                     "most likely lay in it)");
  }
  out << Field(absl::StrFormat("  expired (idle > %s s):", FormatSeconds(r.expiry_s)),
               StateCounts(m.expired));
  out << Field("  evicted (table full):", StateCounts(m.evicted));
  out << Field("  in flight at end:", StateCounts(m.in_flight_at_end));
  uint64_t stale = 0;
  for (uint64_t n : m.stale_at_end) stale += n;
  if (stale != 0) {
    out << Field("    of which stale:", StateCounts(m.stale_at_end));
  }
  if (c.losses.empty()) {
    out << Field("  lost:", "none reported by the file");
  } else {
    out << "  lost:\n";
    for (const LossSummary& l : c.losses) {
      out << Wrapped(absl::StrFormat("    %-15s cpu %-4s %-28s ", LossKindName(l.kind),
                                     l.cpu < 0 ? "?" : absl::StrFormat("%d", l.cpu), l.event),
                     absl::StrFormat("%u%s", l.count,
                                     l.placed == 0 ? ""
                                     : l.placed == l.count
                                         ? " (placed: gaps of the coverage)"
                                         : absl::StrFormat(" (%u placed: gaps of the coverage)",
                                                           l.placed)),
                     6);
    }
  }
  std::vector<std::pair<std::string_view, uint64_t>> reader;
  for (const auto& [name, count] : c.reader_problems) reader.emplace_back(name, count);
  out << Field("  reader:", absl::StrFormat("%s, %s; problems: %s",
                                            Plural(c.reader_records, "record"),
                                            Plural(c.reader_events, "event"),
                                            reader.empty() ? "none" : Counts(reader)));
  std::vector<std::pair<std::string_view, uint64_t>> decode;
  for (int i = 0; i < kDecodeProblemCount; ++i) {
    decode.emplace_back(DecodeProblemName(static_cast<DecodeProblem>(i)), c.decode.problems[i]);
  }
  out << Field("  decoder problems:", Counts(decode));
  if (!r.coverage.complete) {
    std::vector<std::string> phases;
    for (int p = 0; p < kPhaseCount; ++p) {
      std::vector<std::pair<std::string_view, uint64_t>> by;
      for (int g = 0; g < kGapCauseCount; ++g) {
        if (r.coverage.outside[p][g] != 0) {
          by.emplace_back(GapCauseName(static_cast<GapCause>(g)), r.coverage.outside[p][g]);
        }
      }
      if (!by.empty()) {
        phases.push_back(absl::StrFormat("%s (%s)", PhaseName(static_cast<Phase>(p)), Counts(by)));
      }
    }
    out << Field("  outside coverage:", phases.empty() ? "none" : absl::StrJoin(phases, ", "));
  }
  WriteFilteredOut(r, out);
  if (!c.devices.empty()) {
    out << "  devices:\n";
    for (const DeviceSummary& d : c.devices) {
      std::vector<std::pair<std::string_view, uint64_t>> ev;
      for (int k = 0; k < kBlockEventKindCount; ++k) {
        if (d.events[k] != 0) {
          ev.emplace_back(BlockEventKindName(static_cast<BlockEventKind>(k)), d.events[k]);
        }
      }
      out << Wrapped(absl::StrFormat("    %s (%s):", d.device, DevString(d.dev)),
                     absl::StrFormat("%s; issues without insert %u", Counts(ev),
                                     d.issues_without_insert),
                     6);
    }
  }
}

// In place of the table: that there is nothing to show, and why when the filters are why.
void WriteNothingToShow(const LatencyReport& r, std::ostream& out) {
  std::vector<std::string> why;
  if (!r.coverage.complete && !r.coverage.has_window) {
    why.push_back("no time is covered by every CPU's data");
  }
  if (!r.empty_reason.empty()) why.push_back(r.empty_reason);
  out << Wrapped("no request latencies to show" + std::string(why.empty() ? "" : ":"),
                 absl::StrJoin(why, "; "), 2)
      << "\n";
}

// Where WriteJsonGroups puts its text: a buffer written to the stream (or a string) a MiB at a
// time. A report of 1024 devices writes 6,144 groups and 0.85 M buckets (41 MB): an ostream
// insertion per piece (a sentry each) was most of the report's output time, and a std::string's
// appends of pieces (a length and a copy call each) were still 35 ms of its 330.
class JsonGroupsBuffer {
 public:
  // Into `out`, or appended to `text` (see WriteJsonGroups).
  explicit JsonGroupsBuffer(std::ostream& out) : out_(&out), buf_(new char[kSize]) {}
  explicit JsonGroupsBuffer(std::string& text) : text_(&text), buf_(new char[kSize]) {}
  ~JsonGroupsBuffer() { Flush(); }
  // Text whose length the compiler knows: a copy of that many bytes, no call.
  template <size_t N>
  void Put(const char (&text)[N]) {
    Room(N - 1);
    std::memcpy(buf_.get() + at_, text, N - 1);
    at_ += N - 1;
  }
  void Put(std::string_view text) {
    if (text.size() > kSize) {
      Flush();
      Emit(text.data(), text.size());
      return;
    }
    Room(text.size());
    std::memcpy(buf_.get() + at_, text.data(), text.size());
    at_ += text.size();
  }
  // A number in decimal, as `out << n` writes it.
  void Number(uint64_t n) {
    Room(20);  // 2^64 - 1 has 20 digits
    at_ = static_cast<size_t>(
        std::to_chars(buf_.get() + at_, buf_.get() + at_ + 20, n).ptr - buf_.get());
  }
  void Flush() {
    Emit(buf_.get(), at_);
    at_ = 0;
  }

 private:
  // Makes room for `n` more bytes (at most kSize).
  void Room(size_t n) {
    if (at_ + n > kSize) Flush();
  }
  void Emit(const char* data, size_t n) {
    if (out_ != nullptr) {
      out_->write(data, static_cast<std::streamsize>(n));
    } else {
      text_->append(data, n);
    }
  }
  static constexpr size_t kSize = size_t{1} << 20;
  std::ostream* out_ = nullptr;
  std::string* text_ = nullptr;
  std::unique_ptr<char[]> buf_;
  size_t at_ = 0;
};

// `by`: --by's dimension, the key of the group's class ("size": "4K"); "" without --by.
void AppendJsonGroup(const LatencyGroup& g, const std::string& by, const std::string& indent,
                     JsonGroupsBuffer& b) {
  const LatencySummary& m = g.summary;
  b.Put(indent);
  b.Put("{\"dev\": ");
  b.Put(JsonString(DevString(g.dev)));
  b.Put(", \"device\": ");
  b.Put(JsonString(g.device));
  if (!by.empty()) {
    b.Put(", ");
    b.Put(JsonString(by));
    b.Put(": ");
    b.Put(JsonString(g.by));
  }
  b.Put(", \"op\": ");
  b.Put(JsonString(BlockOpName(g.op)));
  b.Put(", \"phase\": ");
  b.Put(JsonString(PhaseName(g.phase)));
  b.Put(g.incomplete ? std::string_view(", \"incomplete\": true")
                     : std::string_view(", \"incomplete\": false"));
  b.Put(g.partial ? std::string_view(", \"partial\": true")
                  : std::string_view(", \"partial\": false"));
  b.Put(", \"outside_coverage\": ");
  b.Number(g.outside_coverage);
  b.Put(",\n");
  b.Put(indent);
  b.Put(" \"count\": ");
  b.Number(m.count);
  b.Put(", \"min_ns\": ");
  b.Number(m.min_ns);
  b.Put(", \"mean_ns\": ");
  b.Put(JsonDouble(m.mean_ns));
  const std::pair<std::string_view, uint64_t> rest[] = {
      {", \"p50_ns\": ", m.p50_ns},   {", \"p90_ns\": ", m.p90_ns}, {", \"p99_ns\": ", m.p99_ns},
      {", \"p999_ns\": ", m.p999_ns}, {", \"max_ns\": ", m.max_ns}, {", \"sum_ns\": ", m.sum_ns}};
  for (const auto& [key, value] : rest) {
    b.Put(key);
    b.Number(value);
  }
  b.Put(",\n");
  b.Put(indent);
  b.Put(" \"buckets\": [");
  bool first = true;
  for (const LatencyBucket& k : g.buckets) {
    if (!first) b.Put(", ");
    first = false;
    b.Put("{\"lo_ns\": ");
    b.Number(k.lo_ns);
    b.Put(", \"hi_ns\": ");
    b.Number(k.hi_ns);
    b.Put(", \"count\": ");
    b.Number(k.count);
    b.Put("}");
  }
  b.Put("]}");
}

// Groups [from, to) of `groups`, each after its separator.
void PutJsonGroups(const std::vector<LatencyGroup>& groups, size_t from, size_t to,
                   const std::string& by, const std::string& inner, JsonGroupsBuffer& b) {
  for (size_t i = from; i < to; ++i) {
    b.Put(i == 0 ? std::string_view("\n") : std::string_view(",\n"));
    AppendJsonGroup(groups[i], by, inner, b);
  }
}

// From this many buckets on, with a second CPU, the groups are written in pieces of about
// kJsonPieceBuckets buckets, every other piece formatted by a second thread into one of two
// buffers that this thread writes out in its turn: a report of 1024 devices (0.85 M buckets,
// 41 MB) spent ~25 ms here on one thread after everything else was done, and the later half
// formatted whole into memory first was 20 MB of fresh pages (~5 k page faults).
constexpr size_t kJsonBucketsForTwoThreads = 200'000;
constexpr size_t kJsonPieceBuckets = 8'192;  // ~400 KB of text

// Groups `groups`, [cuts[p], cuts[p + 1]) the p-th piece: the odd pieces formatted on a second
// thread, the even ones here, all written to `b` in order.
void PutJsonPiecesOnTwoThreads(const std::vector<LatencyGroup>& groups,
                               const std::vector<size_t>& cuts, const std::string& by,
                               const std::string& inner, JsonGroupsBuffer& b) {
  const size_t pieces = cuts.size() - 1;
  // The helper's k-th piece (piece 2k + 1) goes to text[k % 2]: it may start once its
  // k - 2-th was written out.
  std::array<std::string, 2> text;
  std::mutex mu;
  std::condition_variable cv;
  size_t made = 0;     // the helper's pieces formatted
  size_t written = 0;  // the helper's pieces written out
  bool stop = false;
  std::jthread helper([&] {
    std::array<JsonGroupsBuffer, 2> into = {JsonGroupsBuffer(text[0]), JsonGroupsBuffer(text[1])};
    for (size_t k = 0; 2 * k + 1 < pieces; ++k) {
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stop || written + 2 > k; });
        if (stop) return;
      }
      text[k % 2].clear();
      PutJsonGroups(groups, cuts[2 * k + 1], cuts[2 * k + 2], by, inner, into[k % 2]);
      into[k % 2].Flush();
      {
        std::lock_guard lock(mu);
        made = k + 1;
      }
      cv.notify_all();
    }
  });
  // Ends the helper's wait when this thread leaves early (its output threw), before the join.
  struct Stop {
    std::mutex& mu;
    std::condition_variable& cv;
    bool& stop;
    ~Stop() {
      {
        std::lock_guard lock(mu);
        stop = true;
      }
      cv.notify_all();
    }
  } stop_helper{mu, cv, stop};
  for (size_t k = 0; 2 * k < pieces; ++k) {
    PutJsonGroups(groups, cuts[2 * k], cuts[2 * k + 1], by, inner, b);
    if (2 * k + 1 == pieces) break;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return made > k; });
    }
    b.Put(text[k % 2]);
    {
      std::lock_guard lock(mu);
      written = k + 1;
    }
    cv.notify_all();
  }
}

void WriteJsonGroups(const std::vector<LatencyGroup>& groups, const std::string& by,
                     std::ostream& out, const std::string& indent) {
  JsonGroupsBuffer b(out);
  const std::string inner = indent + "  ";
  b.Put("[");
  size_t buckets = 0;
  for (const LatencyGroup& g : groups) buckets += g.buckets.size();
  if (buckets >= kJsonBucketsForTwoThreads && UsableCpus() >= 2) {
    // Pieces of about kJsonPieceBuckets buckets, a group's own fields counted as a few.
    std::vector<size_t> cuts = {0};
    size_t seen = 0;
    for (size_t i = 0; i < groups.size(); ++i) {
      seen += groups[i].buckets.size() + 8;
      if (seen >= kJsonPieceBuckets) {
        cuts.push_back(i + 1);
        seen = 0;
      }
    }
    if (cuts.back() != groups.size()) cuts.push_back(groups.size());
    PutJsonPiecesOnTwoThreads(groups, cuts, by, inner, b);
  } else {
    PutJsonGroups(groups, 0, groups.size(), by, inner, b);
  }
  if (groups.empty()) {
    b.Put("]");
  } else {
    b.Put("\n");
    b.Put(indent);
    b.Put("]");
  }
}

// Completeness: what each filter removed (FilterCounts), after phases_outside_window.
void WriteJsonFiltered(const FilterCounts& f, std::ostream& out) {
  out << ",\n    \"requests_filtered\": {\"dev\": " << f.dev << ", \"op\": " << f.op
      << ", \"comm\": " << f.comm << ", \"pid\": " << f.pid << "}";
  out << ",\n    \"phases_filtered\": {\"since\": " << f.since << ", \"until\": " << f.until << "}";
}

template <typename Names, size_t N>
void WriteJsonCounts(const std::array<uint64_t, N>& counts, Names name_of, std::ostream& out) {
  out << "{";
  for (size_t i = 0; i < N; ++i) {
    out << (i == 0 ? "" : ", ") << JsonString(name_of(i)) << ": " << counts[i];
  }
  out << "}";
}

}  // namespace

// "%u", "%.1f" of us, "%.3f" of ms: std::to_chars writes what printf does (the same digits as
// absl::StrFormat for every value to 30 ms and 20 M random ones), without parsing a format
// (a report of 1024 devices formats ~100 k of them).
std::string FormatLatency(uint64_t ns, TimeUnit unit) {
  char buf[48];
  std::to_chars_result r{buf, std::errc()};
  switch (unit) {
    case TimeUnit::kNs:
      r = std::to_chars(buf, buf + sizeof(buf), ns);
      break;
    case TimeUnit::kUs:
      r = std::to_chars(buf, buf + sizeof(buf), static_cast<double>(ns) / 1e3,
                        std::chars_format::fixed, 1);
      break;
    case TimeUnit::kMs:
      r = std::to_chars(buf, buf + sizeof(buf), static_cast<double>(ns) / 1e6,
                        std::chars_format::fixed, 3);
      break;
  }
  return std::string(buf, r.ptr);
}

std::string FormatSeconds(double s) {
  std::string out = absl::StrFormat("%.6f", s);
  while (out.size() > 1 && out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out;
}

namespace {

// From this many rows on, with a second CPU, the later half of the text's log2 histograms is
// formatted by a second thread while this one formats the earlier half (3.6 MB at 1024
// devices, 6,144 rows: 13 ms on one thread, most of the text's time).
constexpr size_t kTextRowsForTwoThreads = 1024;

void WriteHistograms(const LatencyReport& r, TimeUnit unit, HistogramView view, std::ostream& out) {
  if (view == HistogramView::kNone) return;
  auto write = [&](size_t from, size_t to, std::ostream& into) {
    for (size_t i = from; i < to; ++i) {
      if (view == HistogramView::kLog2) {
        WriteLog2Histogram(r.groups[i], r.by, unit, into);
      } else {
        WriteFullHistogram(r.groups[i], r.by, unit, into);
      }
    }
  };
  const size_t n = r.groups.size();
  // (The full view's rows are a bucket each: 68 MB at 1024 devices, written as they come.)
  if (n < kTextRowsForTwoThreads || view != HistogramView::kLog2 || UsableCpus() < 2) {
    write(0, n, out);
    return;
  }
  std::array<std::ostringstream, 2> halves;
  RunOnThreads(2, [&](size_t t) { write(t * (n / 2), t == 0 ? n / 2 : n, halves[t]); });
  out << halves[0].view() << halves[1].view();
}

}  // namespace

void WriteTextReport(const LatencyReport& r, TimeUnit unit, std::ostream& out,
                     HistogramView histograms) {
  out << Wrapped("iotrace report:",
                 absl::StrFormat("%s (%s, %s), %.3f s of trace", r.input,
                                 r.file_format.empty() ? "?" : r.file_format,
                                 Plural(r.nr_cpus < 0 ? 0 : r.nr_cpus, "CPU"), r.duration_s()),
                 2);
  if (r.recorded_on.known()) out << Wrapped("recorded", RecordedOnText(r.recorded_on), 2);
  if (!r.formats_warning.empty()) out << Wrapped("WARNING:", r.formats_warning, 2);
  WriteCoverage(r, out);
  if (!r.filters.empty()) {
    std::vector<std::string> f;
    for (const auto& [k, v] : r.filters) f.push_back(k + "=" + v);
    out << Wrapped("filters:", absl::StrJoin(f, " "), 2);
  }
  out << "phases: I2D insert->issue (queue), D2C issue->complete (device),\n"
         "        I2C insert->complete, Q2D/Q2C bio queued->issue/complete\n\n";
  if (r.groups.empty()) {
    WriteNothingToShow(r, out);
  } else {
    std::vector<std::string> legend;
    if (!r.coverage.complete) legend.push_back("partial = only what the coverage above holds");
    bool incomplete = r.coverage.complete && !r.warnings.empty();
    for (const LatencyGroup& g : r.groups) incomplete |= g.incomplete;
    if (incomplete) legend.push_back("* = incomplete");
    if (!legend.empty()) legend.back() += ", see warnings";
    out << Wrapped(absl::StrFormat("latency (%s)%s", TimeUnitName(unit), legend.empty() ? "" : ";"),
                   absl::StrJoin(legend, "; "), 2);
    SummaryTable table(unit);
    table.Fit(r.groups);
    table.WriteHead(out);
    table.WriteRows(r.groups, r.by, "", out);
    out << "\n";
  }
  // What qualifies the table, and explains a phase it lacks, comes right after it, before the
  // histograms.
  if (!r.warnings.empty()) {
    out << "warnings\n";
    for (const PhaseWarning& w : r.warnings) out << Wrapped("  WARNING:", w.message, 4);
    out << "\n";
  }
  if (!r.notes.empty()) {
    out << "notes\n";
    for (const std::string& n : r.notes) out << Wrapped("  ", n, 4);
    out << "\n";
  }
  WriteHistograms(r, unit, histograms, out);
  if (!r.intervals.empty()) {
    out << absl::StrFormat("time series, every %s s, latency (%s)\n", FormatSeconds(r.interval_s),
                           TimeUnitName(unit));
    SummaryTable table(unit);
    for (const LatencyInterval& iv : r.intervals) table.Fit(iv.groups);
    table.WriteHead(out);
    for (const LatencyInterval& iv : r.intervals) {
      table.WriteRows(iv.groups, r.by, absl::StrFormat("[%s s]", FormatSeconds(iv.start_s)), out);
    }
    out << "\n";
  }
  WriteCompleteness(r, out);
}

void WriteBucketCsv(const LatencyReport& r, std::ostream& out) {
  const bool series = r.interval_s > 0;
  out << (series ? "interval_start_s," : "") << CsvHeaderWithBy(kBucketCsvHeader, r.by) << "\n";
  auto rows = [&out, &r](const std::vector<LatencyGroup>& groups, const std::string& lead) {
    for (const LatencyGroup& g : groups) {
      const std::string prefix = absl::StrFormat(
          "%s%s,%s%s,%s,%s,", lead, DevString(g.dev), CsvField(g.device),
          r.by.empty() ? std::string() : absl::StrCat(",", CsvField(g.by)), BlockOpName(g.op),
          PhaseName(g.phase));
      std::string lines;  // written at once, as the JSON's buckets
      for (const LatencyBucket& b : g.buckets) {
        absl::StrAppend(&lines, prefix, b.lo_ns, ",", b.hi_ns, ",", b.count, "\n");
      }
      out.write(lines.data(), static_cast<std::streamsize>(lines.size()));
    }
  };
  if (!series) {
    rows(r.groups, "");
  } else {
    for (const LatencyInterval& iv : r.intervals) rows(iv.groups, FormatSeconds(iv.start_s) + ",");
  }
}

void WriteSummaryCsv(const LatencyReport& r, std::ostream& out) {
  const bool series = r.interval_s > 0;
  out << (series ? "interval_start_s," : "") << CsvHeaderWithBy(kSummaryCsvHeader, r.by) << "\n";
  auto rows = [&out, &r](const std::vector<LatencyGroup>& groups, const std::string& lead) {
    for (const LatencyGroup& g : groups) out << lead << SummaryCsvCells(g, !r.by.empty()) << "\n";
  };
  if (!series) {
    rows(r.groups, "");
  } else {
    for (const LatencyInterval& iv : r.intervals) rows(iv.groups, FormatSeconds(iv.start_s) + ",");
  }
}

void WriteJsonCoverage(const LatencyReport& r, std::ostream& out) {
  const CoverageReport& c = r.coverage;
  out << "{\"complete\": " << (c.complete ? "true" : "false")
      << ", \"has_window\": " << (c.has_window ? "true" : "false")
      << ", \"window_start_ns\": " << c.window_start_ns
      << ", \"window_end_ns\": " << c.window_end_ns << ", \"cpus\": [";
  for (size_t i = 0; i < c.cpus.size(); ++i) {
    const CpuCoverage& cpu = c.cpus[i];
    out << (i == 0 ? "" : ", ") << "{\"cpu\": " << cpu.cpu << ", \"records\": " << cpu.records
        << ", \"first_ts_ns\": " << cpu.first_ts_ns << ", \"last_ts_ns\": " << cpu.last_ts_ns
        << ", \"ends_early\": " << (cpu.ends_early ? "true" : "false") << ", \"end_cause\": "
        << (cpu.ends_early ? JsonString(GapCauseName(cpu.end_cause)) : "null")
        << ", \"gaps\": " << cpu.gaps << "}";
  }
  out << "], \"gap_count\": " << c.gap_count << ", \"gaps\": [";
  for (size_t i = 0; i < c.gaps.size(); ++i) {
    const DataGap& g = c.gaps[i];
    out << (i == 0 ? "" : ", ") << "{\"cpu\": " << g.cpu << ", \"after_ts_ns\": " << g.after_ts
        << ", \"before_ts_ns\": " << g.before_ts
        << ", \"cause\": " << JsonString(GapCauseName(g.cause)) << ", \"events\": " << g.events
        << "}";
  }
  out << "], \"outside\": {";
  for (int p = 0; p < kPhaseCount; ++p) {
    out << (p == 0 ? "" : ", ") << JsonString(PhaseName(static_cast<Phase>(p))) << ": ";
    WriteJsonCounts(c.outside[p], [](size_t g) { return GapCauseName(static_cast<GapCause>(g)); },
                    out);
  }
  out << "}}";
}

void WriteJsonReport(const LatencyReport& r, std::ostream& out) {
  const Completeness& c = r.completeness;
  const MatchStats& m = c.match;
  out << "{\n";
  out << "  \"schema_version\": " << LatencyReport::kSchemaVersion << ",\n";
  out << "  \"input\": {\"path\": " << JsonString(r.input);
  if (!r.files.empty()) {
    out << ", \"files\": [";
    for (size_t i = 0; i < r.files.size(); ++i) {
      out << (i == 0 ? "" : ", ") << JsonString(r.files[i]);
    }
    out << "]";
  }
  out << ", \"format\": " << JsonString(r.file_format)
      << ", \"formats_source\": " << JsonString(r.formats_source);
  if (!r.formats_warning.empty()) out << ", \"formats_warning\": " << JsonString(r.formats_warning);
  out << ", \"cpus\": " << r.nr_cpus << ", \"recorded_on\": ";
  out << JsonRecordedOn(r.recorded_on);
  out << ", \"first_ts_ns\": " << r.first_ts_ns << ", \"last_ts_ns\": " << r.last_ts_ns
      << ", \"duration_s\": " << JsonDouble(r.duration_s()) << ", \"coverage\": ";
  WriteJsonCoverage(r, out);
  out << "},\n";
  out << "  \"options\": {\"interval_s\": " << JsonDouble(r.interval_s)
      << ", \"expiry_s\": " << JsonDouble(r.expiry_s) << ", \"max_inflight\": " << r.max_inflight;
  if (!r.by.empty()) out << ", \"by\": " << JsonString(r.by);
  out << ", \"filters\": [";
  for (size_t i = 0; i < r.filters.size(); ++i) {
    out << (i == 0 ? "" : ", ") << "{\"name\": " << JsonString(r.filters[i].first)
        << ", \"value\": " << JsonString(r.filters[i].second) << "}";
  }
  out << "]},\n";
  out << "  \"groups\": ";
  WriteJsonGroups(r.groups, r.by, out, "  ");
  out << ",\n  \"intervals\": [";
  for (size_t i = 0; i < r.intervals.size(); ++i) {
    const LatencyInterval& iv = r.intervals[i];
    out << (i == 0 ? "\n" : ",\n") << "    {\"interval_start_s\": "
        << JsonDouble(iv.start_s) << ", \"groups\": ";
    WriteJsonGroups(iv.groups, r.by, out, "    ");
    out << "}";
  }
  out << (r.intervals.empty() ? "]" : "\n  ]") << ",\n";

  out << "  \"completeness\": {\n";
  out << "    \"events\": {";
  bool first = true;
  for (int k = 0; k < kBlockEventKindCount; ++k) {
    if (!c.recorded[k] && c.events[k] == 0) continue;
    out << (first ? "" : ", ") << JsonString(BlockEventKindName(static_cast<BlockEventKind>(k)))
        << ": " << c.events[k];
    first = false;
  }
  out << "},\n    \"other_events\": " << c.other_events << ",\n";
  out << "    \"paired\": ";
  WriteJsonCounts(m.paired, [](size_t i) { return PhaseName(static_cast<Phase>(i)); }, out);
  out << ",\n    \"issues_without_insert\": ";
  WriteJsonCounts(m.issues_without_insert,
                  [](size_t i) { return NoInsertReasonName(static_cast<NoInsertReason>(i)); }, out);
  out << ",\n    \"completes_without_issue\": " << m.completes_without_issue
      << ",\n    \"flush_sequence_completions\": " << m.flush_sequence_completions
      << ",\n    \"flushes\": " << m.flushes << ",\n    \"requeues\": " << m.requeues
      << ",\n    \"requeues_unmatched\": " << m.requeues_unmatched
      << ",\n    \"merges\": " << m.merges
      << ",\n    \"merges_before_insert\": " << m.merges_before_insert
      << ",\n    \"merges_unmatched\": " << m.merges_unmatched
      << ",\n    \"bio_front_merges\": " << m.bio_front_merges
      << ",\n    \"bio_back_merges\": " << m.bio_back_merges
      << ",\n    \"partial_completions\": " << m.partial_completions
      << ",\n    \"collisions\": " << m.collisions
      << ",\n    \"overlapping\": " << m.overlapping
      << ",\n    \"bio_queue_on_live_request\": " << m.bio_queue_on_live
      << ",\n    \"completion_errors\": " << m.completion_errors
      << ",\n    \"negative_latency\": " << m.negative_latency;
  auto state_name = [](size_t i) { return RequestStateName(static_cast<RequestState>(i)); };
  out << ",\n    \"expired\": ";
  WriteJsonCounts(m.expired, state_name, out);
  out << ",\n    \"evicted\": ";
  WriteJsonCounts(m.evicted, state_name, out);
  out << ",\n    \"in_flight_at_end\": ";
  WriteJsonCounts(m.in_flight_at_end, state_name, out);
  out << ",\n    \"stale_at_end\": ";
  WriteJsonCounts(m.stale_at_end, state_name, out);
  out << ",\n    \"flushes_at_gap\": ";
  WriteJsonCounts(m.flushes_at_gap, state_name, out);
  out << ",\n    \"across_gap\": ";
  WriteJsonCounts(m.across_gap, state_name, out);
  out << ",\n    \"losses\": [";
  for (size_t i = 0; i < c.losses.size(); ++i) {
    const LossSummary& l = c.losses[i];
    out << (i == 0 ? "" : ", ") << "{\"kind\": " << JsonString(LossKindName(l.kind))
        << ", \"cpu\": " << l.cpu << ", \"event\": " << JsonString(l.event)
        << ", \"count\": " << l.count << ", \"placed\": " << l.placed << "}";
  }
  out << "],\n    \"reader\": {\"records\": " << c.reader_records
      << ", \"events\": " << c.reader_events << ", \"problems\": {";
  for (size_t i = 0; i < c.reader_problems.size(); ++i) {
    out << (i == 0 ? "" : ", ") << JsonString(c.reader_problems[i].first) << ": "
        << c.reader_problems[i].second;
  }
  out << "}},\n    \"decoder_problems\": ";
  WriteJsonCounts(c.decode.problems,
                  [](size_t i) { return DecodeProblemName(static_cast<DecodeProblem>(i)); }, out);
  out << ",\n    \"format_problems\": [";
  for (size_t i = 0; i < c.format_problems.size(); ++i) {
    out << (i == 0 ? "" : ", ") << JsonString(c.format_problems[i]);
  }
  out << "],\n    \"samples_filtered\": " << c.samples_filtered
      << ",\n    \"phases_outside_window\": " << c.phases_outside_window;
  WriteJsonFiltered(c.filtered, out);
  out << ",\n    \"devices\": [";
  for (size_t i = 0; i < c.devices.size(); ++i) {
    const DeviceSummary& d = c.devices[i];
    out << (i == 0 ? "\n      " : ",\n      ") << "{\"dev\": " << JsonString(DevString(d.dev))
        << ", \"device\": " << JsonString(d.device) << ", \"events\": ";
    WriteJsonCounts(d.events,
                    [](size_t k) { return BlockEventKindName(static_cast<BlockEventKind>(k)); },
                    out);
    out << ", \"issues_without_insert\": " << d.issues_without_insert
        << ", \"no_insert_reason\": "
        // The reason explains issues without an insert: with none, there is nothing to explain.
        << (d.issues_without_insert == 0 ? std::string("null")
                                         : JsonString(NoInsertReasonName(d.no_insert_reason)))
        << "}";
  }
  out << (c.devices.empty() ? "]" : "\n    ]") << "\n  },\n";
  out << "  \"warnings\": [";
  for (size_t i = 0; i < r.warnings.size(); ++i) {
    out << (i == 0 ? "\n    " : ",\n    ") << "{\"phase\": "
        << JsonString(PhaseName(r.warnings[i].phase))
        << ", \"message\": " << JsonString(r.warnings[i].message) << "}";
  }
  out << (r.warnings.empty() ? "]" : "\n  ]") << ",\n";
  out << "  \"notes\": [";
  for (size_t i = 0; i < r.notes.size(); ++i) {
    out << (i == 0 ? "\n    " : ",\n    ") << JsonString(r.notes[i]);
  }
  out << (r.notes.empty() ? "]" : "\n  ]") << "\n}\n";
}

std::string FormatReport(const LatencyReport& report, OutputFormat format, TimeUnit unit) {
  std::ostringstream out;
  switch (format) {
    case OutputFormat::kText: WriteTextReport(report, unit, out, HistogramView::kLog2); break;
    case OutputFormat::kCsv: WriteBucketCsv(report, out); break;
    case OutputFormat::kJson: WriteJsonReport(report, out); break;
    case OutputFormat::kSvg: WriteSvgReport(report, SvgPlotOptions(), out); break;
  }
  return out.str();
}

}  // namespace iotrace
