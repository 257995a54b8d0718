// ReportOptions' names and checks, and the names the report model prints.
#include "iotrace/analysis/report.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "iotrace/base/status.h"

namespace iotrace {
namespace {

constexpr std::string_view kUnitNames[] = {"ns", "us", "ms"};
constexpr std::string_view kFormatNames[] = {"text", "csv", "json", "svg"};
constexpr std::string_view kHistogramViewNames[] = {"none", "log2", "full"};
constexpr std::string_view kLossKindNames[] = {"ring_lost", "silent_drop",
                                                             "ftrace_overrun", "ftrace_dropped"};

}  // namespace

LatencyBuckets LatencyBuckets::OfCounts(std::shared_ptr<const void> keep, const uint8_t* low,
                                        const uint64_t* high, size_t first, size_t len,
                                        size_t non_empty) {
  LatencyBuckets b;
  b.keep_ = std::move(keep);
  b.counts_ = low;
  b.high_ = high;
  b.first_ = first;
  b.len_ = len;
  b.size_ = non_empty;
  return b;
}

LatencyBucket LatencyBuckets::back() const {
  if (counts_ == nullptr) return list_.back();
  // The window ends at the histogram's highest value: its last bucket is never empty.
  return *Iterator(counts_, high_, first_, len_, len_ - 1);
}

LatencyBucket LatencyBuckets::operator[](size_t i) const {
  if (counts_ == nullptr) return list_[i];
  Iterator it = begin();
  for (; i > 0; --i) ++it;
  return *it;
}

std::vector<LatencyBucket> LatencyBuckets::ToVector() const {
  if (counts_ == nullptr) return list_;
  std::vector<LatencyBucket> out;
  out.reserve(size_);
  for (const LatencyBucket& b : *this) out.push_back(b);
  return out;
}

std::string_view TimeUnitName(TimeUnit unit) { return kUnitNames[static_cast<int>(unit)]; }

bool ParseTimeUnit(std::string_view name, TimeUnit* unit) {
  for (int i = 0; i < 3; ++i) {
    if (kUnitNames[i] == name) {
      *unit = static_cast<TimeUnit>(i);
      return true;
    }
  }
  return false;
}

std::string_view OutputFormatName(OutputFormat format) {
  return kFormatNames[static_cast<int>(format)];
}

bool ParseOutputFormat(std::string_view name, OutputFormat* format) {
  for (int i = 0; i < 4; ++i) {
    if (kFormatNames[i] == name) {
      *format = static_cast<OutputFormat>(i);
      return true;
    }
  }
  return false;
}

namespace {
constexpr std::string_view kBreakdownNames[] = {"", "size", "comm", "ioprio", "cpu"};
}  // namespace

std::string_view BreakdownName(BreakdownBy by) { return kBreakdownNames[static_cast<int>(by)]; }

absl::Status ParseBreakdown(std::string_view name, BreakdownBy* by) {
  for (int i = 1; i < 5; ++i) {
    if (kBreakdownNames[i] == name) {
      *by = static_cast<BreakdownBy>(i);
      return absl::OkStatus();
    }
  }
  return WithHint(
      absl::InvalidArgumentError(absl::StrFormat("--by: unknown dimension '%s'", name)),
      "--by takes size, comm, ioprio or cpu");
}

std::string_view HistogramViewName(HistogramView view) {
  return kHistogramViewNames[static_cast<int>(view)];
}

bool ParseHistogramView(std::string_view name, HistogramView* view) {
  for (int i = 0; i < 3; ++i) {
    if (kHistogramViewNames[i] == name) {
      *view = static_cast<HistogramView>(i);
      return true;
    }
  }
  return false;
}

absl::Status ParsePhaseList(std::string_view list, unsigned* mask) {
  *mask = 0;
  for (absl::string_view name :
       absl::StrSplit(absl::string_view(list.data(), list.size()), ',', absl::SkipEmpty())) {
    Phase p;
    if (!ParsePhase(absl::AsciiStrToUpper(name), &p)) {  // I2D or i2d
      return WithHint(absl::InvalidArgumentError(
                          absl::StrFormat("--phases: unknown phase '%s'", name)),
                      "phases are i2d, d2c, i2c, q2d, q2c (comma-separated)");
    }
    *mask |= PhaseBit(p);
  }
  if (*mask == 0) return absl::InvalidArgumentError("--phases: no phase given");
  return absl::OkStatus();
}

std::vector<uint32_t> BusiestDevices(const LatencyReport& report, size_t max_rows, size_t* rows) {
  struct Device {
    size_t rows = 0;
    std::map<std::pair<std::string, BlockOp>, uint64_t> most;  // (class, op) -> largest count
    uint64_t requests = 0;
  };
  std::map<uint32_t, Device> by_dev;
  for (const LatencyGroup& g : report.groups) {
    Device& d = by_dev[g.dev];
    ++d.rows;
    uint64_t& most = d.most[{g.by, g.op}];
    most = std::max(most, g.summary.count);
  }
  std::vector<std::pair<uint32_t, Device*>> order;  // in order of dev
  for (auto& [dev, d] : by_dev) {
    for (const auto& [key, count] : d.most) d.requests += count;
    order.emplace_back(dev, &d);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->requests > b.second->requests;
  });
  std::vector<uint32_t> chosen;
  size_t kept = 0;
  for (const auto& [dev, d] : order) {
    if (!chosen.empty() && kept + d->rows > max_rows) break;
    chosen.push_back(dev);
    kept += d->rows;
  }
  std::sort(chosen.begin(), chosen.end());
  if (rows != nullptr) *rows = kept;
  return chosen;
}

