// iotrace diff A B: flags -> each side's LatencyReport (built as `report` builds it, with
// intervals of the block length) -> analysis' DiffLatencyReports -> output's writers.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli.h"
#include "iotrace/analysis/latency_diff.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/base/status.h"
#include "iotrace/cli/flags.h"
#include "iotrace/cli/report_runner.h"
#include "iotrace/output/diff_format.h"
#include "iotrace/output/svg_diff.h"

namespace iotrace {
namespace {

constexpr char kUsage[] =
    "usage: iotrace diff A B [options]\n"
    "\n"
    "Compares two recordings (perf.data or trace.dat, any mix) per device x op x phase: counts,\n"
    "rates and percentiles in each, the change of B against A, and a verdict per row:\n"
    "  +  B is slower, -  B is faster, ~  no change shown (not significant, within\n"
    "  the histogram's bucket width, or under --min-change). The test:\n"
    "  Kolmogorov-Smirnov on the two histograms, its p-value from relabelling whole\n"
    "  time intervals between the files (latencies close in time are not\n"
    "  independent), Holm-corrected across the rows. docs/diff.md explains the\n"
    "  statistics.\n"
    "\n"
    "options:\n"
    "  --dev DEV               rows of this device (either side's; MAJ:MIN or name); repeat\n"
    "                          or give a comma-separated list\n"
    "  --map A_DEV=B_DEV       compare A's device A_DEV with B's B_DEV (7:0=7:1,\n"
    "                          loop0=loop1); repeatable; other devices pair by number\n"
    "  --phases LIST           phases to compare: I2D,D2C,I2C,Q2D,Q2C (default: all)\n"
    "  --by DIM                rows of device x DIM x op x phase, DIM one of size, comm,\n"
    "                          ioprio, cpu (as report --by); a class compares with the same\n"
    "                          class of the other side\n"
    "  --format FORMAT         text (default), csv, json or svg (per row the two heatmaps side\n"
    "                          by side, the CDFs and percentile spectra overlaid; at most\n"
    "                          64 rows, the changed first)\n"
    "  -o, --output FILE       write to FILE instead of standard output\n"
    "  --unit UNIT             ns, us (default) or ms, for the text output\n"
    "  --min-change PCT        a row is ~ unless a percentile moved by PCT percent or more\n"
    "                          (default 5)\n"
    "  --alpha A               family-wise error rate across the rows (default 0.05)\n"
    "  --block SECONDS         the interval relabelled as a whole (default: 1, or a tenth of\n"
    "                          the shorter recording when it is under 10 s, or longer past\n"
    "                          100 s so that there are at most 100)\n"
    "  --fail-on RULE          exit with status 3 when a row whose verdict is + or - has\n"
    "                          PHASE.STAT changed past VALUE: d2c.p99>+10%, q2c.p50>+50us,\n"
    "                          i2c.max<-20% (STAT: p50 p90 p99 p99.9 max mean); repeatable\n"
    "  -h, --help              show this help\n"
    "\n"
    "Exit status: 0 ok (no --fail-on rule hit), 1 runtime error, 2 usage error,\n"
    "3 a --fail-on rule hit.\n";

constexpr char kUsageHint[] = "run 'iotrace diff --help' for the options";

struct DiffArgs {
  std::string a, b;
  std::string output;
  OutputFormat format = OutputFormat::kText;
  TimeUnit unit = TimeUnit::kUs;
  std::optional<double> block_s;
  BreakdownBy by = BreakdownBy::kNone;  // --by: rows of device x class x op x phase
  DiffOptions diff;
};

std::vector<std::string> SplitList(const std::string& value) {
  return absl::StrSplit(value, ',', absl::SkipEmpty());
}

absl::StatusOr<DiffArgs> ParseArgs(const std::vector<std::string>& args, bool* help) {
  DiffArgs o;
  *help = false;
  FlagParser flags(FlagParser::Syntax::kGetopt, kUsageHint);
  flags.AddSwitch("help", 'h', "", help);
  flags.AddString("output", 'o', "FILE", "", &o.output);
  flags.Add("format", 0, true, "FORMAT", "", [&](const std::string& v) {
    if (!ParseOutputFormat(v, &o.format)) {
      return UsageError(absl::StrFormat("--format '%s': unknown format", v),
                        "use --format text, csv, json or svg");
    }
    return absl::OkStatus();
  });
  flags.Add("unit", 0, true, "UNIT", "", [&](const std::string& v) {
    if (!ParseTimeUnit(v, &o.unit)) {
      return UsageError(absl::StrFormat("--unit '%s': unknown unit", v), "use --unit ns, us or ms");
    }
    return absl::OkStatus();
  });
  flags.Add("dev", 0, true, "DEV", "", [&](const std::string& v) {
    for (std::string& d : SplitList(v)) o.diff.devices.push_back(std::move(d));
    return absl::OkStatus();
  });
  flags.Add("map", 0, true, "A_DEV=B_DEV", "", [&](const std::string& v) {
    std::vector<std::string> parts = absl::StrSplit(v, '=');
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return UsageError(absl::StrFormat("--map '%s': expected A_DEV=B_DEV", v),
                        "for example --map 7:0=7:1 or --map loop0=loop1");
    }
    o.diff.map.emplace_back(parts[0], parts[1]);
    return absl::OkStatus();
  });
  flags.Add("phases", 0, true, "LIST", "", [&](const std::string& v) {
    for (const std::string& name : SplitList(v)) {
      Phase p;
      std::string upper = name;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (!ParsePhase(upper, &p)) {
        return UsageError(absl::StrFormat("--phases: unknown phase '%s'", name),
                          "phases are I2D, D2C, I2C, Q2D and Q2C");
      }
      o.diff.phases.push_back(p);
    }
    return absl::OkStatus();
  });
  flags.Add("by", 0, true, "DIM", "", [&](const std::string& v) {
    return AsUsageError(ParseBreakdown(v, &o.by));
  });
  flags.Add("min-change", 0, true, "PCT", "", [&](const std::string& v) {
    std::string s = v;
    if (!s.empty() && s.back() == '%') s.pop_back();
    if (!absl::SimpleAtod(s, &o.diff.min_change_pct) || !std::isfinite(o.diff.min_change_pct) ||
        o.diff.min_change_pct < 0) {
      return UsageError(absl::StrFormat("--min-change '%s': expected a percentage >= 0", v),
                        "for example --min-change 10");
    }
    return absl::OkStatus();
  });
  flags.Add("alpha", 0, true, "A", "", [&](const std::string& v) {
    if (!absl::SimpleAtod(v, &o.diff.alpha) || !(o.diff.alpha > 0 && o.diff.alpha < 1)) {
      return UsageError(absl::StrFormat("--alpha '%s': expected a number between 0 and 1", v),
                        "for example --alpha 0.01");
    }
    return absl::OkStatus();
  });
  flags.Add("block", 0, true, "SECONDS", "", [&](const std::string& v) {
    double s = 0;
    IOTRACE_RETURN_IF_ERROR(ParseSecondsFlag("--block", v, &s));
    if (s <= 0) {
      return UsageError("--block 0: an interval must be longer than 0 s", "for example --block 1");
    }
    o.block_s = s;
    return absl::OkStatus();
  });
  flags.Add("fail-on", 0, true, "RULE", "", [&](const std::string& v) {
    IOTRACE_ASSIGN_OR_RETURN(FailOnRule rule, ParseFailOn(v));
    o.diff.fail_on.push_back(std::move(rule));
    return absl::OkStatus();
  });
  std::vector<std::string> files;
  flags.SetArgumentHandler([&](const std::string& arg) {
    if (files.size() == 2) {
      return UsageError(absl::StrFormat("unexpected argument '%s': diff compares two files", arg),
                        "iotrace diff A B [options]");
    }
    files.push_back(arg);
    return absl::OkStatus();
  });
  IOTRACE_RETURN_IF_ERROR(flags.Parse(args, nullptr, nullptr));
  if (files.size() != 2) {
    return UsageError(files.empty() ? "no files given: diff compares two"
                                    : "one file given: diff compares two",
                      "iotrace diff A B, for example iotrace diff before.data after.dat");
  }
  o.a = files[0];
  o.b = files[1];
  return o;
}

// One side, as `iotrace report -i PATH --interval BLOCK` builds it.
absl::StatusOr<LatencyReport> BuildSide(const std::string& path, double block_s, BreakdownBy by) {
  ReportOptions options;
  options.input = path;
  options.interval_s = block_s;
  options.by = by;
  IOTRACE_RETURN_IF_ERROR(AsUsageError(ValidateReportOptions(options)));
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader,
                           OpenReportInput(options, std::cerr));
  absl::StatusOr<LatencyReport> report = BuildLatencyReport(*reader, options);
  if (!report.ok()) return Annotate(report.status(), "diff: read " + path);
  return report;
}

