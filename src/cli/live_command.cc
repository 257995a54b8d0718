// iotrace live: flags -> LiveOptions -> RunLive; each interval drawn on the terminal (or
// appended as CSV rows / JSON lines), and the cumulative report at the end, as report prints it.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "iotrace/base/atomic_file.h"
#include "iotrace/base/status.h"
#include "iotrace/cli/flags.h"
#include "iotrace/live/live_engine.h"
#include "iotrace/live/metrics_server.h"
#include "metrics_export.h"
#include "iotrace/output/live_view.h"
#include "iotrace/output/report_format.h"
#include "iotrace/output/svg_plot.h"

namespace iotrace {
namespace {

std::string HostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "";
  return host;
}

// Draws or appends each interval.
class IntervalPrinter : public IntervalSink {
 public:
  IntervalPrinter(OutputFormat format, bool terminal, LiveHeader header, std::ostream& out)
      : format_(format), out_(out), header_(std::move(header)) {
    if (terminal && format == OutputFormat::kText) terminal_.emplace(STDOUT_FILENO);
  }

  void OnInterval(const LiveInterval& iv, const LiveRunSummary& s) override {
    header_.backend = s.backend;
    header_.ingest = s.ingest;
    header_.elapsed_s = s.seconds;
    header_.total_events = s.events;
    header_.total_lost = s.lost;
    header_.total_late = s.late;
    unpaired_ += iv.counts.unpaired;
    header_.total_unpaired = unpaired_;
    if (terminal_) {
      absl::Status drawn = terminal_->Draw(header_, iv);
      if (!drawn.ok()) terminal_.reset();  // the terminal went away: carry on without a view
      return;
    }
    switch (format_) {
      case OutputFormat::kCsv:
        if (!csv_header_written_) WriteLiveCsvHeader(iv.by, out_);
        csv_header_written_ = true;
        WriteLiveCsv(iv, out_);
        break;
      case OutputFormat::kJson:
        WriteLiveJson(iv, header_, out_);
        break;
      case OutputFormat::kText:
      case OutputFormat::kSvg:  // refused by --format
        // Off a terminal: every interval whole, one after the other.
        out_ << FormatLiveScreen(header_, iv, 160, 1 << 20) << "\n\n";
        break;
    }
    out_.flush();
  }

  // Leaves the terminal's alternate screen: what follows lands on the normal one.
  void Close() {
    if (terminal_) terminal_->Close();
  }

 private:
  OutputFormat format_;
  std::ostream& out_;
  LiveHeader header_;
  std::optional<LiveTerminal> terminal_;
  bool csv_header_written_ = false;
  uint64_t unpaired_ = 0;
};

// --svg: every interval, the pictures of the last intervals, the file replaced whole so that a
// browser reloading it never reads half of one; then the interval goes on to the view, if any.
class SvgFollower : public IntervalSink {
 public:
  SvgFollower(std::string path, double interval_s, std::string host, IntervalSink* next)
      : path_(std::move(path)), interval_s_(interval_s), next_(next) {
    options_.host = std::move(host);
  }
  void OnInterval(const LiveInterval& iv, const LiveRunSummary& so_far) override {
    history_.Add(iv);
    options_.title = absl::StrFormat("iotrace live on %s, every %g s: the last %u intervals%s",
                                     options_.host.empty() ? "?" : options_.host, interval_s_,
                                     history_.size(), iv.final ? " (the run ended)" : "");
    std::ostringstream svg;
    WriteSvgReport(history_.Report(interval_s_, &options_.start_s), options_, svg);
    absl::Status written = WriteFileAtomically(path_, svg.str());
    if (!written.ok() && error_.ok()) {  // said once; the run goes on
      error_ = written;
      std::fprintf(stderr, "iotrace: warning: --svg: %s\n", std::string(written.message()).c_str());
    }
    if (next_ != nullptr) next_->OnInterval(iv, so_far);
  }

 private:
  static constexpr size_t kIntervals = 1000;
  std::string path_;
  double interval_s_;
  IntervalSink* next_;
  SvgPlotOptions options_;
  LiveSvgHistory history_{kIntervals};
  absl::Status error_;
};

}  // namespace

