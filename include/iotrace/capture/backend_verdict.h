// `--backend auto`'s verdict kept between runs: the backend checks (backend_check.h) cost ~0.1 s
// of CPU, which a user recording many short runs paid at every start. Their verdict is kept in
// a small file (/run/iotrace/backend-verdict) with the facts it depends on, and trusted only
// while every one of them is as it was: the same boot, kernel build, online CPUs, perf limits,
// check events, tracefs mount and iotrace version. `iotrace doctor` always checks afresh and
// rewrites it. A file that is unreadable, incomplete, altered or not ours is never trusted.
#ifndef IOTRACE_CAPTURE_BACKEND_VERDICT_H_
#define IOTRACE_CAPTURE_BACKEND_VERDICT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "iotrace/capture/record.h"

namespace iotrace {

// What a verdict depends on. Two keys equal: the checks would be run on the same machine state.
struct VerdictKey {
  std::string boot_id;      // /proc/sys/kernel/random/boot_id: a reboot starts afresh
  std::string kernel;       // uname's release and version: another build of one release too
  std::string cpus;         // online CPUs ("0-1"): hotplug changes the buffers being checked
  std::string perf_limits;  // perf_event_paranoid, _max_sample_rate, _cpu_time_max_percent
  std::string events;       // the check events tried (CompletenessCheckEvents)
  std::string tracefs;      // where tracefs is mounted
  std::string version;      // iotrace's version: the checks and their rule may change
  bool operator==(const VerdictKey&) const = default;
};

// The key of this machine now (fields that cannot be read stay "", which no kept key has).
VerdictKey CurrentVerdictKey(const std::string& tracefs);

struct KeptVerdict {
  VerdictKey key;
  Backend backend = Backend::kFtrace;  // kPerf or kFtrace
  std::string reason;                  // what the checks found, one line
  int64_t checked_at_s = 0;            // when they ran (Unix time)
};

// The file's text: one "name=value" line per field and a last line "sum=" with a checksum of
// everything before it.
std::string SerializeVerdict(const KeptVerdict& verdict);
// The verdict of a whole, unaltered text; an error for anything else (a missing or unknown
// field, a bad checksum, a value with a newline).
absl::StatusOr<KeptVerdict> ParseVerdict(std::string_view text);

// The kept verdict at `path`: NotFound when there is none; an error when the file is unreadable,
// corrupt, or could have been written by someone else (not owned by this user, or writable by
// others): then it is not trusted.
absl::StatusOr<KeptVerdict> LoadVerdict(const std::string& path);
// Writes it whole (base/atomic_file), creating the directory (0755) when needed.
absl::Status StoreVerdict(const std::string& path, const KeptVerdict& verdict);

// "/run/iotrace/backend-verdict": /run is a tmpfs, emptied at boot, writable by root only.
const char* DefaultVerdictPath();

// "2026-12-06 03:10:12 UTC"
std::string FormatUtc(int64_t unix_s);

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_BACKEND_VERDICT_H_
