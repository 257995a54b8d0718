#include "iotrace/analysis/latency_diff.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <span>
#include <string_view>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/base/run_on_threads.h"
#include "iotrace/base/status.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/sys/cpus.h"

namespace iotrace {
namespace {

// The percentiles of LatencySummary, by DiffStatKind.
constexpr double kPercentiles[] = {50, 90, 99, 99.9};

// Device, --by's class, op, phase.
using RowKey = std::tuple<uint32_t, std::string, BlockOp, Phase>;

// splitmix64: a fixed stream, so that the same files give the same p-values on any machine
// (std's distributions are not specified bit for bit).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // In [0, bound): Lemire's multiply-shift (its bias, under 2^-40 for our bounds, is nothing).
  uint64_t Below(uint64_t bound) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * bound) >> 64);
  }

 private:
  uint64_t state_;
};

// |cA/nA - cB/nB| * nA * nB, exactly.
unsigned __int128 ScaledGap(uint64_t ca, uint64_t na, uint64_t cb, uint64_t nb) {
  const unsigned __int128 x = static_cast<unsigned __int128>(ca) * nb;
  const unsigned __int128 y = static_cast<unsigned __int128>(cb) * na;
  return x > y ? x - y : y - x;
}

// D of two count vectors over the same grid (cumulated here), with the sign where it is largest.
KsResult KsOfCounts(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, uint64_t na,
                    uint64_t nb) {
  KsResult r;
  if (na == 0 || nb == 0) return r;
  uint64_t ca = 0, cb = 0;
  unsigned __int128 best = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ca += a[i];
    cb += b[i];
    const unsigned __int128 gap = ScaledGap(ca, na, cb, nb);
    if (gap > best) {
      best = gap;
      // More of A than of B below this point: B's values are the larger ones.
      const unsigned __int128 below_a = static_cast<unsigned __int128>(ca) * nb;
      r.direction = below_a > static_cast<unsigned __int128>(cb) * na ? 1 : -1;
    }
  }
  r.d = static_cast<double>(best) / (static_cast<double>(na) * static_cast<double>(nb));
  return r;
}

// The grid of bucket lower bounds that `lists` use, sorted.
std::vector<uint64_t> GridOf(std::span<const std::span<const LatencyBucket>> lists) {
  std::vector<uint64_t> grid;
  for (std::span<const LatencyBucket> l : lists) {
    for (const LatencyBucket& b : l) grid.push_back(b.lo_ns);
  }
  std::sort(grid.begin(), grid.end());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  return grid;
}

size_t GridIndex(const std::vector<uint64_t>& grid, uint64_t lo) {
  return static_cast<size_t>(std::lower_bound(grid.begin(), grid.end(), lo) - grid.begin());
}

uint64_t CountOf(std::span<const LatencyBucket> buckets) {
  uint64_t n = 0;
  for (const LatencyBucket& b : buckets) n += b.count;
  return n;
}

// A percentile of `g` with the bucket that holds its rank (Histogram::ValueAtPercentile's rank),
// clamped to the side's min and max.
void PercentileRange(const LatencyGroup& g, double p, uint64_t* lo, uint64_t* hi) {
  const uint64_t n = g.summary.count;
  uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
  rank = std::clamp<uint64_t>(rank, 1, n);
  uint64_t seen = 0;
  *lo = g.summary.min_ns;
  *hi = g.summary.max_ns;
  for (const LatencyBucket& b : g.buckets) {
    seen += b.count;
    if (seen >= rank) {
      *lo = std::clamp(b.lo_ns, g.summary.min_ns, g.summary.max_ns);
      *hi = std::clamp(b.hi_ns - 1, g.summary.min_ns, g.summary.max_ns);
      return;
    }
  }
}

