// Work split over a few threads: the caller's and helpers it joins before returning. For the
// report's and the diff's steps that split their rows (the rows made, the text written, the
// diff's relabelling tests); an exception on any thread (out of memory) comes out of the call
// once every thread has ended, not through std::terminate.
#ifndef IOTRACE_BASE_RUN_ON_THREADS_H_
#define IOTRACE_BASE_RUN_ON_THREADS_H_

#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace iotrace {

// Runs work(t) for t in [0, threads): t = 0 on the calling thread, the others on threads of
// their own, all joined before it returns. Rethrows the exception of the lowest t that threw.
template <typename Work>
void RunOnThreads(size_t threads, Work&& work) {
  if (threads <= 1) {
    work(size_t{0});
    return;
  }
  std::vector<std::exception_ptr> failed(threads);
  {
    std::vector<std::jthread> helpers;
    helpers.reserve(threads - 1);
    for (size_t t = 1; t < threads; ++t) {
      helpers.emplace_back([&work, &failed, t] {
        try {
          work(t);
        } catch (...) {
          failed[t] = std::current_exception();
        }
      });
    }
    try {
      work(size_t{0});
    } catch (...) {
      failed[0] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : failed) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace iotrace

#endif  // IOTRACE_BASE_RUN_ON_THREADS_H_
