// The live engine's parts that need no kernel: the merge up to a watermark (LiveMerger) over a
// fake source, the interval window (LiveWindow), and the page walker following a sub-buffer
// that the kernel is still filling (FtracePageWalker::Refresh).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ftrace_page_builder.h"
#include "gtest/gtest.h"
#include "iotrace/analysis/live_window.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/live/live_engine.h"
#include "iotrace/live/live_merger.h"
#include "iotrace/live/live_source.h"

namespace iotrace {
namespace {

// Streams whose records become visible when the test says so.
class FakeSource : public LiveSource {
 public:
  explicit FakeSource(size_t streams) : streams_(streams) {}
  std::string backend() const override { return "fake"; }
  std::string ingest() const override { return "memory"; }
  const std::vector<EventFormat>& formats() const override { return formats_; }
  int nr_cpus() const override { return static_cast<int>(streams_.size()); }
  size_t stream_count() const override { return streams_.size(); }
  absl::Status SetEnabled(bool) override { return absl::OkStatus(); }
  void WatchFd(int) override {}
  absl::StatusOr<bool> Wait(int) override { return false; }
  absl::StatusOr<bool> Next(size_t i, RawEvent* event, EventSink*) override {
    Stream& s = streams_[i];
    if (s.next == s.ts.size()) return false;
    event->ts = s.ts[s.next++];
    event->cpu = static_cast<uint32_t>(i);
    event->type = 0;
    return true;
  }
  uint64_t LostSoFar() override { return 0; }
  absl::StatusOr<LiveSourceEnd> Finish(EventSink*) override { return LiveSourceEnd{}; }

  // The kernel writes `ts` into stream `i`'s buffer.
  void Write(size_t i, uint64_t ts) { streams_[i].ts.push_back(ts); }

