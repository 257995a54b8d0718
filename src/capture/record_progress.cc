#include "record_progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "iotrace/capture/record.h"

namespace iotrace {

void ProgressLine::Update(double seconds, const CaptureProgress& p) {
  if (!enabled_) return;
  double dt = seconds - last_s_;
  if (dt < 1.0) return;
  std::string rate = p.events_known
                         ? absl::StrFormat("%9.0f events/s", (p.events - last_events_) / dt)
                         : absl::StrFormat("%9s/s", HumanBytes((p.bytes - last_bytes_) / dt));
  last_s_ = seconds;
  last_events_ = p.events;
  last_bytes_ = p.bytes;
  const std::string disk =
      p.files == 0 ? ""
                   : absl::StrFormat("  on disk %s in %s", HumanBytes(p.disk_bytes),
                                     p.files == 1 ? "1 file" : absl::StrCat(p.files, " files"));
  std::string line = absl::StrFormat(
      "[%6.1fs] %s  %9s written%s  lost %llu (ring %llu, silent %llu)%s%s", seconds, rate,
      HumanBytes(p.bytes), disk, static_cast<unsigned long long>(p.ring_lost + p.silent),
      static_cast<unsigned long long>(p.ring_lost), static_cast<unsigned long long>(p.silent),
      p.latency.empty() ? "" : "  ", p.latency);
  // A line longer than the terminal would wrap, and \r would then rewrite only its last row.
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && line.size() >= ws.ws_col) {
    line.resize(ws.ws_col - 1);
  }
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  shown_ = true;
}

void ProgressLine::Clear() {
  if (shown_) std::fprintf(stderr, "\r\033[K");
  shown_ = false;
}

}  // namespace iotrace
