#include "iotrace/analysis/request_matcher.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

constexpr uint32_t kLoop0 = 7u << 20;
constexpr uint32_t kVda = 254u << 20;
constexpr uint64_t kFlushSector = BlockEvent::kFlushCompleteSector;

struct Recorded {
  RequestSample sample;
  std::string insert_comm;
  std::string issue_comm;
};

class RecordingSink : public RequestSampleSink {
 public:
  void OnRequestSample(const RequestSample& s) override {
    samples.push_back({s, s.insert_comm, s.issue_comm});
  }
  // Latencies of `phase` in emission order.
  std::vector<uint64_t> Latencies(Phase phase) const {
    std::vector<uint64_t> out;
    for (const Recorded& r : samples) {
      if (r.sample.Has(phase)) out.push_back(r.sample.Latency(phase));
    }
    return out;
  }
  std::vector<Recorded> samples;
};

BlockEvent Ev(BlockEventKind kind, uint64_t ts, uint64_t sector, uint32_t nr = 8,
              const char* rwbs = "W", uint32_t dev = kLoop0, uint32_t cpu = 0,
              int32_t pid = 100, const char* comm = "fio") {
  BlockEvent e;
  e.kind = kind;
  e.ts = ts;
  e.sector = sector;
  e.nr_sector = nr;
  e.bytes = nr * 512;
  e.dev = dev;
  e.cpu = cpu;
  e.pid = pid;
  std::strncpy(e.comm, comm, kCommSize - 1);
  ParseRwbs(rwbs, &e.op, &e.flags);
  return e;
}

BlockEvent Insert(uint64_t ts, uint64_t sector, uint32_t nr = 8, const char* rwbs = "W",
                  uint32_t dev = kLoop0, uint32_t cpu = 0) {
  return Ev(BlockEventKind::kInsert, ts, sector, nr, rwbs, dev, cpu);
}
BlockEvent Issue(uint64_t ts, uint64_t sector, uint32_t nr = 8, const char* rwbs = "W",
                 uint32_t dev = kLoop0, uint32_t cpu = 0) {
  return Ev(BlockEventKind::kIssue, ts, sector, nr, rwbs, dev, cpu);
}
BlockEvent Complete(uint64_t ts, uint64_t sector, uint32_t nr = 8, const char* rwbs = "W",
                    uint32_t dev = kLoop0, uint32_t cpu = 1) {
  return Ev(BlockEventKind::kComplete, ts, sector, nr, rwbs, dev, cpu, 0, "");
}

class RequestMatcherTest : public ::testing::Test {
 protected:
  RequestMatcherTest() : matcher_(MatcherOptions(), &sink_) {}
  void Feed(const std::vector<BlockEvent>& events) {
    for (const BlockEvent& e : events) matcher_.OnEvent(e);
  }
  RecordingSink sink_;
  RequestMatcher matcher_;
};

TEST_F(RequestMatcherTest, PairsInsertIssueCompleteIntoI2DD2CI2C) {
  Feed({Insert(1000, 64), Issue(1500, 64), Complete(4500, 64)});
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kI2D), std::vector<uint64_t>{500});
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), std::vector<uint64_t>{3000});
  EXPECT_EQ(sink_.Latencies(Phase::kI2C), std::vector<uint64_t>{3500});
  EXPECT_TRUE(sink_.Latencies(Phase::kQ2D).empty());
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.paired[static_cast<int>(Phase::kI2D)], 1u);
  EXPECT_EQ(s.paired[static_cast<int>(Phase::kD2C)], 1u);
  EXPECT_EQ(s.paired[static_cast<int>(Phase::kI2C)], 1u);
  for (uint64_t n : s.issues_without_insert) EXPECT_EQ(n, 0u);
  EXPECT_EQ(s.completes_without_issue, 0u);
  for (uint64_t n : s.in_flight_at_end) EXPECT_EQ(n, 0u);
  // I2D is emitted at the issue, the rest at the completion.
  ASSERT_EQ(sink_.samples.size(), 2u);
  EXPECT_EQ(sink_.samples[0].sample.phases, PhaseBit(Phase::kI2D));
  EXPECT_EQ(sink_.samples[1].sample.phases, PhaseBit(Phase::kD2C) | PhaseBit(Phase::kI2C));
  EXPECT_EQ(sink_.samples[1].sample.End(Phase::kD2C), 4500u);
  EXPECT_EQ(sink_.samples[1].sample.op, BlockOp::kWrite);
  EXPECT_EQ(sink_.samples[1].sample.nr_sector, 8u);
  EXPECT_EQ(sink_.samples[1].sample.bytes, 4096u);
}

TEST_F(RequestMatcherTest, PairsOverlappingRequestsFromDifferentCpusInTimeOrder) {
  // Three requests in flight at once; inserts on CPU0/CPU1, completions on CPU1, interleaved
  // as a reader delivers them after merging the per-CPU streams by timestamp.
  Feed({
      Insert(100, 0, 8, "R", kLoop0, 0),
      Insert(110, 8, 8, "R", kLoop0, 1),
      Issue(120, 8, 8, "R", kLoop0, 1),
      Insert(130, 16, 8, "R", kLoop0, 0),
      Issue(140, 0, 8, "R", kLoop0, 0),
      Complete(150, 8, 8, "R", kLoop0, 1),
      Issue(160, 16, 8, "R", kLoop0, 0),
      Complete(170, 16, 8, "R", kLoop0, 1),
      Complete(400, 0, 8, "R", kLoop0, 1),
  });
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kI2D), (std::vector<uint64_t>{10, 40, 30}));
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), (std::vector<uint64_t>{30, 10, 260}));
  EXPECT_EQ(sink_.Latencies(Phase::kI2C), (std::vector<uint64_t>{40, 40, 300}));
  EXPECT_EQ(matcher_.stats().collisions, 0u);
}

