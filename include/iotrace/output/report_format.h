// Formatters of a LatencyReport: text for people (summary table, warnings and notes, ASCII
// histograms, completeness), bucket CSV, summary CSV and JSON (docs/report-json.md).
// They only print the model: no decoding, no pairing.
#ifndef IOTRACE_OUTPUT_REPORT_FORMAT_H_
#define IOTRACE_OUTPUT_REPORT_FORMAT_H_

#include <ostream>
#include <string>

#include "iotrace/analysis/report.h"

namespace iotrace {

// Headers of the CSV outputs (without interval); with intervals "interval_start_s," leads.
inline constexpr char kBucketCsvHeader[] = "dev,device,op,phase,bucket_lo_ns,bucket_hi_ns,count";
inline constexpr char kSummaryCsvHeader[] =
    "dev,device,op,phase,count,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns";

// Laid out for 80 columns: the header, the summary table, its warnings and notes, the
// histograms as `histograms` says, the time series, and the completeness block.
void WriteTextReport(const LatencyReport& report, TimeUnit unit, std::ostream& out,
                     HistogramView histograms = HistogramView::kLog2);
// One row per non-empty bucket; with intervals, one block of rows per interval.
void WriteBucketCsv(const LatencyReport& report, std::ostream& out);
// One row per group; with intervals, one block of rows per interval.
void WriteSummaryCsv(const LatencyReport& report, std::ostream& out);
void WriteJsonReport(const LatencyReport& report, std::ostream& out);

// The main output in `format` as a string (tests, small reports).
std::string FormatReport(const LatencyReport& report, OutputFormat format, TimeUnit unit);

// "12.5" for 12500 ns in us: the number printed for `ns` in `unit` (no unit suffix).
std::string FormatLatency(uint64_t ns, TimeUnit unit);
// Seconds without trailing zeros: 0.5 -> "0.5", 2 -> "2".
std::string FormatSeconds(double s);

}  // namespace iotrace

#endif  // IOTRACE_OUTPUT_REPORT_FORMAT_H_
