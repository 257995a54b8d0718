// Many reads of a file at different offsets in one system call, through io_uring (liburing).
//
// Why: a reader of many streams at once (trace.dat at 256 CPUs: a 16 KiB ring a CPU) refills
// each stream's ring with a pread of 4 to 8 KiB, ~31 k of them for a 200 MB file where 2 CPUs
// make ~2.3 k. On this VM a pread costs ~1.4 us more than its copy (PVM: every system call is a
// trip through the hypervisor's switcher), so the calls alone were ~50 ms of a 0.33 s report.
// Handed to the kernel 16 to 256 at a time, the same 4 KiB reads run at the speed of 1 MiB
// preads (the readers hand it 128 or 256 a call).
//
// Where io_uring cannot be set up (a kernel without it or without its plain read, before 5.6;
// `kernel.io_uring_disabled`; a container's seccomp policy), Create says so and the caller reads
// with pread as before.
#ifndef IOTRACE_BASE_BATCH_READ_H_
#define IOTRACE_BASE_BATCH_READ_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace iotrace {

class BatchReader {
 public:
  struct Read {
    int fd = -1;
    uint8_t* buf = nullptr;
    uint32_t len = 0;
    uint64_t offset = 0;
    // After Run: the bytes read (fewer than len at the end of the file), or -errno. -EAGAIN
    // for a read that never went to the kernel (the reader broke before it: see Run).
    int64_t result = 0;
  };

  // A reader that hands the kernel up to `depth` reads a call. An error when io_uring is not
  // to be had here (its errno: ENOSYS, EPERM, ...).
  static absl::StatusOr<std::unique_ptr<BatchReader>> Create(unsigned depth);
  ~BatchReader();
  BatchReader(const BatchReader&) = delete;
  BatchReader& operator=(const BatchReader&) = delete;

  // Runs the reads and waits for all of them: each one's result is set. Reads beyond the depth
  // go in further calls. When the kernel refuses a submission, or refuses every read of one
  // (EINVAL, EOPNOTSUPP), the reads not made get -EAGAIN or that error and the reader is
  // broken() from then on (every later read gets -EAGAIN): its caller reads them itself. A read
  // that fails on its own (EBADF, EIO, a short read at the end of the file) is that read's.
  void Run(absl::Span<Read> reads);
  bool broken() const { return broken_; }
  // From now on every read gets -EAGAIN, as after a refused submission (tests of the callers'
  // way back to pread).
  void Break() { broken_ = true; }
  // System calls made so far (for tests and the benchmarks' accounting).
  uint64_t calls() const { return calls_; }

 private:
  BatchReader();
  struct Ring;
  std::unique_ptr<Ring> ring_;
  unsigned depth_ = 0;
  bool broken_ = false;
  uint64_t calls_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_BASE_BATCH_READ_H_
