#include "iotrace/formats/trace_dat_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/formats/tracing_data.h"
#include "trace_dat.h"

namespace iotrace {
namespace {

// Copied per copy_file_range call; also the most the assembly needs on top of the data.
constexpr uint64_t kCopyChunk = uint64_t{1} << 20;
// CPUSTAT texts are capped so that the header's size is bounded at Create.
constexpr size_t kMaxCpuStatText = 2048;
// Room for saved_cmdlines growing between Create and Finish.
constexpr uint64_t kCmdlinesSlack = uint64_t{64} << 10;
constexpr size_t kMaxClockText = 512;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void PutOption(std::string* out, uint16_t id, std::string_view text) {
  Put<uint16_t>(out, id);
  Put<uint32_t>(out, static_cast<uint32_t>(text.size() + 1));
  out->append(text);
  out->push_back('\0');
}

bool IsNoSpace(int err) { return err == ENOSPC || err == EFBIG || err == EDQUOT; }

// Copies [src_off, src_off + len) of `src` to `dst` at `dst_off`, in the kernel when it can.
// Returns the bytes copied; *err is set (errno) when it stopped early. With `punch`, each chunk
// copied is freed in `src` (the disk then holds the data about once, but a kill from then on
// loses what was freed before the header names it).
uint64_t CopyRange(int src, uint64_t src_off, int dst, uint64_t dst_off, uint64_t len, bool punch,
                   int* err) {
  static bool no_copy_file_range = false;
  uint64_t done = 0;
  *err = 0;
  while (done < len) {
    const size_t want = static_cast<size_t>(std::min(len - done, kCopyChunk));
    ssize_t n = -1;
    if (!no_copy_file_range) {
      loff_t in = static_cast<loff_t>(src_off + done), out = static_cast<loff_t>(dst_off + done);
      n = copy_file_range(src, &in, dst, &out, want, 0);
      if (n < 0 && (errno == ENOSYS || errno == EXDEV || errno == EOPNOTSUPP ||
                    (errno == EINVAL && done == 0))) {
        no_copy_file_range = true;
      }
    }
    if (no_copy_file_range) {
      // Fallback: a bounded buffer through user space.
      static thread_local std::string buf;
      buf.resize(want);
      n = pread(src, buf.data(), want, static_cast<off_t>(src_off + done));
      if (n > 0)
        n = pwrite(dst, buf.data(), static_cast<size_t>(n), static_cast<off_t>(dst_off + done));
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return done;
    }
    if (n == 0) {
      *err = EIO;  // the source ended early
      return done;
    }
    if (punch) {
      fallocate(src, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                static_cast<off_t>(src_off + done), n);
    }
    done += static_cast<uint64_t>(n);
  }
  return done;
}

// Writes all of `bytes` at `offset`.
absl::Status PWriteAll(int fd, std::string_view bytes, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = pwrite(fd, bytes.data() + done, bytes.size() - done,
                       static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError(n < 0 ? errno : EIO, "write header of", path);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Free space on the filesystem of `fd`, ~0 when unknown.
uint64_t FreeBytes(int fd) {
  struct statvfs v;
  if (fstatvfs(fd, &v) != 0) return ~uint64_t{0};
  return static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
}

}  // namespace

std::string TraceDatSpoolPath(const std::string& path, int cpu) {
  return absl::StrCat(path, ".cpu", cpu);
}

absl::StatusOr<std::unique_ptr<TraceDatWriter>> TraceDatWriter::Create(
    const std::string& path, TraceDatWriterOptions options) {
  if (options.nr_cpus <= 0 || options.nr_cpus > 65536) {
    return absl::InvalidArgumentError(
        absl::StrFormat("create trace.dat %s: bad CPU count %d", path, options.nr_cpus));
  }
  auto layout = ParseHeaderPage(options.meta.header_page, options.meta.page_size);
  if (!layout.ok()) return Annotate(layout.status(), absl::StrCat("create trace.dat ", path));
  std::unique_ptr<TraceDatWriter> w(new TraceDatWriter());
  w->path_ = path;
  w->page_size_ = layout->page_size;
  // trace-cmd reads pages of the initial format's page size: it must be the sub-buffer size.
  options.meta.page_size = w->page_size_;
  if (options.trace_clock.empty()) options.trace_clock = "local";
  if (options.trace_clock.size() > kMaxClockText) options.trace_clock.resize(kMaxClockText);
  if (options.uname.empty()) {
    struct utsname u;
    if (uname(&u) == 0) {
      options.uname = absl::StrCat(u.sysname, " ", u.nodename, " ", u.release, " ", u.machine);
    }
  }
  if (options.recorder.empty()) options.recorder = absl::StrCat("iotrace ", IOTRACE_VERSION);
  w->options_ = std::move(options);
  w->cpu_stats_.resize(w->options_.nr_cpus);

  w->out_ = UniqueFd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!w->out_.valid()) return ErrnoError(errno, "create", path);
  if (fchmod(w->out_.get(), 0600) != 0) return ErrnoError(errno, "chmod 0600", path);

  // The header's largest size: tracing data (plus room for new cmdlines), every option at its
  // cap, the CPU table and the clock.
  std::vector<TraceDatCpuResult> worst(w->options_.nr_cpus);
  std::string header = w->BuildHeader(worst, w->options_.meta.saved_cmdlines);
  uint64_t reserve =
      header.size() + kCmdlinesSlack + uint64_t(w->options_.nr_cpus) * (kMaxCpuStatText + 64);
  w->data_start_ = (reserve + w->page_size_ - 1) / w->page_size_ * w->page_size_;
  // Claim the header's blocks (and one copy chunk) now: Finish must be able to write them even
  // when the recording filled the disk. Filesystems without fallocate just skip this.
  if (fallocate(w->out_.get(), 0, 0, static_cast<off_t>(w->data_start_ + kCopyChunk)) != 0 &&
      IsNoSpace(errno)) {
    return WithHint(ErrnoError(errno, "reserve space for", path), "free some disk space");
  }

  // The header now, with no CPU data: a recording killed before Finish leaves a file that says
  // so (every CPU at offset 0, size 0, written by iotrace) beside its spools.
  if (w->options_.flush_interval_ms != 0) {
    w->cpu_stats_.assign(w->options_.nr_cpus,
                         absl::StrFormat("%s%u ms\n", kTraceDatFlushNote,
                                         w->options_.flush_interval_ms));
  }
  std::string initial = w->BuildHeader(worst, w->options_.meta.saved_cmdlines);
  w->cpu_stats_.assign(w->options_.nr_cpus, "");  // Finish writes the kernel's counters
  initial.resize(static_cast<size_t>(w->data_start_), '\0');
  IOTRACE_RETURN_IF_ERROR(PWriteAll(w->out_.get(), initial, 0, path));
  for (int cpu = 0; cpu < w->options_.nr_cpus; ++cpu) {
    const std::string spool = TraceDatSpoolPath(path, cpu);
    UniqueFd fd(::open(spool.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd.valid()) {
      const int err = errno;
      w->RemoveSpools();
      return ErrnoError(err, "create", spool);
    }
    w->cpu_fds_.push_back(std::move(fd));
  }
  return w;
}

absl::StatusOr<std::unique_ptr<TraceDatWriter>> TraceDatWriter::Resume(
    const std::string& path, TraceDatWriterOptions options, const std::string& note) {
  auto layout = ParseHeaderPage(options.meta.header_page, options.meta.page_size);
  if (!layout.ok()) return Annotate(layout.status(), absl::StrCat("recover ", path));
  std::unique_ptr<TraceDatWriter> w(new TraceDatWriter());
  w->path_ = path;
  w->page_size_ = layout->page_size;
  options.meta.page_size = w->page_size_;
  w->options_ = std::move(options);
  w->cpu_stats_.assign(w->options_.nr_cpus, note);
  for (int cpu = 0; cpu < w->options_.nr_cpus; ++cpu) {
    const std::string spool = TraceDatSpoolPath(path, cpu);
    UniqueFd fd(::open(spool.c_str(), O_RDWR | O_CLOEXEC));
    if (!fd.valid() && errno != ENOENT) return ErrnoError(errno, "open", spool);
    w->cpu_fds_.push_back(std::move(fd));  // a CPU with no spool recorded nothing
  }
  std::vector<TraceDatCpuResult> worst(w->options_.nr_cpus);
  const std::string header = w->BuildHeader(worst, w->options_.meta.saved_cmdlines);
  w->data_start_ = (header.size() + w->page_size_ - 1) / w->page_size_ * w->page_size_;
  w->out_ = UniqueFd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!w->out_.valid()) return ErrnoError(errno, "open", path);
  return w;
}

void TraceDatWriter::RemoveSpools() {
  for (int cpu = 0; cpu < options_.nr_cpus; ++cpu) ::unlink(TraceDatSpoolPath(path_, cpu).c_str());
}

TraceDatWriter::~TraceDatWriter() {
  if (!finished_ && out_.valid()) (void)Finish();
}

absl::Status TraceDatWriter::AppendPages(int cpu, ByteView pages) {
  if (cpu < 0 || cpu >= nr_cpus()) {
    return absl::InvalidArgumentError(absl::StrFormat("append pages: no CPU %d", cpu));
  }
  size_t done = 0;
  while (done < pages.size) {
    ssize_t n = ::write(cpu_fds_[cpu].get(), pages.data + done, pages.size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, absl::StrFormat("write CPU %d pages of", cpu), path_);
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

void TraceDatWriter::SetCpuStats(int cpu, std::string stats_text) {
  if (cpu < 0 || cpu >= nr_cpus()) return;
  cpu_stats_[cpu] = std::move(stats_text);
}

void TraceDatWriter::SetSavedCmdlines(std::string cmdlines) {
  new_cmdlines_ = std::move(cmdlines);
  have_new_cmdlines_ = true;
}

std::string TraceDatWriter::BuildHeader(const std::vector<TraceDatCpuResult>& cpus,
                                        const std::string& cmdlines) const {
  TracingMetadata meta = options_.meta;
  meta.saved_cmdlines = cmdlines;
  std::string out = EncodeTracingData(meta, "6");
  Put<uint32_t>(&out, static_cast<uint32_t>(cpus.size()));

  out.append(kTraceDatOptionsLabel, kTraceDatLabelSize);
  PutOption(&out, kOptionTraceClock, options_.trace_clock);
  PutOption(&out, kOptionUname, options_.uname);
  PutOption(&out, kOptionVersion, options_.recorder);
  for (size_t cpu = 0; cpu < cpus.size(); ++cpu) {
    std::string text = cpu_stats_.size() > cpu ? cpu_stats_[cpu] : std::string();
    // trace-cmd's records start with "CPU: N" (the kernel's file does not say which CPU).
    if (text.rfind("CPU:", 0) != 0) text = absl::StrCat("CPU: ", cpu, "\n", text);
    if (!text.empty() && text.back() != '\n') text.push_back('\n');
    uint64_t lost = cpus[cpu].pages_not_written + (cpus[cpu].partial_bytes_cut > 0 ? 1 : 0);
    std::string note = lost > 0 ? absl::StrCat("iotrace pages not written: ", lost, "\n") : "";
    if (text.size() + note.size() > kMaxCpuStatText) text.resize(kMaxCpuStatText - note.size());
    PutOption(&out, kOptionCpuStat, text + note);
  }
  Put<uint16_t>(&out, kOptionDone);

  out.append(kTraceDatFlyrecordLabel, kTraceDatLabelSize);
  for (const TraceDatCpuResult& c : cpus) {
    Put<uint64_t>(&out, c.offset);
    Put<uint64_t>(&out, c.bytes);
  }
  // trace-cmd reads the clock from here when TRACECLOCK is present, as "[name]".
  std::string clock = options_.trace_clock.find('[') == std::string::npos
                          ? absl::StrCat("[", options_.trace_clock, "]")
                          : options_.trace_clock;
  Put<uint64_t>(&out, clock.size());
  out.append(clock);
  return out;
}

absl::StatusOr<TraceDatWriteResult> TraceDatWriter::Finish() {
  if (finished_) return absl::FailedPreconditionError("trace.dat writer: Finish called twice");
  finished_ = true;
  TraceDatWriteResult result;
  result.cpus.resize(cpu_fds_.size());
  uint64_t offset = data_start_;
  // The spools stay whole until the header names their copies, so that a kill while
  // assembling loses nothing (`iotrace recover` starts again), unless the disk lacks room for
  // a second copy: then each chunk copied is freed at once.
  uint64_t spooled = 0;
  for (const UniqueFd& fd : cpu_fds_) {
    struct stat st;
    if (fd.valid() && fstat(fd.get(), &st) == 0) spooled += static_cast<uint64_t>(st.st_size);
  }
  const bool punch = FreeBytes(out_.get()) < spooled + 2 * kCopyChunk + (uint64_t{64} << 20);
  for (size_t cpu = 0; cpu < cpu_fds_.size(); ++cpu) {
    TraceDatCpuResult& c = result.cpus[cpu];
    c.offset = offset;
    if (!cpu_fds_[cpu].valid()) continue;  // (Resume) no spool: nothing recorded
    struct stat st;
    if (fstat(cpu_fds_[cpu].get(), &st) != 0) {
      if (result.storage_error.ok()) result.storage_error = ErrnoError(errno, "stat", "CPU data");
      continue;
    }
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const uint64_t whole = size / page_size_ * page_size_;
    c.partial_bytes_cut = size - whole;
    int err = 0;
    uint64_t copied =
        whole > 0 ? CopyRange(cpu_fds_[cpu].get(), 0, out_.get(), offset, whole, punch, &err) : 0;
    c.bytes = copied / page_size_ * page_size_;
    c.pages = c.bytes / page_size_;
    c.pages_not_written = (whole - c.bytes) / page_size_;
    if (err != 0 && result.storage_error.ok()) {
      result.storage_error = ErrnoError(err, absl::StrFormat("store CPU %d pages in", cpu), path_);
    }
    offset += c.bytes;
  }

  std::string header =
      BuildHeader(result.cpus, have_new_cmdlines_ ? new_cmdlines_ : options_.meta.saved_cmdlines);
  if (header.size() > data_start_) {
    header = BuildHeader(result.cpus, options_.meta.saved_cmdlines);
  }
  if (header.size() > data_start_) {
    return absl::InternalError(
        absl::StrFormat("write trace.dat %s: header of %u bytes exceeds the %u reserved", path_,
                        header.size(), data_start_));
  }
  // Zero the gap after the header (the reserved blocks may hold an older header's bytes).
  header.resize(static_cast<size_t>(data_start_), '\0');
  // The data first, then the header that names it: until the header is on disk the file still
  // reads as unfinished, and the spools are kept.
  if (fdatasync(out_.get()) != 0 && result.storage_error.ok()) {
    result.storage_error = ErrnoError(errno, "sync", path_);
  }
  IOTRACE_RETURN_IF_ERROR(PWriteAll(out_.get(), header, 0, path_));
  if (ftruncate(out_.get(), static_cast<off_t>(offset)) != 0) {
    return ErrnoError(errno, "truncate", path_);
  }
  if (fdatasync(out_.get()) != 0 && result.storage_error.ok()) {
    result.storage_error = ErrnoError(errno, "sync", path_);
  }
  out_.Reset();
  for (UniqueFd& fd : cpu_fds_) fd.Reset();
  RemoveSpools();
  result.file_size = offset;
  return result;
}

}  // namespace iotrace
