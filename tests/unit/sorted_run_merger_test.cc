// SortedRunMerger, the time-ordering core of the perf.data reader, on toy record streams.
#include "iotrace/formats/sorted_run_merger.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

struct ToyRecord {
  ScanKind kind = ScanKind::kTimed;
  uint64_t time = 0;
  uint64_t size = 16;
  uint64_t tag = 0;  // identifies the record in the output
  uint64_t content = 0;  // with time and size: what ComparingSource compares
};

// A stream of toy records laid out back to back; checks that the merger never touches bytes it
// released and never re-scans.
class ToySource {
 public:
  struct Item {
    uint64_t time = 0;
    uint64_t tag = 0;
  };

  explicit ToySource(std::vector<ToyRecord> records) : records_(std::move(records)) {
    uint64_t pos = 0;
    for (const ToyRecord& r : records_) {
      starts_.push_back(pos);
      pos += r.size;
    }
    end_ = pos;
  }

  uint64_t end() const { return end_; }

  ScanKind Scan(uint64_t pos, uint64_t* next, uint64_t* time) {
    size_t i = IndexOf(pos);
    EXPECT_EQ(i, scanned_) << "records must be scanned once, in order";
    ++scanned_;
    const ToyRecord& r = records_[i];
    *next = pos + r.size;
    if (r.kind == ScanKind::kStop) return ScanKind::kStop;
    *time = r.time;
    return r.kind;
  }

  bool Peek(uint64_t pos, uint64_t* next, Item* item) {
    EXPECT_GE(pos, released_) << "peeked at released bytes";
    const ToyRecord& r = records_[IndexOf(pos)];
    EXPECT_NE(r.kind, ScanKind::kSkip) << "a skipped record visited at " << pos;
    *next = pos + r.size;
    item->time = r.time;
    item->tag = r.tag;
    return r.kind == ScanKind::kTimed;
  }

  // The merger may skip Peek's checks only on records Scan timed.
  void PeekTimed(uint64_t pos, uint64_t* next, Item* item) {
    EXPECT_EQ(records_[IndexOf(pos)].kind, ScanKind::kTimed) << "PeekTimed on an untimed record";
    EXPECT_TRUE(Peek(pos, next, item));
    ++timed_peeks;
  }

  void Emit(const Item& item, bool out_of_order) {
    EXPECT_FALSE(stopped_) << "emitted after the source stopped";
    if (scanned_ < records_.size()) ++emitted_mid_scan;
    out.push_back(item);
    flags.push_back(out_of_order);
    stopped_ = item.time >= stop_at;
  }
  bool Stopped() const { return stopped_; }

  void Release(uint64_t below) {
    EXPECT_GE(below, released_) << "release went backwards";
    released_ = below;
    ++releases;
  }

  const ToyRecord& RecordAt(uint64_t pos) const { return records_[IndexOf(pos)]; }
  uint64_t released() const { return released_; }

  std::vector<Item> out;
  std::vector<bool> flags;
  uint64_t stop_at = ~uint64_t{0};  // the first record emitted at or after it stops the source
  int emitted_mid_scan = 0;         // records emitted before the last one was scanned
  int releases = 0;
  int timed_peeks = 0;

 private:
  size_t IndexOf(uint64_t pos) const {
    auto it = std::lower_bound(starts_.begin(), starts_.end(), pos);
    EXPECT_TRUE(it != starts_.end() && *it == pos) << "not a record start: " << pos;
    return static_cast<size_t>(it - starts_.begin());
  }

  std::vector<ToyRecord> records_;
  std::vector<uint64_t> starts_;
  uint64_t end_ = 0;
  size_t scanned_ = 0;
  uint64_t released_ = 0;
  bool stopped_ = false;
};

// The timed records of `records` in stable time order.
std::vector<uint64_t> StableOrder(const std::vector<ToyRecord>& records) {
  std::vector<ToyRecord> timed;
  for (const ToyRecord& r : records) {
    if (r.kind == ScanKind::kStop) break;
    if (r.kind == ScanKind::kTimed) timed.push_back(r);
  }
  std::stable_sort(timed.begin(), timed.end(),
                   [](const ToyRecord& a, const ToyRecord& b) { return a.time < b.time; });
  std::vector<uint64_t> tags;
  for (const ToyRecord& r : timed) tags.push_back(r.tag);
  return tags;
}

std::vector<uint64_t> Tags(const ToySource& s) {
  std::vector<uint64_t> tags;
  for (const auto& i : s.out) tags.push_back(i.tag);
  return tags;
}

// The tags `records` come out in, and the counters, merged with round marks at `round_lag`.
struct Merged {
  std::vector<uint64_t> tags;
  MergeCounters counters;
};
Merged MergeWithRoundLag(const std::vector<ToyRecord>& records, int round_lag) {
  ToySource source(records);
  MergeLimits limits;
  limits.round_lag = round_lag;
  SortedRunMerger<ToySource> merger(&source, 0, source.end(), limits);
  merger.Run();
  return {Tags(source), merger.counters()};
}

// Concatenated sorted runs of random lengths (ties included), with untimed records mixed in.
std::vector<ToyRecord> RandomRuns(std::mt19937* rng, int runs, uint64_t max_time) {
  std::vector<ToyRecord> records;
  uint64_t tag = 0;
  for (int r = 0; r < runs; ++r) {
    const int n = 1 + (*rng)() % 40;
    std::vector<uint64_t> times;
    for (int i = 0; i < n; ++i) times.push_back((*rng)() % max_time);
    std::sort(times.begin(), times.end());
    for (uint64_t t : times) {
      if ((*rng)() % 5 == 0) records.push_back({ScanKind::kUntimed, 0, 24, 0});
      records.push_back({ScanKind::kTimed, t, 8 + 8 * ((*rng)() % 4), ++tag});
    }
  }
  return records;
}