TEST_F(RequestMatcherTest, SameSectorOnTwoDevicesAreTwoRequests) {
  Feed({Insert(0, 100, 8, "W", kLoop0), Insert(5, 100, 8, "W", kVda), Issue(10, 100, 8, "W", kVda),
        Issue(20, 100, 8, "W", kLoop0), Complete(30, 100, 8, "W", kLoop0),
        Complete(50, 100, 8, "W", kVda)});
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), (std::vector<uint64_t>{10, 40}));
  EXPECT_EQ(matcher_.stats().collisions, 0u);
}

TEST_F(RequestMatcherTest, IssueWithoutInsertOnDeviceWithNoInsertsGivesD2COnly) {
  // Scheduler none: requests go straight to the driver, no block_rq_insert at all.
  Feed({Issue(0, 8), Issue(5, 16), Complete(50, 8), Complete(60, 16)});
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), (std::vector<uint64_t>{50, 55}));
  EXPECT_TRUE(sink_.Latencies(Phase::kI2D).empty());
  EXPECT_TRUE(sink_.Latencies(Phase::kI2C).empty());
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.issues_without_insert[static_cast<int>(NoInsertReason::kNoInsertOnDevice)], 2u);
  EXPECT_EQ(s.issues_without_insert[static_cast<int>(NoInsertReason::kInsertMissing)], 0u);
  std::vector<DeviceMatchStats> devices = matcher_.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].issues_without_insert, 2u);
  EXPECT_EQ(devices[0].no_insert_reason, NoInsertReason::kNoInsertOnDevice);
}

TEST_F(RequestMatcherTest, IssueWithoutInsertOnDeviceWithInsertsIsInsertMissing) {
  Feed({Insert(0, 8), Issue(1, 8), Issue(2, 64), Complete(10, 8), Complete(20, 64)});
  matcher_.Finish();
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.issues_without_insert[static_cast<int>(NoInsertReason::kInsertMissing)], 1u);
  EXPECT_EQ(s.issues_without_insert[static_cast<int>(NoInsertReason::kNoInsertOnDevice)], 0u);
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), (std::vector<uint64_t>{9, 18}));
}

TEST(RequestMatcherReasonTest, IssueWithoutInsertWhenInsertWasNotRecorded) {
  RecordingSink sink;
  RequestMatcher m(MatcherOptions(), &sink);
  m.set_insert_recorded(false);
  m.OnEvent(Issue(0, 8));
  m.OnEvent(Complete(7, 8));
  m.Finish();
  EXPECT_EQ(m.stats().issues_without_insert[static_cast<int>(NoInsertReason::kInsertNotRecorded)],
            1u);
  EXPECT_EQ(sink.Latencies(Phase::kD2C), std::vector<uint64_t>{7});
}

TEST_F(RequestMatcherTest, FlushesPairPerDeviceInFifoOrderAndAreNeverUnmatched) {
  // Flush issue "FF" at sector 0 + 0; completion at sector 2^64-1: never equal keys.
  Feed({
      Issue(100, 0, 0, "FF", kLoop0),
      Issue(110, 0, 0, "FF", kVda),
      Issue(120, 0, 0, "FF", kLoop0),
      Complete(200, kFlushSector, 0, "FF", kVda),
      Complete(300, kFlushSector, 0, "FF", kLoop0),
      Complete(330, kFlushSector, 0, "FF", kLoop0),
  });
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), (std::vector<uint64_t>{90, 200, 210}));
  for (const Recorded& r : sink_.samples) EXPECT_EQ(r.sample.op, BlockOp::kFlush);
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.flushes, 3u);
  EXPECT_EQ(s.completes_without_issue, 0u);
  EXPECT_EQ(s.collisions, 0u);
  EXPECT_EQ(s.issues_without_insert[static_cast<int>(NoInsertReason::kFlush)], 3u);
  EXPECT_EQ(s.issues_without_insert[static_cast<int>(NoInsertReason::kNoInsertOnDevice)], 0u);
  for (uint64_t n : s.in_flight_at_end) EXPECT_EQ(n, 0u);
}

TEST_F(RequestMatcherTest, FlushWithInsertGivesI2DAndI2C) {
  Feed({Insert(10, 0, 0, "FF"), Issue(30, 0, 0, "FF"), Complete(100, kFlushSector, 0, "FF")});
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kI2D), std::vector<uint64_t>{20});
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), std::vector<uint64_t>{70});
  EXPECT_EQ(sink_.Latencies(Phase::kI2C), std::vector<uint64_t>{90});
  EXPECT_EQ(matcher_.stats().issues_without_insert[static_cast<int>(NoInsertReason::kFlush)], 0u);
}

TEST_F(RequestMatcherTest, DataWriteWithPreflushPairsBySector) {
  Feed({Insert(0, 800, 8, "FWFS"), Issue(10, 800, 8, "WS"), Complete(40, 800, 8, "WS")});
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), std::vector<uint64_t>{30});
  EXPECT_EQ(matcher_.stats().flushes, 0u);
}

TEST_F(RequestMatcherTest, FlushCompletionWithoutIssueIsCounted) {
  Feed({Complete(10, kFlushSector, 0, "FF")});
  matcher_.Finish();
  EXPECT_EQ(matcher_.stats().completes_without_issue, 1u);
  EXPECT_EQ(matcher_.stats().flushes, 0u);
  EXPECT_TRUE(sink_.samples.empty());
}

