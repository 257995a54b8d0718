#include "iotrace/live/record_latency.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <utility>

#include "absl/strings/str_format.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/analysis/live_window.h"
#include "iotrace/base/status.h"
#include "iotrace/live/ftrace_source.h"
#include "iotrace/live/live_merger.h"
#include "iotrace/live/live_source.h"
#include "iotrace/sys/device_names.h"

namespace iotrace {
namespace {

// "850ns", "21us", "1.5ms", "2.3s": short, for the progress line.
std::string ShortTime(uint64_t ns) {
  if (ns < 1000) return absl::StrFormat("%uns", ns);
  if (ns < 10'000) return absl::StrFormat("%.1fus", ns / 1e3);
  if (ns < 1'000'000) return absl::StrFormat("%.0fus", ns / 1e3);
  if (ns < 10'000'000) return absl::StrFormat("%.1fms", ns / 1e6);
  if (ns < 1'000'000'000) return absl::StrFormat("%.0fms", ns / 1e6);
  return absl::StrFormat("%.1fs", ns / 1e9);
}

// The stored pages, per CPU, until the merge has walked them.
class PageQueueSource : public LiveSource {
 public:
  PageQueueSource(std::vector<EventFormat> formats, const FtracePageLayout& layout,
                  const std::vector<int>& cpus)
      : formats_(std::move(formats)), layout_(layout) {
    for (int cpu : cpus) {
      Stream& s = streams_.emplace_back(layout);
      s.cpu = static_cast<uint32_t>(cpu);
    }
    pid_offset_ = CommonPidOffset(formats_);
  }
  void Push(size_t i, ByteView pages) {
    streams_[i].chunks.emplace_back(reinterpret_cast<const char*>(pages.data), pages.size);
  }

  std::string backend() const override { return "ftrace"; }
  std::string ingest() const override { return "stored pages"; }
  const std::vector<EventFormat>& formats() const override { return formats_; }
  int nr_cpus() const override { return static_cast<int>(streams_.size()); }
  size_t stream_count() const override { return streams_.size(); }
  absl::Status SetEnabled(bool) override { return absl::OkStatus(); }
  void WatchFd(int) override {}
  absl::StatusOr<bool> Wait(int) override { return false; }
  uint64_t LostSoFar() override { return 0; }
  absl::StatusOr<LiveSourceEnd> Finish(EventSink*) override { return LiveSourceEnd{}; }

  absl::StatusOr<bool> Next(size_t i, RawEvent* event, EventSink*) override {
    Stream& s = streams_[i];
    FtraceRecord rec;
    for (;;) {
      if (s.on_page && s.walker.Next(&rec)) {
        if (FtraceRecordToEvent(rec, s.cpu, pid_offset_, event)) return true;
        continue;
      }
      // The next page: of the chunk being walked, or of the next chunk (the one walked is done
      // with only now: the merge's records of it were handed on).
      const size_t page = layout_.page_size;
      if (s.chunk_walked && s.next_page + page > s.chunks.front().size()) {
        s.chunks.pop_front();
        s.chunk_walked = false;
        s.next_page = 0;
      }
      if (s.chunks.empty()) {
        s.on_page = false;
        return false;
      }
      const std::string& c = s.chunks.front();
      s.chunk_walked = true;
      if (s.next_page + page > c.size()) continue;
      s.on_page = s.walker.Reset(ByteView(c.data() + s.next_page, page));
      s.next_page += page;
    }
  }

 private:
  struct Stream {
    explicit Stream(const FtracePageLayout& layout) : walker(layout) {}
    FtracePageWalker walker;
    std::deque<std::string> chunks;
    size_t next_page = 0;
    bool chunk_walked = false;
    bool on_page = false;
    uint32_t cpu = 0;
  };
  std::vector<EventFormat> formats_;
  FtracePageLayout layout_;
  std::deque<Stream> streams_;
  uint32_t pid_offset_ = 4;
};

}  // namespace

struct RecordLatency::State {
  std::unique_ptr<PageQueueSource> source;
  std::unique_ptr<LatencyReportBuilder> builder;
  std::unique_ptr<DeviceNames> names;
  std::unique_ptr<LiveWindow> window;
  std::unique_ptr<LiveMerger> merger;
  uint64_t index = 0;
};

RecordLatency::RecordLatency(std::string sysfs_root) : sysfs_root_(std::move(sysfs_root)) {}
RecordLatency::~RecordLatency() = default;

absl::Status RecordLatency::Begin(const std::vector<TraceEventInfo>& events,
                                  const FtracePageLayout& layout, const std::vector<int>& cpus) {
  auto st = std::make_unique<State>();
  std::vector<EventFormat> formats;
  for (const TraceEventInfo& e : events) formats.push_back(e.format);
  st->source = std::make_unique<PageQueueSource>(formats, layout, cpus);
  ReportOptions ro;
  ro.threads = 1;
  ro.samples_at_each_stage = true;
  ro.sysfs_root = sysfs_root_;
  IOTRACE_ASSIGN_OR_RETURN(st->builder, LatencyReportBuilder::Create(formats, ro));
  st->names = std::make_unique<DeviceNames>(sysfs_root_);
  LiveWindowOptions wo;
  wo.phases = PhaseBit(Phase::kD2C);
  wo.top_processes = 0;
  st->window = std::make_unique<LiveWindow>(wo, st->names.get());
  st->builder->add_sample_tap(st->window.get());
  st->merger = std::make_unique<LiveMerger>(st->source.get(), st->builder.get());
  state_ = std::move(st);
  return absl::OkStatus();
}

void RecordLatency::OnPages(size_t index, ByteView pages) {
  if (state_ != nullptr) state_->source->Push(index, pages);
}

std::string RecordLatency::Progress(uint64_t now_ns) {
  if (state_ == nullptr) return "";
  State& st = *state_;
  if (!st.merger->DeliverBefore(now_ns > kSlackNs ? now_ns - kSlackNs : 0).ok()) return "";
  LiveInterval iv = st.window->Take(st.index++, 0, 0, LiveIntervalCounts{});
  std::vector<const LatencyGroup*> d2c;
  for (const LatencyGroup& g : iv.groups) d2c.push_back(&g);
  // One figure per disk: its busiest op.
  std::stable_sort(d2c.begin(), d2c.end(), [](const LatencyGroup* a, const LatencyGroup* b) {
    return a->summary.count > b->summary.count;
  });
  std::vector<std::string> parts;
  std::vector<uint32_t> shown;
  for (const LatencyGroup* g : d2c) {
    if (std::find(shown.begin(), shown.end(), g->dev) != shown.end()) continue;
    if (shown.size() == kMaxDisks) break;
    shown.push_back(g->dev);
    parts.push_back(absl::StrFormat("%s %s/%s", g->device, ShortTime(g->summary.p50_ns),
                                    ShortTime(g->summary.p99_ns)));
  }
  if (parts.empty()) return "";
  std::string out = "D2C p50/p99";
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? " " : ", ") + parts[i];
  return out;
}

}  // namespace iotrace
