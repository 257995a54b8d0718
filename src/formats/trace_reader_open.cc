// OpenTraceReader: sniff the file's magic and hand it to the matching reader.
#include "iotrace/formats/trace_reader_open.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/perf_inflate.h"
#include "iotrace/formats/perf_pipe.h"
#include "iotrace/formats/trace_dat_reader.h"
#include "iotrace/formats/tracing_data.h"

namespace iotrace {

namespace {

// The reader of a perf.data converted into a scratch file (a pipe-mode stream, a compressed
// file), which says what it was and counts what the conversion could not keep.
class ConvertedPerfReader final : public TraceReader {
 public:
  struct Conversion {
    std::pair<std::string, std::string> info;                // what the file was (Info())
    std::vector<std::pair<std::string, uint64_t>> problems;  // counted in stats()
    bool ends_early = false;  // the conversion stopped inside the data: every CPU's data ends
  };
  ConvertedPerfReader(std::unique_ptr<TraceReader> inner, Conversion conv)
      : inner_(std::move(inner)), conv_(std::move(conv)) {}
  std::string_view FileFormat() const override { return inner_->FileFormat(); }
  const std::vector<EventFormat>& formats() const override { return inner_->formats(); }
  const TracingMetadata& metadata() const override { return inner_->metadata(); }
  std::string FormatsSource() const override { return inner_->FormatsSource(); }
  std::string FormatsWarning() const override { return inner_->FormatsWarning(); }
  int nr_cpus() const override { return inner_->nr_cpus(); }
  std::vector<std::pair<std::string, std::string>> Info() const override {
    auto info = inner_->Info();
    info.push_back(conv_.info);
    return info;
  }
  std::string CommOf(int32_t pid) const override { return inner_->CommOf(pid); }
  void set_read_ahead(bool on) override { inner_->set_read_ahead(on); }
  absl::Status ReadAll(EventSink* sink) override {
    absl::Status st = inner_->ReadAll(sink);
    stats_ = inner_->stats();
    for (const auto& [name, count] : conv_.problems) stats_.AddProblem(name, count);
    // (The records of all CPUs are interleaved in the data.)
    if (conv_.ends_early) stats_.coverage.EndAll(inner_->nr_cpus(), GapCause::kCut);
    return st;
  }
  const ReadStats& stats() const override { return stats_; }

 private:
  std::unique_ptr<TraceReader> inner_;
  Conversion conv_;
  ReadStats stats_;
};

// Releases a read mapping's pages behind a conversion, in steps of 8 MiB: RSS stays bounded.
class MappingReleaser {
 public:
  explicit MappingReleaser(void* addr) : addr_(static_cast<uint8_t*>(addr)) {}
  void operator()(uint64_t upto) {
    const uint64_t end = upto / 4096 * 4096;
    if (end - released_ < (uint64_t{8} << 20)) return;
    madvise(addr_ + released_, end - released_, MADV_DONTNEED);
    released_ = end;
  }

 private:
  uint8_t* addr_;
  uint64_t released_ = 0;
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
  MappingReleaser release(addr);
  absl::Status st = ConvertPipePerfData(ByteView(addr, size), converted, &conv, std::ref(release));
  map.Reset();
  absl::StatusOr<std::unique_ptr<TraceReader>> reader =
      st.ok() ? OpenPerfData(converted) : absl::StatusOr<std::unique_ptr<TraceReader>>(st);
  ::unlink(converted.c_str());  // the reader keeps its mapping
  if (!reader.ok()) {
    return Annotate(reader.status(), absl::StrFormat("read %s (pipe-mode perf.data)", path));
  }
  ConvertedPerfReader::Conversion c;
  c.info = {"stream", "pipe mode (perf record -o -), converted to a scratch file"};
  c.problems = {{"perf_pipe_stream_truncated", conv.truncated},
                {"perf_pipe_late_attrs", conv.late_attrs},
                {"perf_compressed_damaged", conv.compressed_damaged}};
  c.ends_early = conv.truncated != 0 || conv.compressed_damaged != 0;
  return std::unique_ptr<TraceReader>(
      std::make_unique<ConvertedPerfReader>(*std::move(reader), std::move(c)));
}

// perf record -z: the data inflated into an unlinked scratch file (perf_inflate.h), which the
// in-place reader then maps through /proc/self/fd.
// `map`: the whole file, mapped.
absl::StatusOr<std::unique_ptr<TraceReader>> OpenCompressedPerfData(
    UniqueMapping map, const std::string& path, const PerfReadOptions& options) {
  void* const addr = map.addr();
  const uint64_t size = map.size();
  std::string where;
  IOTRACE_ASSIGN_OR_RETURN(UniqueFd tmp, OpenScratchFile(&where));
  PerfInflation inf;
  MappingReleaser release(addr);
  absl::Status st = InflatePerfData(ByteView(addr, size), tmp.get(), &inf, std::ref(release));
  map.Reset();
  if (!st.ok()) {
    return Annotate(st, absl::StrFormat("read %s (compressed perf.data, perf record -z)", path));
  }
  absl::StatusOr<std::unique_ptr<TraceReader>> reader =
      OpenPerfData(absl::StrFormat("/proc/self/fd/%d", tmp.get()), options);
  if (!reader.ok()) {
    return Annotate(
        reader.status(),
        absl::StrFormat("read %s (compressed perf.data, inflated into %s)", path, where));
  }
  ConvertedPerfReader::Conversion c;
  c.info = {"compression",
            absl::StrFormat("zstd%s (perf record -z): %u records, %.1f MiB inflated from %.1f "
                            "MiB, into a scratch file in %s",
                            inf.level >= 0 ? absl::StrFormat(" level %d", inf.level) : "",
                            inf.compressed_records, inf.inflated_bytes / 1048576.0,
                            inf.compressed_bytes / 1048576.0, where)};
  c.problems = {{"perf_compressed_damaged", inf.damaged},
                {"perf_compressed_partial_record", inf.partial_record}};
  c.ends_early = inf.damaged != 0 || inf.partial_record != 0;
  return std::unique_ptr<TraceReader>(
      std::make_unique<ConvertedPerfReader>(*std::move(reader), std::move(c)));
}

// Whether a perf.data header may need OpenCompressedPerfData: it has the compressed feature, or
// no data size (a recording that never finished, whose records tell).
bool MayBeCompressed(const perf::FileHeader& h) {
  return perf::HasFeature(h, perf::kFeatCompressed) || h.data.size == 0;
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
    perf::FileHeader h;
    if (::pread(fd.get(), &h, sizeof(h), 0) == sizeof(h) && h.size == sizeof(h) &&
        MayBeCompressed(h)) {
      const uint64_t size = static_cast<uint64_t>(st.st_size);
      void* addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
      if (addr != MAP_FAILED) {
        UniqueMapping map(addr, size);
        if (PerfDataIsCompressed(ByteView(addr, size))) {
          return OpenCompressedPerfData(std::move(map), shown, options);
        }
      }
    }
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