void KeepPhases(unsigned mask, LatencyReport* r) {
  if (mask == 0) return;
  auto dropped = [mask](const LatencyGroup& g) { return (mask & PhaseBit(g.phase)) == 0; };
  std::erase_if(r->groups, dropped);
  for (LatencyInterval& iv : r->intervals) std::erase_if(iv.groups, dropped);
  std::erase_if(r->intervals, [](const LatencyInterval& iv) { return iv.groups.empty(); });
  std::erase_if(r->warnings,
                [mask](const PhaseWarning& w) { return (mask & PhaseBit(w.phase)) == 0; });
}

std::string_view LossKindName(LossRecord::Kind kind) {
  return kLossKindNames[static_cast<int>(kind)];
}

std::string_view NoInsertReasonText(NoInsertReason reason) {
  switch (reason) {
    case NoInsertReason::kInsertNotRecorded:
      return "block_rq_insert was not recorded in this file (record with -e "
             "block:block_rq_insert, one of iotrace record's default events)";
    case NoInsertReason::kNoInsertOnDevice:
      return "the device showed no block_rq_insert at all: requests went straight to the driver "
             "(scheduler none, or a bypass)";
    case NoInsertReason::kFlush:
      return "flush requests are issued by the flush machinery without an insert";
    case NoInsertReason::kInsertMissing:
      return "the insert of these requests was not seen (lost, before the recording started, "
             "issued directly, or the request was front-merged)";
  }
  return "";
}

absl::Status ValidateReportOptions(const ReportOptions& o) {
  auto bad = [](std::string message, std::string_view hint) {
    return WithHint(absl::InvalidArgumentError(message), hint);
  };
  if (o.since_s && !(*o.since_s >= 0)) {
    return bad(absl::StrFormat("--since %g: must be >= 0 seconds", *o.since_s),
               "--since and --until count seconds from the first event in the file");
  }
  if (o.until_s && !(*o.until_s >= 0)) {
    return bad(absl::StrFormat("--until %g: must be >= 0 seconds", *o.until_s),
               "--since and --until count seconds from the first event in the file");
  }
  if (o.since_s && o.until_s && *o.until_s < *o.since_s) {
    return bad(absl::StrFormat("--until %g is before --since %g", *o.until_s, *o.since_s),
               "give a window with since <= until");
  }
  if (!(o.interval_s >= 0) || (o.interval_s > 0 && o.interval_s < 1e-6)) {
    return bad(absl::StrFormat("--interval %g: must be at least 0.000001 seconds", o.interval_s),
               "for example --interval 1 for one block per second");
  }
  if (!(o.expiry_s > 0)) {
    return bad(absl::StrFormat("--expiry %g: must be > 0 seconds", o.expiry_s),
               "the default, 30 s, drops requests idle for 30 s of trace time");
  }
  if (o.max_inflight < 16 || o.max_inflight > (size_t{1} << 26)) {
    return bad(absl::StrFormat("--max-inflight %u: must be between 16 and %u", o.max_inflight,
                               size_t{1} << 26),
               "the default, 131072, is far above any device queue depth");
  }
  if (o.threads < 0 || o.threads > 3) {
    return bad(absl::StrFormat("--threads %d: must be 1, 2, 3 or 0 (auto)", o.threads),
               "1: one thread; 2: + reading ahead; 3: + pairing on a thread of its own; "
               "auto: pairing where it measures faster");
  }
  if (o.events && o.format == OutputFormat::kSvg) {
    return bad("--events --format svg: the event dump is text, CSV or JSON lines",
               "draw the latency report instead: drop --events");
  }
  for (const std::string& d : o.devices) {
    if (d.empty()) return bad("--dev: empty device", "give MAJ:MIN (7:0) or a name (loop0)");
  }
  for (const std::string& c : o.comms) {
    if (c.empty() || c.size() >= kCommSize) {
      return bad(absl::StrFormat("--comm '%s': must be 1 to 15 characters", c),
                 "the kernel keeps only the first 15 characters of a process name");
    }
  }
  return absl::OkStatus();
}

}  // namespace iotrace