TEST(SortedRunMergerTest, MergesRandomRunsLikeAStableSort) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ToyRecord> records = RandomRuns(&rng, 1 + trial % 30, 1 + rng() % 1000);
    ToySource source(records);
    SortedRunMerger<ToySource> merger(&source, 0, source.end());
    merger.Run();
    ASSERT_EQ(Tags(source), StableOrder(records)) << "trial " << trial;
    EXPECT_EQ(merger.counters().out_of_order, 0u);
    EXPECT_GT(source.timed_peeks, 0) << "trial " << trial;
  }
}

// Records the source skips (a time range's reader passing over what lies before its start)
// are neither emitted nor visited again (ToySource::Peek checks), and the others still come
// out in stable time order: skipped as a range skips them (each run's earlier records), and at
// random, inside runs.
TEST(SortedRunMergerTest, SkippedRecordsAreLeftOutOfTheMerge) {
  std::mt19937 rng(11);
  size_t skipped = 0, emitted = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ToyRecord> records = RandomRuns(&rng, 1 + trial % 30, 1000);
    const uint64_t from = rng() % 1000;
    for (ToyRecord& r : records) {
      const bool skip = trial % 2 == 0 ? r.time < from : rng() % 3 == 0;
      if (r.kind == ScanKind::kTimed && skip) {
        r.kind = ScanKind::kSkip;
        ++skipped;
      }
    }
    ToySource source(records);
    SortedRunMerger<ToySource> merger(&source, 0, source.end());
    merger.Run();
    ASSERT_EQ(Tags(source), StableOrder(records)) << "trial " << trial;
    EXPECT_EQ(merger.counters().out_of_order, 0u);
    EXPECT_EQ(source.released(), source.end());
    emitted += source.out.size();
  }
  EXPECT_GT(skipped, 2000u);
  EXPECT_GT(emitted, 2000u);
}

// A source that stops (a time range's reader at its end) ends the merge at once: nothing is
// emitted after the record that stopped it, which is the first at or after its time.
TEST(SortedRunMergerTest, AStoppedSourceEndsTheMerge) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<ToyRecord> records = RandomRuns(&rng, 1 + trial % 30, 1000);
    ToySource source(records);
    source.stop_at = rng() % 1000;
    SortedRunMerger<ToySource> merger(&source, 0, source.end());
    merger.Run();
    std::vector<uint64_t> want = StableOrder(records);
    std::map<uint64_t, uint64_t> time_of;
    for (const ToyRecord& r : records) time_of[r.tag] = r.time;
    const auto first_after = std::find_if(
        want.begin(), want.end(), [&](uint64_t tag) { return time_of[tag] >= source.stop_at; });
    want.erase(first_after == want.end() ? want.end() : first_after + 1, want.end());
    ASSERT_EQ(Tags(source), want) << "trial " << trial;
    EXPECT_EQ(merger.counters().emitted, want.size());
  }
}

// The same, while records are emitted in the middle of the scan (round marks make them final):
// CPUs drained in turn each round, as perf writes them, a skip closing runs whose cursors the
// scan caught up with, and the source stopping anywhere.
TEST(SortedRunMergerTest, SkipsAndAStopInTheMiddleOfTheScan) {
  std::mt19937 rng(17);
  int mid_scan = 0;
  for (int trial = 0; trial < 100; ++trial) {
    const int cpus = 1 + trial % 9;
    std::vector<ToyRecord> records;
    uint64_t tag = 0;
    for (uint64_t round = 1; round <= 40; ++round) {
      for (int cpu = 0; cpu < cpus; ++cpu) {
        const uint64_t from = round * 100 - 30 + static_cast<uint64_t>(cpu) * 5;
        for (uint64_t t = from; t < from + 100; t += 3 + rng() % 9) {
          records.push_back({ScanKind::kTimed, t, 8 + 8 * (rng() % 3), ++tag});
        }
      }
      records.push_back({ScanKind::kRoundEnd, 0, 8, 0});
    }
    const uint64_t skip_below = rng() % 4200;
    for (ToyRecord& r : records) {
      const bool skip = trial % 2 == 0 ? r.time < skip_below : rng() % 4 == 0;
      if (r.kind == ScanKind::kTimed && skip) r.kind = ScanKind::kSkip;
    }
    ToySource source(records);
    if (trial % 3 != 0) source.stop_at = rng() % 4200;
    SortedRunMerger<ToySource> merger(&source, 0, source.end());
    merger.Run();
    std::vector<uint64_t> want = StableOrder(records);
    std::map<uint64_t, uint64_t> time_of;
    for (const ToyRecord& r : records) time_of[r.tag] = r.time;
    const auto first_after = std::find_if(want.begin(), want.end(),
                                          [&](uint64_t t) { return time_of[t] >= source.stop_at; });
    want.erase(first_after == want.end() ? want.end() : first_after + 1, want.end());
    ASSERT_EQ(Tags(source), want) << "trial " << trial;
    EXPECT_EQ(merger.counters().out_of_order, 0u) << "trial " << trial;
    mid_scan += source.emitted_mid_scan;
  }
  EXPECT_GT(mid_scan, 10000);
}

TEST(SortedRunMergerTest, RoundMarksMakeEarlierRoundsFinal) {
  // Two CPUs drained one after the other each round: a round's CPU-0 records can be older than
  // the previous round's CPU-1 records, but never older than the round before that.
  std::vector<ToyRecord> records;
  uint64_t tag = 0;
  for (int round = 0; round < 50; ++round) {
    for (int cpu = 0; cpu < 2; ++cpu) {
      const uint64_t from = round * 100 + cpu * 30 - (cpu == 0 && round > 0 ? 30 : 0);
      for (uint64_t t = from; t < from + 100; t += 7) {
        records.push_back({ScanKind::kTimed, t, 16, ++tag});
      }
    }
    records.push_back({ScanKind::kRoundEnd, 0, 8, 0});
  }
  ToySource source(records);
  SortedRunMerger<ToySource> merger(&source, 0, source.end());
  merger.Run();
  EXPECT_EQ(Tags(source), StableOrder(records));
  EXPECT_EQ(merger.counters().out_of_order, 0u);
  EXPECT_EQ(merger.counters().forced, 0u);
  EXPECT_EQ(merger.counters().runs, 100u);
  // The whole stream fits the default window: only the round marks can retire runs this early.
  EXPECT_LE(merger.counters().max_live_runs, 6u) << "rounds must retire old runs";
}