// The diff, and the two reports it compared (the SVG draws their intervals).
struct DiffRun {
  LatencyDiff diff;
  LatencyReport a, b;
};

std::string Format(const DiffRun& run, const DiffArgs& args) {
  if (args.format != OutputFormat::kSvg) return FormatDiff(run.diff, args.format, args.unit);
  std::ostringstream out;
  WriteSvgDiff(run.diff, run.a, run.b, SvgDiffOptions{}, out);
  return out.str();
}

absl::Status Write(const DiffRun& run, const DiffArgs& args) {
  if (args.output.empty()) {
    std::cout << Format(run, args);
    std::cout.flush();
    if (!std::cout) return ErrnoError(errno != 0 ? errno : EIO, "write", "standard output");
    return absl::OkStatus();
  }
  std::ofstream file(args.output, std::ios::out | std::ios::trunc | std::ios::binary);
  if (!file) return ErrnoError(errno, "open", args.output);
  file << Format(run, args);
  file.close();
  if (!file) return ErrnoError(errno != 0 ? errno : EIO, "write", args.output);
  return absl::OkStatus();
}

absl::StatusOr<DiffRun> RunDiff(const DiffArgs& args) {
  double block_s = args.block_s.value_or(1);
  DiffRun run;
  LatencyReport& a = run.a;
  LatencyReport& b = run.b;
  IOTRACE_ASSIGN_OR_RETURN(a, BuildSide(args.a, block_s, args.by));
  IOTRACE_ASSIGN_OR_RETURN(b, BuildSide(args.b, block_s, args.by));
  if (!args.block_s.has_value()) {
    // The lengths are known only once read: a short recording is read again in finer
    // intervals; a long one's 1 s intervals are merged into longer blocks by the diff.
    const double chosen = ChooseBlockSeconds(a.duration_s(), b.duration_s());
    if (chosen < block_s) {
      IOTRACE_ASSIGN_OR_RETURN(a, BuildSide(args.a, chosen, args.by));
      IOTRACE_ASSIGN_OR_RETURN(b, BuildSide(args.b, chosen, args.by));
    }
    block_s = chosen;
  }
  IOTRACE_ASSIGN_OR_RETURN(run.diff, DiffLatencyReports(a, b, block_s, args.diff));
  return run;
}

}  // namespace

