#include "iotrace/sys/tracefs.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"
#include "tracefs_shim.h"

namespace iotrace {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

std::string StripString(std::string_view s) { return std::string(TrimText(s)); }

// Points libtracefs at `dir` (kept alive here: libtracefs may keep the pointer).
void UseTracingDir(const std::string& dir) {
  static std::string* current = new std::string();
  if (*current == dir) return;
  *current = dir;
  iotrace_tfs_set_dir(current->data());
}

bool IsTracefsMountedAt(const std::string& proc, const std::string& path) {
  std::ifstream mounts(proc + "/mounts");
  std::string line;
  while (std::getline(mounts, line)) {
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    if (parts.size() >= 3 && parts[1] == path && parts[2] == "tracefs") return true;
  }
  return false;
}

std::string FirstMountedTracefs(const std::string& proc) {
  std::ifstream mounts(proc + "/mounts");
  std::string line;
  while (std::getline(mounts, line)) {
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    if (parts.size() >= 3 && parts[2] == "tracefs") return parts[1];
  }
  return "";
}

bool KernelHasTracefs(const std::string& proc) {
  std::ifstream fs(proc + "/filesystems");
  std::string line;
  while (std::getline(fs, line)) {
    if (line.find("\ttracefs") != std::string::npos) return true;
  }
  return false;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

bool HasGlob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

absl::StatusOr<std::string> ReadEventFile(const std::string& system, const std::string& event,
                                          const char* file) {
  int size = 0;
  std::unique_ptr<char, FreeDeleter> text(
      iotrace_tfs_event_file_read(nullptr, system.c_str(), event.c_str(), file, &size));
  if (!text || size < 0) {
    int err = errno ? errno : ENOENT;
    return ErrnoError(err, "read tracefs", absl::StrFormat("events/%s/%s/%s", system, event, file));
  }
  return std::string(text.get(), static_cast<size_t>(size));
}

}  // namespace

absl::StatusOr<std::string> FindTracefs(const std::string& override_dir,
                                        const std::string& proc_dir) {
  std::string dir = override_dir;
  if (dir.empty()) {
    if (IsTracefsMountedAt(proc_dir, kDefaultTracefs)) {
      dir = kDefaultTracefs;
    } else {
      dir = FirstMountedTracefs(proc_dir);
    }
  }
  if (dir.empty()) {
    if (!KernelHasTracefs(proc_dir)) {
      return absl::UnavailableError(
          "this kernel has no tracefs (CONFIG_TRACING is off): block tracepoints cannot be read");
    }
    return WithHint(absl::UnavailableError("tracefs is not mounted"),
                    "mount it as root: mount -t tracefs nodev /sys/kernel/tracing");
  }
  struct stat st;
  std::string events = dir + "/events";
  if (::stat(events.c_str(), &st) != 0 || ::access(events.c_str(), R_OK | X_OK) != 0) {
    int err = errno;
    if (err == EACCES || err == EPERM) {
      return WithHint(ErrnoError(err, "open tracefs", events),
                      "run iotrace as root (sudo), or give your user access to " + dir);
    }
    return ErrnoError(err, "open tracefs", events);
  }
  UseTracingDir(dir);
  return dir;
}

absl::StatusOr<std::vector<std::string>> ListAvailableEvents(const std::string& tracefs) {
  IOTRACE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(tracefs + "/available_events"));
  std::vector<std::string> out;
  for (std::string_view line : SplitText(text, '\n')) {
    out.emplace_back(line);
  }
  return out;
}

std::vector<std::string> SuggestNames(std::string_view wanted,
                                      const std::vector<std::string>& candidates, size_t max) {
  std::vector<std::pair<size_t, std::string>> scored;
  std::string_view wanted_event = wanted.substr(wanted.find(':') == std::string_view::npos
                                                    ? 0
                                                    : wanted.find(':') + 1);
  for (const std::string& c : candidates) {
    size_t colon = c.find(':');
    std::string_view event = colon == std::string::npos ? std::string_view(c)
                                                        : std::string_view(c).substr(colon + 1);
    size_t d = std::min(EditDistance(wanted, c), EditDistance(wanted_event, event) + 1);
    // Also a substring hit ("rq_issue" -> block:block_rq_issue) is close.
    if (!wanted_event.empty() && event.find(wanted_event) != std::string_view::npos) {
      d = std::min<size_t>(d, 1);
    }
    size_t limit = std::max<size_t>(2, wanted.size() / 3);
    if (d <= limit) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < max; ++i) out.push_back(scored[i].second);
  return out;
}

