// The live engine's cost per event against the number of per-CPU buffers it merges (issue 26:
// "per-event cost at 256 buffers within 1.5x of 2 buffers"). The same events each time (block
// insert/issue/complete, 700 ns apart, ~3 M in all; 6 k in smoke mode), spread over 2 to 256
// streams at random, as on a machine whose requests are submitted and completed on any CPU,
// are taken from a fake LiveSource poll by poll, as RunLive does: each poll the kernel has
// written up to "now", and the merge hands on everything up to now less the slack.
//
// BM_LiveMergeAndBuild: LiveMerger into the LatencyReportBuilder (the engine's path, as
// RunLive sets it up). BM_LiveMergeOnly: the merge into a sink that only counts, which shows
// the merge's own part.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "bench_support.h"
#include "benchmark/benchmark.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/live/live_merger.h"
#include "iotrace/live/live_source.h"

namespace iotrace {
namespace {

constexpr uint64_t kPollNs = 50'000'000;   // LiveOptions::poll_ms
constexpr uint64_t kSlackNs = 20'000'000;  // LiveOptions::slack_ns

// Per-CPU streams of pre-made records, each visible once the "kernel" has written it.
class FakeSource : public LiveSource {
 public:
  FakeSource(const bench::RawBlockStream& s, size_t streams) : formats_(s.formats) {
    std::mt19937_64 rng(7);
    streams_.resize(streams);
    for (RawEvent e : s.events) {
      e.cpu = static_cast<uint32_t>(rng() % streams);
      streams_[e.cpu].push_back(e);
    }
    next_.assign(streams, 0);
  }
  // The kernel has written every record before `ns`.
  void set_written_before(uint64_t ns) { written_before_ = ns; }
  uint64_t end_ns() const {
    uint64_t end = 0;
    for (const auto& s : streams_) {
      if (!s.empty()) end = std::max(end, s.back().ts + 1);
    }
    return end;
  }

  std::string backend() const override { return "fake"; }
  std::string ingest() const override { return "memory"; }
  const std::vector<EventFormat>& formats() const override { return formats_; }
  int nr_cpus() const override { return static_cast<int>(streams_.size()); }
  size_t stream_count() const override { return streams_.size(); }
  absl::Status SetEnabled(bool) override { return absl::OkStatus(); }
  void WatchFd(int) override {}
  absl::StatusOr<bool> Wait(int) override { return false; }
  absl::StatusOr<bool> Next(size_t i, RawEvent* event, EventSink*) override {
    const std::vector<RawEvent>& s = streams_[i];
    if (next_[i] == s.size() || s[next_[i]].ts >= written_before_) return false;
    *event = s[next_[i]++];
    // As the real sources do (ftrace_source, perf_source): the stream's next record is asked
    // for now, to be in the cache when the merge comes back to this stream.
    __builtin_prefetch(s.data() + next_[i]);
    return true;
  }
  uint64_t LostSoFar() override { return 0; }
  absl::StatusOr<LiveSourceEnd> Finish(EventSink*) override { return LiveSourceEnd{}; }

 private:
  std::vector<EventFormat> formats_;
  std::vector<std::vector<RawEvent>> streams_;
  std::vector<size_t> next_;
  uint64_t written_before_ = 0;
};

class CountingSink : public EventSink {
 public:
  void OnEvent(const RawEvent& e) override { sum_ += e.ts; }
  uint64_t sum() const { return sum_; }

 private:
  uint64_t sum_ = 0;
};

const bench::RawBlockStream& Events() {
  static const auto* s =
      new bench::RawBlockStream(bench::MakeRawBlockStream(bench::Scale(1'000'000, 2'000)));
  return *s;
}

// Polls until every record went through `sink`; false when one was late or missing.
bool RunPolls(FakeSource& source, EventSink* sink) {
  LiveMerger merger(&source, sink);
  const uint64_t end = source.end_ns();
  for (uint64_t now = kPollNs;; now += kPollNs) {
    source.set_written_before(now);
    if (!merger.DeliverBefore(now > kSlackNs ? now - kSlackNs : 0).ok()) return false;
    if (now >= end + kSlackNs) break;
  }
  return merger.delivered() == Events().events.size() && merger.late() == 0;
}

void SetCounters(benchmark::State& state) {
  const double events = static_cast<double>(Events().events.size());
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(events));
  state.counters["ns_per_event"] = benchmark::Counter(
      events * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_LiveMergeAndBuild(benchmark::State& state) {
  const bench::RawBlockStream& s = Events();
  ReportOptions ro;  // as RunLive's builder
  ro.input = "live";
  ro.threads = 1;
  ro.samples_at_each_stage = true;
  ro.sysfs_root = ro.procfs_root = "/nonexistent";
  for (auto _ : state) {
    state.PauseTiming();
    FakeSource source(s, static_cast<size_t>(state.range(0)));
    auto builder = LatencyReportBuilder::Create(s.formats, ro);
    if (!builder.ok()) return bench::Fail(state, std::string(builder.status().message()));
    state.ResumeTiming();
    if (!RunPolls(source, builder->get())) return bench::Fail(state, "records late or missing");
    const MatchStats& m = (*builder)->matcher().stats();
    benchmark::DoNotOptimize(m.completes_without_issue);
  }
  SetCounters(state);
}

void BM_LiveMergeOnly(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    FakeSource source(Events(), static_cast<size_t>(state.range(0)));
    CountingSink sink;
    state.ResumeTiming();
    if (!RunPolls(source, &sink)) return bench::Fail(state, "records late or missing");
    benchmark::DoNotOptimize(sink.sum());
  }
  SetCounters(state);
}

BENCHMARK(BM_LiveMergeAndBuild)->Arg(2)->Arg(8)->Arg(32)->Arg(128)->Arg(256)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LiveMergeOnly)->Arg(2)->Arg(8)->Arg(32)->Arg(128)->Arg(256)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace iotrace
