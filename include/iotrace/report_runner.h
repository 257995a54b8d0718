// `iotrace report` end to end, without flags: open the file, build the LatencyReport, write the
// main output (stdout or -o FILE) and the optional summary CSV.
#ifndef IOTRACE_REPORT_RUNNER_H_
#define IOTRACE_REPORT_RUNNER_H_

#include <ostream>

#include "absl/status/status.h"
#include "iotrace/latency_report.h"

namespace iotrace {

// Writes the report described by `options`; `out` stands for stdout when no -o is given.
absl::Status RunReport(const ReportOptions& options, std::ostream& out);

// Writes an already built report the way RunReport does (main output + summary CSV).
absl::Status WriteReportOutputs(const LatencyReport& report, const ReportOptions& options,
                                std::ostream& out);

}  // namespace iotrace

#endif  // IOTRACE_REPORT_RUNNER_H_