TEST(SortedRunMergerTest, RoundLagToleratesRecordsWrittenARoundLate) {
  // Rounds of one record each, then a record that belongs two rounds back.
  std::vector<ToyRecord> records;
  for (uint64_t r = 1; r <= 6; ++r) {
    records.push_back({ScanKind::kTimed, r * 100, 16, r});
    records.push_back({ScanKind::kRoundEnd, 0, 8, 0});
  }
  records.push_back({ScanKind::kTimed, 450, 16, 99});  // older than round 5's record
  records.push_back({ScanKind::kRoundEnd, 0, 8, 0});
  for (int lag : {1, 2, 3}) {
    const Merged m = MergeWithRoundLag(records, lag);
    EXPECT_EQ(m.tags.size(), 7u);
    // perf's rule (lag 1) has made round 5 final by then; a lag of 2 still holds it.
    EXPECT_EQ(m.counters.out_of_order, lag == 1 ? 1u : 0u) << "lag " << lag;
  }
}

// A round mark makes final what was seen before the mark before it, the largest time of every
// run included: here that of a run the next CPU's drain closed (500), not only the open run's.
TEST(SortedRunMergerTest, RoundLimitsCountTheLargestTimeOfClosedRuns) {
  std::vector<ToyRecord> records = {
      {ScanKind::kTimed, 100, 16, 1}, {ScanKind::kTimed, 500, 16, 2},  // CPU A's drain
      {ScanKind::kTimed, 200, 16, 3}, {ScanKind::kTimed, 300, 16, 4},  // CPU B's
      {ScanKind::kRoundEnd, 0, 8, 0},
      {ScanKind::kTimed, 600, 16, 5},
      {ScanKind::kRoundEnd, 0, 8, 0},  // perf's rule: everything up to 500 is final
      {ScanKind::kTimed, 400, 16, 6},  // written a round late
      {ScanKind::kRoundEnd, 0, 8, 0},
  };
  const Merged m = MergeWithRoundLag(records, 1);
  EXPECT_EQ(m.tags, (std::vector<uint64_t>{1, 3, 4, 2, 6, 5}));
  EXPECT_EQ(m.counters.out_of_order, 1u);  // 400 after 500, as perf would deliver it
}

// EmitTop goes on with the run that takes the lead only when that run's record is final: here
// Y's 20 is above the round limit (8) when X hands over, and 15, scanned later, comes before it.
TEST(SortedRunMergerTest, ANewLeaderAboveTheRoundLimitWaitsForTheScan) {
  std::vector<ToyRecord> records = {
      {ScanKind::kTimed, 5, 16, 1}, {ScanKind::kTimed, 8, 16, 2},
      {ScanKind::kRoundEnd, 0, 8, 0},
      {ScanKind::kTimed, 30, 16, 3},  // X goes on
      {ScanKind::kTimed, 20, 16, 4},  // Y
      {ScanKind::kRoundEnd, 0, 8, 0},  // limit 8
      {ScanKind::kTimed, 15, 16, 5},
      {ScanKind::kRoundEnd, 0, 8, 0},
  };
  const Merged m = MergeWithRoundLag(records, 1);
  EXPECT_EQ(m.tags, (std::vector<uint64_t>{1, 2, 5, 4, 3}));
  EXPECT_EQ(m.counters.out_of_order, 0u);
}

TEST(SortedRunMergerTest, WindowEmitsRecordsOnceEnoughFollowThem) {
  std::mt19937 rng(3);
  std::vector<ToyRecord> records = RandomRuns(&rng, 50, 100000);
  ToySource source(records);
  MergeLimits limits;
  limits.window_records = 5;
  limits.window_bytes = 1 << 30;
  SortedRunMerger<ToySource> merger(&source, 0, source.end(), limits);
  merger.Run();
  // Every record comes out exactly once; those behind the running maximum are flagged.
  std::vector<uint64_t> got = Tags(source), want = StableOrder(records);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  uint64_t max = 0, behind = 0;
  for (size_t i = 0; i < source.out.size(); ++i) {
    const bool is_behind = source.out[i].time < max;
    EXPECT_EQ(source.flags[i], is_behind) << i;
    behind += is_behind;
    max = std::max(max, source.out[i].time);
  }
  EXPECT_GT(behind, 0u);
  EXPECT_EQ(merger.counters().out_of_order, behind);
}

TEST(SortedRunMergerTest, RunCapForcesEmissionAndKeepsEveryRecord) {
  // Strictly decreasing times: every record is a run of its own.
  std::vector<ToyRecord> records;
  for (uint64_t i = 0; i < 1000; ++i) records.push_back({ScanKind::kTimed, 5000 - i, 16, i + 1});
  ToySource source(records);
  MergeLimits limits;
  limits.max_runs = 8;
  SortedRunMerger<ToySource> merger(&source, 0, source.end(), limits);
  merger.Run();
  EXPECT_EQ(source.out.size(), 1000u);
  EXPECT_LE(merger.counters().max_live_runs, 8u);
  EXPECT_GT(merger.counters().forced, 0u);
  EXPECT_GT(merger.counters().out_of_order, 0u);
  // The run ring grew past its initial size and still kept the tree right.
  std::vector<ToyRecord> many;
  for (uint64_t i = 0; i < 300; ++i) many.push_back({ScanKind::kTimed, 300 - i, 16, i + 1});
  ToySource s2(many);
  SortedRunMerger<ToySource> m2(&s2, 0, s2.end());
  m2.Run();
  EXPECT_EQ(Tags(s2), StableOrder(many));
  EXPECT_EQ(m2.counters().max_live_runs, 300u);
}

