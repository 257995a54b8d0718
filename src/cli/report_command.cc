// iotrace report: flags -> ReportOptions -> RunReport. Only flag parsing lives here; everything
// else is in the library (latency_report, report_format, report_runner) where tests call it.
#include <cmath>
#include <glob.h>
#include <sys/stat.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/base/status.h"
#include "iotrace/cli/flags.h"
#include "iotrace/cli/report_runner.h"
#include "iotrace/event/block_event.h"

namespace iotrace {
namespace {

constexpr char kUsage[] =
    "usage: iotrace report [-i FILE]... [options] [FILE...]\n"
    "\n"
    "Per-request block I/O latency histograms from a perf.data or trace.dat file (written by\n"
    "iotrace record, perf record -e 'block:*' or trace-cmd record), per device x op x phase:\n"
    "  I2D insert->issue (queue), D2C issue->complete (device), I2C insert->complete,\n"
    "  Q2D/Q2C bio queued->issue/complete (when block_bio_queue was recorded).\n"
    "Every event that could not be paired or was lost is counted in the report. The text\n"
    "report, laid out for 80 columns, gives the summary table first, then its warnings and\n"
    "notes, the histograms, the time series (--interval) and the completeness details.\n"
    "\n"
    "input and output:\n"
    "  -i, --input FILE        file to read (default: ./iotrace.data or ./iotrace.dat,\n"
    "                          whichever iotrace record wrote last); - reads standard\n"
    "                          input (perf record -o - ... | iotrace report -i -).\n"
    "                          Several files (-i A -i B, files after the options, or a\n"
    "                          quoted glob -i 'rec-*.dat') are read as one recording:\n"
    "                          merged by time, requests paired across files\n"
    "  -o, --output FILE       write the main output to FILE instead of standard output\n"
    "  --format FORMAT         text (default), csv (histogram buckets), json, or svg:\n"
    "                          pictures: per device/op/phase a latency heatmap over time,\n"
    "                          the histogram with its CDF, the percentile spectrum\n"
    "                          (docs/plots.md); one column per --interval, else at most\n"
    "                          1000 columns; at most 64 panels, of the devices with the\n"
    "                          most requests (--dev picks others)\n"
    "  --summary-csv FILE      also write one summary row (count, min, mean, percentiles,\n"
    "                          max) per device/op/phase to FILE\n"
    "  --unit UNIT             ns, us (default) or ms, for the text output; csv and json are\n"
    "                          always in ns\n"
    "  --histograms VIEW       the text output's histograms: log2 (default: power-of-two\n"
    "                          rows, like bcc's biolatency), full (the report's own\n"
    "                          buckets, 64 per power of two, as --format csv lists them)\n"
    "                          or none. log2 on a terminal and in a pipe alike, so that\n"
    "                          a report saved or paged reads as the one on the screen\n"
    "  --interval SECONDS      time series: one block of rows per interval of SECONDS\n"
    "  --formats-from FILE     event formats for a perf.data cut short before its formats:\n"
    "                          a perf.data or trace.dat recorded on the same kernel, or a\n"
    "                          tracefs directory (default: the running kernel's, when they\n"
    "                          match the file)\n"
    "  --events                instead of the report, every event of the file in time order,\n"
    "                          one line each (time, cpu, pid, comm, event, decoded fields),\n"
    "                          like perf script; --format csv (a column per field of the\n"
    "                          block events, other events' fields in the last column) or\n"
    "                          json (JSON lines) too; --since/--until narrow it\n"
    "filters (repeat a flag or give a comma-separated list for several values):\n"
    "  --dev DEV               device as MAJ:MIN (7:0) or name (loop0, /dev/loop0)\n"
    "  --op OP                 read, write, flush, discard, other\n"
    "  --phases LIST           phases to show: i2d, d2c, i2c, q2d, q2c (default: all)\n"
    "  --by DIM                one row per device x DIM x op x phase: size (request size\n"
    "                          classes, powers of two: 4K holds 4 KiB to under 8 KiB), comm\n"
    "                          (the process that inserted the request), ioprio (its I/O\n"
    "                          priority, Linux 6.11+), cpu (the CPU that issued it)\n"
    "  --comm NAME             requests inserted or issued by a process named NAME\n"
    "  --pid PID               requests inserted or issued by process PID\n"
    "  --since SECONDS         keep phases that end SECONDS or more after the first event\n"
    "  --until SECONDS         keep phases that end at most SECONDS after the first event\n"
    "pairing:\n"
    "  --expiry SECONDS        forget a request idle this long in trace time (default 30)\n"
    "  --max-inflight N        requests tracked at once; the oldest is evicted (default 131072)\n"
    "  --threads N             1: read, decode and pair on one thread; 2: and read the file\n"
    "                          ahead on a second; 3: and pair on a third; auto (default with\n"
    "                          two CPUs): a file with 32 MiB of event data or more (counted\n"
    "                          uncompressed) is read as two time ranges on two threads and\n"
    "                          the two added up; a smaller one read ahead, pairing on the\n"
    "                          reading thread or apart, whichever measures faster as it runs\n"
    "                          (the same report whatever N)\n"
    "\n"
    "  -h, --help              show this help\n"
    "\n"
    "Exit status: 0 ok, 1 runtime error, 2 usage error.\n";

constexpr char kUsageHint[] = "run 'iotrace report --help' for the options";

absl::Status Usage(std::string_view message, std::string_view hint = kUsageHint) {
  return UsageError(message, hint);
}

absl::Status ParseSeconds(std::string_view flag, const std::string& value, double* out) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v) || v < 0) {
    return Usage(absl::StrFormat("%s '%s': expected a number of seconds >= 0", flag, value),
                 absl::StrFormat("for example %s 2.5", flag));
  }
  *out = v;
  return absl::OkStatus();
}