int DiffCommand(const std::vector<std::string>& args) {
  bool help = false;
  absl::StatusOr<DiffArgs> parsed = ParseArgs(args, &help);
  if (help) {
    std::fputs(FitHelp(kUsage).c_str(), stdout);
    return kExitOk;
  }
  if (!parsed.ok()) return ReportError(parsed.status());
  absl::StatusOr<DiffRun> run = RunDiff(*parsed);
  if (!run.ok()) return ReportError(run.status());
  const LatencyDiff* diff = &run->diff;
  absl::Status written = Write(*run, *parsed);
  if (!written.ok()) return ReportError(written);
  if (parsed->format != OutputFormat::kText || !parsed->output.empty()) {
    // Whoever reads a CSV or JSON file may not look for the warnings in it.
    for (const std::string& w : diff->a.warnings) std::cerr << "iotrace: warning: A: " << w << "\n";
    for (const std::string& w : diff->b.warnings) std::cerr << "iotrace: warning: B: " << w << "\n";
  }
  for (const FailOnRule& rule : diff->fail_on) {
    size_t rows = 0;
    for (const FailOnHit& h : diff->hits) rows += h.rule == rule.text;
    if (rows != 0) {
      std::cerr << "iotrace: --fail-on " << rule.text << " hit by " << rows
                << (rows == 1 ? " row\n" : " rows\n");
    }
  }
  return diff->hits.empty() ? kExitOk : kExitDiffFailOn;
}

}  // namespace iotrace
