#include "iotrace/cli/report_runner.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/base/status.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/event/block_event.h"
#include "iotrace/formats/external_formats.h"
#include "iotrace/formats/multi_trace_reader.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "iotrace/output/event_dump.h"
#include "iotrace/output/report_format.h"
#include "iotrace/output/svg_plot.h"
#include "iotrace/sys/device_names.h"

namespace iotrace {
namespace {

// Opens `path` for writing, runs `write` into it and checks that every byte got out.
template <typename Fn>
absl::Status WriteFile(const std::string& path, Fn write) {
  std::ofstream file(path, std::ios::out | std::ios::trunc | std::ios::binary);
  if (!file) return ErrnoError(errno, "open", path);
  write(file);
  file.flush();
  if (!file) return ErrnoError(errno != 0 ? errno : EIO, "write", path);
  file.close();
  if (file.fail()) return ErrnoError(errno != 0 ? errno : EIO, "close", path);
  return absl::OkStatus();
}

void WriteMain(const LatencyReport& report, const ReportOptions& options,
               const SvgPlotOptions& svg, std::ostream& out) {
  switch (options.format) {
    case OutputFormat::kText:
      WriteTextReport(report, options.unit, out, options.histograms);
      break;
    case OutputFormat::kCsv: WriteBucketCsv(report, out); break;
    case OutputFormat::kJson: WriteJsonReport(report, out); break;
    case OutputFormat::kSvg: WriteSvgReport(report, svg, out); break;
  }
}

// The pictures' interval when none was asked for: 1, 2 or 5 times a power of ten, so that
// `span_ns` makes at most kSvgColumns columns.
constexpr double kSvgColumns = 1000;
// At most this many panels (device x op x phase) in a picture: a 1024-device file's 6,144 made
// an 87 MB SVG and took 1.5 GB and 14 s to read with their intervals (docs/plots.md).
constexpr size_t kSvgPanels = 64;

double SvgInterval(uint64_t span_ns) {
  const double want = std::max(span_ns / 1e9 / kSvgColumns, 1e-6);
  const double decade = std::pow(10.0, std::floor(std::log10(want)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * decade >= want) return m * decade;
  }
  return 10 * decade;
}

// The first and last times of a file's records, for a file too small for TimeSpan.
class SpanSink : public EventSink {
 public:
  void OnEvent(const RawEvent& e) override {
    first_ = std::min(first_, e.ts);
    last_ = std::max(last_, e.ts);
  }
  uint64_t span() const { return last_ > first_ ? last_ - first_ : 0; }