DiffStat CompareStat(const LatencyGroup& a, const LatencyGroup& b, DiffStatKind kind) {
  DiffStat s;
  const int k = static_cast<int>(kind);
  if (kind == DiffStatKind::kMean) {
    s.a_ns = static_cast<uint64_t>(std::llround(a.summary.mean_ns));
    s.b_ns = static_cast<uint64_t>(std::llround(b.summary.mean_ns));
    s.a_lo_ns = s.a_hi_ns = s.a_ns;
    s.b_lo_ns = s.b_hi_ns = s.b_ns;
  } else if (kind == DiffStatKind::kMax) {
    s.a_ns = s.a_lo_ns = s.a_hi_ns = a.summary.max_ns;
    s.b_ns = s.b_lo_ns = s.b_hi_ns = b.summary.max_ns;
  } else {
    const uint64_t LatencySummary::*field[] = {&LatencySummary::p50_ns, &LatencySummary::p90_ns,
                                               &LatencySummary::p99_ns, &LatencySummary::p999_ns};
    s.a_ns = a.summary.*field[k];
    s.b_ns = b.summary.*field[k];
    PercentileRange(a, kPercentiles[k], &s.a_lo_ns, &s.a_hi_ns);
    PercentileRange(b, kPercentiles[k], &s.b_lo_ns, &s.b_hi_ns);
  }
  s.change_ns = static_cast<int64_t>(s.b_ns) - static_cast<int64_t>(s.a_ns);
  s.change_pct = s.a_ns == 0 ? 0 : 100.0 * static_cast<double>(s.change_ns) / s.a_ns;
  s.beyond_buckets = s.b_lo_ns > s.a_hi_ns || s.a_lo_ns > s.b_hi_ns;
  return s;
}

// The devices of a report, by number, with the names it gives them.
std::map<uint32_t, std::string> DevicesOf(const LatencyReport& r) {
  std::map<uint32_t, std::string> devs;
  for (const LatencyGroup& g : r.groups) devs.emplace(g.dev, g.device);
  return devs;
}

bool SpecNames(std::string_view spec, uint32_t dev, const std::string& name) {
  return spec == DevString(dev) || spec == name || spec == "/dev/" + name;
}

absl::StatusOr<uint32_t> FindDevice(const std::map<uint32_t, std::string>& devs,
                                    std::string_view spec, std::string_view side,
                                    const LatencyReport& r, std::string_view given) {
  for (const auto& [dev, name] : devs) {
    if (SpecNames(spec, dev, name)) return dev;
  }
  std::vector<std::string> held;
  for (const auto& [dev, name] : devs) {
    held.push_back(name == DevString(dev) ? name
                                          : absl::StrFormat("%s (%s)", name, DevString(dev)));
  }
  return UsageError(
      absl::StrFormat("--map %s: %s (%s) has no device %s", given, side, r.input, spec),
      absl::StrFormat("%s holds %s; name a device as MAJ:MIN or as the report names it", side,
                      held.empty() ? "no device" : absl::StrJoin(held, ", ")));
}

// Each block's bucket lists per device x op x phase (blocks without samples left out): the
// report's intervals, `per_block` of them merged into one.
absl::flat_hash_map<RowKey, std::vector<std::vector<LatencyBucket>>> BlocksOf(
    const LatencyReport& r, uint64_t per_block) {
  std::map<std::pair<RowKey, uint64_t>, std::map<uint64_t, LatencyBucket>> merged;
  for (const LatencyInterval& iv : r.intervals) {
    for (const LatencyGroup& g : iv.groups) {
      auto& buckets = merged[{RowKey{g.dev, g.by, g.op, g.phase}, iv.index / per_block}];
      for (const LatencyBucket& b : g.buckets) {
        LatencyBucket& m = buckets[b.lo_ns];
        m.lo_ns = b.lo_ns;
        m.hi_ns = b.hi_ns;
        m.count += b.count;
      }
    }
  }
  absl::flat_hash_map<RowKey, std::vector<std::vector<LatencyBucket>>> blocks;
  for (const auto& [key, buckets] : merged) {
    if (buckets.empty()) continue;
    std::vector<LatencyBucket>& list = blocks[key.first].emplace_back();
    for (const auto& [lo, b] : buckets) list.push_back(b);
  }
  return blocks;
}

