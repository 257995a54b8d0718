#include "record_summary.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"
#include "iotrace/capture/record.h"

namespace iotrace {

std::string HumanBytes(uint64_t b) {
  if (b >= (1ull << 30)) return absl::StrFormat("%.2f GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return absl::StrFormat("%.1f MiB", b / double(1ull << 20));
  if (b >= (1ull << 10)) return absl::StrFormat("%.1f KiB", b / double(1ull << 10));
  return absl::StrFormat("%u B", b);
}

std::string FormatRecordSummary(const RecordSummary& s) {
  // The rate is of what was written, removed files included.
  const uint64_t written = std::max(s.bytes_written, s.output_bytes);
  const std::string rate =
      s.seconds > 0
          ? absl::StrFormat(", %s/s", HumanBytes(static_cast<uint64_t>(written / s.seconds)))
          : "";
  std::string where, size;
  if (s.rotated) {
    where = s.files_made == 1
                ? s.output
                : absl::StrFormat("%u files, %s .. %s", s.files_made, s.first_output, s.output);
    size = absl::StrFormat("%u on disk: %s; %s written%s", s.files_on_disk,
                           HumanBytes(s.output_bytes), HumanBytes(written), rate);
  } else {
    where = s.output == "-" ? "standard output" : s.output;
    size = HumanBytes(s.output_bytes) + rate;
  }
  std::string out = absl::StrFormat(
      "iotrace: recorded %.2f s with the %s backend into %s (%s)%s%s\n", s.seconds,
      BackendName(s.backend), where, size,
      s.stop_reason.empty() ? "" : ", stopped by " + s.stop_reason,
      s.disabled_s > 0 ? absl::StrFormat("; events off for %.2f s of it", s.disabled_s) : "");
  size_t width = 5;
  for (const EventSummary& e : s.events) width = std::max(width, e.name.size());
  const int w = static_cast<int>(width);
  out += absl::StrFormat("  %-*s %12s %14s %12s %16s\n", w, "event", "recorded", "kernel count",
                         "ring lost", "dropped silent");
  EventSummary total;
  total.name = "total";
  for (const EventSummary& e : s.events) {
    if (s.per_event_losses) {
      out += absl::StrFormat("  %-*s %12u %14u %12u %16u\n", w, e.name, e.recorded,
                             e.kernel_count, e.ring_lost, e.silent);
    } else {
      // ftrace counts losses per CPU only: they appear in the total row.
      out += absl::StrFormat("  %-*s %12u %14s %12s %16s\n", w, e.name, e.recorded, "-", "-",
                             "-");
    }
    total.recorded += e.recorded;
    total.kernel_count += e.kernel_count;
    total.ring_lost += e.ring_lost;
    total.silent += e.silent;
    total.unwritten += e.unwritten;
  }
  uint64_t unattributed = s.unattributed_lost;
  if (!s.per_event_losses) {
    total.ring_lost += unattributed;
    total.kernel_count += unattributed;
    unattributed = 0;
  }
  out += absl::StrFormat("  %-*s %12u %14u %12u %16u\n", w, total.name, total.recorded,
                         total.kernel_count, total.ring_lost, total.silent);
  const double own = s.own_cpu.total_s();
  if (own > 0) {
    out += absl::StrFormat("  own CPU %.2f s (user %.2f s, system %.2f s)", own,
                           s.own_cpu.user_s, s.own_cpu.system_s);
    out += total.recorded > 0
               ? absl::StrFormat(", %.0f ns per event recorded\n", own * 1e9 / total.recorded)
               : "\n";
  }
  if (!s.backend_check.empty()) out += "  --backend auto: " + s.backend_check + "\n";
  if (total.unwritten > 0) {
    out += absl::StrFormat(
        "  plus %s the kernel counted after the output stopped (not in the file)\n",
        Plural(total.unwritten, "event"));
  }
  if (unattributed > 0) {
    out += absl::StrFormat("  plus %s lost whose type is unknown\n",
                           Plural(unattributed, "event"));
  }
  if (total.silent > 0) {
    out += absl::StrFormat(
        "iotrace: warning: perf dropped %s silently (counted by the kernel, never "
        "written to the ring: this kernel loses samples taken in the idle task); the loss is "
        "stored in the file and the report marks the affected phases incomplete\n"
        "hint: record with --backend ftrace to capture every event\n",
        Plural(total.silent, "sample"));
  }
  if (total.ring_lost > 0 || unattributed > 0) {
    out += "iotrace: warning: events were lost because a buffer was full\n"
           "hint: give a larger buffer (-m/--mmap-pages for perf, --buffer-kb for ftrace)\n";
  }
  if (s.disk_full) {
    out += "iotrace: warning: the disk filled up: recording stopped early; the file is valid and "
           "holds everything written before\n";
  }
  return out;
}

absl::Status DiskFullError(const RecordSummary& s) {
  return WithHint(absl::ResourceExhaustedError(absl::StrFormat(
                      "disk full while writing %s: recording stopped after %.1f s; the file is "
                      "valid and holds the %s written before",
                      s.output, s.seconds, HumanBytes(s.output_bytes))),
                  "free space or record to another filesystem with -o");
}

void AnnounceBackend(const RecordSummary& s) {
  std::fprintf(stderr, "iotrace: recording with the %s backend (%s) into %s\n",
               BackendName(s.backend), s.backend_reason.c_str(),
               s.output == "-" ? "standard output (perf's pipe mode)" : s.output.c_str());
  const std::string name = OutputNameWarning(s.output, s.backend);
  if (!name.empty()) std::fprintf(stderr, "iotrace: warning: %s\n", name.c_str());
}

}  // namespace iotrace
