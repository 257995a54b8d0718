// Cells that more than one formatter of this stage writes (report_format, live_view): CSV
// quoting, JSON strings and numbers, and the cells of a summary CSV row, so that a number reads
// the same in `iotrace report` and `iotrace live`.
#ifndef IOTRACE_SRC_OUTPUT_FORMAT_CELLS_H_
#define IOTRACE_SRC_OUTPUT_FORMAT_CELLS_H_

#include <string>
#include <string_view>

#include "iotrace/analysis/report.h"

namespace iotrace {

// `s` as one CSV cell: quoted (and its quotes doubled) when it holds a comma, quote or newline.
std::string CsvField(const std::string& s);
// `s` as a JSON string, quotes included; control characters escaped.
std::string JsonString(std::string_view s);
// A JSON number with at most 3 decimals and no trailing zeros; null when not finite.
std::string JsonDouble(double v);
// The cells of kSummaryCsvHeader for `g` ("7:0,loop0,read,D2C,12,..."), without a newline;
// with_by: --by's class after the device ("7:0,loop0,4K,read,...").
std::string SummaryCsvCells(const LatencyGroup& g, bool with_by = false);
// A CSV header with --by's dimension as a column after "device" (`header` itself without --by).
std::string CsvHeaderWithBy(std::string_view header, const std::string& by);

}  // namespace iotrace

#endif  // IOTRACE_SRC_OUTPUT_FORMAT_CELLS_H_