TEST(SortedRunMergerTest, TiesKeepFileOrderWhileTheRunRingWrapsAndGrows) {
  // Rounds of per-CPU runs over a few distinct times (ties across runs on every record), more
  // CPUs each round: runs leave the ring's front as others join at its back, so slots wrap, and
  // the ring grows while they do. Equal times must still come out in file order.
  std::mt19937 rng(11);
  std::vector<ToyRecord> records;
  uint64_t tag = 0;
  for (uint64_t round = 0; round < 12; ++round) {
    const uint64_t cpus = 2 + round * round;
    for (uint64_t cpu = 0; cpu < cpus; ++cpu) {
      std::vector<uint64_t> times;
      for (int i = 0; i < 1 + static_cast<int>(rng() % 6); ++i) times.push_back(rng() % 4);
      std::sort(times.begin(), times.end());
      for (uint64_t t : times) records.push_back({ScanKind::kTimed, 100 * round + t, 16, ++tag});
    }
    records.push_back({ScanKind::kRoundEnd, 0, 8, 0});
  }
  const Merged m = MergeWithRoundLag(records, MergeLimits{}.round_lag);
  EXPECT_EQ(m.tags, StableOrder(records));
  EXPECT_EQ(m.counters.out_of_order, 0u);
  EXPECT_GT(m.counters.max_live_runs, 64u);  // grown from 2 slots several times
}

TEST(SortedRunMergerTest, SpanCapBoundsTheBytesHeldAndReleasesBehind) {
  // One run whose first record is late, then a long run of earlier records: without a cap the
  // oldest cursor would pin everything.
  std::vector<ToyRecord> records;
  records.push_back({ScanKind::kTimed, 1000000, 16, 1});
  for (uint64_t i = 0; i < 20000; ++i) records.push_back({ScanKind::kTimed, i, 64, i + 2});
  ToySource source(records);
  MergeLimits limits;
  limits.max_span_bytes = 64 * 1024;
  limits.release_step = 4096;
  SortedRunMerger<ToySource> merger(&source, 0, source.end(), limits);
  merger.Run();
  EXPECT_EQ(source.out.size(), records.size());
  EXPECT_GT(merger.counters().forced, 0u);
  EXPECT_GT(source.releases, 10);
}

TEST(SortedRunMergerTest, StopEndsTheStreamAfterEmittingWhatCameBefore) {
  std::vector<ToyRecord> records = {{ScanKind::kTimed, 5, 16, 1},
                                    {ScanKind::kTimed, 3, 16, 2},
                                    {ScanKind::kStop, 0, 16, 0},
                                    {ScanKind::kTimed, 1, 16, 3}};
  ToySource source(records);
  SortedRunMerger<ToySource> merger(&source, 0, source.end());
  merger.Run();
  EXPECT_EQ(Tags(source), (std::vector<uint64_t>{2, 1}));
}

// Untimed records (round marks, COMM, ...) inside a run do not send the rest of it down the
// slow path: every timed record is revisited with PeekTimed, only the untimed ones with Peek.
// The stream is laid out as `perf record -a` writes it: per round, each CPU's drain, then the
// mark; a CPU's drain often goes on from the previous CPU's in time, so runs cross the marks.
TEST(SortedRunMergerTest, UntimedRecordsInsideARunKeepTheTimedOnesOnTheFastPath) {
  std::vector<ToyRecord> records;
  uint64_t tag = 0;
  for (uint64_t round = 0; round < 20; ++round) {
    for (uint64_t cpu = 0; cpu < 2; ++cpu) {
      for (uint64_t i = 0; i < 5; ++i) {
        records.push_back({ScanKind::kTimed, round * 10 + 2 * i + cpu, 16, ++tag});
        if ((tag + round) % 7 == 0) records.push_back({ScanKind::kUntimed, 0, 24, 0});  // COMM
      }
    }
    records.push_back({ScanKind::kRoundEnd, 0, 8, 0});
  }
  for (int lag : {1, 2}) {
    MergeLimits limits;
    limits.round_lag = lag;
    ToySource source(records);
    SortedRunMerger<ToySource> merger(&source, 0, source.end(), limits);
    merger.Run();
    EXPECT_EQ(Tags(source), StableOrder(records)) << "lag " << lag;
    EXPECT_EQ(source.timed_peeks, 200) << "lag " << lag;
    EXPECT_EQ(merger.counters().out_of_order, 0u);
  }
}

// Small release steps, windows and run caps with many untimed records: every timed record comes
// out once, nothing released is looked at again (ToySource checks each Peek), the untimed list is
// trimmed and compacted as cursors pass, and when nothing came out early (forced by a cap, or
// out of order past the window) the order is a stable sort.
TEST(SortedRunMergerTest, TightLimitsWithManyUntimedRecordsKeepEveryRecordAndReleaseNothingLive) {
  std::mt19937 rng(11);
  int in_order_trials = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const std::vector<ToyRecord> records = RandomRuns(&rng, 100 + trial * 5, 1000);
    MergeLimits limits;
    limits.release_step = 1 + rng() % 64;
    if (trial % 3 == 0) limits.max_runs = 2 + rng() % 4;  // forced emission
    if (trial % 3 == 1) {                                  // early emission, out of order
      limits.window_bytes = 64 + rng() % 1024;
      limits.window_records = 4 + rng() % 64;
    }
    ToySource source(records);
    SortedRunMerger<ToySource> merger(&source, 0, source.end(), limits);
    merger.Run();
    std::vector<uint64_t> got = Tags(source);
    std::vector<uint64_t> want = StableOrder(records);
    if (merger.counters().forced == 0 && merger.counters().out_of_order == 0) {
      EXPECT_EQ(got, want) << "trial " << trial;
      ++in_order_trials;
    }
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << "trial " << trial;
    EXPECT_GT(source.releases, 1) << "trial " << trial;
  }
  EXPECT_GE(in_order_trials, 20);  // every trial with the default window and run cap
}