TEST_F(RequestMatcherTest, EmptyPreflushRequestEndedByTheFlushMachineryIsNotUnmatched) {
  // As seen on this kernel (fsync on a loop device, scheduler none): the empty preflush bio,
  // the flush request issued for it, the flush completion at sector -1, then the original
  // request completed with its preflush flag cleared, "WS 0 + 0", never issued itself.
  Feed({Ev(BlockEventKind::kBioQueue, 0, 0, 0, "FWS"), Issue(18, 0, 0, "FF"),
        Complete(51, kFlushSector, 0, "FF"), Complete(53, 0, 0, "WS")});
  matcher_.Finish();
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.flushes, 1u);
  EXPECT_EQ(s.flush_sequence_completions, 1u);
  EXPECT_EQ(s.completes_without_issue, 0u);
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), std::vector<uint64_t>{33});
  for (uint64_t n : s.in_flight_at_end) EXPECT_EQ(n, 0u);  // the flush bio left no entry
}

TEST_F(RequestMatcherTest, RequestEndedAfterItsPostFlushIsNotUnmatched) {
  // As seen on this kernel (ext4 journal commit on a loop device, mq-deadline, no FUA): the
  // write's data completes ("WSM 524360 + 8"), the post-flush is issued and completes, then the
  // flush machinery ends the original request with nothing left ("WSM 524360 + 0").
  Feed({Insert(0, 524360, 8, "WSM"), Issue(2, 524360, 8, "WSM"),
        Complete(32, 524360, 8, "WSM"), Issue(36, 0, 0, "FF"), Complete(707, kFlushSector, 0, "FF"),
        Complete(709, 524360, 0, "WSM")});
  matcher_.Finish();
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.completes_without_issue, 0u);
  EXPECT_EQ(s.flush_sequence_completions, 1u);
  EXPECT_EQ(s.flushes, 1u);
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), (std::vector<uint64_t>{30, 671}));
  for (uint64_t n : s.in_flight_at_end) EXPECT_EQ(n, 0u);
}

TEST_F(RequestMatcherTest, RequestMergedAtInsertTakesItsBioQueueEntryWithIt) {
  // mq-deadline merges a new request into a queued one before tracing its insert
  // (dd_insert_request): block_rq_merge names a request that was never inserted.
  Feed({Ev(BlockEventKind::kBioQueue, 0, 100, 8, "WSM"),
        Ev(BlockEventKind::kMerge, 6, 100, 8, "WSM")});
  matcher_.Finish();
  EXPECT_EQ(matcher_.stats().merges_before_insert, 1u);
  EXPECT_EQ(matcher_.stats().merges, 0u);
  EXPECT_EQ(matcher_.stats().merges_unmatched, 0u);
  for (uint64_t n : matcher_.stats().in_flight_at_end) EXPECT_EQ(n, 0u);
}

TEST_F(RequestMatcherTest, FrontMergeIntoAPluggedRequestMovesItsQueueEntry) {
  // Seen on this kernel: a bio front-merges into a request still in the plug (only its own bio
  // seen queued); the request is then inserted at the bio's sector, and keeps its own Q.
  Feed({
      Ev(BlockEventKind::kBioQueue, 0, 248, 8, "W"),
      Ev(BlockEventKind::kBioQueue, 6, 240, 8, "W"),
      Ev(BlockEventKind::kBioFrontMerge, 7, 240, 8, "W"),
      Insert(10, 240, 16),
      Issue(12, 240, 16),
      Complete(50, 240, 16),
  });
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kQ2D), std::vector<uint64_t>{12});
  EXPECT_EQ(sink_.Latencies(Phase::kQ2C), std::vector<uint64_t>{50});
  EXPECT_EQ(sink_.Latencies(Phase::kI2D), std::vector<uint64_t>{2});
  for (uint64_t n : matcher_.stats().in_flight_at_end) EXPECT_EQ(n, 0u);
}

TEST_F(RequestMatcherTest, BioQueuedAtTheSectorOfAStaleRequestKeepsItsQueueTime) {
  // The first request's completion was lost (perf drops samples silently here): its entry is
  // still live when a new bio is queued at the same sector. The new request's Q2D must still
  // be measured from its own bio.
  Feed({
      Ev(BlockEventKind::kBioQueue, 0, 64, 8, "D"),
      Insert(1, 64, 8, "D"),
      Issue(2, 64, 8, "D"),
      // no completion for the first request
      Ev(BlockEventKind::kBioQueue, 100, 64, 8, "D"),
      Insert(103, 64, 8, "D"),
      Issue(107, 64, 8, "D"),
      Complete(150, 64, 8, "D"),
  });
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kQ2D), (std::vector<uint64_t>{2, 7}));
  EXPECT_EQ(sink_.Latencies(Phase::kQ2C), std::vector<uint64_t>{50});
  // The first request is kept apart (issued, not given up) and left in flight at the end.
  EXPECT_EQ(matcher_.stats().collisions, 0u);
  EXPECT_EQ(matcher_.stats().overlapping, 1u);
  EXPECT_EQ(matcher_.stats().in_flight_at_end[static_cast<int>(RequestState::kIssued)], 1u);
  EXPECT_EQ(matcher_.stats().bio_queue_on_live, 1u);
}

