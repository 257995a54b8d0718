#include "iotrace/formats/coverage.h"

#include <algorithm>

namespace iotrace {
namespace {

constexpr std::string_view kNames[kGapCauseCount] = {"cut", "unfinished", "damaged", "ring_lost",
                                                     "ftrace_overrun"};
constexpr std::string_view kTexts[kGapCauseCount] = {
    "the file is cut short",
    "the recording was not finished (its writer was killed)",
    "part of the data is damaged and was skipped",
    "the perf ring was full (events lost)",
    "the ftrace buffer overran (events lost)",
};

// CPU numbers come from the file: a crafted one must not make the span table huge.
constexpr int32_t kMaxCpu = 1 << 16;

}  // namespace

std::string_view GapCauseName(GapCause cause) { return kNames[static_cast<int>(cause)]; }
std::string_view GapCauseText(GapCause cause) { return kTexts[static_cast<int>(cause)]; }

void Coverage::AddSpan(const CpuSpan& span) {
  if (span.records == 0) return;
  CpuSpan s = span;
  if (s.cpu < 0 || s.cpu >= kMaxCpu) s.cpu = -1;
  auto it = std::lower_bound(cpus.begin(), cpus.end(), s.cpu,
                             [](const CpuSpan& a, int32_t c) { return a.cpu < c; });
  if (it == cpus.end() || it->cpu != s.cpu) {
    cpus.insert(it, s);
    return;
  }
  it->first_ts = std::min(it->first_ts, s.first_ts);
  it->last_ts = std::max(it->last_ts, s.last_ts);
  it->records += s.records;
}

const CpuSpan* Coverage::Span(int32_t cpu) const {
  for (const CpuSpan& s : cpus) {
    if (s.cpu == cpu) return &s;
  }
  return nullptr;
}

void Coverage::EndAll(int nr_cpus, GapCause cause, uint64_t known_until) {
  std::vector<int32_t> ids;
  for (int32_t cpu = 0; cpu < std::min(nr_cpus, kMaxCpu); ++cpu) ids.push_back(cpu);
  for (const CpuSpan& s : cpus) ids.push_back(s.cpu);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  // Looked up by CPU, not searched per CPU: a crafted file names up to 65536 CPUs (searching the
  // gaps and spans for each took seconds).
  std::vector<int32_t> ended;
  for (const DataGap& g : gaps) {
    if (g.open_end()) ended.push_back(g.cpu);
  }
  std::sort(ended.begin(), ended.end());
  std::vector<std::pair<int32_t, uint64_t>> last;  // (cpu, last_ts), by cpu
  for (const CpuSpan& s : cpus) last.emplace_back(s.cpu, s.last_ts);
  std::sort(last.begin(), last.end());
  for (int32_t cpu : ids) {
    if (std::binary_search(ended.begin(), ended.end(), cpu)) continue;
    auto it = std::lower_bound(last.begin(), last.end(), std::make_pair(cpu, uint64_t{0}));
    const uint64_t span_last = it != last.end() && it->first == cpu ? it->second : 0;
    gaps.push_back(DataGap{cpu, std::max(span_last, known_until), DataGap::kOpenEnd, cause, 0});
  }
}

void Coverage::Merge(const Coverage& other) {
  for (const CpuSpan& s : other.cpus) AddSpan(s);
  gaps.insert(gaps.end(), other.gaps.begin(), other.gaps.end());
}

CoverageFilter::CoverageFilter(const std::vector<DataGap>& gaps) : gaps_(gaps) {
  std::stable_sort(gaps_.begin(), gaps_.end(),
                   [](const DataGap& a, const DataGap& b) { return a.after_ts < b.after_ts; });
  max_before_.reserve(gaps_.size());
  block_max_.assign((gaps_.size() + kBlock - 1) / kBlock, 0);
  uint64_t m = 0;
  for (size_t i = 0; i < gaps_.size(); ++i) {
    m = std::max(m, gaps_[i].before_ts);
    max_before_.push_back(m);
    block_max_[i / kBlock] = std::max(block_max_[i / kBlock], gaps_[i].before_ts);
    if (!gaps_[i].open_end()) ends_.push_back(gaps_[i].before_ts);
  }
  std::sort(ends_.begin(), ends_.end());
}

std::optional<GapCause> CoverageFilter::Crosses(uint64_t start, uint64_t end) const {
  // Gaps that begin before the end: gaps_[0, k). One of them crosses when it ends after the
  // start. A gap with no record before it (after_ts 0) begins before any sample's end.
  const size_t k = static_cast<size_t>(
      std::lower_bound(gaps_.begin(), gaps_.end(), end,
                       [](const DataGap& g, uint64_t e) { return g.after_ts < e; }) -
      gaps_.begin());
  if (k == 0 || max_before_[k - 1] <= start) return std::nullopt;
  // The cause given is that of the latest-beginning gap that crosses: looked for back through
  // the gaps, a block of them at a time (a CPU without data, a gap open from the start, would
  // otherwise make every sample scan all the gaps).
  size_t i = k;
  while (i % kBlock != 0) {
    --i;
    if (gaps_[i].before_ts > start) return gaps_[i].cause;
  }
  size_t block = i / kBlock;
  while (block_max_[block - 1] <= start) --block;  // max_before_ says one block has one
  for (i = block * kBlock; i-- > 0;) {
    if (gaps_[i].before_ts > start) return gaps_[i].cause;
  }
  return std::nullopt;
}

}  // namespace iotrace