TEST(SortedRunMergerTest, EmptyAndUntimedOnlyStreamsEmitNothing) {
  ToySource empty({});
  SortedRunMerger<ToySource> m1(&empty, 0, 0);
  m1.Run();
  EXPECT_TRUE(empty.out.empty());
  ToySource untimed({{ScanKind::kUntimed, 0, 8, 0}, {ScanKind::kRoundEnd, 0, 8, 0}});
  SortedRunMerger<ToySource> m2(&untimed, 0, untimed.end());
  m2.Run();
  EXPECT_TRUE(untimed.out.empty());
}

// A source that can compare records (as the perf.data reader does, byte for byte): equal when
// their time, size and content are.
class ComparingSource : public ToySource {
 public:
  using ToySource::ToySource;
  bool SameRecord(uint64_t a, uint64_t b) {
    EXPECT_GE(a, released()) << "compared a released record";
    EXPECT_GE(b, released()) << "compared a released record";
    ++compares;
    const ToyRecord& x = RecordAt(a);
    const ToyRecord& y = RecordAt(b);
    return x.time == y.time && x.size == y.size && x.content == y.content;
  }
  int compares = 0;
};

TEST(SortedRunMergerTest, ARecordRepeatedAtTheStartOfTheNextRunIsDroppedAndCounted) {
  // perf record's pattern here: a drain's last records written again at the start of the next
  // drain of that CPU. Records 3 and 30 repeat; 50/51 share a time but differ.
  std::vector<ToyRecord> records = {
      {ScanKind::kTimed, 10, 16, 1, 1},  {ScanKind::kTimed, 20, 16, 2, 2},
      {ScanKind::kTimed, 30, 16, 3, 3},  {ScanKind::kTimed, 30, 16, 4, 3},   // copy of 3
      {ScanKind::kTimed, 40, 16, 5, 5},  {ScanKind::kTimed, 50, 16, 6, 6},
      {ScanKind::kTimed, 5, 16, 7, 7},   {ScanKind::kTimed, 50, 16, 8, 8},   // other CPU
      {ScanKind::kTimed, 40, 16, 9, 5},  {ScanKind::kTimed, 50, 16, 10, 6},  // copies of 5, 6
      {ScanKind::kTimed, 60, 16, 11, 11},
  };
  ComparingSource source(records);
  SortedRunMerger<ComparingSource> merger(&source, 0, source.end());
  merger.Run();
  EXPECT_EQ(Tags(source), (std::vector<uint64_t>{7, 1, 2, 3, 5, 6, 8, 11}));
  EXPECT_EQ(merger.counters().duplicates, 3u);
  EXPECT_EQ(merger.counters().emitted, 8u);
  EXPECT_EQ(merger.counters().out_of_order, 0u);
  // Only records with the time of the one emitted before them are compared: 4 with 3, 9 with 5,
  // 8 with 6, 10 with 8 and then with 6.
  EXPECT_EQ(source.compares, 5);

  // A source that cannot compare records delivers every copy.
  ToySource plain(records);
  SortedRunMerger<ToySource> plain_merger(&plain, 0, plain.end());
  plain_merger.Run();
  EXPECT_EQ(plain.out.size(), records.size());
  EXPECT_EQ(plain_merger.counters().duplicates, 0u);
}

// Random runs, where time goes down (a new drain) sometimes starting with 1-3 timed records from
// before (copies: new tags, the same time, size and content). `originals`: the records without
// the copies.
std::vector<ToyRecord> RunsWithRepeatedTails(std::mt19937* rng, int trial,
                                             std::vector<ToyRecord>* originals, uint64_t* repeats) {
  *originals = RandomRuns(rng, 2 + trial % 30, 1 + (*rng)() % 1000);
  for (ToyRecord& r : *originals) r.content = r.tag;
  std::vector<ToyRecord> records;
  uint64_t next_tag = 1000000, last_time = 0;
  *repeats = 0;
  std::vector<ToyRecord> tail;  // the timed records since the last cut, at most 3
  for (const ToyRecord& r : *originals) {
    if (r.kind == ScanKind::kTimed && r.time < last_time && (*rng)() % 2 == 0) {
      const size_t n = std::min<size_t>(tail.size(), 1 + (*rng)() % 3);
      for (size_t i = tail.size() - n; i < tail.size(); ++i) {
        ToyRecord copy = tail[i];
        copy.tag = next_tag++;
        records.push_back(copy);
        ++*repeats;
      }
      tail.clear();
    }
    if (r.kind == ScanKind::kTimed) {
      if (r.time < last_time) tail.clear();
      last_time = r.time;
      tail.push_back(r);
      if (tail.size() > 3) tail.erase(tail.begin());
    }
    records.push_back(r);
  }
  return records;
}

TEST(SortedRunMergerTest, RandomRunsWithRepeatedTailsMergeLikeAStableSortOfTheOriginals) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ToyRecord> originals;
    uint64_t repeats = 0;
    std::vector<ToyRecord> records = RunsWithRepeatedTails(&rng, trial, &originals, &repeats);
    ComparingSource source(records);
    MergeLimits limits;
    limits.release_step = 16;  // release as often as possible: compared records must stay
    SortedRunMerger<ComparingSource> merger(&source, 0, source.end(), limits);
    merger.Run();
    ASSERT_EQ(Tags(source), StableOrder(originals)) << "trial " << trial;
    EXPECT_EQ(merger.counters().duplicates, repeats) << "trial " << trial;
    EXPECT_EQ(merger.counters().out_of_order, 0u);
  }
}