std::vector<std::string> SplitList(const std::string& value) {
  return absl::StrSplit(value, ',', absl::SkipEmpty());
}

// Without -i: what `iotrace record` wrote last here, ./iotrace.data (perf backend) or
// ./iotrace.dat (ftrace backend; the default backend picks either).
std::string DefaultInput() {
  struct stat data, dat;
  bool has_data = ::stat("iotrace.data", &data) == 0;
  bool has_dat = ::stat("iotrace.dat", &dat) == 0;
  if (has_dat && (!has_data || dat.st_mtim.tv_sec > data.st_mtim.tv_sec ||
                  (dat.st_mtim.tv_sec == data.st_mtim.tv_sec &&
                   dat.st_mtim.tv_nsec > data.st_mtim.tv_nsec))) {
    return "iotrace.dat";
  }
  return "iotrace.data";
}

// The files of -i and of the arguments, globs expanded (a value with *, ? or [ that names no
// file as it is), each once: several are read as one recording.
absl::StatusOr<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& given) {
  std::vector<std::string> files;
  for (const std::string& v : given) {
    struct stat st;
    if (v.find_first_of("*?[") == std::string::npos || ::stat(v.c_str(), &st) == 0) {
      files.push_back(v);
      continue;
    }
    glob_t g{};
    const int rc = ::glob(v.c_str(), 0, nullptr, &g);
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    if (rc != 0) {
      return WithHint(absl::NotFoundError(absl::StrFormat("-i '%s' matches no file", v)),
                      "check the pattern, quoted so that iotrace expands it: -i 'rec-*.dat'");
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (files[i] == files[j]) {
        return Usage(absl::StrFormat("%s given twice: its events would count twice", files[i]));
      }
    }
  }
  return files;
}

