#include "iotrace/output/live_view.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "format_cells.h"
#include "iotrace/base/status.h"
#include "iotrace/output/report_format.h"

namespace iotrace {
namespace {

// When the table and the processes do not both fit, the table keeps at least its header, two
// rows and the line that counts the rest, and the processes then keep up to their blank line,
// title, header and five rows: the busiest processes stay in sight beside a long table.
constexpr size_t kTableKeep = 4;
constexpr size_t kPaneKeep = 8;
constexpr size_t kPaneLead = 3;  // blank line, title, header

double PerSecond(uint64_t n, double length_s) { return length_s > 0 ? n / length_s : 0; }

const LiveThroughput* ThroughputOf(const LiveInterval& iv, const LatencyGroup& g) {
  for (const LiveThroughput& t : iv.throughput) {
    if (t.dev == g.dev && t.op == g.op && t.by == g.by) return &t;
  }
  return nullptr;
}

// Cells laid out in columns as wide as their widest cell, aligned as `align` says of each ('l'
// left, 'r' right); two spaces apart when that fits `cols`, else one.
std::vector<std::string> LayOut(const std::vector<std::vector<std::string>>& cells,
                                std::string_view align, int cols) {
  std::vector<size_t> width;
  for (const auto& row : cells) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  size_t total = 0;
  for (size_t w : width) total += w;
  const size_t gap =
      width.empty() || total + 2 * (width.size() - 1) > static_cast<size_t>(cols) ? 1 : 2;
  std::vector<std::string> lines;
  for (const auto& row : cells) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i != 0) line.append(gap, ' ');
      const size_t pad = width[i] - row[i].size();
      const bool left = i < align.size() && align[i] == 'l';
      if (!left) line.append(pad, ' ');
      line += row[i];
      if (left && i + 1 < row.size()) line.append(pad, ' ');
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string HeaderLine(const LiveHeader& h) {
  return absl::StrFormat("iotrace live  %.1f s  %s  %s (%s)  every %s s  latency in %s%s",
                         h.elapsed_s, Printable(h.host), h.backend, h.ingest,
                         FormatSeconds(h.interval_s), TimeUnitName(h.unit),
                         h.devices.empty() ? "" : "  dev " + Printable(h.devices));
}

// The interval's losses first: they say how far its figures can be trusted. "!!" leads when
// events were lost or came too late to be paired (no colour: the view must read the same on
// any terminal and in a captured screen).
std::string CountsLine(const LiveHeader& h, const LiveInterval& iv) {
  const LiveIntervalCounts& c = iv.counts;
  return absl::StrFormat(
      "%sinterval %u: lost %u, late %u, unpaired %u, events %u, expired %u, in flight %u  "
      "| run: events %u, lost %u, late %u, unpaired %u",
      c.lost != 0 || c.late != 0 ? "!! " : "", iv.index, c.lost, c.late, c.unpaired, c.events,
      c.expired, c.inflight, h.total_events, h.total_lost, h.total_late, h.total_unpaired);
}

// The column header and one line per group; or the one line that says there is none.
std::vector<std::string> GroupTable(const LiveInterval& iv, TimeUnit unit, int cols) {
  if (iv.groups.empty()) return {"no block I/O completed in this interval"};
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"DEVICE", "OP", "PHASE", "COUNT", "IOPS", "MB/s", "MIN", "P50", "P90", "P99",
                   "P99.9", "MAX"});
  // With --by, the class is a column after the device.
  const bool by = !iv.by.empty();
  if (by) cells[0].insert(cells[0].begin() + 1, absl::AsciiStrToUpper(iv.by));
  for (size_t i = 0; i < iv.groups.size(); ++i) {
    const LatencyGroup& g = iv.groups[i];
    const LatencySummary& s = g.summary;
    // Throughput is of the device x op, the same for each of its phases: on its first row only.
    std::string iops, mbps;
    if (i == 0 || iv.groups[i - 1].dev != g.dev || iv.groups[i - 1].op != g.op ||
        iv.groups[i - 1].by != g.by) {
      const LiveThroughput* t = ThroughputOf(iv, g);
      iops = absl::StrFormat("%.0f", PerSecond(t ? t->requests : 0, iv.length_s));
      mbps = absl::StrFormat("%.1f", PerSecond(t ? t->bytes : 0, iv.length_s) / 1e6);
    }
    cells.push_back({Printable(g.device), std::string(BlockOpName(g.op)),
                     std::string(PhaseName(g.phase)), absl::StrCat(s.count), iops, mbps,
                     FormatLatency(s.min_ns, unit), FormatLatency(s.p50_ns, unit),
                     FormatLatency(s.p90_ns, unit), FormatLatency(s.p99_ns, unit),
                     FormatLatency(s.p999_ns, unit), FormatLatency(s.max_ns, unit)});
    if (by) cells.back().insert(cells.back().begin() + 1, Printable(g.by));
  }
  return LayOut(cells, by ? "llllrrrrrrrrr" : "lllrrrrrrrrr", cols);
}