// As ComparingSource, and it rules repeats out cheaply (as the perf.data reader does by CPU and
// task): a record may repeat only one emitted in order with its time and its content.
class RulingOutSource : public ComparingSource {
 public:
  explicit RulingOutSource(const std::vector<ToyRecord>& records) : ComparingSource(records) {
    for (const ToyRecord& r : records) content_[r.tag] = r.content;
  }
  void Emit(const Item& item, bool out_of_order) {
    if (!out_of_order) {
      if (item.time != time_) emitted_.clear();
      time_ = item.time;
      emitted_.push_back(content_[item.tag]);
    }
    ComparingSource::Emit(item, out_of_order);
  }
  bool MayRepeat(const Item& item) {
    EXPECT_EQ(item.time, time_) << "asked of a record without the last emitted one's time";
    const bool may =
        std::find(emitted_.begin(), emitted_.end(), content_[item.tag]) != emitted_.end();
    ++(may ? maybe : ruled_out);
    return may;
  }
  int maybe = 0;
  int ruled_out = 0;

 private:
  std::map<uint64_t, uint64_t> content_;  // by tag
  uint64_t time_ = ~uint64_t{0};
  std::vector<uint64_t> emitted_;  // contents emitted in order with time_
};

TEST(SortedRunMergerTest, RepeatsRuledOutByTheSourceAreNotComparedAndTheMergeIsTheSame) {
  std::mt19937 rng(11);
  int compares = 0, compares_ruling_out = 0, ruled_out = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ToyRecord> originals;
    uint64_t repeats = 0;
    std::vector<ToyRecord> records = RunsWithRepeatedTails(&rng, trial, &originals, &repeats);
    MergeLimits limits;
    limits.release_step = 16;
    ComparingSource plain(records);
    SortedRunMerger<ComparingSource> plain_merger(&plain, 0, plain.end(), limits);
    plain_merger.Run();
    RulingOutSource source(records);
    SortedRunMerger<RulingOutSource> merger(&source, 0, source.end(), limits);
    merger.Run();
    ASSERT_EQ(Tags(source), StableOrder(originals)) << "trial " << trial;
    EXPECT_EQ(merger.counters().duplicates, repeats) << "trial " << trial;
    EXPECT_EQ(merger.counters().out_of_order, 0u);
    compares += plain.compares;
    compares_ruling_out += source.compares;
    ruled_out += source.ruled_out;
  }
  // Ties between records of other content are many with times below 1000: those are ruled out.
  EXPECT_GT(ruled_out, 100);
  EXPECT_LT(compares_ruling_out, compares);
}

// A source with the far path, as the perf.data reader's: reads at or above what it released
// only, except through a run's RunBytes (anywhere, but each run in order). An item read near
// carries its position, which must still be held when the item is emitted; `fail_far_from`: far
// reads from there on fail, as a file that cannot be read again.
class FarSource {
 public:
  struct Item {
    uint64_t time = 0;
    uint64_t tag = 0;
    uint64_t pos = 0;
    bool far = false;
  };
  struct RunBytes {
    bool open = false;
    uint64_t last = 0;
  };

  explicit FarSource(std::vector<ToyRecord> records) : toy_(std::move(records)) {}
  uint64_t end() const { return toy_.end(); }

  ScanKind Scan(uint64_t pos, uint64_t* next, uint64_t* time) {
    max_held = std::max(max_held, pos - toy_.released());
    return toy_.Scan(pos, next, time);
  }
  bool Peek(uint64_t pos, uint64_t* next, Item* item) {
    ToySource::Item t;
    const bool timed = toy_.Peek(pos, next, &t);  // checks that pos was not released
    *item = {t.time, t.tag, pos, false};
    return timed;
  }
  void PeekTimed(uint64_t pos, uint64_t* next, Item* item) {
    ToySource::Item t;
    toy_.PeekTimed(pos, next, &t);
    *item = {t.time, t.tag, pos, false};
  }
  bool PeekFar(uint64_t pos, uint64_t* next, Item* item, RunBytes* run) {
    if (run->open) {
      EXPECT_GT(pos, run->last) << "a far run read out of order";
    } else {
      run->open = true;
      max_open = std::max(max_open, ++open);
    }
    run->last = pos;
    ++far_reads;
    if (pos >= fail_far_from) {
      *next = pos;
      return false;
    }
    const ToyRecord& r = toy_.RecordAt(pos);
    *next = pos + r.size;
    *item = {r.time, r.tag, pos, true};
    return r.kind == ScanKind::kTimed;
  }
  bool PeekTimedFar(uint64_t pos, uint64_t* next, Item* item, RunBytes* run) {
    EXPECT_EQ(toy_.RecordAt(pos).kind, ScanKind::kTimed) << "PeekTimedFar on an untimed record";
    return PeekFar(pos, next, item, run);
  }
  void DropFar(RunBytes* run) {
    if (run->open) --open;
    *run = RunBytes{};
  }
  void Emit(const Item& item, bool out_of_order) {
    if (!item.far) EXPECT_GE(item.pos, toy_.released()) << "emitted from released bytes";
    tags.push_back(item.tag);
    behind += out_of_order ? 1 : 0;
  }
  void Release(uint64_t below) { toy_.Release(below); }

  std::vector<uint64_t> tags;
  uint64_t behind = 0;
  uint64_t max_held = 0;  // the most bytes between what was released and the scan
  uint64_t far_reads = 0;
  uint64_t open = 0;      // RunBytes read through and not dropped
  uint64_t max_open = 0;
  uint64_t fail_far_from = ~uint64_t{0};

 private:
  ToySource toy_;
};

// perf record's rounds on a machine of `cpus` evenly busy CPUs: every CPU's ring drained in
// turn, a sorted run of the records since its last drain (64 bytes each), then a round mark. CPU
// c is drained 10 ns after CPU c - 1, so its drain holds records older than those of the higher
// CPUs' drains in the round before: only the round marks say when a record is final.
std::vector<ToyRecord> BusyRounds(std::mt19937* rng, uint64_t cpus, int rounds, int per_drain) {
  std::vector<ToyRecord> records;
  std::vector<uint64_t> drained(cpus, 0);
  uint64_t tag = 0;
  for (int k = 1; k <= rounds; ++k) {
    for (uint64_t c = 0; c < cpus; ++c) {
      const uint64_t now = k * (10 * cpus + 100) + 10 * c;
      std::vector<uint64_t> times;
      for (int i = 0; i < per_drain; ++i) {
        times.push_back(drained[c] + 1 + (*rng)() % (now - drained[c]));
      }
      std::sort(times.begin(), times.end());
      drained[c] = now;
      for (uint64_t t : times) records.push_back({ScanKind::kTimed, t, 64, ++tag});
    }
    records.push_back({ScanKind::kRoundEnd, 0, 8, 0});
  }
  return records;
}

