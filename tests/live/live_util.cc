#include "live_util.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "../unit/test_files.h"

namespace iotrace::live {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string LiveTestBlocker() {
  if (geteuid() != 0) return "live test needs root (tracepoints, loop devices)";
  if (access("/sys/kernel/tracing/events/block", R_OK) != 0) {
    return "live test needs tracefs mounted at /sys/kernel/tracing with block events "
           "(scripts/ensure-tracefs.sh mounts it)";
  }
  if (access("/dev/loop-control", R_OK | W_OK) != 0) return "live test needs loop devices";
  if (!HaveTool("losetup")) return "live test needs losetup (util-linux)";
  return "";
}

bool HaveTool(const std::string& name) {
  return Sh("command -v " + name + " >/dev/null 2>&1").exit_code == 0;
}

CommandResult RunCmd(const std::vector<std::string>& argv) {
  CommandResult r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return r;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

CommandResult Sh(const std::string& command) { return RunCmd({"/bin/sh", "-c", command}); }

TempDir::TempDir() { path_ = test::MakeTempDir("iotrace_live_"); }

TempDir::~TempDir() {
  if (path_.empty()) return;
  if (std::getenv("IOTRACE_KEEP_FAILED") != nullptr && ::testing::Test::HasFailure()) {
    std::fprintf(stderr, "kept the failed test's files in %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

ScratchLoop::ScratchLoop(const std::string& scheduler, uint64_t size_mb) {
  std::string tmpl_path = test::TestTmpDir() + "/iotrace_loop_XXXXXX";
  char* tmpl = tmpl_path.data();
  int fd = mkstemp(tmpl);
  if (fd < 0) {
    error_ = "mkstemp failed";
    return;
  }
  backing_ = tmpl;
  if (ftruncate(fd, static_cast<off_t>(size_mb) << 20) != 0) error_ = "ftruncate failed";
  close(fd);
  CommandResult r = RunCmd({"losetup", "--find", "--show", backing_});
  if (r.exit_code != 0) {
    error_ = "losetup failed: " + r.err;
    return;
  }
  device_ = r.out.substr(0, r.out.find('\n'));
  struct stat st;
  if (stat(device_.c_str(), &st) == 0) {
    major_ = ::major(st.st_rdev);
    minor_ = ::minor(st.st_rdev);
  }
  std::string sched = "/sys/block/" + name() + "/queue/scheduler";
  std::ofstream(sched) << scheduler;
  std::string now = ReadAll(sched);
  if (now.find("[" + scheduler + "]") == std::string::npos) {
    error_ = "could not set scheduler " + scheduler + " on " + device_ + " (" + now + ")";
  }
}

ScratchLoop::~ScratchLoop() {
  if (!device_.empty()) RunCmd({"losetup", "-d", device_});
  if (!backing_.empty()) unlink(backing_.c_str());
}

std::string ScratchLoop::name() const {
  return device_.substr(device_.rfind('/') + 1);
}

std::string ScratchLoop::majmin() const {
  return std::to_string(major_) + ":" + std::to_string(minor_);
}

std::map<std::string, std::string> TracefsSnapshot() {
  const std::string t = "/sys/kernel/tracing";
  std::map<std::string, std::string> snap;
  for (const char* f : {"set_event", "tracing_on", "dynamic_events", "uprobe_events",
                        "kprobe_events", "current_tracer", "buffer_size_kb", "trace_clock"}) {
    snap[f] = ReadAll(t + "/" + f);
  }
  std::string instances;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(t + "/instances", ec)) {
    instances += e.path().filename().string() + "\n";
  }
  snap["instances"] = instances;
  for (const char* ev : {"block_rq_insert", "block_rq_issue", "block_rq_complete",
                         "block_rq_requeue", "block_rq_merge"}) {
    snap[std::string("block/") + ev + "/enable"] =
        ReadAll(t + "/events/block/" + ev + "/enable");
    snap[std::string("block/") + ev + "/filter"] =
        ReadAll(t + "/events/block/" + ev + "/filter");
  }
  return snap;
}

std::string Binary() { return IOTRACE_BINARY; }

size_t CountLines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos;
  return n;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t FioIos(const std::string& json_path, const std::string& direction) {
  const std::string text = Slurp(json_path);
  const size_t at = text.find("\"" + direction + "\"");
  std::smatch m;
  const std::string rest = at == std::string::npos ? "" : text.substr(at);
  return std::regex_search(rest, m, std::regex("\"total_ios\"\\s*:\\s*(\\d+)"))
             ? std::stoull(m[1])
             : 0;
}

CompletionCounter::CompletionCounter(uint32_t major, uint32_t minor) {
  const std::string id_text = Slurp("/sys/kernel/tracing/events/block/block_rq_complete/id");
  if (id_text.empty()) return;
  const std::string filter = "dev == " + std::to_string((uint64_t{major} << 20) | minor);
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  for (long cpu = 0; cpu < cpus; ++cpu) {
    perf_event_attr attr{};
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof(attr);
    attr.config = std::stoull(id_text);
    const int fd = static_cast<int>(
        syscall(SYS_perf_event_open, &attr, -1, static_cast<int>(cpu), -1, 0));
    if (fd < 0) continue;  // an offline CPU
    if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter.c_str()) != 0) {
      close(fd);
      continue;
    }
    fds_.push_back(fd);
  }
}

CompletionCounter::~CompletionCounter() {
  for (int fd : fds_) close(fd);
}

uint64_t CompletionCounter::Read() const {
  uint64_t total = 0;
  for (int fd : fds_) {
    uint64_t v = 0;
    if (read(fd, &v, sizeof(v)) == sizeof(v)) total += v;
  }
  return total;
}

pid_t SpawnQuiet(const std::vector<std::string>& argv, const std::string& err) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  if (freopen("/dev/null", "w", stdout) == nullptr ||
      freopen(err.c_str(), "w", stderr) == nullptr) {
    _exit(126);
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

int64_t PeerCompletes(const std::string& backend, const std::string& path) {
  const std::string peer =
      backend == "perf"
          ? "perf script -i " + path + " 2>/dev/null | grep -c 'block:block_rq_complete'"
          : "trace-cmd report " + path + " 2>/dev/null | grep -c 'block_rq_complete:'";
  CommandResult p = Sh(peer);
  return p.out.empty() ? -1 : std::stoll(p.out);
}

}  // namespace iotrace::live