// A blank line, the title, the column header and one line per process; nothing without any.
std::vector<std::string> ProcessPane(const LiveInterval& iv, TimeUnit unit, int cols) {
  if (iv.processes.empty()) return {};
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"PID", "COMM", "DEVICE", "I/Os", "KiB", "I2C P50", "I2C P99"});
  for (const LiveProcess& p : iv.processes) {
    // 0: none of its requests had an insert, so its I2C is unknown.
    auto i2c = [unit](uint64_t ns) { return ns == 0 ? std::string("-") : FormatLatency(ns, unit); };
    cells.push_back({p.pid < 0 ? std::string("-") : absl::StrCat(p.pid), Printable(p.comm),
                     Printable(p.device), absl::StrCat(p.requests), absl::StrCat(p.bytes / 1024),
                     i2c(p.i2c_p50_ns), i2c(p.i2c_p99_ns)});
  }
  std::vector<std::string> pane = {"", "top processes by I/Os"};
  // PID right-aligned, as top and biotop have it.
  for (std::string& line : LayOut(cells, "rllrrrr", cols)) pane.push_back(std::move(line));
  return pane;
}

}  // namespace

std::string FormatLiveScreen(const LiveHeader& header, const LiveInterval& interval, int cols,
                             int rows) {
  if (cols <= 0 || rows <= 0) return "";
  std::vector<std::string> lines = {HeaderLine(header), CountsLine(header, interval)};
  // What changed in the interval (a --dev disk that went away), before the table.
  for (const std::string& n : interval.notes) lines.push_back("note: " + Printable(n));
  lines.push_back("");
  const std::vector<std::string> table = GroupTable(interval, header.unit, cols);
  const std::vector<std::string> pane = ProcessPane(interval, header.unit, cols);
  const size_t body =
      static_cast<size_t>(rows) > lines.size() ? static_cast<size_t>(rows) - lines.size() : 0;
  size_t table_n = table.size();
  size_t pane_n = pane.size();
  if (table_n + pane_n > body) {
    pane_n = std::min(pane.size(), kPaneKeep);
    const size_t table_keep = std::min(table.size(), kTableKeep);
    pane_n = std::min(pane_n, body > table_keep ? body - table_keep : 0);
    if (pane_n <= kPaneLead) pane_n = 0;
    table_n = std::min(table.size(), body - pane_n);
    // What the table does not need goes back to the processes.
    pane_n = std::min(pane.size(), body - table_n);
    if (pane_n <= kPaneLead) pane_n = 0;
  }
  if (table_n < table.size()) {
    // The last line the table has tells what it leaves out.
    const size_t shown = table_n == 0 ? 0 : table_n - 1;
    lines.insert(lines.end(), table.begin(), table.begin() + shown);
    if (table_n != 0) {
      const size_t groups_shown = shown == 0 ? 0 : shown - 1;
      lines.push_back(absl::StrFormat("... %u more rows (-o FILE or --format json for all)",
                                      interval.groups.size() - groups_shown));
    }
  } else {
    lines.insert(lines.end(), table.begin(), table.end());
  }
  lines.insert(lines.end(), pane.begin(), pane.begin() + pane_n);
  if (lines.size() > static_cast<size_t>(rows)) lines.resize(rows);
  // A blank line at the bottom separates nothing (and would end the text in a newline).
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i != 0) out += '\n';
    out.append(lines[i], 0, std::min(lines[i].size(), static_cast<size_t>(cols)));
  }
  return out;
}