TEST(SortedRunMergerTest, RoundsLargerThanTheMemoryKeptMergeExactlyThroughTheFarPath) {
  // 64 CPUs, 32 KiB a round; 4 KiB may be held between the nearest cursor and the scan.
  std::mt19937 rng(5);
  const std::vector<ToyRecord> records = BusyRounds(&rng, 64, 12, 8);
  MergeLimits limits;
  limits.release_step = 1024;

  // Without the far path, holding no more than that forces records out before earlier ones.
  ToySource held(records);
  limits.max_span_bytes = 4096;
  SortedRunMerger<ToySource> capped(&held, 0, held.end(), limits);
  capped.Run();
  EXPECT_GT(capped.counters().forced, 0u);
  EXPECT_GT(capped.counters().out_of_order, 0u);
  EXPECT_NE(Tags(held), StableOrder(records));

  // With it, the cursors behind read their runs again and every record comes out in order.
  FarSource far(records);
  limits.max_span_bytes = ~uint64_t{0};
  limits.near_bytes = 4096;
  SortedRunMerger<FarSource> merger(&far, 0, far.end(), limits);
  merger.Run();
  EXPECT_EQ(far.tags, StableOrder(records));
  EXPECT_EQ(far.behind, 0u);
  EXPECT_EQ(merger.counters().out_of_order, 0u);
  EXPECT_EQ(merger.counters().forced, 0u);
  EXPECT_GT(far.far_reads, records.size() / 2);
  // What was held: the near bytes, a release step, the record scanned past the limit.
  EXPECT_LE(far.max_held, 4096u + 1024u + 64u);
  // A run's bytes are read through at most one RunBytes at a time, each given back.
  EXPECT_EQ(far.open, 0u);
  EXPECT_GT(far.max_open, 64u);
  EXPECT_LE(far.max_open, merger.counters().max_live_runs);
}

TEST(SortedRunMergerTest, WithEveryRunFarTheScannedBytesAreStillLetGo) {
  // One CPU: its drains follow one another in time, one run for the whole stream, far behind
  // the scan for most of it; with and without round marks.
  std::mt19937 rng(7);
  std::vector<ToyRecord> marked = BusyRounds(&rng, 1, 60, 128);
  std::vector<ToyRecord> unmarked;
  for (const ToyRecord& r : marked) {
    if (r.kind == ScanKind::kTimed) unmarked.push_back(r);
  }
  for (const auto& records : {marked, unmarked}) {
    FarSource far(records);
    MergeLimits limits;
    limits.near_bytes = 4096;
    limits.release_step = 1024;
    SortedRunMerger<FarSource> merger(&far, 0, far.end(), limits);
    merger.Run();
    EXPECT_EQ(far.tags, StableOrder(records));
    EXPECT_EQ(merger.counters().runs, 1u);
    EXPECT_GT(far.far_reads, 0u);
    EXPECT_LE(far.max_held, 4096u + 1024u + 64u);
  }
}

TEST(SortedRunMergerTest, AFarRunThatCannotBeReadAgainEndsThereAndTheRestStaysInOrder) {
  std::mt19937 rng(6);
  const std::vector<ToyRecord> records = BusyRounds(&rng, 16, 10, 8);
  FarSource far(records);
  far.fail_far_from = far.end() / 2;
  MergeLimits limits;
  limits.near_bytes = 2048;
  limits.release_step = 512;
  SortedRunMerger<FarSource> merger(&far, 0, far.end(), limits);
  merger.Run();
  const std::vector<uint64_t> all = StableOrder(records);
  EXPECT_LT(far.tags.size(), all.size());
  EXPECT_GT(far.tags.size(), all.size() / 4);
  EXPECT_EQ(merger.counters().out_of_order, 0u);
  std::vector<uint64_t> time_of(all.size() + 1);
  for (const ToyRecord& r : records) time_of[r.tag] = r.time;
  EXPECT_TRUE(std::is_sorted(far.tags.begin(), far.tags.end(),
                             [&](uint64_t x, uint64_t y) { return time_of[x] < time_of[y]; }));
  EXPECT_EQ(far.open, 0u);
}

// The runs a scan of `records` (laid out back to back) finds, and the positions of its untimed
// records, written here from Seed's contract: a timed record goes on with the open run unless it
// is earlier than the run's last; a skipped record closes the open run; each run ends where the
// next begins or a record is skipped, the last one at the end of the stream.
template <typename Merger>
void ScanForSeed(const std::vector<ToyRecord>& records, std::vector<typename Merger::SeedRun>* runs,
                 std::vector<uint64_t>* untimed) {
  uint64_t pos = 0;
  bool open = false;
  uint64_t last = 0;
  for (const ToyRecord& r : records) {
    if (r.kind == ScanKind::kSkip) {
      if (open) runs->back().end = pos;
      open = false;
    } else if (r.kind == ScanKind::kTimed) {
      if (!open || r.time < last) {
        if (open) runs->back().end = pos;
        runs->push_back({pos, 0, false});
        open = true;
      }
      last = r.time;
    } else {
      untimed->push_back(pos);
    }
    pos += r.size;
  }
  if (open) {
    runs->back().end = pos;
    runs->back().open = true;
  }
}

// Seeds `merger` with the runs a scan of `records` finds and runs it.
template <typename Source>
void SeedAndRun(const std::vector<ToyRecord>& records, SortedRunMerger<Source>* merger) {
  std::vector<typename SortedRunMerger<Source>::SeedRun> runs;
  std::vector<uint64_t> untimed;
  ScanForSeed<SortedRunMerger<Source>>(records, &runs, &untimed);
  merger->Seed(runs, std::move(untimed), records.size());
  merger->Run();
}