TEST_F(RequestMatcherTest, RequeueMeansIssueAgainAndD2CRunsFromTheLastIssue) {
  Feed({
      Insert(0, 64),
      Issue(10, 64),                                // first issue: I2D = 10
      Ev(BlockEventKind::kRequeue, 20, 64, 8, "W"),  // driver gives it back
      Insert(25, 64),                               // the kernel re-inserts it: no collision
      Issue(40, 64),                                // issued again: no second I2D
      Complete(100, 64),                            // D2C from the last issue: 60
  });
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kI2D), std::vector<uint64_t>{10});
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), std::vector<uint64_t>{60});
  EXPECT_EQ(sink_.Latencies(Phase::kI2C), std::vector<uint64_t>{100});
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.requeues, 1u);
  EXPECT_EQ(s.collisions, 0u);
  EXPECT_EQ(s.paired[static_cast<int>(Phase::kI2D)], 1u);
}

TEST_F(RequestMatcherTest, RequeueOfUnknownRequestIsCounted) {
  Feed({Ev(BlockEventKind::kRequeue, 20, 64, 8, "W")});
  matcher_.Finish();
  EXPECT_EQ(matcher_.stats().requeues, 0u);
  EXPECT_EQ(matcher_.stats().requeues_unmatched, 1u);
}

TEST(RequestMatcherDeviceTest, UnpairedReasonsAndRequestsTrackedAreCountedPerDevice) {
  RecordingSink sink;
  MatcherOptions o;
  o.max_entries = 2;  // the third request on the table evicts the oldest
  RequestMatcher m(o, &sink);
  constexpr uint32_t kLoop1 = kLoop0 + 1;
  for (const BlockEvent& e : std::vector<BlockEvent>{
           Complete(1, 500, 8, "W", kLoop1),                          // complete without issue
           Ev(BlockEventKind::kRequeue, 2, 600, 8, "W", kLoop0),      // requeue unmatched
           Insert(3, 64, 8, "W", kLoop0), Insert(4, 64, 8, "W", kLoop0),  // collided (loop0)
           Insert(5, 128, 8, "W", kLoop1),                            // table: 64@0, 128@1
           Insert(6, 256, 8, "W", kLoop1),                            // evicts 64@loop0
           Issue(7, 256, 8, "W", kLoop1),
           Ev(BlockEventKind::kInsert, 8, 0, 0, "FF", kLoop0),        // a flush waiting
       }) {
    m.OnEvent(e);
  }
  uint64_t collided = 0, evicted = 0;
  for (uint64_t v : m.stats().collided) collided += v;
  for (uint64_t v : m.stats().evicted) evicted += v;
  ASSERT_EQ(collided, 1u);
  ASSERT_EQ(evicted, 1u);
  std::vector<DeviceMatchStats> devices = m.devices();
  ASSERT_EQ(devices.size(), 2u);
  const DeviceMatchStats& d0 = devices[0].dev == kLoop0 ? devices[0] : devices[1];
  const DeviceMatchStats& d1 = devices[0].dev == kLoop0 ? devices[1] : devices[0];
  EXPECT_EQ(d0.requeues_unmatched, 1u);
  EXPECT_EQ(d0.completes_without_issue, 0u);
  EXPECT_EQ(d0.collided, 1u);
  EXPECT_EQ(d0.evicted, 1u);
  EXPECT_EQ(d0.tracked, 1u);  // the flush (its one request left the table)
  EXPECT_EQ(d1.completes_without_issue, 1u);
  EXPECT_EQ(d1.requeues_unmatched, 0u);
  EXPECT_EQ(d1.collided + d1.evicted + d1.expired, 0u);
  EXPECT_EQ(d1.tracked, 2u);  // 128 inserted, 256 issued
  EXPECT_EQ(m.stats().completes_without_issue, 1u);
  EXPECT_EQ(m.stats().requeues_unmatched, 1u);
}

// Every event found unpaired is counted as it comes: a device's issues without an insert too,
// which stats() files by reason only at Finish (live's per-interval count reads this).
TEST(RequestMatcherDeviceTest, UnpairedEventsAreCountedAsTheyCome) {
  RecordingSink sink;
  RequestMatcher m(MatcherOptions{}, &sink);
  auto by_reason = [&m] {
    uint64_t n = m.stats().completes_without_issue + m.stats().requeues_unmatched;
    for (uint64_t v : m.stats().issues_without_insert) n += v;
    return n;
  };
  for (const BlockEvent& e : std::vector<BlockEvent>{
           Issue(1, 64, 8, "W"),                                  // issue without insert
           Complete(2, 500, 8, "W"),                              // complete without issue
           Ev(BlockEventKind::kRequeue, 3, 600, 8, "W", kLoop0),  // requeue unmatched
           Ev(BlockEventKind::kIssue, 4, 0, 0, "FF", kLoop0),     // a flush issued, no insert
           Insert(5, 128, 8, "W"), Issue(6, 128, 8, "W"), Complete(7, 128, 8, "W"),
       }) {
    m.OnEvent(e);
  }
  EXPECT_EQ(m.unpaired_events(), 4u);
  EXPECT_EQ(by_reason(), 3u);  // the device's issue without an insert is not filed yet
  m.Finish();
  EXPECT_EQ(m.unpaired_events(), 4u);
  EXPECT_EQ(by_reason(), 4u);
}

TEST_F(RequestMatcherTest, MergedRequestDisappears) {
  // Request B (sector 108) is merged into A (sector 100): block_rq_merge traces B.
  Feed({Insert(0, 100), Insert(5, 108), Ev(BlockEventKind::kMerge, 7, 108, 8, "W"),
        Issue(10, 100, 16), Complete(50, 100, 16), Ev(BlockEventKind::kMerge, 60, 999, 8, "W")});
  matcher_.Finish();
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.merges, 1u);
  EXPECT_EQ(s.merges_unmatched, 1u);
  EXPECT_EQ(sink_.Latencies(Phase::kI2D), std::vector<uint64_t>{10});
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), std::vector<uint64_t>{40});
  EXPECT_EQ(sink_.samples.back().sample.nr_sector, 16u);  // the size at issue
  for (uint64_t n : s.in_flight_at_end) EXPECT_EQ(n, 0u);  // B is not left behind
}

