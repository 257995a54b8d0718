#include "iotrace/live/perf_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "iotrace/base/clock.h"
#include "iotrace/base/prefetch.h"
#include "iotrace/base/status.h"
#include "iotrace/sys/host_info.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {
namespace {

// How often the kernel's counts are read mid-run, for each interval's lost count.
constexpr uint64_t kCountsEveryNs = 500'000'000;

}  // namespace

absl::StatusOr<std::unique_ptr<PerfLiveSource>> PerfLiveSource::Create(PerfLiveOptions options) {
  std::unique_ptr<PerfLiveSource> s(new PerfLiveSource());
  const PerfCaptureOptions& co = options.capture;
  for (const TraceEventInfo& e : co.events) s->formats_.push_back(e.format);
  const uint64_t data_size = uint64_t{co.mmap_pages} * sysconf(_SC_PAGESIZE);
  IOTRACE_ASSIGN_OR_RETURN(s->cap_, PerfCapture::Open(co));
  // The samples are decoded as perf.data's reader decodes them: the same attrs, the same parser.
  std::vector<PerfAttrInfo> attrs;
  for (const CapturedEvent& ce : s->cap_->events()) attrs.push_back(PerfAttrInfo{ce.attr, ce.ids});
  IOTRACE_ASSIGN_OR_RETURN(s->parser_, PerfRecordParser::Create(std::move(attrs)));
  s->cpus_ = s->cap_->cpus();
  s->nr_cpus_ = *std::max_element(s->cpus_.begin(), s->cpus_.end()) + 1;
  s->release_every_ = std::max<uint64_t>(data_size / 8, 1);
  s->released_.assign(s->cpus_.size(), 0);
  for (size_t c = 0; c < s->cpus_.size(); ++c) s->released_[c] = s->cap_->read_position(c);
  s->keep_ = s->released_;
  const size_t books = s->cap_->events().size() * s->cpus_.size();
  s->silent_.assign(books, 0);
  s->mark_counts_.resize(books);
  s->mark_head_.assign(s->cpus_.size(), 0);
  if (!options.output.empty()) {
    // The file `record --backend perf` writes, from the same ring bytes.
    IOTRACE_ASSIGN_OR_RETURN(TracingMetadata meta,
                             CollectTracingMetadata(options.tracefs, co.events));
    HostInfo host = ThisMachine(options.argv);
    host.nr_cpus_online = static_cast<uint32_t>(s->cpus_.size());
    IOTRACE_ASSIGN_OR_RETURN(
        s->writer_, PerfDataWriter::Create(options.output, PerfEventSpecs(*s->cap_), meta, host));
    IOTRACE_RETURN_IF_ERROR(
        WriteExistingComms(s->writer_.get(), s->cap_->events()[0], s->cpus_[0]));
    s->output_ = options.output;
  }
  return s;
}

absl::Status PerfLiveSource::SetEnabled(bool on) {
  enabled_ = on;
  return on ? cap_->Enable() : cap_->Disable();
}

void PerfLiveSource::WatchFd(int fd) {
  absl::Status s = cap_->WatchFd(fd);
  if (watch_error_.ok()) watch_error_ = s;
}

absl::StatusOr<bool> PerfLiveSource::Wait(int timeout_ms) {
  // A signal fd that epoll does not watch would never end the run: fail instead.
  if (!watch_error_.ok()) return watch_error_;
  for (size_t i = 0; i < cpus_.size(); ++i) HandBack(i, keep_[i]);
  // What each ring handed back now was read after the record it held at the last Wait, which
  // lay past the merge's limit then: every record of this round is later than those of the
  // round before the last (perf's FINISHED_ROUND rule).
  if (writer_ != nullptr && unrounded_ && storage_error_.ok()) {
    storage_error_ = writer_->AppendFinishedRound();
    unrounded_ = false;
  }
  return cap_->Wait(timeout_ms);
}

void PerfLiveSource::HandBack(size_t i, uint64_t position) {
  if (position <= released_[i]) return;
  if (writer_ != nullptr && storage_error_.ok()) {
    ByteView first, second;
    cap_->View(i, released_[i], position, &first, &second);
    storage_error_ = writer_->AppendData(first, second);
    unrounded_ = true;
  }
  cap_->Release(i, position);
  released_[i] = position;
}

absl::StatusOr<bool> PerfLiveSource::Next(size_t i, RawEvent* event, EventSink* losses) {
  // The record handed out before this call is done with: from here on its space may go back.
  if (cap_->read_position(i) - released_[i] >= release_every_) {
    HandBack(i, cap_->read_position(i));
  }
  ByteView record;
  PerfRecord r;
  for (;;) {
    const uint64_t at = cap_->read_position(i);
    if (!cap_->ReadRecord(i, &record)) break;
    // The next record is read when the merge comes back to this ring, after one record of every
    // other ring on average: with many CPUs its line is out of the cache by then.
    Prefetch(record.data + record.size);
    if (parser_.Parse(record, &r) != PerfProblem::kNone) {
      ++problems_;
      continue;
    }
    if (r.kind == PerfRecord::Kind::kEvent) {
      *event = r.event;
      keep_[i] = at;
      return true;
    }
    if (r.kind == PerfRecord::Kind::kLoss) {
      // The ring was full: the kernel says how many, not which. Not placed in time, as the
      // report has no coverage to cut a gap into.
      LossRecord loss = r.loss;
      if (loss.cpu < 0) loss.cpu = cpus_[i];
      loss.placed = false;
      ring_lost_ += loss.count;
      losses->OnLoss(loss);
    }
    // COMM records (exec'd names) and the rest: nothing the live report uses.
  }
  keep_[i] = cap_->read_position(i);
  HandBack(i, keep_[i]);
  return false;
}

