#include "iotrace/output/diff_format.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "format_cells.h"
#include "iotrace/base/text.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/output/report_format.h"

namespace iotrace {
namespace {

constexpr DiffStatKind kShown[] = {DiffStatKind::kP50, DiffStatKind::kP90, DiffStatKind::kP99,
                                   DiffStatKind::kP999, DiffStatKind::kMax};
// The change table leaves out the max, one sample (its values are in the latency table): the
// table then fits 120 columns.
constexpr DiffStatKind kChanged[] = {DiffStatKind::kP50, DiffStatKind::kP90, DiffStatKind::kP99,
                                     DiffStatKind::kP999};

bool Both(const DiffRow& r) { return r.count_a != 0 && r.count_b != 0; }

std::string Label(uint32_t dev, const std::string& name) {
  return name == DevString(dev) ? name : absl::StrFormat("%s (%s)", name, DevString(dev));
}

}  // namespace

std::string DiffRowDevice(const DiffRow& r) {
  if (r.count_b == 0) return Label(r.dev_a, r.device_a);
  if (r.count_a == 0) return Label(r.dev_b, r.device_b);
  if (r.dev_a == r.dev_b && r.device_a == r.device_b) return Label(r.dev_a, r.device_a);
  return r.device_a + "=" + r.device_b;
}

std::string DiffPercentCell(const DiffStat& s) {
  if (s.a_ns == 0) return s.b_ns == 0 ? "0%" : "n/a";
  std::string cell = absl::StrFormat("%+.1f%%", s.change_pct);
  return s.beyond_buckets ? cell : "(" + cell + ")";
}

namespace {

std::string SideLine(const DiffSide& s) {
  return absl::StrFormat("%s (%s, %d CPUs, %s s)", s.input, s.file_format, s.nr_cpus,
                         FormatSeconds(std::round(s.duration_s * 1000) / 1000));
}

std::string PCell(double p) {
  return p < 0.001 ? "<0.001" : absl::StrFormat("%.3f", p);
}

// `text` in lines of at most 100 columns, each after `indent` (the first after `first`).
std::string Wrap(const std::string& text, const std::string& first, const std::string& indent) {
  std::string out = first;
  size_t width = first.size();
  bool line_start = true;
  for (std::string_view word : SplitText(text, ' ')) {
    if (!line_start && width + 1 + word.size() > 100) {
      out += "\n" + indent;
      width = indent.size();
      line_start = true;
    }
    if (!line_start) {
      out += ' ';
      ++width;
    }
    out += word;
    width += word.size();
    line_start = false;
  }
  return out + "\n";
}

// A probability or distance in JSON and CSV: four significant digits, never rounded to 0.
std::string Prob(double v) { return absl::StrFormat("%.4g", v); }

}  // namespace

void WriteTextDiff(const LatencyDiff& d, TimeUnit unit, std::ostream& out) {
  size_t compared = 0;
  for (const DiffRow& r : d.rows) compared += Both(r);
  out << "iotrace diff: B against A\n";
  for (const auto& [name, side] : {std::pair{"A", &d.a}, std::pair{"B", &d.b}}) {
    out << "  " << name << ": " << SideLine(*side) << "\n";
    if (side->recorded_on.known()) {
      out << Wrap(RecordedOnText(side->recorded_on), "     recorded ", "       ");
    }
  }
  out << absl::StrFormat(
      "test: Kolmogorov-Smirnov on the bucketed distributions, p from %d relabellings of whole\n"
      "      %s s intervals, Holm-corrected across %u rows (alpha %g); --min-change %g%%\n",
      d.resamples, FormatSeconds(d.block_s), compared, d.alpha, d.min_change_pct);
  if (!d.map.empty()) {
    std::vector<std::string> pairs;
    for (const auto& [a, b] : d.map) pairs.push_back(a + "=" + b);
    out << "map: " << absl::StrJoin(pairs, ", ") << " (A's device = B's)\n";
  }
  if (!d.phases.empty()) out << "phases: " << absl::StrJoin(d.phases, ",") << "\n";
  out << "\n";
  if (d.rows.empty()) {
    out << "no rows: neither file has samples of the devices and phases asked for\n";
  }

  size_t dev_width = 6;
  for (const DiffRow& r : d.rows) dev_width = std::max(dev_width, DiffRowDevice(r).size());
  // With --by, the class is a column after the device, under the dimension's name.
  size_t by_width = d.by.size();
  for (const DiffRow& r : d.rows) by_width = std::max(by_width, r.by.size());
  auto device_cell = [&](const std::string& device, const std::string& klass) {
    return d.by.empty() ? absl::StrFormat("%-*s", dev_width, device)
                        : absl::StrFormat("%-*s  %-*s", dev_width, device, by_width, klass);
  };
  auto lead = [&](const DiffRow& r) {
    return absl::StrFormat("%s  %-7s %-5s", device_cell(DiffRowDevice(r), r.by),
                           BlockOpName(r.op), PhaseName(r.phase));
  };
  const std::string lead_header = absl::StrFormat(
      "%s  %-7s %-5s", device_cell("DEVICE", absl::AsciiStrToUpper(d.by)), "OP", "PHASE");

  if (!d.rows.empty()) {
    out << "verdict: + slower in B, - faster in B, ~ no change shown; change of B against A in %,\n"
           "(in parentheses) where the two values lie within each other's histogram bucket\n";
    out << lead_header
        << absl::StrFormat(" %-6s %8s %8s %8s %8s %8s %8s %8s %8s %7s\n", "V", "COUNT A",
                           "COUNT B", "RATE A/s", "RATE B/s", "P50", "P90", "P99", "P99.9", "P");
    for (const DiffRow& r : d.rows) {
      auto count = [](uint64_t n) { return n == 0 ? std::string("-") : absl::StrCat(n); };
      auto rate = [](uint64_t n, double v) {
        return n == 0 ? std::string("-") : absl::StrFormat("%.1f", v);
      };
      out << lead(r)
          << absl::StrFormat(" %-6s %8s %8s %8s %8s", DiffVerdictSymbol(r.verdict),
                             count(r.count_a), count(r.count_b), rate(r.count_a, r.rate_a),
                             rate(r.count_b, r.rate_b));
      for (DiffStatKind k : kChanged) {
        out << absl::StrFormat(" %8s",
                               Both(r) ? DiffPercentCell(r.stats[static_cast<int>(k)]) : "-");
      }
      out << absl::StrFormat(" %7s\n", Both(r) ? PCell(r.p_adjusted) : "-");
    }
    out << "\n";

    out << "latency (" << TimeUnitName(unit) << "), A -> B\n" << lead_header;
    for (DiffStatKind k : kShown) {
      std::string name(DiffStatName(k));
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      out << absl::StrFormat(" %8s %8s", name + " A", name + " B");
    }
    out << "\n";
    for (const DiffRow& r : d.rows) {
      out << lead(r);
      for (DiffStatKind k : kShown) {
        const DiffStat& s = r.stats[static_cast<int>(k)];
        out << absl::StrFormat(" %8s %8s", r.count_a == 0 ? "-" : FormatLatency(s.a_ns, unit),
                               r.count_b == 0 ? "-" : FormatLatency(s.b_ns, unit));
      }
      out << "\n";
    }
    out << "\n";
  }

  if (!d.fail_on.empty()) {
    out << "fail-on\n";
    for (const FailOnRule& rule : d.fail_on) {
      std::vector<std::string> by;
      for (const FailOnHit& h : d.hits) {
        if (h.rule != rule.text) continue;
        const DiffRow& r = d.rows[h.row];
        by.push_back(absl::StrFormat(
            "%s %s %s (%s)", DiffRowDevice(r), BlockOpName(r.op), PhaseName(r.phase),
            rule.percent ? absl::StrFormat("%+.1f%%", h.change)
                         : absl::StrFormat(
                               "%s%s %s", h.change < 0 ? "-" : "+",
                               FormatLatency(static_cast<uint64_t>(std::fabs(h.change)), unit),
                               TimeUnitName(unit))));
      }
      out << "  " << rule.text << ": "
          << (by.empty() ? "not hit" : "HIT by " + absl::StrJoin(by, ", ")) << "\n";
    }
    out << "\n";
  }

  const bool incomplete = std::any_of(d.rows.begin(), d.rows.end(), [](const DiffRow& r) {
    return r.incomplete_a || r.incomplete_b;
  });
  if (!d.notes.empty() || !d.a.warnings.empty() || !d.b.warnings.empty()) {
    out << "notes\n";
    for (const std::string& n : d.notes) out << Wrap(n, "  ", "    ");
    for (const std::string& w : d.a.warnings) out << Wrap(w, "  A: WARNING: ", "    ");
    for (const std::string& w : d.b.warnings) out << Wrap(w, "  B: WARNING: ", "    ");
    if (incomplete) {
      out << "  a row of an incomplete phase compares what each file holds, not every request\n";
    }
  }
}

void WriteDiffCsv(const LatencyDiff& d, std::ostream& out) {
  out << "dev_a,device_a,dev_b,device_b," << (d.by.empty() ? "" : d.by + ",")
      << "op,phase,verdict,reason,count_a,count_b,rate_a,rate_b";
  for (int k = 0; k < kDiffStatCount; ++k) {
    const std::string s(DiffStatName(static_cast<DiffStatKind>(k)));
    out << absl::StrFormat(
        ",%1$s_a_ns,%1$s_b_ns,%1$s_a_lo_ns,%1$s_a_hi_ns,%1$s_b_lo_ns,%1$s_b_hi_ns,"
        "%1$s_change_ns,%1$s_change_pct,%1$s_beyond_buckets",
        s);
  }
  out << ",ks_d,direction,p_iid,p_blocks,p_adjusted,blocks_a,blocks_b,incomplete_a,"
         "incomplete_b\n";
  for (const DiffRow& r : d.rows) {
    auto dev = [](uint64_t count, uint32_t dev) {
      return count == 0 ? std::string() : DevString(dev);
    };
    out << absl::StrFormat("%s,%s,%s,%s,%s%s,%s,%s,%s,%u,%u,%s,%s", dev(r.count_a, r.dev_a),
                           CsvField(r.device_a), dev(r.count_b, r.dev_b), CsvField(r.device_b),
                           d.by.empty() ? std::string() : absl::StrCat(CsvField(r.by), ","),
                           BlockOpName(r.op), PhaseName(r.phase), DiffVerdictName(r.verdict),
                           CsvField(r.reason), r.count_a, r.count_b, JsonDouble(r.rate_a),
                           JsonDouble(r.rate_b));
    for (const DiffStat& s : r.stats) {
      out << absl::StrFormat(",%u,%u,%u,%u,%u,%u,%d,%s,%d", s.a_ns, s.b_ns, s.a_lo_ns, s.a_hi_ns,
                             s.b_lo_ns, s.b_hi_ns, s.change_ns, JsonDouble(s.change_pct),
                             s.beyond_buckets ? 1 : 0);
    }
    out << absl::StrFormat(",%s,%d,%s,%s,%s,%u,%u,%d,%d\n", Prob(r.ks_d), r.direction,
                           Prob(r.p_iid), Prob(r.p_blocks), Prob(r.p_adjusted), r.blocks_a,
                           r.blocks_b, r.incomplete_a ? 1 : 0, r.incomplete_b ? 1 : 0);
  }
}

void WriteJsonDiff(const LatencyDiff& d, std::ostream& out) {
  auto side = [&](const DiffSide& s) {
    std::vector<std::string> warnings;
    for (const std::string& w : s.warnings) warnings.push_back(JsonString(w));
    return absl::StrFormat(
        "{\"path\": %s, \"format\": %s, \"cpus\": %d, \"recorded_on\": %s, \"duration_s\": %s, "
        "\"blocks\": %u, \"warnings\": [%s]}",
        JsonString(s.input), JsonString(s.file_format), s.nr_cpus, JsonRecordedOn(s.recorded_on),
        JsonDouble(s.duration_s), s.blocks, absl::StrJoin(warnings, ", "));
  };
  out << "{\n";
  out << "  \"schema_version\": " << LatencyDiff::kSchemaVersion << ",\n";
  out << "  \"a\": " << side(d.a) << ",\n";
  out << "  \"b\": " << side(d.b) << ",\n";
  out << absl::StrFormat(
      "  \"test\": {\"statistic\": \"ks\", \"p_value\": \"interval relabelling\", "
      "\"block_s\": %s, \"resamples\": %d, \"correction\": \"holm\", \"alpha\": %s, "
      "\"min_change_pct\": %s},\n",
      absl::StrFormat("%.9g", d.block_s), d.resamples, JsonDouble(d.alpha),
      JsonDouble(d.min_change_pct));
  std::vector<std::string> phases, map;
  for (const std::string& p : d.phases) phases.push_back(JsonString(p));
  for (const auto& [a, b] : d.map) {
    map.push_back(absl::StrFormat("{\"a\": %s, \"b\": %s}", JsonString(a), JsonString(b)));
  }
  out << "  \"phases\": [" << absl::StrJoin(phases, ", ") << "],\n";
  out << "  \"map\": [" << absl::StrJoin(map, ", ") << "],\n";
  if (!d.by.empty()) out << "  \"by\": " << JsonString(d.by) << ",\n";
  out << "  \"rows\": [";
  for (size_t i = 0; i < d.rows.size(); ++i) {
    const DiffRow& r = d.rows[i];
    auto row_side = [](uint64_t count, uint32_t dev, const std::string& name, double rate,
                       bool incomplete) {
      if (count == 0) return std::string("null");
      return absl::StrFormat(
          "{\"dev\": \"%s\", \"device\": %s, \"count\": %u, \"rate\": %s, \"incomplete\": %s}",
          DevString(dev), JsonString(name), count, JsonDouble(rate),
          incomplete ? "true" : "false");
    };
    out << (i == 0 ? "\n" : ",\n") << "    {"
        << (d.by.empty() ? "" : absl::StrCat(JsonString(d.by), ": ", JsonString(r.by), ", "))
        << "\"op\": " << JsonString(BlockOpName(r.op))
        << ", \"phase\": " << JsonString(PhaseName(r.phase))
        << ", \"verdict\": " << JsonString(DiffVerdictName(r.verdict))
        << ", \"symbol\": " << JsonString(DiffVerdictSymbol(r.verdict))
        << ", \"reason\": " << JsonString(r.reason) << ",\n      \"a\": "
        << row_side(r.count_a, r.dev_a, r.device_a, r.rate_a, r.incomplete_a)
        << ",\n      \"b\": "
        << row_side(r.count_b, r.dev_b, r.device_b, r.rate_b, r.incomplete_b);
    if (Both(r)) {
      out << ",\n      \"stats\": {";
      for (int k = 0; k < kDiffStatCount; ++k) {
        const DiffStat& s = r.stats[k];
        out << (k == 0 ? "" : ",\n                ")
            << absl::StrFormat(
                   "\"%s\": {\"a_ns\": %u, \"b_ns\": %u, \"a_range_ns\": [%u, %u], "
                   "\"b_range_ns\": [%u, %u], \"change_ns\": %d, \"change_pct\": %s, "
                   "\"beyond_buckets\": %s}",
                   DiffStatName(static_cast<DiffStatKind>(k)), s.a_ns, s.b_ns, s.a_lo_ns,
                   s.a_hi_ns, s.b_lo_ns, s.b_hi_ns, s.change_ns, JsonDouble(s.change_pct),
                   s.beyond_buckets ? "true" : "false");
      }
      out << "},\n"
          << absl::StrFormat(
                 "      \"ks_d\": %s, \"direction\": %d, \"p_iid\": %s, \"p_blocks\": %s, "
                 "\"p_adjusted\": %s, \"blocks_a\": %u, \"blocks_b\": %u",
                 Prob(r.ks_d), r.direction, Prob(r.p_iid), Prob(r.p_blocks), Prob(r.p_adjusted),
                 r.blocks_a, r.blocks_b);
    }
    out << "}";
  }
  out << (d.rows.empty() ? "]" : "\n  ]") << ",\n";
  out << "  \"fail_on\": [";
  for (size_t i = 0; i < d.fail_on.size(); ++i) {
    std::vector<std::string> hits;
    for (const FailOnHit& h : d.hits) {
      if (h.rule != d.fail_on[i].text) continue;
      hits.push_back(
          absl::StrFormat("{\"row\": %u, \"change\": %s}", h.row, JsonDouble(h.change)));
    }
    out << (i == 0 ? "" : ", ") << "{\"rule\": " << JsonString(d.fail_on[i].text)
        << ", \"hit\": " << (hits.empty() ? "false" : "true") << ", \"hits\": ["
        << absl::StrJoin(hits, ", ") << "]}";
  }
  out << "],\n";
  std::vector<std::string> notes;
  for (const std::string& n : d.notes) notes.push_back(JsonString(n));
  out << "  \"notes\": [" << absl::StrJoin(notes, ", ") << "]\n";
  out << "}\n";
}

std::string FormatDiff(const LatencyDiff& diff, OutputFormat format, TimeUnit unit) {
  std::ostringstream out;
  switch (format) {
    case OutputFormat::kText: WriteTextDiff(diff, unit, out); break;
    case OutputFormat::kCsv: WriteDiffCsv(diff, out); break;
    case OutputFormat::kJson: WriteJsonDiff(diff, out); break;
    case OutputFormat::kSvg: break;  // svg_diff.h draws it: the picture needs both reports
  }
  return out.str();
}

}  // namespace iotrace
