// libFuzzer target for the trace FILE readers: the input is a whole file (perf.data or
// trace.dat, sniffed by OpenTraceReader) -> the reader's header, attr, feature, tracing-data,
// event-format and option parsing -> ReadAll (perf record parser + sorted-run merge, or the
// ftrace page walker + per-CPU merge) -> BuildLatencyReport -> every report formatter, then a
// second ReadAll through the per-event dump (EventDumper). Anything but a clean error or a
// counted skip (crash, hang, ASan/UBSan report, memory growth) is a bug.
//
// Run by hand, not in CI: scripts/fuzz.sh trace_file_fuzzer 600 (builds build-fuzz with clang,
// instruments iotrace_core too, runs with -rss_limit_mb=512 -timeout=10 on
// tests/fuzz/corpus/trace_file_fuzzer).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_pipeline.h"

namespace {

// The readers take a path: every input goes into one memfd, opened by path through /proc.
class InputFile {
 public:
  InputFile() {
    fd_ = memfd_create("iotrace-fuzz-input", MFD_CLOEXEC);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const std::string& Write(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < size) {
      ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    return path_;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static InputFile* file = new InputFile();
  const std::string& path = file->Write(data, size);

  iotrace::fuzz::RunReportPipeline(path, size);
  return 0;
}