bool PhaseIncomplete(const LatencyReport& r, Phase p) {
  for (const PhaseWarning& w : r.warnings) {
    if (w.phase == p) return true;
  }
  return false;
}

DiffSide SideOf(const LatencyReport& r, double block_s) {
  DiffSide s;
  s.input = r.input;
  s.file_format = r.file_format;
  s.nr_cpus = r.nr_cpus;
  s.recorded_on = r.recorded_on;
  s.duration_s = r.duration_s();
  s.blocks = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(s.duration_s / block_s)));
  for (const PhaseWarning& w : r.warnings) s.warnings.push_back(w.message);
  return s;
}

// The verdict of a row with both sides, after Holm: the direction of the largest CDF gap, kept
// only if a percentile moved that way by more than its buckets blur and by --min-change.
void Decide(DiffRow& row, const DiffOptions& o) {
  if (row.p_adjusted > o.alpha || row.direction == 0) {
    row.reason = "not significant";
    return;
  }
  bool beyond = false, against = false;
  for (DiffStatKind k : {DiffStatKind::kP50, DiffStatKind::kP90, DiffStatKind::kP99,
                         DiffStatKind::kP999}) {
    const DiffStat& s = row.stats[static_cast<int>(k)];
    if (!s.beyond_buckets) continue;
    if ((s.change_ns > 0 ? 1 : -1) != row.direction) {
      against = true;
      continue;
    }
    beyond = true;
    if (std::fabs(s.change_pct) >= o.min_change_pct) {
      row.verdict = row.direction > 0 ? DiffVerdict::kSlower : DiffVerdict::kFaster;
      return;
    }
  }
  row.reason = beyond    ? "under --min-change"
               : against ? "the percentiles moved against the shift"
                         : "within the bucket width";
}

void CheckFailOn(LatencyDiff& d) {
  for (const FailOnRule& rule : d.fail_on) {
    for (size_t i = 0; i < d.rows.size(); ++i) {
      const DiffRow& row = d.rows[i];
      if (row.phase != rule.phase || !DiffChanged(row.verdict)) {
        continue;
      }
      const DiffStat& s = row.stats[static_cast<int>(rule.stat)];
      const double change = rule.percent ? s.change_pct : static_cast<double>(s.change_ns);
      if (rule.greater ? change > rule.value : change < rule.value) {
        d.hits.push_back(FailOnHit{rule.text, i, change});
      }
    }
  }
}

}  // namespace

double ChooseBlockSeconds(double duration_a_s, double duration_b_s) {
  const double shorter = std::min(duration_a_s, duration_b_s);
  if (shorter > kMaxAutoBlocks) return std::ceil(shorter / kMaxAutoBlocks);
  if (shorter >= 10) return 1;
  // Microseconds at least: a recording of one event has no length.
  return std::max(shorter / 10, 1e-6);
}

KsResult KsStatistic(std::span<const LatencyBucket> a, std::span<const LatencyBucket> b) {
  const std::array<std::span<const LatencyBucket>, 2> lists = {a, b};
  const std::vector<uint64_t> grid = GridOf(lists);
  std::vector<uint64_t> ca(grid.size()), cb(grid.size());
  for (const LatencyBucket& x : a) ca[GridIndex(grid, x.lo_ns)] += x.count;
  for (const LatencyBucket& x : b) cb[GridIndex(grid, x.lo_ns)] += x.count;
  return KsOfCounts(ca, cb, CountOf(a), CountOf(b));
}

double KsPValueIid(double d, uint64_t na, uint64_t nb) {
  if (na == 0 || nb == 0 || d <= 0) return 1;
  const double ne = static_cast<double>(na) * nb / (static_cast<double>(na) + nb);
  const double lambda = (std::sqrt(ne) + 0.12 + 0.11 / std::sqrt(ne)) * d;
  // The series converges slowly below ~0.3, where Q is 1 to many digits anyway.
  if (lambda < 0.3) return 1;
  double q = 0;
  for (int k = 1; k <= 100; ++k) {
    const double term = std::exp(-2.0 * k * k * lambda * lambda);
    q += (k % 2 == 1 ? 2 : -2) * term;
    if (term < 1e-16) break;
  }
  return std::clamp(q, 0.0, 1.0);
}

