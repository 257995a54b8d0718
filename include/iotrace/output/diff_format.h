// Formatters of a LatencyDiff (`iotrace diff`): a text table for people, CSV (one row per
// device x op x phase) and JSON (docs/diff.md). They only print the model.
#ifndef IOTRACE_OUTPUT_DIFF_FORMAT_H_
#define IOTRACE_OUTPUT_DIFF_FORMAT_H_

#include <ostream>
#include <string>

#include "iotrace/analysis/diff_model.h"
#include "iotrace/analysis/report.h"

namespace iotrace {

void WriteTextDiff(const LatencyDiff& diff, TimeUnit unit, std::ostream& out);
void WriteDiffCsv(const LatencyDiff& diff, std::ostream& out);
void WriteJsonDiff(const LatencyDiff& diff, std::ostream& out);

// The row's device as the text names it: "loop0 (7:0)" when both sides name the same device,
// "loop0=loop1" when --map paired two.
std::string DiffRowDevice(const DiffRow& r);
// A change in percent as the text shows it: "+24.6%", in parentheses when the buckets around
// the two values overlap.
std::string DiffPercentCell(const DiffStat& s);

// The output in `format` as a string (tests); text, CSV or JSON (svg_diff.h draws the picture,
// which needs both reports: empty here).
std::string FormatDiff(const LatencyDiff& diff, OutputFormat format, TimeUnit unit);

}  // namespace iotrace

#endif  // IOTRACE_OUTPUT_DIFF_FORMAT_H_
