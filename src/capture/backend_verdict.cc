#include "iotrace/capture/backend_verdict.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <map>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/base/atomic_file.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"
#include "iotrace/capture/backend_check.h"

namespace iotrace {
namespace {

constexpr char kHeader[] = "iotrace backend verdict 1";

// The first line of a small /proc or /sys file, trimmed; "" when it cannot be read.
std::string FirstLine(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return "";
  std::string_view v = *text;
  v = v.substr(0, v.find('\n'));
  return std::string(TrimText(v));
}

// FNV-1a, 64 bits: enough to tell an altered or damaged file, which is all it is for.
uint64_t Checksum(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The fields in the file's order.
std::vector<std::pair<std::string, std::string>> Fields(const KeptVerdict& v) {
  return {{"boot_id", v.key.boot_id},
          {"kernel", v.key.kernel},
          {"cpus", v.key.cpus},
          {"perf_limits", v.key.perf_limits},
          {"events", v.key.events},
          {"tracefs", v.key.tracefs},
          {"version", v.key.version},
          {"backend", BackendName(v.backend)},
          {"reason", v.reason},
          {"checked_at", absl::StrFormat("%d", v.checked_at_s)}};
}

absl::Status Corrupt(std::string_view why) {
  return absl::DataLossError(absl::StrFormat("backend verdict: %s", why));
}

}  // namespace

VerdictKey CurrentVerdictKey(const std::string& tracefs) {
  VerdictKey k;
  k.boot_id = FirstLine("/proc/sys/kernel/random/boot_id");
  struct utsname u;
  if (uname(&u) == 0) k.kernel = absl::StrFormat("%s %s %s", u.release, u.version, u.machine);
  k.cpus = FirstLine("/sys/devices/system/cpu/online");
  const std::string paranoid = FirstLine("/proc/sys/kernel/perf_event_paranoid");
  const std::string rate = FirstLine("/proc/sys/kernel/perf_event_max_sample_rate");
  const std::string percent = FirstLine("/proc/sys/kernel/perf_cpu_time_max_percent");
  if (!paranoid.empty() && !rate.empty() && !percent.empty()) {
    k.perf_limits = absl::StrFormat("paranoid %s, max_sample_rate %s, cpu_time_max_percent %s",
                                    paranoid, rate, percent);
  }
  k.events = absl::StrJoin(CompletenessCheckEvents(), ",");
  k.tracefs = tracefs;
  k.version = IOTRACE_VERSION;
  return k;
}

std::string SerializeVerdict(const KeptVerdict& v) {
  std::string out = std::string(kHeader) + "\n";
  for (const auto& [name, value] : Fields(v)) absl::StrAppendFormat(&out, "%s=%s\n", name, value);
  absl::StrAppendFormat(&out, "sum=%016x\n", Checksum(out));
  return out;
}

absl::StatusOr<KeptVerdict> ParseVerdict(std::string_view text) {
  const size_t sum_at = text.rfind("sum=");
  if (sum_at == std::string_view::npos || (sum_at > 0 && text[sum_at - 1] != '\n')) {
    return Corrupt("no checksum");
  }
  uint64_t sum = 0;
  const std::string_view sum_text = TrimText(text.substr(sum_at + 4));
  const char* const sum_end = sum_text.data() + sum_text.size();
  if (sum_text.size() != 16 || std::from_chars(sum_text.data(), sum_end, sum, 16).ptr != sum_end ||
      sum != Checksum(text.substr(0, sum_at))) {
    return Corrupt("checksum mismatch");
  }
  std::vector<std::string_view> lines = SplitText(text.substr(0, sum_at), '\n');
  if (lines.empty() || lines[0] != kHeader) return Corrupt("not a verdict file of this version");
  std::map<std::string, std::string, std::less<>> values;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t eq = lines[i].find('=');
    if (eq == std::string_view::npos) return Corrupt("a line without '='");
    if (!values.emplace(lines[i].substr(0, eq), lines[i].substr(eq + 1)).second) {
      return Corrupt("a field twice");
    }
  }
  KeptVerdict v;
  std::vector<std::pair<std::string, std::string>> wanted = Fields(v);
  if (values.size() != wanted.size()) return Corrupt("fields missing or unknown");
  for (const auto& field : wanted) {
    if (!values.contains(field.first)) return Corrupt("no " + field.first);
  }
  v.key.boot_id = values["boot_id"];
  v.key.kernel = values["kernel"];
  v.key.cpus = values["cpus"];
  v.key.perf_limits = values["perf_limits"];
  v.key.events = values["events"];
  v.key.tracefs = values["tracefs"];
  v.key.version = values["version"];
  v.reason = values["reason"];
  if (values["backend"] == "ftrace") {
    v.backend = Backend::kFtrace;
  } else if (values["backend"] == "perf") {
    v.backend = Backend::kPerf;
  } else {
    return Corrupt("backend is neither ftrace nor perf");
  }
  if (!absl::SimpleAtoi(values["checked_at"], &v.checked_at_s)) return Corrupt("bad checked_at");
  return v;
}

absl::StatusOr<KeptVerdict> LoadVerdict(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    if (errno == ENOENT) return absl::NotFoundError("no kept backend verdict at " + path);
    return ErrnoError(errno, "open", path);
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError(errno, "stat", path);
  // Whoever can write it could choose our backend: only a file of ours, writable by us alone.
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    return absl::PermissionDeniedError(path + ": not a file of this user, or writable by others");
  }
  if (st.st_size > 64 * 1024) return Corrupt(path + " is too large");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  const ssize_t n = ::pread(fd.get(), text.data(), text.size(), 0);
  if (n != st.st_size) return ErrnoError(n < 0 ? errno : EIO, "read", path);
  return ParseVerdict(text);
}

absl::Status StoreVerdict(const std::string& path, const KeptVerdict& verdict) {
  for (const auto& [name, value] : Fields(verdict)) {
    if (value.find('\n') != std::string::npos) {
      return absl::InvalidArgumentError("backend verdict: a newline in " + name);
    }
  }
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError(errno, "create the directory", dir);
    }
  }
  return WriteFileAtomically(path, SerializeVerdict(verdict));
}

const char* DefaultVerdictPath() { return "/run/iotrace/backend-verdict"; }

std::string FormatUtc(int64_t unix_s) {
  const time_t t = static_cast<time_t>(unix_s);
  struct tm tm;
  gmtime_r(&t, &tm);
  char text[32];
  strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

}  // namespace iotrace