void LiveTerminal::WindowSize(int fd, int* cols, int* rows) {
  struct winsize ws = {};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col != 0 && ws.ws_row != 0) {
    *cols = ws.ws_col;
    *rows = ws.ws_row;
  } else {
    *cols = 80;
    *rows = 24;
  }
}

// Each line is put in place by its row number (ESC[row;1H), never by a newline: a newline on
// the last row scrolls the screen. A line shorter than the window is followed by ESC[K, which
// clears what the last frame left beyond it; a line as wide as the window is not, since the
// cursor then still stands on its last column and ESC[K would erase that character. For the
// same reason ESC[J (clear the rows below) follows only a frame shorter than the window.
std::string LiveTerminal::Frame(std::string_view screen, int cols, int rows) {
  std::string out = "\x1b[H";
  int row = 0;
  size_t start = 0;
  while (row < rows && start <= screen.size() && !screen.empty()) {
    size_t end = screen.find('\n', start);
    if (end == std::string_view::npos) end = screen.size();
    const std::string_view line = screen.substr(start, end - start);
    if (row != 0) absl::StrAppend(&out, "\x1b[", row + 1, ";1H");
    out += line;
    if (line.size() < static_cast<size_t>(cols)) out += "\x1b[K";
    ++row;
    start = end + 1;
  }
  if (row < rows) absl::StrAppend(&out, "\x1b[", row + 1, ";1H\x1b[J");
  return out;
}

absl::Status LiveTerminal::Draw(const LiveHeader& header, const LiveInterval& interval) {
  int cols = 0, rows = 0;
  WindowSize(fd_, &cols, &rows);
  std::string bytes;
  if (!open_) {
    // Alternate screen, cursor hidden: in the same write as the first frame.
    bytes = "\x1b[?1049h\x1b[?25l";
    open_ = true;
  }
  bytes += Frame(FormatLiveScreen(header, interval, cols, rows), cols, rows);
  return WriteAll(bytes);
}

void LiveTerminal::Close() {
  if (!open_) return;
  open_ = false;
  // Nothing to do about a failure: the terminal is gone, or the user sees it.
  (void)WriteAll("\x1b[?25h\x1b[?1049l");
}

