#include "iotrace/base/gated_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"

namespace iotrace {

absl::StatusOr<std::string> FindExecutable(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("empty command");
  auto executable = [](const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (executable(name)) return name;
    return absl::NotFoundError(absl::StrFormat("command not found: %s", name));
  }
  const char* path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  for (std::string_view dir : SplitText(path, ':')) {
    std::string candidate = std::string(dir) + "/" + name;
    if (executable(candidate)) return candidate;
  }
  return absl::NotFoundError(absl::StrFormat("command not found: %s", name));
}

absl::StatusOr<GatedChild> GatedChild::Start(const std::vector<std::string>& argv,
                                             bool stdout_to_stderr) {
  if (argv.empty()) return absl::InvalidArgumentError("no command given after --");
  IOTRACE_ASSIGN_OR_RETURN(std::string exe, FindExecutable(argv[0]));
  int gate[2], err_pipe[2];
  if (pipe2(gate, O_CLOEXEC) != 0) return ErrnoError(errno, "create", "pipe");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(gate[0]);
    close(gate[1]);
    return ErrnoError(errno, "create", "pipe");
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(gate[0]); close(gate[1]); close(err_pipe[0]); close(err_pipe[1]);
    return ErrnoError(err, "fork for", argv[0]);
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here on.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    close(gate[1]);
    close(err_pipe[0]);
    char go;
    ssize_t n;
    do {
      n = read(gate[0], &go, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) _exit(127);  // the recorder gave up before releasing us
    if (stdout_to_stderr && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) _exit(127);
    execv(exe.c_str(), args.data());
    int e = errno;
    ssize_t w = write(err_pipe[1], &e, sizeof(e));
    (void)w;
    _exit(127);
  }
  close(gate[0]);
  close(err_pipe[1]);
  GatedChild child;
  child.pid_ = pid;
  child.gate_.Reset(gate[1]);
  child.exec_error_.Reset(err_pipe[0]);
  return child;
}

GatedChild::~GatedChild() {
  if (pid_ > 0 && !exited_) {
    // Closing the gate without releasing makes a waiting child exit on its own; a running one
    // is left to finish (we still reap it so no zombie remains).
    gate_.Reset();
    Wait();
  }
}

absl::Status GatedChild::Release() {
  char go = 'g';
  if (write(gate_.get(), &go, 1) != 1) return ErrnoError(errno, "release", "traced command");
  gate_.Reset();
  int e = 0;
  ssize_t n;
  do {
    n = read(exec_error_.get(), &e, sizeof(e));
  } while (n < 0 && errno == EINTR);
  exec_error_.Reset();
  if (n == static_cast<ssize_t>(sizeof(e))) {
    Wait();
    return ErrnoError(e, "run", "traced command");
  }
  return absl::OkStatus();
}

void GatedChild::Record(int status) {
  exited_ = true;
  if (WIFEXITED(status)) {
    exit_code_ = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit_code_ = 128 + WTERMSIG(status);
  }
}

bool GatedChild::Poll() {
  if (exited_ || pid_ <= 0) return exited_;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) Record(status);
  return exited_;
}

void GatedChild::Wait() {
  if (exited_ || pid_ <= 0) return;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) Record(status);
}

void GatedChild::Signal(int sig) {
  if (pid_ > 0 && !exited_) kill(pid_, sig);
}

}  // namespace iotrace