TEST(SortedRunMergerTest, ASeededMergeEmitsWhatAScanOfTheWholeStreamWould) {
  // Streams without round marks before their last timed record, far shorter than the window: a
  // scan emits only once it has met every run, so a merge seeded with the runs it would have
  // found emits the same, in the same order (ties by run order), without a Scan; with and without
  // the far path, with skipped records and untimed records inside and between runs, and with a
  // stop.
  std::mt19937 rng(23);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<ToyRecord> records = RandomRuns(&rng, 1 + trial % 40, 1 + rng() % 500);
    for (ToyRecord& r : records) {
      if (r.kind == ScanKind::kTimed && rng() % 9 == 0) r.kind = ScanKind::kSkip;
    }
    const uint64_t stop_at = trial % 3 == 0 ? rng() % 500 : ~uint64_t{0};
    // Round marks after the last timed record, the last of them last in the stream (a
    // recorder's mark after its last drain): past the lag the scan emits at its last record,
    // with every run met, in the same order.
    const bool trailing_marks = trial % 4 == 1;
    if (trailing_marks) {
      records.push_back({ScanKind::kUntimed, 0, 24, 0});
      for (int m = 0; m < 3; ++m) records.push_back({ScanKind::kRoundEnd, 0, 8, 0});
    } else if (trial % 4 == 2) {
      // As many marks as the lag, anywhere (inside runs too): no round limit before the end.
      for (int m = 0; m < 2; ++m) {
        const size_t at = rng() % (records.size() + 1);
        records.insert(records.begin() + static_cast<ptrdiff_t>(at),
                       ToyRecord{ScanKind::kRoundEnd, 0, 8, 0});
      }
    }

    ToySource scanned(records);
    scanned.stop_at = stop_at;
    SortedRunMerger<ToySource> scan_merger(&scanned, 0, scanned.end());
    scan_merger.Run();
    if (!trailing_marks) ASSERT_EQ(scanned.emitted_mid_scan, 0) << "trial " << trial;

    ToySource seeded(records);
    seeded.stop_at = stop_at;
    SortedRunMerger<ToySource> seed_merger(&seeded, 0, seeded.end());
    SeedAndRun(records, &seed_merger);
    ASSERT_EQ(Tags(seeded), Tags(scanned)) << "trial " << trial;
    EXPECT_EQ(seeded.flags, scanned.flags);
    EXPECT_EQ(seed_merger.counters().runs, scan_merger.counters().runs) << "trial " << trial;
    EXPECT_EQ(seed_merger.counters().emitted, scan_merger.counters().emitted);
    EXPECT_EQ(seed_merger.scan_position(), scan_merger.scan_position());
    FarSource far(records);
    SortedRunMerger<FarSource> far_merger(&far, 0, far.end());
    SeedAndRun(records, &far_merger);
    std::vector<ToyRecord> kept;
    for (const ToyRecord& r : records) {
      if (r.kind != ScanKind::kSkip) kept.push_back(r);
    }
    EXPECT_EQ(far.tags, StableOrder(kept)) << "trial " << trial;
    EXPECT_EQ(far.behind, 0u);
    // Each timed record read once through its run's far path (and the untimed ones in runs).
    const auto timed = static_cast<uint64_t>(std::count_if(
        kept.begin(), kept.end(), [](const ToyRecord& r) { return r.kind == ScanKind::kTimed; }));
    EXPECT_GE(far.far_reads, timed) << "trial " << trial;
    EXPECT_LE(far.far_reads, kept.size()) << "trial " << trial;
    EXPECT_EQ(far.open, 0u) << "every run's bytes given back";
  }
}

TEST(SortedRunMergerTest, ASeededMergeDropsTheCopiesAScanDrops) {
  // Records written again at the start of the next drain, compared byte by byte: the seeded
  // merge drops the same copies as the scan, in the same order.
  std::mt19937 rng(31);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ToyRecord> originals;
    uint64_t repeats = 0;
    const std::vector<ToyRecord> records = RunsWithRepeatedTails(&rng, trial, &originals, &repeats);
    ComparingSource scanned(records);
    SortedRunMerger<ComparingSource> scan_merger(&scanned, 0, scanned.end());
    scan_merger.Run();
    ComparingSource seeded(records);
    SortedRunMerger<ComparingSource> seed_merger(&seeded, 0, seeded.end());
    SeedAndRun(records, &seed_merger);
    ASSERT_EQ(Tags(seeded), Tags(scanned)) << "trial " << trial;
    EXPECT_EQ(Tags(seeded), StableOrder(originals)) << "trial " << trial;
    EXPECT_EQ(seed_merger.counters().duplicates, repeats) << "trial " << trial;
  }
}

TEST(SortedRunMergerTest, ASeededRunWhoseFirstRecordCannotBeReadIsEmpty) {
  std::mt19937 rng(29);
  const std::vector<ToyRecord> records = BusyRounds(&rng, 8, 1, 4);  // one round, one mark
  FarSource far(records);
  std::vector<SortedRunMerger<FarSource>::SeedRun> runs;
  std::vector<uint64_t> untimed;
  ScanForSeed<SortedRunMerger<FarSource>>(records, &runs, &untimed);
  ASSERT_EQ(runs.size(), 8u);
  // The runs from the fifth on lie past where far reads fail.
  far.fail_far_from = runs[4].pos;
  SortedRunMerger<FarSource> merger(&far, 0, far.end());
  merger.Seed(runs, untimed, records.size());
  merger.Run();
  std::vector<ToyRecord> readable(records.begin(), records.begin() + 16);
  EXPECT_EQ(far.tags, StableOrder(readable));
  EXPECT_EQ(far.open, 0u);
}

}  // namespace
}  // namespace iotrace