int LiveCommand(const std::vector<std::string>& args) {
  LiveOptions opt;
  OutputFormat format = OutputFormat::kText;
  TimeUnit unit = TimeUnit::kUs;
  std::string report_path;
  bool help = false;
  std::string listen_spec;
  MetricsExportOptions metrics;
  bool quiet = false;
  bool format_given = false;
  std::string svg_path;
  FlagParser flags;
  AddDevFlag(flags, &opt.devs);
  flags.Add("interval", 'I', true, "SECONDS", "length of an interval (default 1)",
            [&](const std::string& v) {
              return ParseSecondsFlag("--interval", v, &opt.interval_s);
            });
  flags.Add("count", 'c', true, "N", "stop after N intervals",
            [&](const std::string& v) {
              if (!absl::SimpleAtoi(v, &opt.count) || opt.count == 0) {
                return WithHint(absl::InvalidArgumentError(
                                    absl::StrFormat("--count '%s': expected a number above 0", v)),
                                "e.g. -c 10 for ten intervals");
              }
              return absl::OkStatus();
            });
  flags.Add("duration", 'd', true, "SECONDS", "stop after this long",
            [&](const std::string& v) {
              IOTRACE_RETURN_IF_ERROR(ParseSecondsFlag("--duration", v, &opt.duration_s));
              if (opt.duration_s == 0) {
                return UsageError(absl::StrFormat("--duration %s: a run of 0 s shows nothing", v),
                                  "omit -d to run until Ctrl-C");
              }
              return absl::OkStatus();
            });
  flags.Add("format", 'f', true, "text|csv|json",
            "text: redrawn in place on a terminal, appended elsewhere; csv: rows; json: one "
            "line per interval (default text)",
            [&](const std::string& v) {
              format_given = true;
              // svg is report's: live has no picture of its own yet.
              if (!ParseOutputFormat(v, &format) || format == OutputFormat::kSvg) {
                return WithHint(absl::InvalidArgumentError(
                                    absl::StrFormat("--format: unknown format '%s'", v)),
                                "use text, csv or json");
              }
              return absl::OkStatus();
            });
  flags.Add("phases", 0, true, "LIST",
            "phases to show, comma-separated: i2d, d2c, i2c, q2d, q2c; only the tracepoints "
            "they need are enabled (d2c alone: block_rq_issue and _complete, as biolatency; q2d/q2c add "
            "block_bio_queue). Default: i2d, d2c, i2c from record's default events",
            [&](const std::string& v) {
              IOTRACE_RETURN_IF_ERROR(ParsePhaseList(v, &opt.window.phases));
              // Only the tracepoints these phases need: fewer events, less cost.
              opt.events = LiveEventsForPhases(opt.window.phases);
              return absl::OkStatus();
            });
  flags.Add("by", 0, true, "DIM",
            "one latency row per device x DIM x op x phase: size (request size classes, powers "
            "of two: 4K holds 4 KiB to under 8 KiB), comm (the process that inserted the "
            "request), ioprio (its I/O priority, Linux 6.11+), cpu (the CPU that issued it)",
            [&](const std::string& v) { return ParseBreakdown(v, &opt.window.by); });
  flags.Add("top", 0, true, "N", "rows of the top processes (default 10)",
            [&](const std::string& v) {
              uint32_t n = 0;
              IOTRACE_RETURN_IF_ERROR(ParseUint32Flag("--top", v, &n));
              opt.window.top_processes = n;
              return absl::OkStatus();
            });
  flags.Add("unit", 'u', true, "ns|us|ms", "latency unit of the text (default us)",
            [&](const std::string& v) {
              if (!ParseTimeUnit(v, &unit)) {
                return WithHint(absl::InvalidArgumentError(
                                    absl::StrFormat("--unit: unknown unit '%s'", v)),
                                "use ns, us or ms");
              }
              return absl::OkStatus();
            });
  flags.AddString(
      "output", 'o', "FILE",
      "also write the recording to FILE (a trace.dat, as record writes it), to check any "
      "figure offline with iotrace report",
      &opt.output);
  flags.AddString("report", 0, "FILE",
                  "write the cumulative report at the end to FILE instead of standard output",
                  &report_path);
  AddBackendFlag(flags, &opt.backend);
  flags.Add("ingest", 0, true, "auto|mmap|read",
            "ftrace: how the ring buffer is read (default auto: memory-mapped where the kernel "
            "allows it, Linux 6.10+, else read())",
            [&](const std::string& v) {
              if (v == "auto") opt.ingest = FtraceIngest::kAuto;
              else if (v == "mmap") opt.ingest = FtraceIngest::kMmap;
              else if (v == "read") opt.ingest = FtraceIngest::kRead;
              else
                return WithHint(absl::InvalidArgumentError(
                                    absl::StrFormat("--ingest: unknown way '%s'", v)),
                                "use auto, mmap or read");
              return absl::OkStatus();
            });
  AddBufferFlags(flags, &opt.mmap_pages, &opt.buffer_kb);
  AddTracefsFlag(flags, &opt.tracefs_dir);
  flags.AddString("listen", 0, "ADDR:PORT",
                  "serve Prometheus metrics at http://ADDR:PORT/metrics (':PORT' or 'PORT': on "
                  "127.0.0.1 only, as the metrics name devices and processes; docs/prometheus.md)",
                  &listen_spec);
  flags.AddString("textfile", 0, "FILE.prom",
                  "write the metrics (classic histograms) to FILE.prom every second, for "
                  "node_exporter's textfile collector (written aside, then renamed into place)",
                  &metrics.textfile);
  flags.Add("native-schema", 0, true, "0..8",
            "resolution of the native histograms (default 3: 8 buckets per power of two)",
            [&](const std::string& v) {
              uint32_t n = 0;
              IOTRACE_RETURN_IF_ERROR(ParseUint32Flag("--native-schema", v, &n));
              if (n > 8) {
                return WithHint(absl::InvalidArgumentError(absl::StrFormat(
                                    "--native-schema %s: a schema is 0 to 8", v)),
                                "3 (the default) gives buckets 9% wide");
              }
              metrics.native_schema = static_cast<int>(n);
              return absl::OkStatus();
            });
  flags.Add("max-series", 0, true, "N",
            "latency series (device x op x phase) exported at most (default 1000; samples of "
            "more are counted in iotrace_series_dropped_total)",
            [&](const std::string& v) {
              uint32_t n = 0;
              IOTRACE_RETURN_IF_ERROR(ParseUint32Flag("--max-series", v, &n));
              metrics.max_series = n;
              return absl::OkStatus();
            });
  flags.AddString(
      "svg", 0, "FILE.svg",
      "draw the last 1000 intervals as iotrace report --format svg does (heatmaps, "
      "histograms), FILE.svg replaced whole every interval: a browser tab can follow the "
      "run (docs/plots.md)",
      &svg_path);
  flags.AddSwitch("quiet", 'q',
                  "no view, no interval lines and no report at the end (an exporter that runs as a "
                  "daemon); the summary line and errors still go to standard error",
                  &quiet);
  flags.AddSwitch("help", 'h', "show this help", &help);
  absl::Status parsed = flags.Parse(args, nullptr, &opt.command);
  if (help) {
    std::fputs(FitHelp(absl::StrFormat(
        "usage: iotrace live [options] [-- command [args...]]\n\n"
        "Block-I/O latency as it happens, straight from the kernel's per-CPU buffers (no file):\n"
        "every interval, per disk x op x phase, count, IOPS, MB/s and the latency percentiles,\n"
        "with the processes doing the most I/O. Stops on Ctrl-C / SIGTERM, after --duration or\n"
        "--count, or when the command after -- exits, and then prints the cumulative report of\n"
        "the whole run as iotrace report prints it. See docs/live.md.\n\noptions:\n%s",
        flags.Help().c_str())).c_str(), stdout);
    return kExitOk;
  }
  if (!parsed.ok()) return ReportError(parsed);
  absl::Status valid = ValidateLiveOptions(opt);
  if (!valid.ok()) return ReportError(AsUsageError(valid));
  RecordOptions ro;
  ro.devs = opt.devs;
  for (const std::string& w : RecordOptionWarnings(ro)) {
    std::fprintf(stderr, "iotrace: warning: %s\n", w.c_str());
  }
  RemoveStaleTracefsLeftovers(opt.tracefs_dir);
  opt.argv = {"iotrace", "live"};
  opt.argv.insert(opt.argv.end(), args.begin(), args.end());

  // The exporter binds its port before anything is traced: a port in use ends here.
  std::unique_ptr<MetricsExport> exporter;
  if (!listen_spec.empty() || !metrics.textfile.empty()) {
    if (!listen_spec.empty()) {
      absl::StatusOr<ListenAddress> address = ParseListen(listen_spec);
      if (!address.ok()) return ReportError(AsUsageError(address.status()));
      metrics.listen = *address;
    }
    absl::StatusOr<std::unique_ptr<MetricsExport>> created = MetricsExport::Create(metrics);
    if (!created.ok()) return ReportError(created.status());
    exporter = std::move(*created);
    opt.observer = exporter.get();
    exporter->Start();
    if (!listen_spec.empty()) {
      std::fprintf(stderr, "iotrace live: metrics at http://%s/metrics\n",
                   exporter->address().c_str());
    }
  }
  // An exporter off a terminal has no view unless a format was asked for.
  if (exporter != nullptr && !format_given && isatty(STDOUT_FILENO) != 1) quiet = true;

  LiveHeader header;
  header.host = HostName();
  header.interval_s = opt.interval_s;
  header.devices = absl::StrJoin(opt.devs, ",");
  header.unit = unit;
  const bool terminal = isatty(STDOUT_FILENO) == 1;
  IntervalPrinter printer(format, terminal, header, std::cout);
  IntervalSink* view = quiet ? nullptr : &printer;
  std::optional<SvgFollower> svg;
  if (!svg_path.empty()) svg.emplace(svg_path, opt.interval_s, header.host, view);
  absl::StatusOr<LiveResult> result = RunLive(opt, svg ? &*svg : view);
  printer.Close();
  if (!result.ok()) return ReportError(result.status());
  const LiveRunSummary& s = result->summary;

  // The cumulative report, as `iotrace report` prints it.
  const std::string report = FormatReport(result->report, format, unit);
  if (!report_path.empty()) {
    std::ofstream f(report_path, std::ios::trunc);
    f << report;
    if (!f.good()) {
      return ReportError(absl::UnavailableError("could not write the report to " + report_path));
    }
  } else if (!quiet) {  // a daemon's report goes nowhere unless asked for
    if (format == OutputFormat::kText) std::cout << "\n";
    std::cout << report;
    std::cout.flush();
  }
  std::fprintf(stderr,
               "iotrace live: %s backend, %s, %.1f s, %s events paired, %s lost, %s late; "
               "stopped by %s; own CPU %.3f s, %.0f ns per event\n",
               s.backend.c_str(), s.ingest.c_str(), s.seconds,
               absl::StrFormat("%u", s.events).c_str(), absl::StrFormat("%u", s.lost).c_str(),
               absl::StrFormat("%u", s.late).c_str(), s.stop_reason.c_str(), s.cpu_s,
               s.events == 0 ? 0.0 : s.cpu_s * 1e9 / static_cast<double>(s.events));
  if (!s.backend_check.empty()) {
    std::fprintf(stderr, "iotrace live: --backend auto: %s\n", s.backend_check.c_str());
  }
  if (!s.ingest_note.empty()) std::fprintf(stderr, "iotrace: note: %s\n", s.ingest_note.c_str());
  if (!s.output.empty()) {
    std::fprintf(stderr, "iotrace live: recording written to %s (%s); iotrace report -i %s\n",
                 s.output.c_str(), HumanBytes(s.output_bytes).c_str(), s.output.c_str());
  }
  for (const std::string& w : s.warnings) std::fprintf(stderr, "iotrace: warning: %s\n", w.c_str());
  if (exporter != nullptr && !exporter->textfile_error().ok()) {
    std::fprintf(stderr, "iotrace: warning: --textfile: %s\n",
                 std::string(exporter->textfile_error().message()).c_str());
  }
  return s.exit_code;
}

}  // namespace iotrace
