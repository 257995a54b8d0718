#include "iotrace/report_runner.h"

#include <cerrno>
#include <fstream>
#include <memory>

#include "iotrace/report_format.h"
#include "iotrace/status.h"
#include "iotrace/trace_reader.h"

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

void WriteMain(const LatencyReport& report, const ReportOptions& options, std::ostream& out) {
  switch (options.format) {
    case OutputFormat::kText: WriteTextReport(report, options.unit, out); break;
    case OutputFormat::kCsv: WriteBucketCsv(report, out); break;
    case OutputFormat::kJson: WriteJsonReport(report, out); break;
  }
}

}  // namespace

absl::Status WriteReportOutputs(const LatencyReport& report, const ReportOptions& options,
                                std::ostream& out) {
  if (options.output.empty()) {
    WriteMain(report, options, out);
    out.flush();
    if (!out) return ErrnoError(errno != 0 ? errno : EIO, "write", "standard output");
  } else {
    IOTRACE_RETURN_IF_ERROR(WriteFile(
        options.output, [&](std::ostream& file) { WriteMain(report, options, file); }));
  }
  if (!options.summary_csv.empty()) {
    IOTRACE_RETURN_IF_ERROR(WriteFile(
        options.summary_csv, [&](std::ostream& file) { WriteSummaryCsv(report, file); }));
  }
  return absl::OkStatus();
}

absl::Status RunReportOn(TraceReader& reader, const ReportOptions& options, std::ostream& out,
                         std::ostream& err) {
  IOTRACE_RETURN_IF_ERROR(ValidateReportOptions(options));
  absl::StatusOr<LatencyReport> report = BuildLatencyReport(reader, options);
  if (!report.ok()) return Annotate(report.status(), "report " + options.input);
  IOTRACE_RETURN_IF_ERROR(WriteReportOutputs(*report, options, out));
  if (options.format != OutputFormat::kText || !options.output.empty()) {
    for (const PhaseWarning& w : report->warnings) err << "iotrace: warning: " << w.message << "\n";
  }
  return absl::OkStatus();
}

absl::Status RunReport(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  IOTRACE_RETURN_IF_ERROR(ValidateReportOptions(options));
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(options.input));
  return RunReportOn(*reader, options, out, err);
}

}  // namespace iotrace