absl::Status LiveTerminal::WriteAll(std::string_view bytes) {
  // One write() in the common case; a terminal may still take a long frame in pieces.
  while (!bytes.empty()) {
    const ssize_t n = write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        // Another process may have left the terminal non-blocking: wait until it takes more.
        struct pollfd pfd = {fd_, POLLOUT, 0};
        if (poll(&pfd, 1, -1) >= 0 || errno == EINTR) continue;
      }
      return ErrnoError(errno, "write", "the live view to the terminal");
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

void WriteLiveCsvHeader(const std::string& by, std::ostream& out) {
  out << "interval_start_s," << CsvHeaderWithBy(kSummaryCsvHeader, by)
      << ",iops,bytes_per_s,lost,late,unpaired\n";
}

void WriteLiveCsv(const LiveInterval& iv, std::ostream& out) {
  const std::string lead = FormatSeconds(iv.start_s) + ",";
  const std::string tail = absl::StrFormat(",%u,%u,%u\n", iv.counts.lost, iv.counts.late,
                                           iv.counts.unpaired);
  if (iv.groups.empty()) {
    // dev, device, (class,) op, phase empty, count 0, no latencies, no throughput.
    out << lead << (iv.by.empty() ? "" : ",") << ",,,,0,,,,,,," << ",0,0" << tail;
    return;
  }
  for (const LatencyGroup& g : iv.groups) {
    const LiveThroughput* t = ThroughputOf(iv, g);
    out << lead << SummaryCsvCells(g, !iv.by.empty()) << ","
        << JsonDouble(PerSecond(t ? t->requests : 0, iv.length_s)) << ","
        << JsonDouble(PerSecond(t ? t->bytes : 0, iv.length_s)) << tail;
  }
}

void WriteLiveJson(const LiveInterval& iv, const LiveHeader& header, std::ostream& out) {
  out << "{\"type\": \"interval\", \"index\": " << iv.index
      << ", \"interval_start_s\": " << JsonDouble(iv.start_s) << ", \"length_s\": " << JsonDouble(iv.length_s)
      << ", \"final\": " << (iv.final ? "true" : "false")
      << ", \"elapsed_s\": " << JsonDouble(header.elapsed_s) << ", \"groups\": [";
  for (size_t i = 0; i < iv.groups.size(); ++i) {
    const LatencyGroup& g = iv.groups[i];
    const LatencySummary& s = g.summary;
    out << (i == 0 ? "" : ", ") << "{\"dev\": " << JsonString(DevString(g.dev))
        << ", \"device\": " << JsonString(g.device)
        << (iv.by.empty() ? "" : absl::StrCat(", ", JsonString(iv.by), ": ", JsonString(g.by)))
        << ", \"op\": " << JsonString(BlockOpName(g.op))
        << ", \"phase\": " << JsonString(PhaseName(g.phase)) << ", \"count\": " << s.count
        << ", \"min_ns\": " << s.min_ns << ", \"mean_ns\": " << JsonDouble(s.mean_ns)
        << ", \"p50_ns\": " << s.p50_ns << ", \"p90_ns\": " << s.p90_ns
        << ", \"p99_ns\": " << s.p99_ns << ", \"p999_ns\": " << s.p999_ns
        << ", \"max_ns\": " << s.max_ns << ", \"sum_ns\": " << s.sum_ns << ", \"buckets\": [";
    bool first = true;
    for (const LatencyBucket& bucket : g.buckets) {
      out << (first ? "" : ", ") << "{\"lo_ns\": " << bucket.lo_ns
          << ", \"hi_ns\": " << bucket.hi_ns << ", \"count\": " << bucket.count << "}";
      first = false;
    }
    out << "]}";
  }
  out << "], \"throughput\": [";
  for (size_t i = 0; i < iv.throughput.size(); ++i) {
    const LiveThroughput& t = iv.throughput[i];
    out << (i == 0 ? "" : ", ") << "{\"dev\": " << JsonString(DevString(t.dev))
        << ", \"device\": " << JsonString(t.device)
        << (iv.by.empty() ? "" : absl::StrCat(", ", JsonString(iv.by), ": ", JsonString(t.by)))
        << ", \"op\": " << JsonString(BlockOpName(t.op))
        << ", \"requests\": " << t.requests << ", \"bytes\": " << t.bytes << "}";
  }
  out << "], \"processes\": [";
  for (size_t i = 0; i < iv.processes.size(); ++i) {
    const LiveProcess& p = iv.processes[i];
    out << (i == 0 ? "" : ", ") << "{\"pid\": " << p.pid << ", \"comm\": " << JsonString(p.comm)
        << ", \"dev\": " << (p.pid < 0 ? std::string("null") : JsonString(DevString(p.dev)))
        << ", \"device\": " << (p.pid < 0 ? std::string("null") : JsonString(p.device))
        << ", \"requests\": " << p.requests << ", \"bytes\": " << p.bytes
        << ", \"i2c_p50_ns\": " << p.i2c_p50_ns << ", \"i2c_p99_ns\": " << p.i2c_p99_ns
        << ", \"d2c_p50_ns\": " << p.d2c_p50_ns << ", \"d2c_p99_ns\": " << p.d2c_p99_ns << "}";
  }
  const LiveIntervalCounts& c = iv.counts;
  out << "], \"counts\": {\"events\": " << c.events << ", \"lost\": " << c.lost
      << ", \"late\": " << c.late << ", \"unpaired\": " << c.unpaired
      << ", \"expired\": " << c.expired << ", \"inflight\": " << c.inflight
      << "}, \"notes\": [";
  for (size_t i = 0; i < iv.notes.size(); ++i) out << (i == 0 ? "" : ", ") << JsonString(iv.notes[i]);
  out << "], \"run\": {\"events\": " << header.total_events << ", \"lost\": " << header.total_lost
      << ", \"late\": " << header.total_late << ", \"unpaired\": " << header.total_unpaired
      << "}}\n";
}

}  // namespace iotrace
