#include "iotrace/capture/ftrace_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/formats/trace_dat_reader.h"
#include "iotrace/sys/cpus.h"

namespace iotrace {
namespace {

// Pipe capacity asked for each CPU: full pages move in batches of up to this many bytes.
constexpr int kPipeBytes = 1 << 20;
// Batches per CPU per DrainOnce, so that one busy CPU cannot starve the others.
constexpr int kMaxBatchesPerDrain = 64;

std::string CurrentClockName(std::string_view text) {
  size_t open = text.find('[');
  size_t close = text.find(']', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos) {
    std::string s(text);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  return std::string(text.substr(open + 1, close - open - 1));
}

class CountingSink : public EventSink {
 public:
  CountingSink(std::vector<FtraceEventResult>* events, const std::vector<int>& cpus)
      : events_(events) {
    for (size_t i = 0; i < cpus.size(); ++i) {
      if (static_cast<size_t>(cpus[i]) >= index_of_cpu_.size())
        index_of_cpu_.resize(cpus[i] + 1, -1);
      index_of_cpu_[cpus[i]] = static_cast<int>(i);
    }
  }
  void OnEvent(const RawEvent& ev) override {
    if (ev.cpu >= index_of_cpu_.size() || index_of_cpu_[ev.cpu] < 0) return;
    for (FtraceEventResult& e : *events_) {
      if (e.id == ev.type) {
        ++e.recorded[index_of_cpu_[ev.cpu]];
        return;
      }
    }
  }

 private:
  std::vector<FtraceEventResult>* events_;
  std::vector<int> index_of_cpu_;
};

}  // namespace

absl::StatusOr<FtraceInstanceSetup> SetUpFtraceInstance(FtraceCaptureOptions options) {
  if (options.events.empty()) return absl::InvalidArgumentError("ftrace capture: no events");
  if (options.instance_name.empty()) options.instance_name = absl::StrCat("iotrace_", getpid());
  FtraceInstanceSetup setup;
  if (options.cpus.empty()) {
    IOTRACE_ASSIGN_OR_RETURN(options.cpus, OnlineCpus());
  }
  setup.cpus = options.cpus;
  IOTRACE_ASSIGN_OR_RETURN(setup.instance,
                           TracefsInstance::Create(options.tracefs, options.instance_name));
  TracefsInstance& instance = *setup.instance;
  // A new instance traces at once: keep it off until the capture starts.
  IOTRACE_RETURN_IF_ERROR(instance.SetTracingOn(false));
  IOTRACE_RETURN_IF_ERROR(instance.SetBufferSizeKb(options.buffer_kb));
  IOTRACE_RETURN_IF_ERROR(instance.SetClock(options.clock));
  for (const TraceEventInfo& e : options.events) {
    if (!options.dev_filter.empty() && HasBlockDevField(e.format)) {
      IOTRACE_RETURN_IF_ERROR(instance.SetEventFilter(e.system, e.name, options.dev_filter));
    }
    IOTRACE_RETURN_IF_ERROR(instance.EnableEvent(e.system, e.name));
  }
  IOTRACE_ASSIGN_OR_RETURN(setup.meta, CollectTracingMetadata(options.tracefs, options.events));
  // The instance's own header_page states its sub-buffer size (buffer_subbuf_size_kb).
  auto header_page = instance.ReadFile("events/header_page");
  if (header_page.ok()) setup.meta.header_page = *header_page;
  IOTRACE_ASSIGN_OR_RETURN(setup.layout,
                           ParseHeaderPage(setup.meta.header_page, setup.meta.page_size));
  auto clock_text = instance.ReadFile("trace_clock");
  setup.clock = clock_text.ok() ? CurrentClockName(*clock_text) : options.clock;
  return setup;
}

absl::StatusOr<std::unique_ptr<FtraceCapture>> FtraceCapture::Create(FtraceCaptureOptions options) {
  if (options.output.empty()) return absl::InvalidArgumentError("ftrace capture: no output file");
  if (options.instance_name.empty()) options.instance_name = absl::StrCat("iotrace_", getpid());
  std::unique_ptr<FtraceCapture> c(new FtraceCapture());
  IOTRACE_ASSIGN_OR_RETURN(FtraceInstanceSetup setup, SetUpFtraceInstance(options));
  options.cpus = setup.cpus;
  c->cpus_ = options.cpus;
  c->options_ = options;
  c->instance_ = std::move(setup.instance);
  c->layout_ = setup.layout;
  TraceDatWriterOptions wopts;
  wopts.meta = std::move(setup.meta);
  wopts.nr_cpus = *std::max_element(c->cpus_.begin(), c->cpus_.end()) + 1;
  wopts.trace_clock = setup.clock;
  wopts.recorder = options.recorder;
  wopts.flush_interval_ms = options.flush_interval_ms;
  c->writer_options_ = wopts;
  IOTRACE_ASSIGN_OR_RETURN(c->writer_, TraceDatWriter::Create(options.output, std::move(wopts)));

  const uint32_t page = c->writer_->page_size();
  c->read_buf_.resize(page);
  for (int cpu : c->cpus_) {
    Cpu& s = c->cpu_state_.emplace_back();
    s.cpu = cpu;
    s.unwritten.resize(options.events.size());
    s.out = c->writer_->CpuFd(cpu);
    std::string raw = c->instance_->PerCpuPath(cpu, "trace_pipe_raw");
    s.raw = UniqueFd(::open(raw.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (!s.raw.valid()) return ErrnoError(errno, "open", raw);
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return ErrnoError(errno, "create", "pipe");
    s.pipe_r = UniqueFd(fds[0]);
    s.pipe_w = UniqueFd(fds[1]);
    fcntl(s.pipe_w.get(), F_SETPIPE_SZ, kPipeBytes);  // best effort: the default is 64 KiB
    int size = fcntl(s.pipe_w.get(), F_GETPIPE_SZ);
    if (size < static_cast<int>(page)) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "ftrace capture: pipe of %d bytes cannot hold a %u-byte page", size, page));
    }
    c->pipe_bytes_ = static_cast<uint32_t>(size) / page * page;
  }
  return c;
}

FtraceCapture::~FtraceCapture() {
  if (!finished_ && writer_ != nullptr) (void)Finish();
}

absl::Status FtraceCapture::Start() {
  IOTRACE_RETURN_IF_ERROR(instance_->SetTracingOn(true));
  started_ = true;
  return absl::OkStatus();
}

absl::Status FtraceCapture::Pause() { return instance_->SetTracingOn(false); }

absl::StatusOr<bool> WaitForFtraceData(const std::vector<int>& watched,
                                       const std::vector<int>& cpu_fds, int timeout_ms) {
  std::vector<pollfd> fds;
  fds.reserve(cpu_fds.size() + watched.size());
  for (int w : watched) fds.push_back({w, POLLIN, 0});
  for (int c : cpu_fds) fds.push_back({c, POLLIN, 0});
  int n = ::poll(fds.data(), fds.size(), timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return false;
    return ErrnoError(errno, "poll", "trace_pipe_raw");
  }
  for (size_t i = 0; i < watched.size(); ++i) {
    if (fds[i].revents & POLLIN) return true;
  }
  return false;
}

absl::StatusOr<bool> FtraceCapture::Wait(int timeout_ms) {
  std::vector<int> raw;
  raw.reserve(cpu_state_.size());
  for (const Cpu& c : cpu_state_) raw.push_back(c.raw.get());
  return WaitForFtraceData(watched_, raw, timeout_ms);
}

void FtraceCapture::SwitchToDiscard(const absl::Status& why) {
  if (!disk_full_) {
    disk_full_ = true;
    storage_error_ = why;
  }
}

void FtraceCapture::CountDiscarded(Cpu* c, ByteView pages) {
  FtracePageWalker walker(layout_);
  for (size_t off = 0; off + layout_.page_size <= pages.size; off += layout_.page_size) {
    if (!walker.Reset(pages.Sub(off, layout_.page_size))) continue;
    FtraceRecord rec;
    while (walker.Next(&rec)) {
      uint16_t type = 0;
      if (!LoadAt(rec.payload, 0, &type)) continue;
      for (size_t e = 0; e < options_.events.size(); ++e) {
        if (options_.events[e].id == type) ++c->unwritten[e];
      }
    }
  }
}

absl::StatusOr<uint64_t> FtraceCapture::SpliceCpu(Cpu* c) {
  const uint32_t page = writer_->page_size();
  uint64_t total = 0;
  for (int batch = 0; batch < kMaxBatchesPerDrain; ++batch) {
    if (disk_full_) {
      // Nothing is stored any more: read the full pages and count what they held.
      ssize_t n = ::read(c->raw.get(), read_buf_.data(), page);
      if (n <= 0) break;
      CountDiscarded(c, ByteView(read_buf_.data(), static_cast<size_t>(n)));
      c->bytes_moved += static_cast<uint64_t>(n);
      total += static_cast<uint64_t>(n);
      continue;
    }
    ssize_t n = splice(c->raw.get(), nullptr, c->pipe_w.get(), nullptr, pipe_bytes_,
                       SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;  // no full page now
      return ErrnoError(errno, absl::StrFormat("splice CPU %d from", c->cpu),
                        instance_->PerCpuPath(c->cpu, "trace_pipe_raw"));
    }
    if (n == 0) break;
    uint64_t moved = 0;
    while (moved < static_cast<uint64_t>(n)) {
      ssize_t m = splice(c->pipe_r.get(), nullptr, c->out, nullptr, static_cast<size_t>(n) - moved,
                         SPLICE_F_MOVE);
      if (m < 0 && errno == EINTR) continue;
      if (m <= 0) {
        int err = m < 0 ? errno : EIO;
        SwitchToDiscard(
            ErrnoError(err, absl::StrFormat("write CPU %d pages of", c->cpu), options_.output));
        DiscardPipe(c, moved);
        break;
      }
      moved += static_cast<uint64_t>(m);
    }
    c->bytes_moved += static_cast<uint64_t>(n);
    c->pages_spliced += static_cast<uint64_t>(n) / page;
    total += static_cast<uint64_t>(n);
    if (static_cast<uint64_t>(n) < pipe_bytes_) break;  // the ring had no more full pages
  }
  return total;
}

// The pipe holds the rest of a batch whose first `written` bytes reached the file: count the
// events of its whole pages as unwritten, and a page cut in the middle as unknown.
void FtraceCapture::DiscardPipe(Cpu* c, uint64_t written) {
  const uint32_t page = writer_->page_size();
  uint64_t skip = (page - written % page) % page;
  if (skip > 0) ++unwritten_pages_unknown_;
  for (;;) {
    size_t want = skip > 0 ? static_cast<size_t>(skip) : page;
    ssize_t n = ::read(c->pipe_r.get(), read_buf_.data(), want);
    if (n <= 0) break;
    if (skip > 0) {
      skip -= static_cast<uint64_t>(n);
      continue;
    }
    CountDiscarded(c, ByteView(read_buf_.data(), static_cast<size_t>(n)));
  }
}

absl::StatusOr<uint64_t> FtraceCapture::DrainOnce() {
  uint64_t total = 0;
  for (Cpu& c : cpu_state_) {
    IOTRACE_ASSIGN_OR_RETURN(uint64_t n, SpliceCpu(&c));
    total += n;
  }
  return total;
}

absl::StatusOr<bool> FtraceCapture::Poll(int timeout_ms) {
  IOTRACE_ASSIGN_OR_RETURN(bool watched, Wait(timeout_ms));
  IOTRACE_RETURN_IF_ERROR(DrainOnce().status());
  return watched;
}

bool FtraceCapture::ReadOnePage(Cpu* c) {
  const uint32_t page = writer_->page_size();
  ssize_t n;
  do {
    n = ::read(c->raw.get(), read_buf_.data(), page);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  if (static_cast<size_t>(n) < page) std::memset(read_buf_.data() + n, 0, page - n);
  c->bytes_moved += page;
  ++c->pages_flushed;
  if (disk_full_) {
    CountDiscarded(c, ByteView(read_buf_.data(), page));
    return true;
  }
  size_t done = 0;
  while (done < page) {
    ssize_t w = ::write(c->out, read_buf_.data() + done, page - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      SwitchToDiscard(ErrnoError(w < 0 ? errno : EIO,
                                 absl::StrFormat("write CPU %d pages of", c->cpu),
                                 options_.output));
      if (done == 0) {
        CountDiscarded(c, ByteView(read_buf_.data(), page));
      } else {
        ++unwritten_pages_unknown_;
      }
      break;
    }
    done += static_cast<size_t>(w);
  }
  return true;
}

absl::Status FtraceCapture::FlushPartialPages(Cpu* c) {
  IOTRACE_RETURN_IF_ERROR(SpliceCpu(c).status());
  // The kernel splices only full pages; read() hands out the partial ones, one per call.
  // Tracing is off, so this ends; the bound guards against a ring that keeps filling.
  const uint64_t max_pages = uint64_t{options_.buffer_kb} * 1024 / writer_->page_size() + 16;
  for (uint64_t i = 0; i < max_pages && ReadOnePage(c); ++i) {
  }
  return absl::OkStatus();
}

absl::Status FtraceCapture::FlushIdle() {
  for (Cpu& c : cpu_state_) {
    // A CPU that filled a page since the last flush had it spliced: only what sits in a page
    // that is not full yet would wait. (One read hands out what the page holds so far; the
    // kernel goes on filling another.)
    if (c.pages_spliced == c.spliced_at_flush) ReadOnePage(&c);
    c.spliced_at_flush = c.pages_spliced;
  }
  return absl::OkStatus();
}

absl::Status FtraceCapture::Stop() {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  absl::Status status = instance_->SetTracingOn(false);
  for (Cpu& c : cpu_state_) {
    absl::Status s = FlushPartialPages(&c);
    if (status.ok()) status = s;
  }
  return status;
}

uint64_t FtraceCapture::StoredBytes(size_t index) const {
  const off_t end = ::lseek(cpu_state_[index].out, 0, SEEK_CUR);
  return end < 0 ? 0 : static_cast<uint64_t>(end);
}

uint64_t FtraceCapture::OutputBytes() const {
  uint64_t total = writer_->data_start();
  for (size_t i = 0; i < cpu_state_.size(); ++i) total += StoredBytes(i);
  return total;
}

uint64_t FtraceCapture::bytes_moved() const {
  uint64_t total = 0;
  for (const Cpu& c : cpu_state_) total += c.bytes_moved;
  return total;
}

absl::StatusOr<CpuBufferStats> FtraceCapture::ReadCpuStats(size_t index) const {
  if (index >= cpus_.size()) return absl::InvalidArgumentError("ftrace capture: no such CPU");
  return instance_->ReadCpuStats(cpus_[index]);
}

std::string FtraceCapture::StatsText(size_t i, const CpuBufferStats& now) const {
  return stats_base_.empty() ? now.text : CpuBufferStatsSince(now, stats_base_[i]);
}

FtraceOutputPart FtraceCapture::TakePart() {
  FtraceOutputPart part;
  part.writer = std::move(writer_);
  part.events = options_.events;
  part.cpus = cpus_;
  for (Cpu& c : cpu_state_) {
    part.unwritten.push_back(c.unwritten);
    std::fill(c.unwritten.begin(), c.unwritten.end(), 0);
  }
  part.unwritten_pages_unknown = std::exchange(unwritten_pages_unknown_, 0);
  part.disk_full = disk_full_;
  part.storage_error = storage_error_;
  return part;
}

absl::StatusOr<FtraceOutputPart> FtraceCapture::SwitchOutput(const std::string& path) {
  if (finished_ || stopped_) {
    return absl::FailedPreconditionError("ftrace capture: switch after the end");
  }
  // Everything of the old file's share first: whole pages, then each page being filled (one
  // read hands out what it holds so far; the kernel goes on in another).
  for (Cpu& c : cpu_state_) {
    IOTRACE_RETURN_IF_ERROR(SpliceCpu(&c).status());
    ReadOnePage(&c);
    c.spliced_at_flush = c.pages_spliced;
  }
  std::vector<CpuBufferStats> now(cpu_state_.size());
  for (size_t i = 0; i < cpu_state_.size(); ++i) {
    IOTRACE_ASSIGN_OR_RETURN(now[i], instance_->ReadCpuStats(cpu_state_[i].cpu));
    writer_->SetCpuStats(cpu_state_[i].cpu, StatsText(i, now[i]));
  }
  writer_->SetSavedCmdlines(ReadSavedCmdlines(options_.tracefs));
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceDatWriter> next,
                           TraceDatWriter::Create(path, writer_options_));
  stats_base_ = std::move(now);
  FtraceOutputPart part = TakePart();
  writer_ = std::move(next);
  options_.output = path;
  for (Cpu& c : cpu_state_) c.out = writer_->CpuFd(c.cpu);
  return part;
}

absl::StatusOr<FtraceCaptureResult> FinishFtraceOutput(FtraceOutputPart part) {
  FtraceCaptureResult result;
  const std::string path = part.writer->path();
  auto written = part.writer->Finish();
  if (!written.ok()) return written.status();
  part.writer.reset();
  result.output_bytes = written->file_size;
  result.storage_error = part.disk_full ? part.storage_error : written->storage_error;
  result.disk_full = part.disk_full || !written->storage_error.ok();
  result.unwritten_pages_unknown = part.unwritten_pages_unknown;
  for (int cpu : part.cpus) {
    FtraceCpuResult r;
    r.cpu = cpu;
    if (static_cast<size_t>(cpu) < written->cpus.size()) r.file = written->cpus[cpu];
    result.cpus.push_back(std::move(r));
  }
  for (size_t e = 0; e < part.events.size(); ++e) {
    FtraceEventResult ev;
    ev.name = part.events[e].FullName();
    ev.id = part.events[e].id;
    ev.recorded.assign(part.cpus.size(), 0);
    for (const std::vector<uint64_t>& u : part.unwritten) ev.unwritten.push_back(u[e]);
    result.events.push_back(std::move(ev));
  }
  // The books come from the file itself: what a report will read is what is counted.
  auto reader = OpenTraceDat(path);
  if (!reader.ok()) return Annotate(reader.status(), "read back the recording");
  CountingSink sink(&result.events, part.cpus);
  IOTRACE_RETURN_IF_ERROR((*reader)->ReadAll(&sink));
  return result;
}

absl::StatusOr<FtraceCaptureResult> FtraceCapture::Finish() {
  if (finished_) return absl::FailedPreconditionError("ftrace capture: Finish called twice");
  finished_ = true;
  absl::Status status = Stop();

  std::vector<FtraceCpuResult> cpus;
  for (size_t i = 0; i < cpu_state_.size(); ++i) {
    const Cpu& c = cpu_state_[i];
    FtraceCpuResult r;
    r.cpu = c.cpu;
    r.bytes_moved = c.bytes_moved;
    r.pages_spliced = c.pages_spliced;
    r.pages_flushed = c.pages_flushed;
    auto stats = instance_->ReadCpuStats(c.cpu);
    if (stats.ok()) {
      r.stats = *stats;  // the run's totals; the file holds its share
      writer_->SetCpuStats(c.cpu, StatsText(i, *stats));
    } else if (status.ok()) {
      status = stats.status();
    }
    cpus.push_back(std::move(r));
  }
  writer_->SetSavedCmdlines(ReadSavedCmdlines(options_.tracefs));
  auto clock = instance_->ReadFile("trace_clock");
  const std::string clock_name = clock.ok() ? CurrentClockName(*clock) : options_.clock;

  // Open files keep an instance busy: close them, then remove it.
  for (Cpu& c : cpu_state_) {
    c.raw.Reset();
    c.pipe_r.Reset();
    c.pipe_w.Reset();
  }
  absl::Status removed = instance_->Remove();
  if (status.ok()) status = removed;

  IOTRACE_ASSIGN_OR_RETURN(FtraceCaptureResult result, FinishFtraceOutput(TakePart()));
  result.instance = instance_->name();
  result.clock = clock_name;
  for (size_t i = 0; i < cpus.size(); ++i) {
    cpus[i].file = result.cpus[i].file;
  }
  result.cpus = std::move(cpus);
  result.cleanup_error = status;
  return result;
}

}  // namespace iotrace
