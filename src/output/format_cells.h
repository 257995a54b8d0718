// Cells that more than one formatter of this stage writes (report_format, live_view,
// diff_format, event_dump): CSV quoting, JSON strings and numbers, and the cells of a summary
// CSV row, so that a number reads the same in `iotrace report` and `iotrace live`; names made
// printable and where a file was recorded; text aligned in a column, and the text view's lines
// wrapped at 80 columns.
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

// `s` with every byte that is not printable ASCII as '?': names from the kernel (a comm is
// whatever the process set) or from a file's header, so that none can move the cursor or be
// wider than its bytes on a terminal.
std::string Printable(std::string_view s);

// Where and by what a file was recorded (LatencyReport::recorded_on): after "recorded", "on vm
// (Linux 6.18.44 x86_64) by perf 6.1.187", each part left out where the file does not say and
// made Printable; and as a JSON object {"host", "kernel", "arch", "recorder"}, null where it
// does not.
std::string RecordedOnText(const RecordingHost& h);
std::string JsonRecordedOn(const RecordingHost& h);

// `text` appended to `line` in a column of `width` (no cut when wider): spaces before it
// (right-aligned) or after it (left-aligned).
inline void AppendAligned(std::string* line, std::string_view text, size_t width, bool align_left) {
  const size_t pad = width > text.size() ? width - text.size() : 0;
  if (!align_left) line->append(pad, ' ');
  line->append(text);
  if (align_left) line->append(pad, ' ');
}

// The width the text views are laid out for: a terminal's default.
inline constexpr size_t kTextWidth = 80;
// `lead` as it is, then the words of `text` (split at spaces) filled into lines of at most
// kTextWidth columns, each line after the first indented by `hang` spaces; ends with a newline.
// A number stays on the line of the word before it ("block_rq_issue 715", "covers 0.000-1.2")
// and of the word after it ("2 CPUs", "0.024 s") unless a comma, semicolon, colon or
// parenthesis ends it; a word too long for any line stands on a line of its own.
std::string Wrapped(std::string_view lead, std::string_view text, size_t hang);

}  // namespace iotrace

#endif  // IOTRACE_SRC_OUTPUT_FORMAT_CELLS_H_
