#include "iotrace/base/batch_read.h"

#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "iotrace/base/status.h"

namespace iotrace {

struct BatchReader::Ring {
  io_uring uring;
};

BatchReader::BatchReader() = default;

BatchReader::~BatchReader() {
  // Every read Run submitted has been reaped: nothing in flight writes into callers' memory.
  if (ring_ != nullptr) io_uring_queue_exit(&ring_->uring);
}

absl::StatusOr<std::unique_ptr<BatchReader>> BatchReader::Create(unsigned depth) {
  depth = std::clamp(depth, 1u, 4096u);
  auto ring = std::make_unique<Ring>();
  const int r = io_uring_queue_init(depth, &ring->uring, 0);
  if (r < 0) return ErrnoError(-r, "io_uring_setup", "");
  // io_uring came in 5.1, its plain read in 5.6: a kernel between has the one without the other.
  io_uring_probe* probe = io_uring_get_probe_ring(&ring->uring);
  const bool reads = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_READ);
  if (probe != nullptr) io_uring_free_probe(probe);
  if (!reads) {
    io_uring_queue_exit(&ring->uring);
    return ErrnoError(EOPNOTSUPP, "io_uring read", "");
  }
  std::unique_ptr<BatchReader> reader(new BatchReader());
  reader->ring_ = std::move(ring);
  reader->depth_ = depth;
  return reader;
}

void BatchReader::Run(absl::Span<Read> reads) {
  io_uring* u = &ring_->uring;
  for (size_t first = 0; first < reads.size(); first += depth_) {
    const size_t n = std::min<size_t>(depth_, reads.size() - first);
    if (broken_) {
      for (size_t i = first; i < first + n; ++i) reads[i].result = -EAGAIN;
      continue;
    }
    size_t queued = 0;
    for (size_t i = first; i < first + n; ++i) {
      io_uring_sqe* sqe = io_uring_get_sqe(u);
      if (sqe == nullptr) break;  // (cannot happen: the queue was empty and holds depth_)
      Read& rd = reads[i];
      io_uring_prep_read(sqe, rd.fd, rd.buf, rd.len, rd.offset);
      io_uring_sqe_set_data64(sqe, i);
      ++queued;
    }
    int submitted;
    do {
      ++calls_;
      submitted = io_uring_submit_and_wait(u, static_cast<unsigned>(queued));
    } while (submitted == -EINTR);
    if (submitted < 0) submitted = 0;
    if (static_cast<size_t>(submitted) < queued) {
      // What the kernel did not take stays in the submission queue: never submitted again.
      broken_ = true;
    }
    for (size_t i = first + static_cast<size_t>(submitted); i < first + n; ++i) {
      reads[i].result = -EAGAIN;
    }
    // Reap what was submitted (most completed inline: buffered reads of cached pages). The
    // reads are in flight into the callers' memory: nothing returns before they are all done.
    int refused = 0;
    for (int left = submitted, failures = 0; left > 0;) {
      io_uring_cqe* cqe = nullptr;
      int w = io_uring_peek_cqe(u, &cqe);
      if (w == -EAGAIN) {
        ++calls_;
        w = io_uring_wait_cqe(u, &cqe);
      }
      if (w < 0) {
        // -EINTR: wait again. Anything else cannot be waited out: a few tries, then give up
        // loudly rather than spin or let the kernel write into memory that moved on.
        if (w != -EINTR && ++failures > 1000) {
          std::fprintf(stderr, "iotrace: error: waiting for reads (io_uring) failed: %s\n",
                       std::strerror(-w));
          std::abort();
        }
        if (w != -EINTR) ::usleep(1000);
        continue;
      }
      const int res = cqe->res;
      reads[io_uring_cqe_get_data64(cqe)].result = res;
      refused += res == -EINVAL || res == -EOPNOTSUPP || res == -ENOSYS;
      io_uring_cqe_seen(u, cqe);
      --left;
    }
    // Every read refused: the kernel does not do these reads this way (the caller preads them).
    if (submitted > 0 && refused == submitted) broken_ = true;
  }
}

}  // namespace iotrace