 private:
  struct Stream {
    std::vector<uint64_t> ts;
    size_t next = 0;
  };
  std::vector<Stream> streams_;
  std::vector<EventFormat> formats_;
};

class Collect : public EventSink {
 public:
  void OnEvent(const RawEvent& e) override { got.emplace_back(e.ts, e.cpu); }
  std::vector<std::pair<uint64_t, uint32_t>> got;
};

using Got = std::vector<std::pair<uint64_t, uint32_t>>;

TEST(LiveMergerTest, MergesInTimeOrderUpToTheLimitTiesToTheLowerStream) {
  FakeSource src(3);
  for (uint64_t t : {10, 30, 50}) src.Write(0, t);
  for (uint64_t t : {20, 30, 60}) src.Write(1, t);
  for (uint64_t t : {5, 30}) src.Write(2, t);
  Collect out;
  LiveMerger m(&src, &out);
  ASSERT_TRUE(m.DeliverBefore(50).ok());
  EXPECT_EQ(out.got, (Got{{5, 2}, {10, 0}, {20, 1}, {30, 0}, {30, 1}, {30, 2}}));
  EXPECT_EQ(m.next_ts(), 50u);  // 50 is not before the limit: it waits
  ASSERT_TRUE(m.DeliverBefore(~uint64_t{0}).ok());
  EXPECT_EQ(out.got.size(), 8u);
  EXPECT_EQ(out.got[6], (std::pair<uint64_t, uint32_t>{50, 0}));
  EXPECT_EQ(out.got[7], (std::pair<uint64_t, uint32_t>{60, 1}));
  EXPECT_EQ(m.delivered(), 8u);
  EXPECT_EQ(m.late(), 0u);
}

TEST(LiveMergerTest, AnIdleStreamHoldsNothingBack) {
  FakeSource src(4);  // streams 1..3 never write
  for (uint64_t t : {100, 200, 300}) src.Write(0, t);
  Collect out;
  LiveMerger m(&src, &out);
  ASSERT_TRUE(m.DeliverBefore(250).ok());
  EXPECT_EQ(out.got, (Got{{100, 0}, {200, 0}}));
}

TEST(LiveMergerTest, ARecordBehindWhatWasHandedOnIsCountedLateNeverPaired) {
  FakeSource src(2);
  src.Write(0, 100);
  src.Write(0, 200);
  Collect out;
  LiveMerger m(&src, &out);
  ASSERT_TRUE(m.DeliverBefore(300).ok());
  // CPU 1's write of time 150 shows only now, after 200 was handed on; 250 comes in order.
  src.Write(1, 150);
  src.Write(1, 250);
  ASSERT_TRUE(m.DeliverBefore(300).ok());
  EXPECT_EQ(out.got, (Got{{100, 0}, {200, 0}, {250, 1}}));
  EXPECT_EQ(m.late(), 1u);
  EXPECT_EQ(m.delivered(), 3u);
  EXPECT_EQ(m.last_ts(), 250u);
}

TEST(LiveMergerTest, RecordsThatShowUpBeforeTheLimitButAfterTheLastHandedOnAreInOrder) {
  FakeSource src(2);
  src.Write(0, 100);
  src.Write(0, 400);
  Collect out;
  LiveMerger m(&src, &out);
  ASSERT_TRUE(m.DeliverBefore(300).ok());
  src.Write(1, 120);  // later than 100: not late
  ASSERT_TRUE(m.DeliverBefore(500).ok());
  EXPECT_EQ(out.got, (Got{{100, 0}, {120, 1}, {400, 0}}));
  EXPECT_EQ(m.late(), 0u);
}

TEST(FtracePageWalkerTest, RefreshWalksOnWhereTheKernelAddedToTheSameSubBuffer) {
  testing::FtracePageBuilder b(1000);
  const std::string payload(8, 'x');
  ASSERT_TRUE(b.AddEvent(1010, payload));
  ASSERT_TRUE(b.AddEvent(1020, payload));
  ASSERT_TRUE(b.AddEvent(1035, payload));
  std::string page = b.Build();
  // The kernel had committed only the first event when the walk began.
  const uint64_t full = b.data_size();
  const uint64_t first = 4 + 8;
  std::memcpy(page.data() + 8, &first, 8);
  FtracePageLayout layout;
  FtracePageWalker w(layout);
  const ByteView view(page.data(), page.size());
  ASSERT_TRUE(w.Reset(view));
  FtraceRecord r;
  ASSERT_TRUE(w.Next(&r));
  EXPECT_EQ(r.ts, 1010u);
  EXPECT_FALSE(w.Next(&r));
  EXPECT_FALSE(w.Refresh(view));  // nothing new
  std::memcpy(page.data() + 8, &full, 8);
  ASSERT_TRUE(w.Refresh(view));
  ASSERT_TRUE(w.Next(&r));
  EXPECT_EQ(r.ts, 1020u);
  ASSERT_TRUE(w.Next(&r));
  EXPECT_EQ(r.ts, 1035u);
  EXPECT_FALSE(w.Next(&r));
  // A commit past the sub-buffer is not taken.
  const uint64_t past = 5000;
  std::memcpy(page.data() + 8, &past, 8);
  EXPECT_FALSE(w.Refresh(view));
}

RequestSample Sample(uint32_t dev, BlockOp op, uint8_t phases, uint64_t insert, uint64_t issue,
                     uint64_t complete, int32_t pid, const char* comm, uint32_t bytes) {
  RequestSample s;
  s.dev = dev;
  s.op = op;
  s.phases = phases;
  s.insert_ts = insert;
  s.issue_ts = issue;
  s.complete_ts = complete;
  s.insert_pid = pid;
  s.issue_pid = pid;
  s.insert_comm = comm;
  s.issue_comm = comm;
  s.bytes = bytes;
  return s;
}

constexpr uint8_t kDone = PhaseBit(Phase::kD2C) | PhaseBit(Phase::kI2C);

TEST(LiveWindowTest, AnIntervalHoldsItsSamplesThroughputAndProcessesThenStartsEmpty) {
  DeviceNames names("/nonexistent", "/nonexistent");
  LiveWindow w(LiveWindowOptions{}, &names);
  const uint32_t dev = (7u << 20) | 1;
  w.OnSample(Sample(dev, BlockOp::kRead, PhaseBit(Phase::kI2D), 0, 1000, 0, 10, "fio", 4096),
             PhaseBit(Phase::kI2D));
  w.OnSample(Sample(dev, BlockOp::kRead, kDone, 0, 1000, 5000, 10, "fio", 4096), kDone);
  w.OnSample(Sample(dev, BlockOp::kRead, kDone, 0, 2000, 9000, 10, "fio", 4096), kDone);
  w.OnSample(Sample(dev, BlockOp::kWrite, kDone, 0, 100, 300, 20, "dd", 65536), kDone);
  LiveIntervalCounts counts;
  counts.events = 12;
  LiveInterval iv = w.Take(3, 3.0, 1.0, counts);
  EXPECT_EQ(iv.index, 3u);
  EXPECT_EQ(iv.counts.events, 12u);
  // read I2D, D2C, I2C; write D2C, I2C.
  ASSERT_EQ(iv.groups.size(), 5u);
  EXPECT_EQ(iv.groups[0].op, BlockOp::kRead);
  EXPECT_EQ(iv.groups[0].phase, Phase::kI2D);
  EXPECT_EQ(iv.groups[0].summary.count, 1u);
  EXPECT_EQ(iv.groups[1].phase, Phase::kD2C);
  EXPECT_EQ(iv.groups[1].summary.count, 2u);
  EXPECT_EQ(iv.groups[1].summary.min_ns, 4000u);
  EXPECT_EQ(iv.groups[1].summary.max_ns, 7000u);
  EXPECT_EQ(iv.groups[1].summary.sum_ns, 11000u);
  EXPECT_EQ(iv.groups[1].device, "7:1");
  ASSERT_EQ(iv.throughput.size(), 2u);
  EXPECT_EQ(iv.throughput[0].requests, 2u);
  EXPECT_EQ(iv.throughput[0].bytes, 8192u);
  EXPECT_EQ(iv.throughput[1].op, BlockOp::kWrite);
  EXPECT_EQ(iv.throughput[1].bytes, 65536u);
  ASSERT_EQ(iv.processes.size(), 2u);
  EXPECT_EQ(iv.processes[0].comm, "fio");
  EXPECT_EQ(iv.processes[0].pid, 10);
  EXPECT_EQ(iv.processes[0].requests, 2u);
  EXPECT_EQ(iv.processes[1].comm, "dd");
  // I2C of dd's one request: 300 ns, in a bucket of width 16 at most.
  EXPECT_NEAR(static_cast<double>(iv.processes[1].i2c_p50_ns), 300.0, 16.0);

  LiveInterval next = w.Take(4, 4.0, 1.0, LiveIntervalCounts{});
  EXPECT_TRUE(next.groups.empty());
  EXPECT_TRUE(next.throughput.empty());
  EXPECT_TRUE(next.processes.empty());
}

TEST(LiveWindowTest, PhasesNotAskedForAreLeftOutAndProcessesPastTheBoundAddUp) {
  DeviceNames names("/nonexistent", "/nonexistent");
  LiveWindowOptions o;
  o.phases = PhaseBit(Phase::kD2C);
  o.max_processes = 2;
  o.top_processes = 5;
  LiveWindow w(o, &names);
  for (int32_t pid = 1; pid <= 4; ++pid) {
    for (int i = 0; i < pid; ++i) {
      w.OnSample(Sample(1, BlockOp::kRead, kDone, 0, 100, 200, pid, "p", 512), kDone);
    }
  }
  LiveInterval iv = w.Take(0, 0, 1, {});
  ASSERT_EQ(iv.groups.size(), 1u);
  EXPECT_EQ(iv.groups[0].phase, Phase::kD2C);
  EXPECT_EQ(iv.groups[0].summary.count, 10u);
  // pids 1 and 2 got rows; 3 and 4 (7 requests) are added up as pid -1.
  ASSERT_EQ(iv.processes.size(), 3u);
  EXPECT_EQ(iv.processes[0].pid, -1);
  EXPECT_EQ(iv.processes[0].requests, 7u);
  EXPECT_EQ(iv.processes[0].comm, "(others)");
  EXPECT_EQ(iv.processes[1].pid, 2);
  EXPECT_EQ(iv.processes[2].pid, 1);
}

TEST(LiveWindowTest, SmallHistogramPercentilesStayWithinTheirBucket) {
  LiveWindow::SmallHistogram h;
  for (uint64_t v = 1; v <= 1000; ++v) h.Record(v * 1000);
  const double p50 = static_cast<double>(h.ValueAtPercentile(50));
  const double p99 = static_cast<double>(h.ValueAtPercentile(99));
  EXPECT_NEAR(p50, 500000.0, 500000.0 * 0.07);
  EXPECT_NEAR(p99, 990000.0, 990000.0 * 0.07);
  EXPECT_EQ(h.ValueAtPercentile(0), 1000u);
  EXPECT_EQ(h.ValueAtPercentile(100), 1000000u);
  h.Reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.ValueAtPercentile(50), 0u);
}

}  // namespace
}  // namespace iotrace

namespace iotrace {
namespace {

TEST(LiveEventsForPhasesTest, OnlyTheTracepointsThePhasesNeed) {
  using V = std::vector<std::string>;
  EXPECT_EQ(LiveEventsForPhases(PhaseBit(Phase::kD2C)),
            (V{"block:block_rq_issue", "block:block_rq_complete", "block:block_rq_requeue"}));
  EXPECT_EQ(LiveEventsForPhases(PhaseBit(Phase::kI2C)),
            (V{"block:block_rq_issue", "block:block_rq_complete", "block:block_rq_requeue",
               "block:block_rq_insert", "block:block_rq_merge"}));
  const V q = LiveEventsForPhases(PhaseBit(Phase::kQ2C) | PhaseBit(Phase::kD2C));
  EXPECT_EQ(q.back(), "block:block_bio_queue");
  EXPECT_EQ(std::count(q.begin(), q.end(), "block:block_rq_insert"), 0);
}

}  // namespace
}  // namespace iotrace