TEST_F(RequestMatcherTest, PartialCompletionsMakeOneSampleAtTheFinalCompletion) {
  Feed({Insert(0, 1000, 24), Issue(10, 1000, 24), Complete(50, 1000, 8),
        Complete(70, 1008, 8), Complete(90, 1016, 8)});
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), std::vector<uint64_t>{80});
  EXPECT_EQ(sink_.Latencies(Phase::kI2C), std::vector<uint64_t>{90});
  EXPECT_EQ(sink_.samples.back().sample.nr_sector, 24u);
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.partial_completions, 2u);
  EXPECT_EQ(s.completes_without_issue, 0u);
  for (uint64_t n : s.in_flight_at_end) EXPECT_EQ(n, 0u);
}

TEST_F(RequestMatcherTest, PartialCompletionLeavesTheRestInFlight) {
  Feed({Issue(10, 1000, 16), Complete(50, 1000, 8)});
  matcher_.Finish();
  EXPECT_TRUE(sink_.samples.empty());
  EXPECT_EQ(matcher_.stats().in_flight_at_end[static_cast<int>(RequestState::kIssued)], 1u);
}

TEST_F(RequestMatcherTest, SecondInsertOnALiveKeyIsACollision) {
  Feed({Insert(0, 64), Insert(10, 64), Issue(15, 64), Complete(20, 64)});
  matcher_.Finish();
  EXPECT_EQ(matcher_.stats().collisions, 1u);
  // The newer insert wins.
  EXPECT_EQ(sink_.Latencies(Phase::kI2D), std::vector<uint64_t>{5});
  EXPECT_EQ(sink_.Latencies(Phase::kI2C), std::vector<uint64_t>{10});
}

TEST_F(RequestMatcherTest, AReadAndAWriteInFlightAtOneSectorArePairedBySizeAndOp) {
  // fio randrw with 4k reads and 16k writes on one file, scheduler none: a write issued at the
  // sector of a read still in flight. Completions in either order.
  Feed({Issue(0, 64, 8, "R"), Issue(5, 64, 32, "W"), Complete(20, 64, 8, "R"),
        Complete(30, 64, 32, "W"),
        Issue(100, 64, 8, "R"), Issue(105, 64, 32, "W"), Complete(110, 64, 32, "W"),
        Complete(150, 64, 8, "R")});
  matcher_.Finish();
  ASSERT_EQ(sink_.samples.size(), 4u);
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), (std::vector<uint64_t>{20, 25, 5, 50}));
  EXPECT_EQ(sink_.samples[0].sample.op, BlockOp::kRead);
  EXPECT_EQ(sink_.samples[1].sample.op, BlockOp::kWrite);
  EXPECT_EQ(sink_.samples[2].sample.op, BlockOp::kWrite);
  EXPECT_EQ(sink_.samples[3].sample.op, BlockOp::kRead);
  EXPECT_EQ(sink_.samples[3].sample.nr_sector, 8u);
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.overlapping, 2u);
  EXPECT_EQ(s.collisions, 0u);
  EXPECT_EQ(s.partial_completions, 0u);
  EXPECT_EQ(s.completes_without_issue, 0u);
  for (uint64_t n : s.in_flight_at_end) EXPECT_EQ(n, 0u);
}

TEST_F(RequestMatcherTest, ARequestKeptApartKeepsItsInsertAndQueueTimes) {
  // mq-deadline: the write is inserted while the read at its sector is in flight.
  Feed({Ev(BlockEventKind::kBioQueue, 0, 64, 8, "R"), Insert(1, 64, 8, "R"),
        Issue(2, 64, 8, "R"), Ev(BlockEventKind::kBioQueue, 3, 64, 32, "W"),
        Insert(4, 64, 32, "W"), Issue(6, 64, 32, "W"), Complete(10, 64, 8, "R"),
        Complete(16, 64, 32, "W")});
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kI2D), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(sink_.Latencies(Phase::kQ2D), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), (std::vector<uint64_t>{8, 10}));
  EXPECT_EQ(sink_.Latencies(Phase::kI2C), (std::vector<uint64_t>{9, 12}));
  EXPECT_EQ(sink_.Latencies(Phase::kQ2C), (std::vector<uint64_t>{10, 13}));
  EXPECT_EQ(matcher_.stats().overlapping, 1u);
  EXPECT_EQ(matcher_.stats().collisions, 0u);
}

TEST_F(RequestMatcherTest, RequestsKeptApartAreBoundedAndLeftInFlightAtTheEnd) {
  // Issues at one sector and nothing completes (lost completions): kept apart until the room
  // is used up, given up as collisions after that; at the end the kept ones are in flight.
  const int n = 600;
  for (int i = 0; i < n; ++i) {
    matcher_.OnEvent(Issue(10 * static_cast<uint64_t>(i), 64, 8 + 8 * (i % 2), "R"));
  }
  matcher_.Finish();
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.overlapping, 256u);
  EXPECT_EQ(s.collisions, static_cast<uint64_t>(n - 1 - 256));
  EXPECT_EQ(s.in_flight_at_end[static_cast<int>(RequestState::kIssued)], 257u);
  EXPECT_TRUE(sink_.Latencies(Phase::kD2C).empty());
}