absl::StatusOr<std::vector<TraceEventInfo>> ResolveEvents(const std::string& tracefs,
                                                          const std::vector<std::string>& specs) {
  UseTracingDir(tracefs);
  IOTRACE_ASSIGN_OR_RETURN(std::vector<std::string> available, ListAvailableEvents(tracefs));
  std::vector<std::pair<std::string, std::string>> chosen;
  for (const std::string& raw_spec : specs) {
    std::string spec = StripString(raw_spec);
    std::replace(spec.begin(), spec.end(), '/', ':');
    if (spec.empty()) return absl::InvalidArgumentError("empty event name");
    size_t colon = spec.find(':');
    std::string sys_pat = colon == std::string::npos ? "*" : spec.substr(0, colon);
    std::string ev_pat = colon == std::string::npos ? spec : spec.substr(colon + 1);
    if (ev_pat.empty()) ev_pat = "*";
    size_t matched = 0;
    for (const std::string& full : available) {
      size_t c = full.find(':');
      if (c == std::string::npos) continue;
      std::string sys = full.substr(0, c), ev = full.substr(c + 1);
      if (fnmatch(sys_pat.c_str(), sys.c_str(), 0) != 0) continue;
      if (fnmatch(ev_pat.c_str(), ev.c_str(), 0) != 0) continue;
      ++matched;
      auto key = std::make_pair(sys, ev);
      if (std::find(chosen.begin(), chosen.end(), key) == chosen.end()) chosen.push_back(key);
    }
    if (matched == 0) {
      std::vector<std::string> near = SuggestNames(spec, available);
      absl::Status s = absl::NotFoundError(
          absl::StrFormat("unknown event '%s'%s", raw_spec,
                          HasGlob(spec) ? " (the pattern matches no event)" : ""));
      if (!near.empty()) {
        return WithHint(s, "did you mean " + absl::StrJoin(near, ", ") + "?");
      }
      return WithHint(s, "'iotrace list' shows the events this kernel offers");
    }
  }
  std::vector<TraceEventInfo> out;
  for (const auto& [sys, ev] : chosen) {
    TraceEventInfo info;
    info.system = sys;
    info.name = ev;
    IOTRACE_ASSIGN_OR_RETURN(std::string id_text, ReadEventFile(sys, ev, "id"));
    if (!absl::SimpleAtoi(StripString(id_text), &info.id)) {
      return absl::InternalError(
          absl::StrFormat("tracefs events/%s/%s/id holds '%s', not a number", sys, ev, id_text));
    }
    IOTRACE_ASSIGN_OR_RETURN(info.format_text, ReadEventFile(sys, ev, "format"));
    auto parsed = ParseEventFormat(sys, info.format_text);
    if (!parsed.ok()) return Annotate(parsed.status(), "event " + sys + ":" + ev);
    info.format = std::move(*parsed);
    out.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<TracingMetadata> CollectTracingMetadata(const std::string& tracefs,
                                                       const std::vector<TraceEventInfo>& events,
                                                       bool include_ftrace_formats) {
  TracingMetadata meta;
  meta.page_size = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  meta.long_size = sizeof(long);
  IOTRACE_ASSIGN_OR_RETURN(meta.header_page, ReadFileToString(tracefs + "/events/header_page"));
  IOTRACE_ASSIGN_OR_RETURN(meta.header_event, ReadFileToString(tracefs + "/events/header_event"));
  std::string ftrace_dir = tracefs + "/events/ftrace";
  DIR* d = include_ftrace_formats ? opendir(ftrace_dir.c_str()) : nullptr;
  if (d != nullptr) {
    std::vector<std::string> names;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      auto text = ReadFileToString(ftrace_dir + "/" + n + "/format");
      if (text.ok()) meta.ftrace_formats.push_back({"ftrace", *text});
    }
  }
  auto printk = ReadFileToString(tracefs + "/printk_formats");
  if (printk.ok()) meta.printk_formats = *printk;
  meta.saved_cmdlines = ReadSavedCmdlines(tracefs);
  for (const TraceEventInfo& e : events) meta.event_formats.push_back({e.system, e.format_text});
  return meta;
}

std::string ReadSavedCmdlines(const std::string& tracefs) {
  auto text = ReadFileToString(tracefs + "/saved_cmdlines");
  return text.ok() ? *text : std::string();
}

TracefsInstance::TracefsInstance(std::string name, std::string dir, tracefs_instance* handle)
    : name_(std::move(name)), dir_(std::move(dir)), handle_(handle) {}

absl::StatusOr<std::unique_ptr<TracefsInstance>> TracefsInstance::Create(
    const std::string& tracefs, const std::string& name) {
  UseTracingDir(tracefs);
  errno = 0;
  tracefs_instance* handle = iotrace_tfs_instance_create(name.c_str());
  if (handle == nullptr) {
    int err = errno ? errno : EIO;
    absl::Status s = ErrnoError(err, "create tracefs instance", name);
    if (err == EEXIST) return WithHint(s, "a killed iotrace left it behind: run 'iotrace reset'");
    return s;
  }
  return std::unique_ptr<TracefsInstance>(
      new TracefsInstance(name, tracefs + "/instances/" + name, handle));
}

TracefsInstance::~TracefsInstance() {
  absl::Status s = Remove();
  if (!s.ok()) {
    std::fprintf(stderr, "iotrace: warning: %s\nhint: run 'iotrace reset' to remove it\n",
                 std::string(s.message()).c_str());
  }
}

absl::Status TracefsInstance::Remove() {
  if (handle_ == nullptr) return absl::OkStatus();
  iotrace_tfs_instance_file_write(handle_, "tracing_on", "0");
  errno = 0;
  int ret = iotrace_tfs_instance_destroy(handle_);
  int err = errno;
  handle_ = nullptr;
  if (ret != 0) return ErrnoError(err ? err : EBUSY, "remove tracefs instance", dir_);
  return absl::OkStatus();
}

absl::Status TracefsInstance::WriteFile(const std::string& relative_path,
                                        const std::string& value) {
  errno = 0;
  if (iotrace_tfs_instance_file_write(handle_, relative_path.c_str(), value.c_str()) < 0) {
    int err = errno ? errno : EINVAL;
    absl::Status s = ErrnoError(err, "write '" + value + "' to", dir_ + "/" + relative_path);
    std::string kernel = TracefsErrorLast(handle_);
    return kernel.empty() ? s : Annotate(s, "kernel says: " + kernel);
  }
  return absl::OkStatus();
}

absl::Status TracefsInstance::EnableEvent(const std::string& system, const std::string& event) {
  errno = 0;
  if (iotrace_tfs_event_enable(handle_, system.c_str(), event.c_str()) != 0) {
    return ErrnoError(errno ? errno : ENOENT, "enable event",
                      absl::StrFormat("%s:%s in %s", system, event, dir_));
  }
  return absl::OkStatus();
}

absl::Status TracefsInstance::SetEventFilter(const std::string& system, const std::string& event,
                                             const std::string& filter) {
  errno = 0;
  if (iotrace_tfs_event_file_write(handle_, system.c_str(), event.c_str(), "filter",
                                   filter.c_str()) < 0) {
    int err = errno ? errno : EINVAL;
    absl::Status s = ErrnoError(err, "set filter '" + filter + "' on",
                                absl::StrFormat("%s:%s", system, event));
    std::string kernel = TracefsErrorLast(handle_);
    return kernel.empty() ? s : Annotate(s, "kernel says: " + kernel);
  }
  return absl::OkStatus();
}

absl::Status TracefsInstance::SetBufferSizeKb(uint32_t kb) {
  return WriteFile("buffer_size_kb", std::to_string(kb));
}

absl::Status TracefsInstance::SetClock(const std::string& clock) {
  return WriteFile("trace_clock", clock);
}

absl::Status TracefsInstance::SetTracingOn(bool on) { return WriteFile("tracing_on", on ? "1" : "0"); }

absl::StatusOr<std::string> TracefsInstance::ReadFile(const std::string& relative_path) const {
  return ReadFileToString(dir_ + "/" + relative_path);
}

std::string TracefsInstance::PerCpuPath(int cpu, const std::string& file) const {
  return absl::StrFormat("%s/per_cpu/cpu%d/%s", dir_, cpu, file);
}

absl::StatusOr<CpuBufferStats> TracefsInstance::ReadCpuStats(int cpu) const {
  IOTRACE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(PerCpuPath(cpu, "stats")));
  return ParseCpuBufferStats(text);
}

std::vector<std::string> ListInstances(const std::string& tracefs, const std::string& prefix) {
  std::vector<std::string> out;
  std::string dir = tracefs + "/instances";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != ".." && n.rfind(prefix, 0) == 0) out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status RemoveInstance(const std::string& tracefs, const std::string& name) {
  std::string dir = tracefs + "/instances/" + name;
  // Stop it first so that a reader still attached to it sees EOF rather than data.
  (void)WriteStringToFile(dir + "/tracing_on", "0");
  if (::rmdir(dir.c_str()) != 0) return ErrnoError(errno, "remove tracefs instance", dir);
  return absl::OkStatus();
}

std::string TracefsErrorLast(tracefs_instance* instance) {
  std::unique_ptr<char, FreeDeleter> text(iotrace_tfs_error_last(instance));
  return text ? StripString(text.get()) : std::string();
}

}  // namespace iotrace
