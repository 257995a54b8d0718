// OpenTraceReader: sniff the file's magic and hand it to the matching reader.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/perf_pipe.h"
#include "iotrace/formats/trace_dat_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "iotrace/formats/tracing_data.h"

namespace iotrace {

namespace {

// The reader of a converted pipe-mode stream, which says so and counts a cut-short stream.
class PipePerfReader final : public TraceReader {
 public:
  PipePerfReader(std::unique_ptr<TraceReader> inner, const PipeConversion& conv)
      : inner_(std::move(inner)), conv_(conv) {}
  std::string_view FileFormat() const override { return inner_->FileFormat(); }
  const std::vector<EventFormat>& formats() const override { return inner_->formats(); }
  const TracingMetadata& metadata() const override { return inner_->metadata(); }
  std::string FormatsSource() const override { return inner_->FormatsSource(); }
  std::string FormatsWarning() const override { return inner_->FormatsWarning(); }
  int nr_cpus() const override { return inner_->nr_cpus(); }
  std::vector<std::pair<std::string, std::string>> Info() const override {
    auto info = inner_->Info();
    info.emplace_back("stream", "pipe mode (perf record -o -), converted to a scratch file");
    return info;
  }
  std::string CommOf(int32_t pid) const override { return inner_->CommOf(pid); }
  void set_read_ahead(bool on) override { inner_->set_read_ahead(on); }
  absl::Status ReadAll(EventSink* sink) override {
    absl::Status st = inner_->ReadAll(sink);
    stats_ = inner_->stats();
    stats_.AddProblem("perf_pipe_stream_truncated", conv_.truncated);
    // A stream cut short: every CPU's data ends early (the records of all are interleaved).
    if (conv_.truncated != 0) stats_.coverage.EndAll(inner_->nr_cpus(), GapCause::kCut);
    stats_.AddProblem("perf_pipe_late_attrs", conv_.late_attrs);
    return st;
  }
  const ReadStats& stats() const override { return stats_; }

 private:
  std::unique_ptr<TraceReader> inner_;
  PipeConversion conv_;
  ReadStats stats_;
};

// perf record -o - (saved to a file, or read from standard input): converted into a regular
// perf.data in a scratch file, which the in-place reader then maps.
absl::StatusOr<std::unique_ptr<TraceReader>> OpenPipePerfData(int fd, const std::string& path,
                                                              uint64_t size) {
  void* addr = size == 0 ? MAP_FAILED : mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) return ErrnoError(errno, "mmap", path);
  UniqueMapping map(addr, size);
  IOTRACE_ASSIGN_OR_RETURN(std::string converted, CreateScratchPath("iotrace-pipe-perf"));
  PipeConversion conv;
  uint64_t released = 0;
  auto release = [&](uint64_t upto) {
    // Whole pages behind the conversion, in steps of 8 MiB: RSS stays bounded.
    const uint64_t end = upto / 4096 * 4096;
    if (end - released < (uint64_t{8} << 20)) return;
    madvise(static_cast<uint8_t*>(addr) + released, end - released, MADV_DONTNEED);
    released = end;
  };
  absl::Status st = ConvertPipePerfData(ByteView(addr, size), converted, &conv, release);
  map.Reset();
  absl::StatusOr<std::unique_ptr<TraceReader>> reader =
      st.ok() ? OpenPerfData(converted) : absl::StatusOr<std::unique_ptr<TraceReader>>(st);
  ::unlink(converted.c_str());  // the reader keeps its mapping
  if (!reader.ok()) {
    return Annotate(reader.status(), absl::StrFormat("read %s (pipe-mode perf.data)", path));
  }
  return std::unique_ptr<TraceReader>(std::make_unique<PipePerfReader>(*std::move(reader), conv));
}

// Standard input copied into an unlinked scratch file; its /proc/self/fd path names it.
absl::StatusOr<UniqueFd> CopyStandardInput() {
  std::string where;
  IOTRACE_ASSIGN_OR_RETURN(UniqueFd tmp, OpenScratchFile(&where));
  std::vector<uint8_t> buf(size_t{1} << 20);
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, "read", "standard input");
    if (n == 0) break;
    IOTRACE_RETURN_IF_ERROR(
        WriteToScratchFile(tmp.get(), ByteView(buf.data(), static_cast<size_t>(n))));
  }
  return tmp;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceReader(
    const std::string& input, const FormatsFallback* formats_fallback) {
  // "-": standard input, which may be a pipe (perf record -o - | iotrace report -i -).
  std::string path = input;
  UniqueFd stdin_copy;
  if (input == "-") {
    IOTRACE_ASSIGN_OR_RETURN(stdin_copy, CopyStandardInput());
    path = absl::StrFormat("/proc/self/fd/%d", stdin_copy.get());
  }
  const std::string shown = input == "-" ? "standard input" : path;  // in messages
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    absl::Status s = ErrnoError(errno, "open", path);
    if (errno == ENOENT) {
      return WithHint(s, "record one first: iotrace record -d 10 -o " + path);
    }
    return s;
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError(errno, "stat", path);
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat("read %s: is a directory", path));
  }
  uint64_t pipe_header[2] = {};
  if (::pread(fd.get(), pipe_header, sizeof(pipe_header), 0) == sizeof(pipe_header) &&
      IsPipePerfData(ByteView(pipe_header, sizeof(pipe_header)))) {
    return OpenPipePerfData(fd.get(), shown, static_cast<uint64_t>(st.st_size));
  }
  char magic[kTracingMagicSize] = {};
  ssize_t n = ::pread(fd.get(), magic, sizeof(magic), 0);
  if (n < 0) return ErrnoError(errno, "read", shown);
  if (n >= 8 && std::memcmp(magic, "PERFILE2", 8) == 0) {
    PerfReadOptions options;
    options.formats_fallback = formats_fallback;
    return OpenPerfData(path, options);
  }
  if (n == static_cast<ssize_t>(kTracingMagicSize) &&
      std::memcmp(magic, kTracingMagic, kTracingMagicSize) == 0) {
    return OpenTraceDat(path);
  }
  if (n >= 8 && std::memcmp(magic, "PERFFILE", 8) == 0) {
    return WithHint(absl::InvalidArgumentError(absl::StrFormat(
                        "read %s: perf.data version 1 (PERFFILE) is not supported", shown)),
                    "re-record with a perf from the last ten years");
  }
  return WithHint(
      absl::InvalidArgumentError(absl::StrFormat(
          "read %s: not a perf.data or trace.dat file (%s)", shown,
          n == 0 ? "the file is empty" : "unknown magic bytes")),
      "iotrace report reads files written by iotrace record, perf record or trace-cmd record");
}

}  // namespace iotrace
