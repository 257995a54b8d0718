// Proves that the report's hot path (decode -> match -> histogram insert) allocates nothing
// per event once warmed up, with the binary-wide counting operator new of allocation_counter.h.
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "allocation_counter.h"
#include "gtest/gtest.h"
#include "iotrace/analysis/histogram.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/analysis/request_matcher.h"
#include "iotrace/event/block_event.h"
#include "synthetic_trace.h"

namespace iotrace {
namespace {

using synthetic::SyntheticTrace;
using synthetic::ThisKernelFormats;

TEST(AllocationCounterTest, CountsWhileEnabled) {
  IOTRACE_REQUIRE_ALLOCATION_COUNTER();
  test::ScopedAllocationCount counter;
  int* volatile a = new int(1);  // volatile: the compiler may not elide these allocations
  int* volatile b = new int(2);
  delete a;
  delete b;
  EXPECT_GE(counter.count(), 2u) << "operator new is not the counting one: another test file "
                                    "replaces it, so the allocation checks would see nothing";
}

// A busy mixed stream: two devices, reads and writes, flushes, queue events, partial
// completions, requeues, merges, and requests that never complete.
SyntheticTrace MixedTrace(uint64_t start_ts, uint64_t first_sector, int requests) {
  SyntheticTrace t(ThisKernelFormats(/*with_bio_queue=*/true));
  uint64_t ts = start_ts;
  const uint32_t devs[] = {KernelDev(7, 0), KernelDev(254, 0)};
  for (int i = 0; i < requests; ++i) {
    const uint32_t dev = devs[i % 2];
    const uint64_t sector = first_sector + static_cast<uint64_t>(i) * 64;
    const std::string rwbs = i % 3 == 0 ? "R" : "WS";
    t.Add("block_bio_queue", {ts, dev, sector, 16, rwbs, 100, "fio", 0});
    t.Insert(ts + 1, sector, 16, rwbs, dev, 0);
    if (i % 7 == 0) {  // a request merged away
      t.Insert(ts + 2, sector + 16, 8, rwbs, dev, 0);
      t.Add("block_rq_merge", {ts + 3, dev, sector + 16, 8, rwbs, 100, "fio", 0});
    }
    t.Issue(ts + 5, sector, 16, rwbs, dev, 1);
    if (i % 11 == 0) {  // requeued once
      t.Add("block_rq_requeue", {ts + 6, dev, sector, 16, rwbs, 0, "", 1});
      t.Issue(ts + 8, sector, 16, rwbs, dev, 1);
    }
    if (i % 13 == 0) continue;  // never completes
    if (i % 5 == 0) {           // partial completion
      t.Complete(ts + 20, sector, 8, rwbs, dev, 1);
      t.Complete(ts + 30, sector + 8, 8, rwbs, dev, 1);
    } else {
      t.Complete(ts + 30, sector, 16, rwbs, dev, 1);
    }
    if (i % 17 == 0) {  // a flush
      t.Issue(ts + 31, 0, 0, "FF", dev, 1);
      t.Complete(ts + 40, BlockEvent::kFlushCompleteSector, 0, "FF", dev, 1);
    }
    ts += 100;
  }
  return t;
}

void ExpectNoAllocationAfterWarmUp(const ReportOptions& options) {
  SyntheticTrace warm = MixedTrace(0, 0, 400);
  SyntheticTrace measured = MixedTrace(1'000'000, 1 << 20, 4000);
  std::vector<std::vector<uint8_t>> warm_storage, measured_storage;
  std::vector<RawEvent> warm_events = warm.Materialize(&warm_storage);
  std::vector<RawEvent> measured_events = measured.Materialize(&measured_storage);
  auto builder = LatencyReportBuilder::Create(warm.formats(), options);
  ASSERT_TRUE(builder.ok()) << builder.status();
  for (const RawEvent& e : warm_events) (*builder)->OnEvent(e);
  uint64_t allocations;
  {
    test::ScopedAllocationCount counter;
    for (const RawEvent& e : measured_events) (*builder)->OnEvent(e);
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0u) << "over " << measured_events.size() << " events";
  // And the work was real: every phase was paired.
  const MatchStats& s = (*builder)->matcher().stats();
  for (int p = 0; p < kPhaseCount; ++p) EXPECT_GT(s.paired[p], 4000u) << PhaseName(Phase(p));
  EXPECT_GT(s.partial_completions, 0u);
  EXPECT_GT(s.requeues, 0u);
  EXPECT_GT(s.merges, 0u);
  EXPECT_GT(s.flushes, 0u);
}

TEST(ReportAllocationTest, DecodeMatchAndHistogramAllocateNothingAfterWarmUp) {
  IOTRACE_REQUIRE_ALLOCATION_COUNTER();
  ReportOptions o;
  o.sysfs_root = o.procfs_root = "/nonexistent";
  ExpectNoAllocationAfterWarmUp(o);
}

TEST(ReportAllocationTest, FiltersAndAnOpenIntervalAllocateNothingAfterWarmUp) {
  IOTRACE_REQUIRE_ALLOCATION_COUNTER();
  ReportOptions o;
  o.sysfs_root = o.procfs_root = "/nonexistent";
  o.interval_s = 1000;  // everything falls into the first interval
  o.comms = {"fio"};
  o.pids = {100};
  o.ops = {BlockOp::kRead, BlockOp::kWrite, BlockOp::kFlush};
  o.devices = {"7:0", "254:0"};
  ExpectNoAllocationAfterWarmUp(o);
}

TEST(ReportAllocationTest, MatcherEvictionAndExpiryAllocateNothing) {
  IOTRACE_REQUIRE_ALLOCATION_COUNTER();
  class NullSink : public RequestSampleSink {
   public:
    void OnRequestSample(const RequestSample&) override {}
  } sink;
  MatcherOptions o;
  o.max_entries = 64;
  o.expiry_ns = 1000;
  RequestMatcher m(o, &sink);
  BlockEvent e;
  e.dev = KernelDev(7, 0);
  e.nr_sector = 8;
  e.op = BlockOp::kWrite;
  e.kind = BlockEventKind::kInsert;
  m.OnEvent(e);  // warm-up: the device's first event
  test::ScopedAllocationCount counter;
  for (uint64_t i = 0; i < 10000; ++i) {
    e.ts = i * 10;
    e.sector = i * 8;
    e.kind = i % 2 ? BlockEventKind::kIssue : BlockEventKind::kInsert;
    m.OnEvent(e);
  }
  EXPECT_EQ(counter.count(), 0u);
  EXPECT_GT(m.stats().evicted[0] + m.stats().evicted[1] + m.stats().evicted[2] +
                m.stats().expired[1] + m.stats().expired[2],
            0u);
}

TEST(ReportAllocationTest, HistogramRecordAllocatesNothing) {
  IOTRACE_REQUIRE_ALLOCATION_COUNTER();
  Histogram h;
  test::ScopedAllocationCount counter;
  for (uint64_t v = 0; v < 100000; ++v) h.Record(v * 7919);
  EXPECT_EQ(counter.count(), 0u);
  EXPECT_EQ(h.count(), 100000u);
}

}  // namespace
}  // namespace iotrace
