// What `iotrace live` prints of each interval (docs/live.md): on a terminal, a frame redrawn in
// place (the latency table and the top processes, cut to the window); off a terminal, CSV rows
// or JSON lines appended per interval. They only print the LiveInterval model.
#ifndef IOTRACE_OUTPUT_LIVE_VIEW_H_
#define IOTRACE_OUTPUT_LIVE_VIEW_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "iotrace/analysis/live_model.h"
#include "iotrace/analysis/report.h"

namespace iotrace {

// About the run rather than the interval; the CLI fills it before each frame.
struct LiveHeader {
  std::string host;
  std::string backend;  // "ftrace", "perf"
  std::string ingest;   // "mmap", "read", "perf rings"
  double elapsed_s = 0;   // since tracing started
  double interval_s = 0;  // -I
  std::string devices;    // the --dev values as given, "" for all
  // The run so far, the interval just shown included.
  uint64_t total_events = 0;
  uint64_t total_lost = 0;
  uint64_t total_late = 0;
  uint64_t total_unpaired = 0;
  TimeUnit unit = TimeUnit::kUs;  // of the screen's latencies
};

// One frame for a `cols` x `rows` window: at most `rows` lines, joined by '\n' (none after the
// last), each at most `cols` bytes, every byte printable ASCII (names from the kernel are made
// so, that no comm can move the cursor). Two header lines, the latency table, then the top
// processes; a table too long for the window ends in a line that says how many rows it left out.
std::string FormatLiveScreen(const LiveHeader& header, const LiveInterval& interval, int cols,
                             int rows);

// Redraws FormatLiveScreen in place on a terminal: the alternate screen (the user's scrollback
// stays as it was, and what is printed after Close lands on the normal screen), the cursor
// hidden, and each frame one write() that overwrites the last one, with no newline at all, so
// that nothing scrolls and nothing flickers.
class LiveTerminal {
 public:
  // `fd` stays the caller's. Nothing is written before the first Draw.
  explicit LiveTerminal(int fd) : fd_(fd) {}
  ~LiveTerminal() { Close(); }
  LiveTerminal(const LiveTerminal&) = delete;
  LiveTerminal& operator=(const LiveTerminal&) = delete;

  // The window's size (TIOCGWINSZ) is read on every frame; 80x24 when `fd` is no terminal.
  absl::Status Draw(const LiveHeader& header, const LiveInterval& interval);
  // Shows the cursor and leaves the alternate screen, if Draw entered it; then does nothing.
  void Close();

  // The bytes of one frame of `screen` (FormatLiveScreen's lines) on a `cols` x `rows` window.
  static std::string Frame(std::string_view screen, int cols, int rows);
  static void WindowSize(int fd, int* cols, int* rows);

 private:
  absl::Status WriteAll(std::string_view bytes);

  int fd_;
  bool open_ = false;
};

// Off a terminal, the columns of `report --interval --summary-csv` (interval_start_s, then
// kSummaryCsvHeader) and iops,bytes_per_s,lost,late,unpaired: one row per group (all times in
// ns), and one row with empty dev, device, op, phase and latencies and a count of 0 for an
// interval without groups, so that a reader sees the time pass.
// by: --by's dimension, a column after device ("" without --by).
void WriteLiveCsvHeader(const std::string& by, std::ostream& out);
void WriteLiveCsv(const LiveInterval& interval, std::ostream& out);

// One JSON object on one line per interval ({"type": "interval", ...}; docs/live.md).
void WriteLiveJson(const LiveInterval& interval, const LiveHeader& header, std::ostream& out);

}  // namespace iotrace

#endif  // IOTRACE_OUTPUT_LIVE_VIEW_H_