TEST(RequestMatcherCombineTest, RequestsKeptApartSendTheirIssuePhasesOnce) {
  const std::vector<BlockEvent> events = {
      Insert(1, 64, 8, "R"),  Issue(2, 64, 8, "R"),    Insert(4, 64, 32, "W"),
      Issue(6, 64, 32, "W"),  Complete(10, 64, 8, "R"), Complete(16, 64, 32, "W"),
      Insert(20, 64, 8, "R"), Issue(22, 64, 8, "R"),    Issue(23, 64, 16, "R")};  // in flight
  for (bool combine : {false, true}) {
    SCOPED_TRACE(combine);
    MatcherOptions o;
    o.combine_samples = combine;
    RecordingSink sink;
    RequestMatcher m(o, &sink);
    for (const BlockEvent& e : events) m.OnEvent(e);
    m.Finish();
    std::vector<uint64_t> i2d = sink.Latencies(Phase::kI2D);
    std::sort(i2d.begin(), i2d.end());
    EXPECT_EQ(i2d, (std::vector<uint64_t>{1, 2, 2}));
    EXPECT_EQ(sink.Latencies(Phase::kD2C), (std::vector<uint64_t>{8, 10}));
    EXPECT_EQ(m.stats().overlapping, 2u);
    EXPECT_EQ(m.stats().in_flight_at_end[static_cast<int>(RequestState::kIssued)], 2u);
  }
}

TEST_F(RequestMatcherTest, SecondIssueWithoutCompletionKeepsTheFirstApartAndPairsTheLatest) {
  // The first completion was lost: the second issue starts a new request on the key, which
  // takes the completion; the first is kept apart and left in flight.
  Feed({Insert(0, 64), Issue(5, 64), Issue(100, 64), Complete(130, 64)});
  matcher_.Finish();
  EXPECT_EQ(matcher_.stats().collisions, 0u);
  EXPECT_EQ(matcher_.stats().overlapping, 1u);
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), std::vector<uint64_t>{30});
  EXPECT_EQ(sink_.Latencies(Phase::kI2C).size(), 0u);
  EXPECT_EQ(matcher_.stats().in_flight_at_end[static_cast<int>(RequestState::kIssued)], 1u);
}

TEST_F(RequestMatcherTest, TwoReadsOfOneBlockInFlightAreBothPaired) {
  // fio --norandommap: the same block read twice at once. Both completions are used, the
  // latest issued request taking the first (the pair of latencies may be swapped; their sum and
  // the count are right).
  Feed({Issue(0, 64, 8, "R"), Issue(5, 64, 8, "R"), Complete(20, 64, 8, "R"),
        Complete(30, 64, 8, "R")});
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), (std::vector<uint64_t>{15, 30}));
  EXPECT_EQ(matcher_.stats().overlapping, 1u);
  EXPECT_EQ(matcher_.stats().collisions, 0u);
  EXPECT_EQ(matcher_.stats().completes_without_issue, 0u);
  for (uint64_t n : matcher_.stats().in_flight_at_end) EXPECT_EQ(n, 0u);
}

TEST_F(RequestMatcherTest, CompletionWithoutIssueIsCountedAndInsertedOnlyGivesI2C) {
  Feed({Complete(5, 4096), Insert(10, 64), Complete(40, 64)});
  matcher_.Finish();
  EXPECT_EQ(matcher_.stats().completes_without_issue, 2u);
  EXPECT_TRUE(sink_.Latencies(Phase::kD2C).empty());
  EXPECT_EQ(sink_.Latencies(Phase::kI2C), std::vector<uint64_t>{30});
}

TEST_F(RequestMatcherTest, InFlightAtEndIsCountedByState) {
  Feed({Insert(0, 8), Insert(1, 16), Issue(2, 16), Issue(3, 24), Insert(4, 32), Issue(5, 32),
        Ev(BlockEventKind::kRequeue, 6, 32, 8, "W")});
  matcher_.Finish();
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.in_flight_at_end[static_cast<int>(RequestState::kInserted)], 1u);
  EXPECT_EQ(s.in_flight_at_end[static_cast<int>(RequestState::kIssued)], 2u);
  EXPECT_EQ(s.in_flight_at_end[static_cast<int>(RequestState::kRequeued)], 1u);
  EXPECT_EQ(matcher_.tracked(), 0u);
}