 private:
  uint64_t first_ = ~uint64_t{0};
  uint64_t last_ = 0;
};

// What the pictures show besides the report: the recording machine and the devices' models.
SvgPlotOptions SvgFacts(const LatencyReport& report, const ReportOptions& options) {
  SvgPlotOptions svg;
  svg.host = report.recorded_on.host;
  DeviceNames names(options.sysfs_root, options.procfs_root);
  for (const LatencyGroup& g : report.groups) {
    if (svg.models.empty() || svg.models.back().first != g.dev) {
      svg.models.emplace_back(g.dev, names.ModelOf(g.dev));
    }
  }
  return svg;
}

}  // namespace

absl::Status WriteReportOutputs(const LatencyReport& report, const ReportOptions& options,
                                std::ostream& out, const SvgPlotOptions& svg,
                                const LatencyReport* picture) {
  const LatencyReport& main = picture != nullptr ? *picture : report;
  if (options.output.empty()) {
    WriteMain(main, options, svg, out);
    out.flush();
    if (!out) return ErrnoError(errno != 0 ? errno : EIO, "write", "standard output");
  } else {
    IOTRACE_RETURN_IF_ERROR(WriteFile(
        options.output, [&](std::ostream& file) { WriteMain(main, options, svg, file); }));
  }
  if (!options.summary_csv.empty()) {
    IOTRACE_RETURN_IF_ERROR(WriteFile(
        options.summary_csv, [&](std::ostream& file) { WriteSummaryCsv(report, file); }));
  }
  return absl::OkStatus();
}

absl::Status RunReportOn(TraceReader& reader, const ReportOptions& options, std::ostream& out,
                         std::ostream& err) {
  absl::StatusOr<LatencyReport> report = BuildLatencyReport(reader, options);
  if (!report.ok()) return Annotate(report.status(), "report " + options.input);
  KeepPhases(options.phases, &*report);
  // The picture of more panels than it draws: of the devices with the most requests, read
  // again with their intervals, and said at its top. The rest (the summary CSV, the warnings)
  // stays the whole file's.
  std::optional<LatencyReport> picture;
  std::string svg_note;
  if (report->intervals_dropped) {
    size_t rows = 0;
    const std::vector<uint32_t> chosen =
        BusiestDevices(*report, options.max_interval_groups, &rows);
    std::set<uint32_t> devices;
    for (const LatencyGroup& g : report->groups) devices.insert(g.dev);
    ReportOptions again = options;
    again.max_interval_groups = 0;
    again.devices.clear();  // (the chosen are among those --dev named)
    for (uint32_t dev : chosen) again.devices.push_back(DevString(dev));
    if (rows < report->groups.size()) {
      svg_note = absl::StrFormat(
          "%u devices: the %u with the most requests drawn, %u of %u panels; --dev picks others",
          devices.size(), chosen.size(), rows, report->groups.size());
    }
    absl::StatusOr<LatencyReport> drawn = BuildLatencyReport(reader, again);
    if (!drawn.ok()) return Annotate(drawn.status(), "report " + options.input);
    KeepPhases(options.phases, &*drawn);
    picture = *std::move(drawn);
  }
  // No --dev names a device of the file: every request would be filtered out, and a report of
  // nothing would hide that the name is wrong.
  if (!options.devices.empty() && report->devices_unmatched.size() == options.devices.size()) {
    return WithHint(absl::NotFoundError(report->filter_warnings.front()),
                    "give --dev one of the devices the file holds, as MAJ:MIN or by name (names "
                    "are those of the machine running the report)");
  }
  // Filter values that match nothing: on stderr whatever the format, next to the command.
  for (const std::string& w : report->filter_warnings) err << "iotrace: warning: " << w << "\n";
  SvgPlotOptions svg;
  if (options.format == OutputFormat::kSvg) {
    svg = SvgFacts(picture.has_value() ? *picture : *report, options);
    svg.note = svg_note;
  }
  IOTRACE_RETURN_IF_ERROR(
      WriteReportOutputs(*report, options, out, svg, picture.has_value() ? &*picture : nullptr));
  // How the file was read (one pass or two time ranges), for whoever measures the report.
  if (std::getenv("IOTRACE_REPORT_PLAN") != nullptr) {
    err << "iotrace: read plan: " << report->read_plan << "\n";
  }
  if (options.format != OutputFormat::kText || !options.output.empty()) {
    if (!report->formats_warning.empty()) {
      err << "iotrace: warning: " << report->formats_warning << "\n";
    }
    for (const PhaseWarning& w : report->warnings) err << "iotrace: warning: " << w.message << "\n";
  }
  return absl::OkStatus();
}

namespace {

// Formats each record into one reused buffer and writes it out in large pieces.
class DumpSink : public EventSink {
 public:
  DumpSink(EventDumper& dumper, TraceReader& reader, const ReportOptions& options,
           std::ostream& out)
      : dumper_(dumper),
        reader_(reader),
        options_(options),
        out_(out),
        decoder_(reader.formats()),
        names_(options.sysfs_root, options.procfs_root) {
    buf_.reserve(kFlushAt + 4096);
    decoder_.set_decode_comm(true);
    filtering_ = !options.devices.empty() || !options.ops.empty() || !options.comms.empty() ||
                 !options.pids.empty();
  }
  void OnEvent(const RawEvent& e) override {
    if (!have_origin_) {
      origin_ = e.ts;
      have_origin_ = true;
    }
    const double t = (e.ts - origin_) / 1e9;
    if ((options_.since_s && t < *options_.since_s) || (options_.until_s && t > *options_.until_s)) {
      return;
    }
    if (filtering_ && !Passes(e)) {
      ++filtered_;
      return;
    }
    // Comm lookups cost a map access: remember the last pid's.
    if (e.pid != last_pid_) {
      last_pid_ = e.pid;
      last_comm_ = reader_.CommOf(e.pid);
    }
    dumper_.Append(e, last_comm_, &buf_);
    ++events_;
    if (buf_.size() >= kFlushAt) Flush();
  }
  void Flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }
  uint64_t events() const { return events_; }
  uint64_t filtered() const { return filtered_; }
  bool filtering() const { return filtering_; }

 private:
  // --dev and --op keep the block events of those devices and ops (an event of another kind has
  // neither: it is left out); --pid keeps the events of those processes (or threads), --comm
  // those of the processes of that name (the event's own comm where it has one).
  bool Passes(const RawEvent& e) {
    const bool block = decoder_.Decode(e, &block_);
    if (!options_.devices.empty()) {
      if (!block) return false;
      auto [it, inserted] = dev_allowed_.try_emplace(block_.dev, false);
      if (inserted) {
        for (const std::string& spec : options_.devices) it->second |= names_.Matches(spec, block_.dev);
      }
      if (!it->second) return false;
    }
    if (!options_.ops.empty()) {
      if (!block) return false;
      bool hit = false;
      for (BlockOp op : options_.ops) hit |= op == block_.op;
      if (!hit) return false;
    }
    if (!options_.pids.empty()) {
      bool hit = false;
      for (int32_t pid : options_.pids) hit |= pid == e.pid || pid == e.tid;
      if (!hit) return false;
    }
    if (!options_.comms.empty()) {
      std::string comm = block && block_.comm[0] != '\0' ? std::string(block_.comm)
                                                          : reader_.CommOf(e.pid);
      bool hit = false;
      for (const std::string& c : options_.comms) hit |= comm == c;
      if (!hit) return false;
    }
    return true;
  }