// From this many rows on, the rows' relabelling tests run on several threads, at most this many.
constexpr size_t kThreadedTestRows = 16;
constexpr size_t kMaxTestThreads = 16;

double KsPValueBlocks(const std::vector<std::vector<LatencyBucket>>& blocks_a,
                      const std::vector<std::vector<LatencyBucket>>& blocks_b, int resamples,
                      uint64_t seed) {
  if (blocks_a.empty() || blocks_b.empty()) return 1;
  std::vector<std::span<const LatencyBucket>> all;
  for (const auto& b : blocks_a) all.emplace_back(b);
  for (const auto& b : blocks_b) all.emplace_back(b);
  const std::vector<uint64_t> grid = GridOf(all);
  // Each block as (grid index, count) pairs, and the pooled counts.
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> cells(all.size());
  std::vector<uint64_t> sizes(all.size(), 0);
  std::vector<uint64_t> pooled(grid.size(), 0);
  for (size_t i = 0; i < all.size(); ++i) {
    for (const LatencyBucket& b : all[i]) {
      const size_t g = GridIndex(grid, b.lo_ns);
      cells[i].emplace_back(static_cast<uint32_t>(g), b.count);
      pooled[g] += b.count;
      sizes[i] += b.count;
    }
  }
  const uint64_t total = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
  // The pooled counts cumulated: with the blocks in order[0, k) counting c of the first i
  // cells and n in all, and the rest (pooled - c) of total - n, KsOfCounts' |c (total - n) -
  // (pooled - c) n| is |c total - pooled n|: one walk of the side's counts, the same integers
  // (so the same D) as KsOfCounts of the side against the rest.
  std::vector<uint64_t> pooled_below(grid.size());
  std::partial_sum(pooled.begin(), pooled.end(), pooled_below.begin());
  std::vector<uint64_t> side(grid.size());
  // max over the cells of |c total - pooled n|, the products in T.
  auto walk = [&]<typename T>(uint64_t n) {
    uint64_t c = 0;
    T most = 0;
    for (size_t g = 0; g < grid.size(); ++g) {
      c += side[g];
      const T x = T{c} * total, y = T{pooled_below[g]} * n;
      most = std::max(most, x > y ? x - y : y - x);
    }
    return most;
  };
  auto d_of = [&](const std::vector<size_t>& order, size_t k) {
    std::fill(side.begin(), side.end(), 0);
    uint64_t n = 0;
    for (size_t j = 0; j < k; ++j) {
      for (const auto& [g, c] : cells[order[j]]) side[g] += c;
      n += sizes[order[j]];
    }
    if (n == 0 || n == total) return 0.0;
    // Below 2^32 requests every product fits in 64 bits: the walk in those (the same integers).
    const unsigned __int128 best = total < (uint64_t{1} << 32)
                                       ? walk.template operator()<uint64_t>(n)
                                       : walk.template operator()<unsigned __int128>(n);
    return static_cast<double>(best) / (static_cast<double>(n) * static_cast<double>(total - n));
  };
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t k = blocks_a.size();
  const double observed = d_of(order, k);
  if (observed <= 0) return 1;
  // The relabelling picks the smaller side's blocks (D is symmetric in the two sides).
  const size_t pick = std::min(k, all.size() - k);
  Random random(seed);
  int at_least = 0;
  for (int r = 0; r < resamples; ++r) {
    for (size_t j = 0; j < pick; ++j) {
      std::swap(order[j], order[j + random.Below(order.size() - j)]);
    }
    // Equal D up to rounding counts as at least as large (a relabelling that reproduces the
    // observed split must).
    if (d_of(order, pick) >= observed * (1 - 1e-12)) ++at_least;
  }
  return (1.0 + at_least) / (1.0 + resamples);
}