TEST(RequestMatcherBoundsTest, ExpiresIdleEntriesByTraceTime) {
  RecordingSink sink;
  MatcherOptions o;
  o.expiry_ns = 1'000'000'000;
  RequestMatcher m(o, &sink);
  m.OnEvent(Insert(0, 8));
  m.OnEvent(Insert(100, 16));
  m.OnEvent(Issue(200, 16));      // issued, never completed
  m.OnEvent(Insert(900'000'000, 24));
  // 1.5 s later the first two have been idle past the expiry; the third has not.
  m.OnEvent(Insert(1'500'000'000, 32));
  const MatchStats& s = m.stats();
  EXPECT_EQ(s.expired[static_cast<int>(RequestState::kInserted)], 1u);
  EXPECT_EQ(s.expired[static_cast<int>(RequestState::kIssued)], 1u);
  EXPECT_EQ(m.tracked(), 2u);
  // An expired request's late completion is not paired with anything.
  m.OnEvent(Complete(1'600'000'000, 16));
  EXPECT_EQ(m.stats().completes_without_issue, 1u);
  m.Finish();
  EXPECT_EQ(m.stats().in_flight_at_end[static_cast<int>(RequestState::kInserted)], 2u);
}

TEST(RequestMatcherBoundsTest, EvictsTheOldestWhenTheTableIsFull) {
  RecordingSink sink;
  MatcherOptions o;
  o.max_entries = 16;
  RequestMatcher m(o, &sink);
  for (uint64_t i = 0; i < 20; ++i) m.OnEvent(Insert(i, i * 8));
  EXPECT_EQ(m.tracked(), 16u);
  EXPECT_EQ(m.stats().evicted[static_cast<int>(RequestState::kInserted)], 4u);
  // The four oldest (sectors 0..24) are gone, the newest are still paired.
  m.OnEvent(Issue(100, 0));
  m.OnEvent(Issue(101, 19 * 8));
  EXPECT_EQ(sink.Latencies(Phase::kI2D), std::vector<uint64_t>{101 - 19});
  m.Finish();
  EXPECT_EQ(m.stats().issues_without_insert[static_cast<int>(NoInsertReason::kInsertMissing)], 1u);
}

TEST(RequestMatcherBoundsTest, StaleFlushesExpireSoTheFifoDoesNotShift) {
  RecordingSink sink;
  MatcherOptions o;
  o.expiry_ns = 1'000'000'000;
  RequestMatcher m(o, &sink);
  m.OnEvent(Issue(0, 0, 0, "FF"));  // its completion is lost
  m.OnEvent(Issue(5'000'000'000, 0, 0, "FF"));
  m.OnEvent(Complete(5'000'000'300, kFlushSector, 0, "FF"));
  EXPECT_EQ(sink.Latencies(Phase::kD2C), std::vector<uint64_t>{300});
  EXPECT_EQ(m.stats().expired[static_cast<int>(RequestState::kIssued)], 1u);
}

TEST_F(RequestMatcherTest, BioQueueGivesQ2DAndQ2C) {
  Feed({Ev(BlockEventKind::kBioQueue, 0, 64, 8, "W"), Insert(3, 64), Issue(10, 64),
        Complete(30, 64)});
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kQ2D), std::vector<uint64_t>{10});
  EXPECT_EQ(sink_.Latencies(Phase::kQ2C), std::vector<uint64_t>{30});
  EXPECT_EQ(sink_.Latencies(Phase::kI2D), std::vector<uint64_t>{7});
}

TEST_F(RequestMatcherTest, BioQueueWithoutInsertStillGivesQ2D) {
  Feed({Ev(BlockEventKind::kBioQueue, 0, 64, 8, "R"), Issue(4, 64, 8, "R"),
        Complete(9, 64, 8, "R")});
  matcher_.Finish();
  EXPECT_EQ(sink_.Latencies(Phase::kQ2D), std::vector<uint64_t>{4});
  EXPECT_EQ(sink_.Latencies(Phase::kQ2C), std::vector<uint64_t>{9});
  EXPECT_TRUE(sink_.Latencies(Phase::kI2D).empty());
  EXPECT_EQ(matcher_.stats().issues_without_insert[static_cast<int>(
                NoInsertReason::kNoInsertOnDevice)],
            1u);
}

TEST_F(RequestMatcherTest, BioMergesMoveOrDropQueueEntries) {
  Feed({
      Ev(BlockEventKind::kBioQueue, 0, 100, 8, "W"),
      Insert(1, 100),
      Ev(BlockEventKind::kBioQueue, 2, 108, 8, "W"),
      Ev(BlockEventKind::kBioBackMerge, 3, 108, 8, "W"),  // joins the request at 100
      Ev(BlockEventKind::kBioQueue, 4, 92, 8, "W"),
      Ev(BlockEventKind::kBioFrontMerge, 5, 92, 8, "W"),  // request now starts at 92
      Issue(10, 92, 24),
      Complete(40, 92, 24),
  });
  matcher_.Finish();
  const MatchStats& s = matcher_.stats();
  EXPECT_EQ(s.bio_back_merges, 1u);
  EXPECT_EQ(s.bio_front_merges, 1u);
  EXPECT_EQ(sink_.Latencies(Phase::kI2D), std::vector<uint64_t>{9});
  EXPECT_EQ(sink_.Latencies(Phase::kQ2C), std::vector<uint64_t>{40});  // the first bio's queue
  EXPECT_EQ(s.completes_without_issue, 0u);
  for (uint64_t n : s.in_flight_at_end) EXPECT_EQ(n, 0u);
}

TEST_F(RequestMatcherTest, EndBeforeStartIsDroppedAndCounted) {
  Feed({Insert(100, 8), Issue(50, 8), Complete(200, 8)});
  matcher_.Finish();
  EXPECT_TRUE(sink_.Latencies(Phase::kI2D).empty());
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), std::vector<uint64_t>{150});
  EXPECT_EQ(matcher_.stats().negative_latency, 1u);
}

TEST_F(RequestMatcherTest, SampleCarriesTheInsertingAndIssuingProcess) {
  BlockEvent insert = Ev(BlockEventKind::kInsert, 0, 8, 8, "R", kLoop0, 0, 321, "postgres");
  BlockEvent issue = Ev(BlockEventKind::kIssue, 5, 8, 8, "R", kLoop0, 1, 77, "kworker/1:1H");
  Feed({insert, issue, Complete(9, 8, 8, "R")});
  ASSERT_EQ(sink_.samples.size(), 2u);
  const Recorded& last = sink_.samples.back();
  EXPECT_EQ(last.sample.insert_pid, 321);
  EXPECT_EQ(last.insert_comm, "postgres");
  EXPECT_EQ(last.sample.issue_pid, 77);
  EXPECT_EQ(last.issue_comm, "kworker/1:1H");
  EXPECT_EQ(last.sample.op, BlockOp::kRead);
}

TEST_F(RequestMatcherTest, CompletionErrorsAreCountedAndStillSampled) {
  BlockEvent c = Complete(9, 8);
  c.error = -5;
  Feed({Issue(1, 8), c});
  EXPECT_EQ(matcher_.stats().completion_errors, 1u);
  EXPECT_EQ(sink_.Latencies(Phase::kD2C), std::vector<uint64_t>{8});
}

}  // namespace
}  // namespace iotrace

namespace iotrace {
namespace {

// Every (dev, op, phase, latency) a sink received, as a sorted list: what a histogram keeps.
std::vector<std::tuple<uint32_t, int, int, uint64_t>> PhaseValues(const RecordingSink& sink) {
  std::vector<std::tuple<uint32_t, int, int, uint64_t>> out;
  for (const Recorded& r : sink.samples) {
    for (int p = 0; p < kPhaseCount; ++p) {
      const Phase phase = static_cast<Phase>(p);
      if (r.sample.Has(phase)) {
        out.emplace_back(r.sample.dev, static_cast<int>(r.sample.op), p, r.sample.Latency(phase));
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// combine_samples only regroups phases: on a stream with requeues (also with a different op on
// the second issue), collisions, merges, partial completions, bio queues, flushes, expiry,
// eviction and requests left in flight, the phases, their latencies and every counter are those
// of one sample per stage, and there are fewer samples.
TEST(RequestMatcherCombineTest, CombinedSamplesCarryTheSamePhasesAndCounters) {
  std::vector<BlockEvent> events;
  uint64_t ts = 1000;
  for (uint64_t i = 0; i < 3000; ++i) {
    const uint32_t dev = i % 3 == 0 ? kVda : kLoop0;
    // Sectors come back, and the request after one that never completes takes its sector:
    // collisions.
    const uint64_t sector = ((i % 13 == 1 ? i - 1 : i) % 200) * 64;
    const char* rwbs = i % 4 == 0 ? "R" : "WS";
    if (i % 5 == 0) events.push_back(Ev(BlockEventKind::kBioQueue, ts, sector, 8, rwbs, dev));
    if (i % 9 != 0) events.push_back(Insert(ts + 2, sector, 8, rwbs, dev));
    if (i % 31 == 0) {
      events.push_back(Ev(BlockEventKind::kMerge, ts + 3, sector, 8, rwbs, dev));
      ts += 100;
      continue;
    }
    if (i % 37 == 0) continue;  // inserted, never issued
    events.push_back(Issue(ts + 5 + i % 7, sector, 8, rwbs, dev));
    if (i % 11 == 0) {
      events.push_back(Ev(BlockEventKind::kRequeue, ts + 20, sector, 8, rwbs, dev));
      events.push_back(Issue(ts + 25, sector, 8, i % 22 == 0 ? "R" : rwbs, dev));
    }
    if (i % 13 == 0) {
      ts += 100;
      continue;  // never completes (collides later, expires, is evicted or stays in flight)
    }
    if (i % 6 == 0) {
      events.push_back(Complete(ts + 40, sector, 4, rwbs, dev));
      events.push_back(Complete(ts + 50 + i % 17, sector + 4, 4, rwbs, dev));
    } else {
      events.push_back(Complete(ts + 50 + i % 23, sector, 8, rwbs, dev));
    }
    if (i % 41 == 0) {
      events.push_back(Issue(ts + 60, 0, 0, "FF", dev));
      events.push_back(Complete(ts + 70, kFlushSector, 0, "FF", dev));
    }
    ts += i % 100 == 0 ? 50'000 : 100;  // now and then a gap past the expiry
  }
  for (bool small_table : {false, true}) {
    MatcherOptions o;
    o.expiry_ns = 20'000;
    o.max_entries = small_table ? 8 : 1024;
    RecordingSink separate_sink, combined_sink;
    RequestMatcher separate(o, &separate_sink);
    o.combine_samples = true;
    RequestMatcher combined(o, &combined_sink);
    for (const BlockEvent& e : events) {
      separate.OnEvent(e);
      combined.OnEvent(e);
    }
    separate.Finish();
    combined.Finish();
    EXPECT_EQ(PhaseValues(combined_sink), PhaseValues(separate_sink));
    EXPECT_LT(combined_sink.samples.size(), separate_sink.samples.size());
    const MatchStats& a = separate.stats();
    const MatchStats& b = combined.stats();
    EXPECT_EQ(a.paired, b.paired);
    EXPECT_GT(a.paired[static_cast<int>(Phase::kQ2D)], 0u);
    EXPECT_EQ(a.negative_latency, b.negative_latency);
    EXPECT_EQ(a.collisions, b.collisions);
    EXPECT_GT(a.collisions, 0u);
    EXPECT_EQ(a.overlapping, b.overlapping);
    EXPECT_GT(a.overlapping, 0u);
    EXPECT_EQ(a.requeues, b.requeues);
    EXPECT_EQ(a.merges, b.merges);
    EXPECT_EQ(a.partial_completions, b.partial_completions);
    EXPECT_EQ(a.expired, b.expired);
    EXPECT_EQ(a.evicted, b.evicted);
    EXPECT_EQ(a.in_flight_at_end, b.in_flight_at_end);
    EXPECT_EQ(a.completes_without_issue, b.completes_without_issue);
    if (small_table) {
      EXPECT_GT(a.evicted[static_cast<int>(RequestState::kIssued)], 0u);
    } else {
      EXPECT_GT(a.expired[static_cast<int>(RequestState::kIssued)], 0u);
    }
  }
}

}  // namespace
}  // namespace iotrace