  static constexpr size_t kFlushAt = 1 << 20;
  EventDumper& dumper_;
  TraceReader& reader_;
  const ReportOptions& options_;
  std::ostream& out_;
  std::string buf_;
  bool have_origin_ = false;
  uint64_t origin_ = 0;
  int32_t last_pid_ = -2;
  std::string last_comm_;
  uint64_t events_ = 0;
  BlockDecoder decoder_;
  BlockEvent block_;
  DeviceNames names_;
  absl::flat_hash_map<uint32_t, bool> dev_allowed_;
  bool filtering_ = false;
  uint64_t filtered_ = 0;
};

DumpFormat DumpFormatOf(OutputFormat f) {
  switch (f) {
    case OutputFormat::kCsv: return DumpFormat::kCsv;
    case OutputFormat::kJson: return DumpFormat::kJson;
    case OutputFormat::kText:
    case OutputFormat::kSvg:  // refused with --events (ValidateReportOptions)
      break;
  }
  return DumpFormat::kText;
}

}  // namespace

absl::Status RunEventDump(TraceReader& reader, const ReportOptions& options, std::ostream& out,
                          std::ostream& err) {
  EventDumper dumper(reader.formats(), DumpFormatOf(options.format));
  auto dump = [&](std::ostream& o) -> absl::Status {
    o << dumper.Header();
    DumpSink sink(dumper, reader, options, o);
    absl::Status s = reader.ReadAll(&sink);
    sink.Flush();
    if (sink.filtering()) {
      // What the filters kept, so that an empty dump is never a mystery.
      std::vector<std::string> given;
      for (const std::string& d : options.devices) given.push_back("--dev " + d);
      for (BlockOp op : options.ops) given.push_back("--op " + std::string(BlockOpName(op)));
      for (const std::string& c : options.comms) given.push_back("--comm " + c);
      for (int32_t pid : options.pids) given.push_back("--pid " + std::to_string(pid));
      err << "iotrace: " << absl::StrJoin(given, ", ") << " kept " << sink.events() << " of "
          << sink.events() + sink.filtered() << (sink.events() + sink.filtered() == 1 ? " event" : " events")
          << (options.devices.empty() && options.ops.empty()
                  ? "\n"
                  : " (--dev and --op keep block events only)\n");
    }
    o.flush();
    if (!o) return ErrnoError(errno != 0 ? errno : EIO, "write", "event dump");
    return s;
  };
  if (options.output.empty()) return dump(out);
  std::ofstream file(options.output, std::ios::out | std::ios::trunc | std::ios::binary);
  if (!file) return ErrnoError(errno, "open", options.output);
  return dump(file);
}

absl::StatusOr<std::unique_ptr<TraceReader>> OpenReportInput(const ReportOptions& options,
                                                             std::ostream& err) {
  // Formats for a file that lost its own: the ones asked for, else the running kernel's.
  const FormatsFallback fallback = options.formats_from.empty()
                                       ? RunningKernelFormats(options.kernel_tracefs)
                                       : FormatsFromPath(options.formats_from);
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader,
                           OpenTraceReaders(options.inputs.empty()
                                                ? std::vector<std::string>{options.input}
                                                : options.inputs,
                                            &fallback));
  if (!options.formats_from.empty() && reader->FormatsSource() == "file") {
    err << "iotrace: warning: --formats-from " << options.formats_from
        << " not used: the file carries its own event formats\n";
  }
  return reader;
}

absl::Status RunReport(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenReportInput(options, err));
  if (options.events) return RunEventDump(*reader, options, out, err);
  if (options.format == OutputFormat::kSvg) {
    ReportOptions o = options;
    // At most kSvgPanels panels, those of the devices with the most requests (RunReportOn: the
    // reader reads the file again; standard input is read from the copy it was saved to).
    o.max_interval_groups = kSvgPanels;
    if (options.interval_s != 0) return RunReportOn(*reader, o, out, err);
    // The pictures need intervals: as many as make about kSvgColumns columns over the file's
    // span, which a large file's reader tells from a look at its ends, and a small one gives
    // by a read of its times (not a pipe's, which reads once: 1 s, columns merged past the
    // writer's limit).
    o.interval_s = 1;
    if (const std::optional<TraceTimeSpan> span = reader->TimeSpan(); span.has_value()) {
      o.interval_s = SvgInterval(span->last_ts - span->first_ts);
    } else if (options.input != "-") {
      SpanSink times;
      IOTRACE_RETURN_IF_ERROR(reader->ReadAll(&times));
      // The read took the reader's records: open the file again (a warning is said once).
      std::ostringstream said_again;
      IOTRACE_ASSIGN_OR_RETURN(reader, OpenReportInput(options, said_again));
      o.interval_s = SvgInterval(times.span());
    }
    return RunReportOn(*reader, o, out, err);
  }
  return RunReportOn(*reader, options, out, err);
}

}  // namespace iotrace
