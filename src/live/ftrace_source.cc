#include "iotrace/live/ftrace_source.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "iotrace/base/prefetch.h"
#include "iotrace/base/status.h"

namespace iotrace {

uint32_t CommonPidOffset(const std::vector<EventFormat>& formats) {
  if (formats.empty()) return 4;
  const FieldInfo* pid = formats.front().FindField("common_pid");
  return pid != nullptr && pid->size == 4 ? pid->offset : 4;
}

bool FtraceRecordToEvent(const FtraceRecord& rec, uint32_t cpu, uint32_t pid_offset,
                         RawEvent* event) {
  const ByteView p = rec.payload;
  if (p.size < 8 || p.size < pid_offset + 4) return false;
  event->ts = rec.ts;
  event->cpu = cpu;
  std::memcpy(&event->type, p.data, 2);
  std::memcpy(&event->pid, p.data + pid_offset, 4);
  event->tid = event->pid;
  event->payload = p;
  return true;
}

absl::StatusOr<std::unique_ptr<FtraceLiveSource>> FtraceLiveSource::Create(
    FtraceStreamOptions options) {
  std::unique_ptr<FtraceLiveSource> s(new FtraceLiveSource());
  for (const TraceEventInfo& e : options.capture.events) s->formats_.push_back(e.format);
  IOTRACE_ASSIGN_OR_RETURN(s->stream_, FtraceStream::Create(std::move(options)));
  const std::vector<int>& cpus = s->stream_->cpus();
  s->nr_cpus_ = *std::max_element(cpus.begin(), cpus.end()) + 1;
  for (int cpu : cpus) {
    Stream& st = s->streams_.emplace_back(s->stream_->layout());
    st.cpu = static_cast<uint32_t>(cpu);
  }
  s->pid_offset_ = CommonPidOffset(s->formats_);
  return s;
}

std::string FtraceLiveSource::ingest_note() const {
  if (stream_->mmap_refused().empty()) return "";
  return "the ring buffer could not be memory-mapped (" + stream_->mmap_refused() +
         "): pages were read with read(), one copy each";
}

absl::StatusOr<bool> FtraceLiveSource::Next(size_t i, RawEvent* event, EventSink* losses) {
  Stream& s = streams_[i];
  FtraceRecord rec;
  for (;;) {
    if (s.on_page && s.walker.Next(&rec)) {
      // The next record's header is read when the merge takes this stream's next record, after
      // one of every other stream on average: with many CPUs, out of the cache by then.
      Prefetch(rec.payload.data + rec.payload.size);
      if (FtraceRecordToEvent(rec, s.cpu, pid_offset_, event)) return true;
      ++problems_;
      continue;
    }
    if (s.on_page && s.walker.problem() != FtracePageProblem::kNone) ++problems_;
    ByteView page;
    IOTRACE_ASSIGN_OR_RETURN(PageUpdate update, stream_->Next(i, &page));
    switch (update) {
      case PageUpdate::kNone:
        return false;
      case PageUpdate::kGrown:
        // The writer is still on this sub-buffer: walk on when it added something.
        if (!s.on_page || !s.walker.Refresh(page)) return false;
        break;
      case PageUpdate::kNew:
        s.page = page;
        s.on_page = s.walker.Reset(page);
        if (!s.on_page) ++problems_;
        break;
    }
  }
}

uint64_t FtraceLiveSource::LostSoFar() {
  uint64_t lost = 0;
  for (size_t i = 0; i < streams_.size(); ++i) {
    auto st = stream_->ReadCpuStats(i);
    if (st.ok()) lost += st->overrun + st->commit_overrun + st->dropped_events;
  }
  return lost;
}

absl::StatusOr<LiveSourceEnd> FtraceLiveSource::Finish(EventSink* losses) {
  IOTRACE_ASSIGN_OR_RETURN(FtraceStreamResult r, stream_->Finish());
  LiveSourceEnd end;
  // The kernel's totals, as trace.dat's reader finds them in the file's CPUSTAT.
  for (const FtraceStreamCpuResult& c : r.cpus) {
    const uint64_t overrun = c.stats.overrun + c.stats.commit_overrun;
    if (overrun > 0) {
      LossRecord loss;
      loss.kind = LossRecord::Kind::kFtraceOverrun;
      loss.cpu = c.cpu;
      loss.count = overrun;
      losses->OnLoss(loss);
    }
    if (c.stats.dropped_events > 0) {
      LossRecord loss;
      loss.kind = LossRecord::Kind::kFtraceDropped;
      loss.cpu = c.cpu;
      loss.count = c.stats.dropped_events;
      losses->OnLoss(loss);
    }
  }
  end.output_bytes = r.output_bytes;
  end.disk_full = r.disk_full;
  end.storage_error = r.storage_error;
  end.cleanup_error = r.cleanup_error;
  if (problems_ != 0) {
    end.notes.push_back(absl::StrFormat("%u records or pages could not be walked", problems_));
  }
  return end;
}

}  // namespace iotrace