void PerfLiveSource::EstimateSilent() {
  cap_->CountReadSamples();
  const size_t ncpu = cpus_.size();
  bool all_passed = true;
  for (size_t c = 0; c < ncpu; ++c) {
    if (cap_->read_position(c) < mark_head_[c]) {
      all_passed = false;
      continue;
    }
    for (size_t e = 0; e < cap_->events().size(); ++e) {
      EventCpuCounts k = mark_counts_[e * ncpu + c];
      k.samples = cap_->counts(e, c).samples;
      silent_[e * ncpu + c] = std::max(silent_[e * ncpu + c], k.Silent());
    }
  }
  if (all_passed) mark_pending_ = false;
}

uint64_t PerfLiveSource::LostSoFar() {
  const uint64_t now = MonotonicNs();
  // Off, every event counted is in a ring already: the mark can be set against the samples as
  // soon as the rings are read to its head.
  const bool due = !enabled_ || now - mark_ns_ >= kCountsEveryNs;
  if (due && mark_pending_ && enabled_) EstimateSilent();
  if (due && (!mark_pending_ || !enabled_) && cap_->ReadCounts().ok()) {
    const size_t ncpu = cpus_.size();
    for (size_t e = 0; e < cap_->events().size(); ++e) {
      for (size_t c = 0; c < ncpu; ++c) mark_counts_[e * ncpu + c] = cap_->counts(e, c);
    }
    // Loaded after the counts: every sample counted then is before this head (or on its way).
    for (size_t c = 0; c < ncpu; ++c) mark_head_[c] = cap_->head(c);
    mark_pending_ = true;
    mark_ns_ = now;
    if (!enabled_) EstimateSilent();
  }
  uint64_t lost = ring_lost_;
  for (uint64_t s : silent_) lost += s;
  return lost;
}

absl::StatusOr<LiveSourceEnd> PerfLiveSource::Finish(EventSink* losses) {
  absl::Status failure = cap_->Disable();
  enabled_ = false;
  // The books are exact now that the kernel is stopped and the merge took every record.
  absl::Status counted = cap_->ReadCounts();
  if (failure.ok()) failure = counted;
  cap_->CountReadSamples();
  for (size_t c = 0; c < cpus_.size(); ++c) HandBack(c, cap_->read_position(c));
  if (counted.ok()) {
    // As perf.data's reader hands the LOST_SAMPLES records `record` writes: one per event and
    // CPU, not placed in time.
    const size_t ncpu = cpus_.size();
    const uint64_t now = MonotonicNs();
    for (size_t e = 0; e < cap_->events().size(); ++e) {
      for (size_t c = 0; c < ncpu; ++c) {
        const uint64_t silent = cap_->counts(e, c).Silent();
        if (silent == 0) continue;
        LossRecord loss;
        loss.kind = LossRecord::Kind::kSilentDrop;
        loss.cpu = cpus_[c];
        loss.event_id = static_cast<int32_t>(cap_->events()[e].tracepoint_id);
        loss.count = silent;
        loss.ts = now;
        losses->OnLoss(loss);
        if (writer_ != nullptr && storage_error_.ok()) {
          // As record writes them, for the file's reader.
          perf::SampleId id;
          id.pid = id.tid = static_cast<uint32_t>(-1);
          id.time = now;
          id.id = cap_->events()[e].ids[c];
          id.cpu = static_cast<uint32_t>(cpus_[c]);
          storage_error_ = writer_->AppendLostSamples(e, silent, id);
        }
      }
    }
  }
  LiveSourceEnd end;
  if (writer_ != nullptr) {
    absl::Status finished = writer_->Finish();
    if (storage_error_.ok()) storage_error_ = finished;
    struct stat st;
    end.output_bytes = ::stat(output_.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
    // The live figures go on without the file: its failure is the summary's, not the run's.
    end.disk_full = !storage_error_.ok();
    end.storage_error = storage_error_;
    writer_.reset();
  }
  if (problems_ != 0) {
    end.notes.push_back(absl::StrFormat("%u perf records could not be decoded", problems_));
  }
  if (cap_->bad_headers() != 0) {
    end.notes.push_back(absl::StrFormat(
        "%u perf rings held a corrupt record header; what followed it was skipped",
        cap_->bad_headers()));
  }
  cap_.reset();
  if (!failure.ok()) return failure;
  return end;
}

}  // namespace iotrace
