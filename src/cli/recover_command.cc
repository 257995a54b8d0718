// iotrace recover FILE...: finishes recordings whose iotrace was killed (SIGKILL, the OOM
// killer, a crash) into complete files that perf script / trace-cmd report read too. What a
// killed recording holds is already readable by `iotrace report`; recover makes it a standard
// file and removes the spool files of a trace.dat.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/cli/flags.h"
#include "iotrace/formats/perf_data_recover.h"
#include "iotrace/formats/trace_dat_recover.h"
#include "iotrace/formats/trace_dat_writer.h"

namespace iotrace {
namespace {

constexpr char kTraceDatMagic[] = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
constexpr char kPerfMagic[] = {'P', 'E', 'R', 'F', 'I', 'L', 'E', '2'};

absl::Status RecoverOne(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT && ::access(TraceDatSpoolPath(path, 0).c_str(), F_OK) == 0) {
      return WithHint(ErrnoError(err, "open", path),
                      "its spool files are there but its header is gone: the recording cannot "
                      "be read without it; record again");
    }
    return ErrnoError(err, "open", path);
  }
  char magic[sizeof(kTraceDatMagic)] = {};
  const ssize_t n = ::pread(fd.get(), magic, sizeof(magic), 0);
  fd.Reset();
  if (n >= static_cast<ssize_t>(sizeof(kPerfMagic)) &&
      std::memcmp(magic, kPerfMagic, sizeof(kPerfMagic)) == 0) {
    IOTRACE_ASSIGN_OR_RETURN(PerfDataRecovery r, RecoverPerfData(path));
    if (r.was_complete) {
      std::printf("%s: complete, nothing to recover\n", path.c_str());
    } else {
      std::printf("%s: recovered: %llu records (%llu bytes) kept", path.c_str(),
                  static_cast<unsigned long long>(r.records),
                  static_cast<unsigned long long>(r.data_bytes));
      if (r.bytes_cut != 0) {
        std::printf(", %llu bytes of a record cut by the kill dropped",
                    static_cast<unsigned long long>(r.bytes_cut));
      }
      std::printf("; the recording did not finish: events after its last record, and the "
                  "kernel's count of samples it dropped, are not known\n");
    }
    return absl::OkStatus();
  }
  if (n == static_cast<ssize_t>(sizeof(kTraceDatMagic)) &&
      std::memcmp(magic, kTraceDatMagic, sizeof(kTraceDatMagic)) == 0) {
    IOTRACE_ASSIGN_OR_RETURN(TraceDatRecovery r, RecoverTraceDat(path));
    if (r.was_complete) {
      std::printf("%s: complete, nothing to recover", path.c_str());
      if (r.spools_removed != 0) {
        std::printf(" (%llu spool files left beside it removed)",
                    static_cast<unsigned long long>(r.spools_removed));
      }
      std::printf("\n");
      return absl::OkStatus();
    }
    uint64_t pages = 0, cut = 0, not_written = 0;
    for (const TraceDatCpuResult& c : r.written.cpus) {
      pages += c.pages;
      cut += c.partial_bytes_cut;
      not_written += c.pages_not_written;
    }
    std::printf("%s: recovered: %llu pages from %d spool files", path.c_str(),
                static_cast<unsigned long long>(pages), r.spools);
    if (cut != 0) {
      std::printf(", %llu bytes of a page cut by the kill dropped",
                  static_cast<unsigned long long>(cut));
    }
    if (not_written != 0) {
      std::printf(", %llu pages not written (%s)", static_cast<unsigned long long>(not_written),
                  std::string(r.written.storage_error.message()).c_str());
    }
    std::printf("; the recording did not finish: what the kernel still held or lost then is "
                "not known\n");
    return absl::OkStatus();
  }
  return WithHint(absl::InvalidArgumentError(absl::StrFormat(
                      "recover %s: not a perf.data or trace.dat file (unknown magic bytes)", path)),
                  "give the file `iotrace record -o` wrote");
}

}  // namespace

int RecoverCommand(const std::vector<std::string>& args) {
  bool help = false;
  FlagParser flags;
  flags.AddSwitch("help", 'h', "show this help", &help);
  std::vector<std::string> files;
  absl::Status parsed = flags.Parse(args, &files, nullptr);
  if (help) {
    std::fputs(FitHelp(absl::StrFormat(
        "usage: iotrace recover FILE...\n\n"
        "Finishes recordings whose iotrace was killed (kill -9, the OOM killer, a crash) into\n"
        "complete files that perf script and trace-cmd report read too. iotrace report reads\n"
        "them either way, and says the recording did not finish. A trace.dat's pages are in\n"
        "spool files beside it (FILE.cpu0, FILE.cpu1, ...): they are assembled into FILE and\n"
        "removed. A complete file is left as it is.\n\noptions:\n%s",
        flags.Help().c_str())).c_str(), stdout);
    return kExitOk;
  }
  if (!parsed.ok()) return ReportError(parsed);
  if (files.empty()) {
    return ReportError(UsageError("recover: no file given", "iotrace recover iotrace.dat"));
  }
  int status = kExitOk;
  for (const std::string& f : files) {
    absl::Status s = RecoverOne(f);
    if (!s.ok()) status = ReportError(s);
  }
  return status;
}

}  // namespace iotrace
