#include "iotrace/base/run_on_threads.h"

#include <atomic>
#include <stdexcept>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

// Every part runs once, the first on the calling thread, and all have ended when it returns.
TEST(RunOnThreadsTest, RunsEveryPartOnceTheFirstHere) {
  for (size_t threads : {size_t{1}, size_t{2}, size_t{5}}) {
    std::vector<std::atomic<int>> ran(threads);
    std::thread::id first;
    RunOnThreads(threads, [&](size_t t) {
      if (t == 0) first = std::this_thread::get_id();
      ++ran[t];
    });
    EXPECT_EQ(first, std::this_thread::get_id());
    for (size_t t = 0; t < threads; ++t) EXPECT_EQ(ran[t].load(), 1) << threads << " " << t;
  }
}

// An exception on a helper comes out of the call (the lowest part's when several throw), after
// the other parts ran to their end.
TEST(RunOnThreadsTest, PassesOnTheExceptionOfTheLowestPartThatThrew) {
  std::atomic<int> finished{0};
  try {
    RunOnThreads(4, [&](size_t t) {
      if (t == 2) throw std::runtime_error("part 2");
      if (t == 3) throw std::runtime_error("part 3");
      ++finished;
    });
    ADD_FAILURE() << "nothing thrown";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 2");
  }
  EXPECT_EQ(finished.load(), 2);
  EXPECT_THROW(RunOnThreads(1, [](size_t) { throw std::runtime_error("here"); }),
               std::runtime_error);
}

}  // namespace
}  // namespace iotrace
