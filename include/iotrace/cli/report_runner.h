// `iotrace report` end to end, without flags: open the file, build the LatencyReport, write the
// main output (stdout or -o FILE) and the optional summary CSV.
#ifndef IOTRACE_CLI_REPORT_RUNNER_H_
#define IOTRACE_CLI_REPORT_RUNNER_H_

#include <memory>
#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/analysis/report.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/output/svg_plot.h"

namespace iotrace {

// Writes the report described by `options`, which the command line has validated
// (ValidateReportOptions); `out` stands for stdout when no -o is given. When the
// main output is not text (csv, json, or text to a file), the report's warnings also go to
// `err` as "iotrace: warning: ...", so that nobody takes an incomplete histogram for complete.
absl::Status RunReport(const ReportOptions& options, std::ostream& out, std::ostream& err);

// Opens options.input as RunReport does: with --formats-from's formats, else the running
// kernel's, for a file that lost its own (and warns on `err` when --formats-from went unused).
absl::StatusOr<std::unique_ptr<TraceReader>> OpenReportInput(const ReportOptions& options,
                                                             std::ostream& err);

// The same on an open reader (tests hand in a fake one).
absl::Status RunReportOn(TraceReader& reader, const ReportOptions& options, std::ostream& out,
                         std::ostream& err);

// --events: every record of the file in time order, one line each, to the main output.
// --since/--until narrow the time range; --dev, --op, --comm and --pid keep the events that
// match, and `err` gets how many they kept.
absl::Status RunEventDump(TraceReader& reader, const ReportOptions& options, std::ostream& out,
                          std::ostream& err);

// Writes an already built report the way RunReport does (main output + summary CSV); `svg`:
// what the pictures show besides the report (--format svg); `picture` (if not null): the
// report the main output shows instead (a picture of some of the devices), the summary CSV
// still `report`'s.
absl::Status WriteReportOutputs(const LatencyReport& report, const ReportOptions& options,
                                std::ostream& out, const SvgPlotOptions& svg = {},
                                const LatencyReport* picture = nullptr);

}  // namespace iotrace

#endif  // IOTRACE_CLI_REPORT_RUNNER_H_