std::vector<double> HolmAdjust(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p[x] < p[y]; });
  std::vector<double> adjusted(m);
  double running = 0;
  for (size_t i = 0; i < m; ++i) {
    running = std::max(running, std::min(1.0, static_cast<double>(m - i) * p[order[i]]));
    adjusted[order[i]] = running;
  }
  return adjusted;
}

absl::StatusOr<FailOnRule> ParseFailOn(const std::string& text) {
  constexpr char kHint[] =
      "write PHASE.STAT>VALUE or PHASE.STAT<VALUE, e.g. --fail-on 'd2c.p99>+10%' or "
      "--fail-on 'q2c.p50>+50us' (STAT: p50 p90 p99 p99.9 max mean)";
  auto bad = [&](std::string_view why) {
    return UsageError(absl::StrFormat("--fail-on '%s': %s", text, why), kHint);
  };
  FailOnRule rule;
  rule.text = text;
  const size_t op = text.find_first_of("<>");
  if (op == std::string::npos) return bad("no '>' or '<'");
  rule.greater = text[op] == '>';
  const std::string lhs = absl::AsciiStrToLower(text.substr(0, op));
  const size_t dot = lhs.find('.');
  if (dot == std::string::npos) return bad("expected PHASE.STAT before the comparison");
  if (!ParsePhase(absl::AsciiStrToUpper(lhs.substr(0, dot)), &rule.phase)) {
    return bad(absl::StrFormat("unknown phase '%s' (I2D, D2C, I2C, Q2D, Q2C)", lhs.substr(0, dot)));
  }
  const std::string stat = lhs.substr(dot + 1);
  bool found = false;
  for (int k = 0; k < kDiffStatCount; ++k) {
    if (DiffStatName(static_cast<DiffStatKind>(k)) == stat || (stat == "p999" && k == 3)) {
      rule.stat = static_cast<DiffStatKind>(k);
      found = true;
    }
  }
  if (!found) return bad(absl::StrFormat("unknown statistic '%s'", stat));
  std::string value = absl::AsciiStrToLower(text.substr(op + 1));
  double scale = 1;
  if (value.ends_with('%')) {
    value.pop_back();
  } else {
    rule.percent = false;
    static constexpr std::pair<std::string_view, double> kUnits[] = {
        {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    bool unit = false;
    for (const auto& [suffix, factor] : kUnits) {
      if (value.ends_with(suffix)) {
        value.resize(value.size() - suffix.size());
        scale = factor;
        unit = true;
        break;
      }
    }
    if (!unit) return bad("the value needs a unit: % for a relative change, or ns, us, ms, s");
  }
  if (!value.empty() && value[0] == '+') value.erase(0, 1);
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) return bad("the value is not a number");
  rule.value = v * scale;
  return rule;
}

absl::StatusOr<LatencyDiff> DiffLatencyReports(const LatencyReport& a, const LatencyReport& b,
                                               double block_s, const DiffOptions& options) {
  LatencyDiff d;
  d.a = SideOf(a, block_s);
  d.b = SideOf(b, block_s);
  d.block_s = block_s;
  d.by = a.by;
  d.resamples = options.resamples;
  d.alpha = options.alpha;
  d.min_change_pct = options.min_change_pct;
  d.map = options.map;
  d.fail_on = options.fail_on;
  for (Phase p : options.phases) d.phases.emplace_back(PhaseName(p));

  // Device pairs: --map's, then by number for every device neither side's map names.
  const std::map<uint32_t, std::string> devs_a = DevicesOf(a), devs_b = DevicesOf(b);
  absl::flat_hash_map<uint32_t, uint32_t> partner;  // A's dev -> B's
  absl::flat_hash_set<uint32_t> mapped_b;
  for (const auto& [spec_a, spec_b] : options.map) {
    const std::string given = spec_a + "=" + spec_b;
    IOTRACE_ASSIGN_OR_RETURN(uint32_t dev_a, FindDevice(devs_a, spec_a, "A", a, given));
    IOTRACE_ASSIGN_OR_RETURN(uint32_t dev_b, FindDevice(devs_b, spec_b, "B", b, given));
    partner[dev_a] = dev_b;
    mapped_b.insert(dev_b);
  }
  for (const auto& [dev, name] : devs_a) {
    if (!partner.contains(dev) && !mapped_b.contains(dev)) partner[dev] = dev;
  }

  auto wanted = [&](uint32_t dev_a, const std::string& name_a, uint32_t dev_b,
                    const std::string& name_b, bool has_a, bool has_b, Phase phase) {
    if (!options.phases.empty() &&
        std::find(options.phases.begin(), options.phases.end(), phase) == options.phases.end()) {
      return false;
    }
    if (options.devices.empty()) return true;
    for (const std::string& spec : options.devices) {
      if ((has_a && SpecNames(spec, dev_a, name_a)) || (has_b && SpecNames(spec, dev_b, name_b))) {
        return true;
      }
    }
    return false;
  };

  absl::flat_hash_map<RowKey, const LatencyGroup*> groups_b;
  for (const LatencyGroup& g : b.groups) groups_b[RowKey{g.dev, g.by, g.op, g.phase}] = &g;
  absl::flat_hash_set<const LatencyGroup*> used_b;
  // Rows, each with its groups (null where the side has none).
  std::vector<std::pair<const LatencyGroup*, const LatencyGroup*>> pairs;
  for (const LatencyGroup& g : a.groups) {
    const LatencyGroup* other = nullptr;
    if (auto p = partner.find(g.dev); p != partner.end()) {
      if (auto it = groups_b.find(RowKey{p->second, g.by, g.op, g.phase}); it != groups_b.end()) {
        other = it->second;
        used_b.insert(other);
      }
    }
    pairs.emplace_back(&g, other);
  }
  for (const LatencyGroup& g : b.groups) {
    if (!used_b.contains(&g)) pairs.emplace_back(nullptr, &g);
  }

  // The reports' intervals, merged into blocks (a long recording read in 1 s intervals).
  auto per_block = [&](const LatencyReport& r) {
    return r.interval_s > 0 ? std::max<uint64_t>(1, std::llround(block_s / r.interval_s)) : 1;
  };
  const auto blocks_a = BlocksOf(a, per_block(a)), blocks_b = BlocksOf(b, per_block(b));
  static const std::vector<std::vector<LatencyBucket>> kNoBlocks;
  auto blocks = [](const auto& map, const LatencyGroup& g) -> const auto& {
    auto it = map.find(RowKey{g.dev, g.by, g.op, g.phase});
    return it == map.end() ? kNoBlocks : it->second;
  };
  // The rows whose relabelling test is still to run (their blocks, which outlive the tests).
  struct PTask {
    size_t row;  // in d.rows
    const std::vector<std::vector<LatencyBucket>>* a;
    const std::vector<std::vector<LatencyBucket>>* b;
  };
  std::vector<PTask> p_tasks;
  for (const auto& [ga, gb] : pairs) {
    // A group whose every sample lay outside the coverage has nothing to compare (the side's
    // report says so).
    if ((ga == nullptr || ga->summary.count == 0) && (gb == nullptr || gb->summary.count == 0)) {
      continue;
    }
    DiffRow row;
    const LatencyGroup& any = ga != nullptr ? *ga : *gb;
    row.by = any.by;
    row.by_order = any.by_order;
    row.op = any.op;
    row.phase = any.phase;
    if (ga != nullptr) {
      row.dev_a = ga->dev;
      row.device_a = ga->device;
      row.count_a = ga->summary.count;
      row.rate_a = d.a.duration_s > 0 ? row.count_a / d.a.duration_s : 0;
      row.incomplete_a = PhaseIncomplete(a, row.phase);
    }
    if (gb != nullptr) {
      row.dev_b = gb->dev;
      row.device_b = gb->device;
      row.count_b = gb->summary.count;
      row.rate_b = d.b.duration_s > 0 ? row.count_b / d.b.duration_s : 0;
      row.incomplete_b = PhaseIncomplete(b, row.phase);
    }
    if (!wanted(row.dev_a, row.device_a, row.dev_b, row.device_b, ga != nullptr, gb != nullptr,
                row.phase)) {
      continue;
    }
    if (row.count_a == 0 || row.count_b == 0) {
      // The side that has the row shows its values; nothing is compared.
      row.verdict = row.count_a == 0 ? DiffVerdict::kOnlyB : DiffVerdict::kOnlyA;
      const LatencyGroup& g = row.count_a == 0 ? *gb : *ga;
      for (int k = 0; k < kDiffStatCount; ++k) {
        const DiffStat s = CompareStat(g, g, static_cast<DiffStatKind>(k));
        DiffStat& shown = row.stats[k];
        (row.count_a == 0 ? shown.b_ns : shown.a_ns) = s.a_ns;
        (row.count_a == 0 ? shown.b_lo_ns : shown.a_lo_ns) = s.a_lo_ns;
        (row.count_a == 0 ? shown.b_hi_ns : shown.a_hi_ns) = s.a_hi_ns;
      }
    } else {
      for (int k = 0; k < kDiffStatCount; ++k) {
        row.stats[k] = CompareStat(*ga, *gb, static_cast<DiffStatKind>(k));
      }
      const KsResult ks = KsStatistic(ga->buckets.ToVector(), gb->buckets.ToVector());
      row.ks_d = ks.d;
      row.direction = ks.direction;
      row.p_iid = KsPValueIid(ks.d, row.count_a, row.count_b);
      const auto& ba = blocks(blocks_a, *ga);
      const auto& bb = blocks(blocks_b, *gb);
      row.blocks_a = ba.size();
      row.blocks_b = bb.size();
      p_tasks.push_back(PTask{d.rows.size(), &ba, &bb});
    }
    d.rows.push_back(std::move(row));
  }
  // The relabelling tests, each row's on its own (the same seed for every row): on as many
  // threads as there are CPUs, rows taken in turn. At 1024 devices, 6,144 rows of 4,999
  // relabellings each took 20 s on one thread.
  auto test_rows = [&](size_t first, size_t step) {
    for (size_t i = first; i < p_tasks.size(); i += step) {
      const PTask& t = p_tasks[i];
      d.rows[t.row].p_blocks = KsPValueBlocks(*t.a, *t.b, options.resamples, options.seed);
    }
  };
  const size_t threads = p_tasks.size() >= kThreadedTestRows
                             ? std::min<size_t>(std::max(UsableCpus(), 1), kMaxTestThreads)
                             : 1;
  RunOnThreads(threads, [&](size_t t) { test_rows(t, threads); });
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    const uint32_t dx = x.count_a != 0 ? x.dev_a : x.dev_b;
    const uint32_t dy = y.count_a != 0 ? y.dev_a : y.dev_b;
    return std::tie(dx, x.by_order, x.by, x.op, x.phase) <
           std::tie(dy, y.by_order, y.by, y.op, y.phase);
  });

  // Holm across the rows both sides have.
  std::vector<double> p;
  for (const DiffRow& row : d.rows) {
    if (row.count_a != 0 && row.count_b != 0) p.push_back(row.p_blocks);
  }
  const std::vector<double> adjusted = HolmAdjust(p);
  size_t next = 0;
  uint64_t few_blocks = 0;
  for (DiffRow& row : d.rows) {
    if (row.count_a == 0 || row.count_b == 0) continue;
    row.p_adjusted = adjusted[next++];
    Decide(row, options);
    few_blocks += std::min(row.blocks_a, row.blocks_b) < 5;
  }
  if (few_blocks != 0) {
    d.notes.push_back(absl::StrFormat(
        "%u of the rows compared have samples in fewer than 5 intervals of %s s on a side: "
        "too few relabellings to tell a change from the drift within one recording, so "
        "their p-values stay large (a shorter --block gives more intervals, if the latencies "
        "of one interval do not lean on the next)",
        few_blocks, absl::StrFormat("%g", block_s)));
  }
  CheckFailOn(d);
  return d;
}

}  // namespace iotrace