// Parses the arguments after "report". *help is set when --help was given, even if an error
// follows it. --help prints kUsage, laid out by topic, rather than FlagParser::Help(): the options
// are added without help text of their own.
absl::StatusOr<ReportOptions> ParseArgs(const std::vector<std::string>& args, bool* help) {
  ReportOptions o;
  o.input = DefaultInput();
  *help = false;
  FlagParser flags(FlagParser::Syntax::kExactWords, kUsageHint);
  auto store = [](std::string* field) {
    return [field](const std::string& v) {
      *field = v;
      return absl::OkStatus();
    };
  };
  flags.AddSwitch("help", 'h', "", help);
  std::vector<std::string> inputs;  // -i and the files after the options, as given
  flags.Add("input", 'i', true, "FILE", "", [&](const std::string& v) {
    inputs.push_back(v);
    return absl::OkStatus();
  });
  flags.Add("output", 'o', true, "FILE", "", store(&o.output));
  flags.Add("format", 0, true, "FORMAT", "", [&](const std::string& v) {
    if (!ParseOutputFormat(v, &o.format)) {
      return Usage(absl::StrFormat("--format '%s': unknown format", v),
                   "use --format text, --format csv, --format json or --format svg");
    }
    return absl::OkStatus();
  });
  flags.Add("summary-csv", 0, true, "FILE", "", store(&o.summary_csv));
  flags.Add("formats-from", 0, true, "FILE", "", store(&o.formats_from));
  flags.Add("unit", 0, true, "UNIT", "", [&](const std::string& v) {
    if (!ParseTimeUnit(v, &o.unit)) {
      return Usage(absl::StrFormat("--unit '%s': unknown unit", v), "use --unit ns, us or ms");
    }
    return absl::OkStatus();
  });
  flags.Add("histograms", 0, true, "VIEW", "", [&](const std::string& v) {
    if (!ParseHistogramView(v, &o.histograms)) {
      return Usage(absl::StrFormat("--histograms '%s': unknown view", v),
                   "use --histograms log2, --histograms full or --histograms none");
    }
    return absl::OkStatus();
  });
  flags.Add("interval", 0, true, "SECONDS", "", [&](const std::string& v) {
    IOTRACE_RETURN_IF_ERROR(ParseSeconds("--interval", v, &o.interval_s));
    if (o.interval_s == 0) {
      return Usage("--interval 0: the interval must be longer than 0 s",
                   "for example --interval 1 for one block per second");
    }
    return absl::OkStatus();
  });
  flags.Add("dev", 0, true, "DEV", "", [&](const std::string& v) {
    for (std::string& d : SplitList(v)) o.devices.push_back(std::move(d));
    return absl::OkStatus();
  });
  flags.Add("op", 0, true, "OP", "", [&](const std::string& v) {
    for (const std::string& name : SplitList(v)) {
      BlockOp op;
      if (!ParseBlockOp(name, &op)) {
        return Usage(absl::StrFormat("--op '%s': unknown operation", name),
                     "operations are read, write, flush, discard and other");
      }
      o.ops.push_back(op);
    }
    return absl::OkStatus();
  });
  flags.Add("phases", 0, true, "LIST", "", [&](const std::string& v) {
    return AsUsageError(ParsePhaseList(v, &o.phases));
  });
  flags.Add("by", 0, true, "DIM", "", [&](const std::string& v) {
    return AsUsageError(ParseBreakdown(v, &o.by));
  });
  flags.Add("comm", 0, true, "NAME", "", [&](const std::string& v) {
    for (std::string& c : SplitList(v)) o.comms.push_back(std::move(c));
    return absl::OkStatus();
  });
  flags.Add("pid", 0, true, "PID", "", [&](const std::string& v) {
    for (const std::string& p : SplitList(v)) {
      int32_t pid = 0;
      if (!absl::SimpleAtoi(p, &pid) || pid < 0) {
        return Usage(absl::StrFormat("--pid '%s': expected a process id", p));
      }
      o.pids.push_back(pid);
    }
    return absl::OkStatus();
  });
  auto bound = [](const char* flag, std::optional<double>* field) {
    return [flag, field](const std::string& v) {
      double s = 0;
      IOTRACE_RETURN_IF_ERROR(ParseSeconds(flag, v, &s));
      *field = s;
      return absl::OkStatus();
    };
  };
  flags.Add("since", 0, true, "SECONDS", "", bound("--since", &o.since_s));
  flags.Add("until", 0, true, "SECONDS", "", bound("--until", &o.until_s));
  flags.Add("expiry", 0, true, "SECONDS", "",
            [&](const std::string& v) { return ParseSeconds("--expiry", v, &o.expiry_s); });
  flags.Add("max-inflight", 0, true, "N", "", [&](const std::string& v) {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(v, &n)) {
      return Usage(absl::StrFormat("--max-inflight '%s': expected a count", v));
    }
    o.max_inflight = static_cast<size_t>(n);
    return absl::OkStatus();
  });
  flags.Add("threads", 0, true, "N", "", [&](const std::string& v) {
    int n = 0;
    if (v == "auto") {
      n = 0;
    } else if (!absl::SimpleAtoi(v, &n) || n < 1 || n > 3) {
      return Usage(absl::StrFormat("--threads '%s': expected 1, 2, 3 or auto", v));
    }
    o.threads = n;
    return absl::OkStatus();
  });
  flags.AddSwitch("events", 0, "", &o.events);
  flags.SetArgumentHandler([&](const std::string& arg) {
    if (arg.empty()) {
      return Usage("unexpected argument ''", "to read a file, give it with -i: iotrace report -i ");
    }
    inputs.push_back(arg);
    return absl::OkStatus();
  });
  IOTRACE_RETURN_IF_ERROR(flags.Parse(args, nullptr, nullptr));
  if (!inputs.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandInputs(inputs));
    o.input = absl::StrJoin(files, ", ");
    if (files.size() > 1) o.inputs = std::move(files);
  }
  // The one check of the options: RunReport and the layers below take them as valid.
  IOTRACE_RETURN_IF_ERROR(AsUsageError(ValidateReportOptions(o)));
  return o;
}

}  // namespace

int ReportCommand(const std::vector<std::string>& args) {
  bool help = false;
  absl::StatusOr<ReportOptions> options = ParseArgs(args, &help);
  if (help) {
    std::fputs(FitHelp(kUsage).c_str(), stdout);
    return kExitOk;
  }
  if (!options.ok()) return ReportError(options.status());
  absl::Status status = RunReport(*options, std::cout, std::cerr);
  if (!status.ok()) return ReportError(status);
  return kExitOk;
}

}  // namespace iotrace
