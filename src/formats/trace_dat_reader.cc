#include "iotrace/formats/trace_dat_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/batch_read.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/file_ring.h"
#include "iotrace/base/loser_tree.h"
#include "iotrace/base/prefetch.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/formats/trace_dat_inflate.h"
#include "iotrace/formats/trace_dat_writer.h"
#include "iotrace/formats/tracing_data.h"
#include "trace_dat.h"

namespace iotrace {
namespace {

// Each CPU's stream is read through a ring of this many bytes (FileRing), fewer per CPU when
// there are many CPUs, so that all rings together stay within kRingBudget, and those read in the
// caller's thread within kCallerRingBudget: at 64 CPUs and more their bytes then stay in the
// second-level cache between the pread that copies them and the walk that reads them (3 M events,
// one thread, CPU time, medians of 7 on a shared machine: 256 CPUs, 16 KiB rings in place of
// 64 KiB, 324 -> 253 ms, peak RSS 28 -> 16 MiB; 64 CPUs, 64 KiB in place of 256 KiB, 228 -> 216
// ms).
constexpr size_t kRingBytes = size_t{256} << 10;
constexpr size_t kRingBudget = size_t{16} << 20;
constexpr size_t kCallerRingBudget = size_t{4} << 20;
// Streams read ahead on threads of their own, at most (see ReadAll).
constexpr size_t kMaxReadAheadStreams = 4;
// From this many rings read in the caller's thread, they refill together (FileRingGroup), up to
// this many reads a system call.
constexpr size_t kGroupRings = 8;
constexpr unsigned kGroupDepth = 128;
constexpr int kMaxOptionSections = 1024;

// One CPU of one buffer instance.
struct Stream {
  std::string buffer;  // "" is the top instance
  int cpu = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  int fd = -1;  // where the data is: -1 the file (or its inflated copy); else a spool file
  FtracePageLayout layout;
  bool cut = false;      // the file ends inside this stream's data (or before it)
  bool damaged = false;  // dropped: its data overlaps another stream's
};

struct BufferRef {
  std::string name;
  uint64_t offset = 0;  // v6: of its "flyrecord" label; v7: of its section
  // v7 only: the CPU table is in the option itself.
  uint32_t page_size = 0;
  std::vector<Stream> v7_streams;
  std::string clock;
};

struct StatsRef {
  std::string buffer;
  FtraceCpuStats stats;
};

// Problems counted on the hot path by index, turned into named counters once at the end.
enum HotProblem : int {
  kHotPageBase = 0,  // + FtracePageProblem
  kHotShortRecord = kFtracePageProblemCount,
  kHotPartialPage,
  kHotMissedUncounted,
  kHotReadError,
  kHotCount,
};

const char* HotProblemName(int i) {
  if (i < kFtracePageProblemCount) return FtracePageProblemName(static_cast<FtracePageProblem>(i));
  switch (i) {
    case kHotShortRecord:
      return "ftrace_short_record";
    case kHotPartialPage:
      return "ftrace_partial_page";
    case kHotMissedUncounted:
      return "ftrace_missed_events_uncounted";
    case kHotReadError:
      return "read_error";
  }
  return "ftrace_unknown_problem";
}

constexpr char kDamagedHint[] =
    "the file is cut short or damaged: copy it again from where it was recorded, or record again";

absl::Status Corrupt(const std::string& path, std::string_view what) {
  return WithHint(absl::InvalidArgumentError(
                      absl::StrFormat("read trace.dat %s: truncated or corrupt %s", path, what)),
                  kDamagedHint);
}

std::string_view CString(ByteView data) {
  std::string_view s = data.AsString();
  size_t nul = s.find('\0');
  return nul == std::string_view::npos ? s : s.substr(0, nul);
}

// "local global [mono] ..." -> "mono"; a bare name is returned as is.
std::string CurrentClock(std::string_view text) {
  size_t open = text.find('[');
  if (open != std::string_view::npos) {
    size_t close = text.find(']', open);
    if (close != std::string_view::npos)
      return std::string(text.substr(open + 1, close - open - 1));
  }
  size_t end = text.find_first_of(" \n\0", 0, 3);
  return std::string(text.substr(0, end));
}

class TraceDatReader final : public TraceReader {
 public:
  TraceDatReader(std::string path, TraceDatReaderOptions options)
      : path_(std::move(path)), options_(options) {}

  absl::Status Open();

  std::string_view FileFormat() const override { return "trace.dat"; }
  const std::vector<EventFormat>& formats() const override { return formats_; }
  const TracingMetadata& metadata() const override { return meta_; }
  int nr_cpus() const override { return nr_cpus_; }
  std::vector<std::pair<std::string, std::string>> Info() const override { return info_; }
  std::string CommOf(int32_t pid) const override {
    auto it = comms_.find(pid);
    return it == comms_.end() ? std::string() : it->second;
  }
  absl::Status ReadAll(EventSink* sink) override {
    RangeReadResult r;
    absl::Status s = Read<false>(sink, TimeRange{}, &r);
    stats_ = std::move(r.stats);
    return s;
  }
  void set_read_ahead(bool on) override { read_ahead_ = on; }
  const ReadStats& stats() const override { return stats_; }
  std::optional<TraceTimeSpan> TimeSpan() const override;
  absl::Status ReadRange(EventSink* sink, const TimeRange& range, RangeReadResult* out) override {
    return Read<true>(sink, range, out);
  }

 private:
  // What a record's delivery and an in-page move to the next one read and write is the first
  // cache line: the record, the counts, then the walker, whose position comes first (24 bytes).
  // With 256 CPUs each record is another cursor's; this line is asked for as the cursor wins
  // (Read), and the next one is touched only on a new page. (Two lines and a field in a third
  // before: 448-byte cursors, each winner's second line a miss waited for in the merge loop.)
  struct alignas(64) Cursor {
    FtraceRecord rec;  // the record the cursor is on; its ts is also the last record's read
    uint64_t delivered = 0;  // (coverage, below)
    int cpu = 0;
    bool loss_pending = false;
    FtracePageWalker walker;
    const Stream* stream = nullptr;
    uint32_t order = 0;
    uint64_t page_off = 0;  // file offset of the current page
    uint64_t next_off = 0;  // file offset of the next page
    uint64_t end_off = 0;
    FileRing ring;  // the stream's bytes around the current page
    LossRecord loss;
    uint64_t located_missed = 0;
    uint64_t missed_pages = 0;
    // Coverage, kept per page, not per record: the stream's first record (file time, 0: none
    // read yet; last_ts() is its last), the records delivered (above), and the gaps found. A gap
    // met (MarkGap) begins after the last record read and ends at the first record of the next
    // page that has one (AdvancePage).
    uint64_t first_ts = 0;
    bool gap_pending = false;
    GapCause gap_cause = GapCause::kDamaged;
    uint64_t gap_after = 0;  // file time; 0: no record before it
    uint64_t gap_events = 0;
    std::vector<DataGap> gaps;  // file times, shifted at the end
    void MarkGap(GapCause cause, uint64_t events = 0) {
      if (!gap_pending) gap_after = last_ts();
      if (!gap_pending || cause == GapCause::kDamaged) gap_cause = cause;
      gap_pending = true;
      gap_events += events;
    }
    void CloseGap(uint64_t before) {
      gaps.push_back(DataGap{stream->cpu, gap_after, before, gap_cause, gap_events});
      gap_pending = false;
      gap_events = 0;
    }

    // The walk moves rec on only to a record read, so its time is the last one's.
    uint64_t last_ts() const { return rec.ts; }

    explicit Cursor(const Stream* s) : cpu(s->cpu), walker(s->layout), stream(s) {}
  };

  absl::Status ParseV6(ByteView file, size_t pos);
  absl::Status ParseV7(ByteView file, size_t pos);
  absl::Status HandleOption(uint16_t id, ByteView data, bool v7);
  absl::Status ReadV6Flyrecord(ByteView file, size_t pos, const std::string& buffer, size_t* end);
  // `data_file_size`: the size of the file the per-CPU streams are read from.
  absl::Status FinishMetadata(uint64_t data_file_size);
  // v7: one metadata or options section's body, inflated into `owned` when it is compressed.
  absl::Status SectionBody(ByteView file, size_t pos, uint64_t size, uint16_t flags,
                           std::string_view what, std::string* owned, ByteView* body);
  // v7: moves the per-CPU data into an inflated temporary file when some of it is compressed,
  // and maps that file in place of the original.
  absl::Status InflateStreams(const std::vector<bool>& compressed);
  void AddStream(Stream s);
  bool ClaimRange(uint64_t begin, uint64_t end);
  // The walk has read only the header of the record it moved to. Its payload and the next
  // record's header are read when the cursor wins again, after a record of every other stream
  // on average: with many CPUs their lines are out of the cache by then (the hardware follows a
  // few sequential streams, not 256), so they are asked for now.
  static void Prefetch(const FtraceRecord& rec) {
    iotrace::Prefetch(rec.payload.data);
    iotrace::Prefetch(rec.payload.data + rec.payload.size);
  }
  // Moves the cursor past the end of its current page (or onto its first page) to the next data
  // record, loading pages as needed. False at the end.
  bool AdvancePage(Cursor* c, std::array<uint64_t, kHotCount>* problems) const;
  // ReadAll (kRanged false: the whole file, every record counted) and ReadRange.
  template <bool kRanged>
  absl::Status Read(EventSink* sink, const TimeRange& range, RangeReadResult* out) const;
  // The time stamp in the header of page `index` of `s` (file time, before ts_offset_); false
  // when it cannot be read.
  bool PageTime(const Stream& s, uint64_t index, uint64_t* ts) const;
  // Page header times already read, by page index.
  using PageTimes = absl::flat_hash_map<uint64_t, uint64_t>;
  // The index of the last page of `s` whose header time is at most `ts` (0 when none is).
  // `known`, when given, holds times read before and takes those read now.
  uint64_t PageAtOrBefore(const Stream& s, uint64_t ts, PageTimes* known = nullptr) const;

  std::string path_;
  TraceDatReaderOptions options_;
  bool read_ahead_ = false;
  UniqueMapping map_;
  ByteView file_;
  UniqueFd data_fd_;  // the file the per-CPU streams are read from (the inflated one for v7)
  int version_ = 0;
  int nr_cpus_ = 0;
  bool has_trace_clock_option_ = false;
  std::string trace_clock_;
  std::string uname_;
  std::string recorder_;
  // An iotrace recording that never finished: kSpools, read from the spool files beside it;
  // kRecovered, assembled by `iotrace recover`. Either way its losses are unknown.
  enum class Unfinished { kNo, kSpools, kRecovered } unfinished_ = Unfinished::kNo;
  std::vector<UniqueFd> spool_fds_;
  uint64_t spool_partial_pages_ = 0;  // a spool's last page cut short (killed while writing it)
  uint32_t flush_interval_ms_ = 0;    // what the recording's header says, 0: not said
  absl::Status OpenSpools();
  int DataFd(const Stream& s) const { return s.fd >= 0 ? s.fd : data_fd_.get(); }
  std::string compression_;
  std::optional<TraceDatInflater> inflater_;  // a compressed v7 file
  uint64_t inflated_bytes_ = 0;
  std::string inflated_where_;
  int64_t ts_offset_ = 0;
  FtracePageLayout layout_;
  TracingMetadata meta_;
  std::vector<EventFormat> formats_;
  std::vector<BufferRef> buffers_;
  std::vector<StatsRef> cpu_stats_;
  std::string stats_buffer_;  // the buffer that CPUSTAT options currently describe
  std::vector<Stream> streams_;
  // File ranges of metadata already parsed (begin -> end): see ClaimRange.
  std::map<uint64_t, uint64_t> claimed_;
  uint64_t truncated_streams_ = 0;
  bool file_cut_ = false;  // CPU data (or the options after it) past the end of the file
  uint64_t overlapping_streams_ = 0;
  uint64_t unparsed_formats_ = 0;
  absl::flat_hash_map<int32_t, std::string> comms_;
  std::vector<std::pair<std::string, std::string>> info_;
  uint32_t common_pid_offset_ = 4;
  ReadStats stats_;
};

absl::Status TraceDatReader::Open() {
  UniqueFd& fd = data_fd_;
  fd = UniqueFd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open", path_);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError(errno, "stat", path_);
  if (st.st_size <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat("read trace.dat %s: file is empty", path_));
  }
  void* addr = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) return ErrnoError(errno, "mmap", path_);
  map_ = UniqueMapping(addr, static_cast<size_t>(st.st_size));
  file_ = ByteView(addr, static_cast<size_t>(st.st_size));

  ByteReader r(file_);
  ByteView magic;
  std::string_view version;
  if (!r.ReadBytes(kTracingMagicSize, &magic) ||
      magic.AsString() != std::string_view(kTracingMagic, kTracingMagicSize) ||
      !r.ReadCString(&version)) {
    return Corrupt(path_, "file header");
  }
  if (version == "6") {
    version_ = 6;
    return ParseV6(file_, 0);
  }
  if (version == "7") {
    version_ = 7;
    return ParseV7(file_, r.pos());
  }
  return WithHint(
      absl::UnimplementedError(absl::StrFormat(
          "read trace.dat %s: file version %s is not supported (iotrace reads versions 6 and 7)",
          path_, std::string(version))),
      absl::StrCat("convert it: trace-cmd convert -i ", path_,
                   " --file-version 6 --compression none -o converted.dat"));
}

absl::Status TraceDatReader::ParseV6(ByteView file, size_t pos) {
  auto decoded = DecodeTracingData(file, /*keep_kallsyms=*/false);
  if (!decoded.ok()) {
    // The formats come first: a file cut inside them holds no CPU table, so no data either.
    return WithHint(Annotate(decoded.status(),
                             absl::StrFormat("read trace.dat %s (%u bytes): file header and "
                                             "event formats",
                                             path_, file.size)),
                    kDamagedHint);
  }
  meta_ = std::move(decoded->meta);
  ByteReader r(file);
  r.Seek(decoded->consumed);
  uint32_t cpus = 0;
  if (!r.Read(&cpus) || cpus == 0 || cpus > 65536) return Corrupt(path_, "CPU count");
  nr_cpus_ = static_cast<int>(cpus);
  ByteView label;
  if (!r.ReadBytes(kTraceDatLabelSize, &label)) return Corrupt(path_, "section label");
  if (label.AsString() == std::string_view(kTraceDatOptionsLabel, kTraceDatLabelSize)) {
    for (;;) {
      uint16_t id = 0;
      uint32_t size = 0;
      if (!r.Read(&id)) return Corrupt(path_, "options");
      if (id == kOptionDone) break;
      ByteView data;
      if (!r.Read(&size) || !r.ReadBytes(size, &data)) return Corrupt(path_, "option");
      IOTRACE_RETURN_IF_ERROR(HandleOption(id, data, false));
    }
    if (!r.ReadBytes(kTraceDatLabelSize, &label)) return Corrupt(path_, "section label");
  }
  if (label.AsString() == std::string_view(kTraceDatLatencyLabel, kTraceDatLabelSize)) {
    return absl::UnimplementedError(absl::StrFormat(
        "read trace.dat %s: it holds a latency trace (text), not per-CPU ring-buffer data", path_));
  }
  if (label.AsString() != std::string_view(kTraceDatFlyrecordLabel, kTraceDatLabelSize)) {
    return Corrupt(path_, "section label (expected \"flyrecord\")");
  }
  size_t end = 0;
  IOTRACE_RETURN_IF_ERROR(ReadV6Flyrecord(file, r.pos() - kTraceDatLabelSize, "", &end));
  for (const BufferRef& b : buffers_) {
    IOTRACE_RETURN_IF_ERROR(ReadV6Flyrecord(file, b.offset, b.name, &end));
  }
  // iotrace writes the header first with no CPU data (TraceDatWriter::Create); a recording
  // killed before the end keeps it so, with its pages in spool files beside it.
  bool no_data = buffers_.empty();
  for (const Stream& s : streams_) no_data &= s.offset == 0 && s.size == 0;
  if (no_data && recorder_.rfind("iotrace", 0) == 0) IOTRACE_RETURN_IF_ERROR(OpenSpools());
  return FinishMetadata(file.size);
}

absl::Status TraceDatReader::OpenSpools() {
  unfinished_ = Unfinished::kSpools;
  const uint64_t page = meta_.page_size == 0 ? 4096 : meta_.page_size;
  int found = 0;
  for (Stream& s : streams_) {
    const std::string spool = TraceDatSpoolPath(path_, s.cpu);
    UniqueFd fd(::open(spool.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
      if (errno == ENOENT) continue;  // that CPU recorded nothing
      return ErrnoError(errno, "open", spool);
    }
    struct stat st;
    if (fstat(fd.get(), &st) != 0) return ErrnoError(errno, "stat", spool);
    ++found;
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    s.size = size / page * page;
    if (s.size != size) ++spool_partial_pages_;
    s.fd = fd.get();
    spool_fds_.push_back(std::move(fd));
  }
  if (found == 0) {
    return WithHint(
        absl::DataLossError(absl::StrFormat(
            "read trace.dat %s: the recording did not finish (iotrace was killed) and its spool "
            "files (%s ...) are gone: it holds no data",
            path_, TraceDatSpoolPath(path_, 0))),
        "the events were in those files; record again");
  }
  return absl::OkStatus();
}

absl::Status TraceDatReader::ReadV6Flyrecord(ByteView file, size_t pos, const std::string& buffer,
                                             size_t* end) {
  ByteReader r(file);
  ByteView label;
  if (!r.Seek(pos) || !r.ReadBytes(kTraceDatLabelSize, &label) ||
      label.AsString() != std::string_view(kTraceDatFlyrecordLabel, kTraceDatLabelSize)) {
    return Corrupt(path_, absl::StrCat("flyrecord of buffer \"", buffer, "\""));
  }
  if (!ClaimRange(pos, pos + kTraceDatLabelSize + 16 * uint64_t(nr_cpus_))) {
    return Corrupt(path_, absl::StrCat("flyrecord of buffer \"", buffer,
                                       "\" (its CPU table overlaps one already read)"));
  }
  for (int cpu = 0; cpu < nr_cpus_; ++cpu) {
    Stream s;
    s.buffer = buffer;
    s.cpu = cpu;
    if (!r.Read(&s.offset) || !r.Read(&s.size)) {
      return Corrupt(path_, absl::StrFormat("flyrecord CPU table of buffer \"%s\" (CPU %d at "
                                            "byte %u; the file is %u bytes)",
                                            buffer, cpu, r.pos(), file.size));
    }
    AddStream(std::move(s));
  }
  // With a TRACECLOCK option, the clock follows the table (trace-input.c, init_data_v6). The
  // option wins: trace-cmd 3.1.6 writes the top instance's clock here even for -B instances.
  uint64_t clock_size = 0;
  ByteView clock;
  if (has_trace_clock_option_ && r.Read(&clock_size) && clock_size < 4096 &&
      r.ReadBytes(clock_size, &clock)) {
    if (trace_clock_.empty()) trace_clock_ = CurrentClock(clock.AsString());
  }
  *end = r.pos();
  return absl::OkStatus();
}

absl::Status TraceDatReader::ParseV7(ByteView file, size_t pos) {
  ByteReader r(file);
  r.Seek(pos);
  uint8_t endian = 0, long_size = 0;
  uint32_t page_size = 0;
  std::string_view comp_name, comp_version;
  uint64_t options_offset = 0;
  if (!r.Read(&endian) || !r.Read(&long_size) || !r.Read(&page_size) ||
      !r.ReadCString(&comp_name) || !r.ReadCString(&comp_version) || !r.Read(&options_offset)) {
    return Corrupt(path_, "v7 file header");
  }
  if (endian != 0) {
    return absl::UnimplementedError(
        absl::StrFormat("read trace.dat %s: big-endian files are not supported", path_));
  }
  compression_ = std::string(comp_name);
  if (!comp_name.empty() && comp_name != "none") {
    auto inflater = TraceDatInflater::For(comp_name);
    if (!inflater.ok()) {
      return WithHint(
          absl::UnimplementedError(absl::StrFormat(
              "read trace.dat %s: file version 7 with %s-compressed sections is not supported "
              "(iotrace reads version 6, and version 7 uncompressed, zstd or zlib)",
              path_, std::string(comp_name))),
          absl::StrCat("convert it: trace-cmd convert -i ", path_,
                       " --file-version 6 --compression none -o converted.dat; or record with "
                       "trace-cmd record --file-version 6"));
    }
    inflater_ = *inflater;
  }

  // Options sections form a chain through their DONE options.
  absl::flat_hash_map<uint16_t, uint64_t> sections;  // metadata section id -> offset
  int visited = 0;
  while (options_offset != 0) {
    if (++visited > kMaxOptionSections) return Corrupt(path_, "options chain (loops)");
    if (options_offset >= file.size) {
      // trace-cmd writes the last options section (the BUFFER options of the instances, with
      // where each CPU's data lies) after the data: a cut file loses it.
      bool any_data = false;
      for (const BufferRef& b : buffers_) any_data |= !b.v7_streams.empty();
      if (any_data) {
        file_cut_ = true;
        break;
      }
      return WithHint(
          absl::InvalidArgumentError(absl::StrFormat(
              "read trace.dat %s: options section %d, at byte %u, lies past the end of the file "
              "(%u bytes): the file is cut short (or damaged), and the options that say where "
              "each CPU's data lies are lost with its end",
              path_, visited, options_offset, file.size)),
          "copy the file again from where it was recorded, or record again; trace-cmd's "
          "file version 7 keeps the CPU data table at the end of the file, version 6 "
          "(trace-cmd record --file-version 6, iotrace record -b ftrace) before the data, so "
          "a cut version 6 file is read up to the cut");
    }
    ByteReader o(file);
    uint16_t sec_id = 0, sec_flags = 0;
    uint32_t sec_string = 0;
    uint64_t sec_size = 0;
    if (!o.Seek(options_offset) || !o.Read(&sec_id) || !o.Read(&sec_flags) ||
        !o.Read(&sec_string) || !o.Read(&sec_size) || sec_id != kOptionDone) {
      return Corrupt(path_, absl::StrFormat("options section header (section %d, at byte %u; "
                                            "the file is %u bytes)",
                                            visited, options_offset, file.size));
    }
    std::string inflated;
    ByteView body = file;
    const bool compressed = sec_flags & kTraceDatSectionCompressed;
    if (compressed) {
      IOTRACE_RETURN_IF_ERROR(
          SectionBody(file, o.pos(), sec_size, sec_flags, "options section", &inflated, &body));
    }
    const size_t section_end = o.pos() + (compressed ? sec_size : 0);
    ByteReader opts(body);
    if (!compressed) opts.Seek(o.pos());
    uint64_t next = 0;
    for (;;) {
      uint16_t id = 0;
      uint32_t size = 0;
      ByteView data;
      if (!opts.Read(&id) || !opts.Read(&size) || !opts.ReadBytes(size, &data)) {
        return Corrupt(path_, absl::StrFormat("option at byte %u of options section %d (at byte "
                                              "%u%s; the file is %u bytes)",
                                              opts.pos(), visited, options_offset,
                                              compressed ? ", inflated" : "", file.size));
      }
      if (id == kOptionDone) {
        if (!LoadAt(data, 0, &next)) return Corrupt(path_, "DONE option");
        break;
      }
      if (id >= kOptionHeaderInfo && id <= kOptionCmdlines) {
        uint64_t off = 0;
        if (!LoadAt(data, 0, &off)) return Corrupt(path_, "section offset option");
        sections[id] = off;
        continue;
      }
      IOTRACE_RETURN_IF_ERROR(HandleOption(id, data, true));
    }
    if (!ClaimRange(options_offset, compressed ? section_end : opts.pos())) {
      return Corrupt(path_, "options chain (a section overlaps one already read)");
    }
    options_offset = next;
  }

  // Rebuild the v6 tracing-data block from the metadata sections, then decode it as usual.
  std::string block(kTracingMagic, kTracingMagicSize);
  block.append("6", 2);
  block.push_back(static_cast<char>(endian));
  block.push_back(static_cast<char>(long_size));
  block.append(reinterpret_cast<const char*>(&page_size), 4);
  const uint16_t order[] = {kOptionHeaderInfo, kOptionFtraceEvents, kOptionEventFormats,
                            kOptionKallsyms,   kOptionPrintk,       kOptionCmdlines};
  const char* empty_body[] = {nullptr,    "\0\0\0\0", "\0\0\0\0",
                              "\0\0\0\0", "\0\0\0\0", "\0\0\0\0\0\0\0\0"};
  for (int i = 0; i < 6; ++i) {
    auto it = sections.find(order[i]);
    if (it == sections.end()) {
      if (empty_body[i] == nullptr) return Corrupt(path_, "v7 file without a header section");
      block.append(empty_body[i], i == 5 ? 8 : 4);
      continue;
    }
    ByteReader s(file);
    uint16_t id = 0, flags = 0;
    uint32_t str = 0;
    uint64_t size = 0;
    ByteView body;
    if (!s.Seek(it->second) || !s.Read(&id) || !s.Read(&flags) || !s.Read(&str) || !s.Read(&size) ||
        id != order[i] || size > s.remaining()) {
      return Corrupt(path_, absl::StrFormat("metadata section %d (at byte %u; the file is %u "
                                            "bytes)",
                                            order[i], it->second, file.size));
    }
    std::string inflated;
    IOTRACE_RETURN_IF_ERROR(SectionBody(file, s.pos(), size, flags,
                                        absl::StrCat("metadata section ", order[i]), &inflated,
                                        &body));
    block.append(reinterpret_cast<const char*>(body.data), body.size);
  }
  auto decoded = DecodeTracingData(ByteView(block.data(), block.size()), /*keep_kallsyms=*/false);
  if (!decoded.ok()) {
    return WithHint(Annotate(decoded.status(), absl::StrCat("read trace.dat ", path_,
                                                            ": metadata sections")),
                    kDamagedHint);
  }
  meta_ = std::move(decoded->meta);
  // A buffer's flyrecord section header says whether its CPU data is compressed (in chunks).
  std::vector<bool> compressed;
  for (BufferRef& b : buffers_) {
    ByteReader h(file);
    uint16_t id = 0, flags = 0;
    const bool chunked =
        h.Seek(b.offset) && h.Read(&id) && h.Read(&flags) && (flags & kTraceDatSectionCompressed);
    if (chunked && !inflater_.has_value()) {
      return Corrupt(path_, "compressed trace data in a file that names no compression");
    }
    for (Stream& s : b.v7_streams) {
      AddStream(std::move(s));
      compressed.push_back(chunked);
    }
    if (b.name.empty() && !b.clock.empty() && trace_clock_.empty()) trace_clock_ = b.clock;
  }
  if (nr_cpus_ == 0) {
    for (const Stream& s : streams_) nr_cpus_ = std::max(nr_cpus_, s.cpu + 1);
  }
  if (std::find(compressed.begin(), compressed.end(), true) != compressed.end()) {
    IOTRACE_RETURN_IF_ERROR(InflateStreams(compressed));
    return FinishMetadata(inflated_bytes_);
  }
  return FinishMetadata(file_.size);
}

absl::Status TraceDatReader::SectionBody(ByteView file, size_t pos, uint64_t size, uint16_t flags,
                                         std::string_view what, std::string* owned,
                                         ByteView* body) {
  if (!file.Contains(pos, size)) return Corrupt(path_, what);
  ByteView raw = file.Sub(pos, size);
  if (!(flags & kTraceDatSectionCompressed)) {
    *body = raw;
    return absl::OkStatus();
  }
  if (!inflater_.has_value()) {
    return Corrupt(path_, absl::StrFormat("%s (compressed in a file that names no compression)", what));
  }
  size_t consumed = 0;
  absl::Status st = inflater_->Block(raw, &consumed, owned);
  if (!st.ok()) return Corrupt(path_, absl::StrFormat("%s: %s", what, st.message()));
  *body = ByteView(owned->data(), owned->size());
  return absl::OkStatus();
}

absl::Status TraceDatReader::InflateStreams(const std::vector<bool>& compressed) {
  IOTRACE_ASSIGN_OR_RETURN(UniqueFd tmp, OpenScratchFile(&inflated_where_));
  // Real data inflates ~10x (a nearly empty page more); a crafted chunk stream could claim
  // terabytes from a few bytes each.
  const uint64_t budget = (uint64_t{64} << 20) + 1024 * uint64_t{file_.size};
  // Streams that share compressed bytes would be inflated again and again: the later-starting
  // one is dropped, as FinishMetadata does for uncompressed data.
  std::vector<size_t> order(streams_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return streams_[a].offset < streams_[b].offset; });
  uint64_t covered = 0;
  std::string scratch;
  uint64_t written = 0;
  for (size_t i : order) {
    Stream& s = streams_[i];
    uint64_t begin = s.offset, size = s.size;
    s.offset = written;
    s.size = 0;
    if (size == 0) continue;
    if (begin < covered) {
      s.damaged = true;
      ++overlapping_streams_;
      continue;
    }
    if (begin > file_.size) {
      s.cut = true;
      ++truncated_streams_;
      file_cut_ = true;
      continue;
    }
    const uint64_t before = written;
    if (compressed[i]) {
      // Delimited by its chunk count, not by its stated size (see TraceDatInflater::Chunks).
      size_t consumed = 0;
      absl::Status st = inflater_->Chunks(file_.Sub(begin, file_.size - begin), tmp.get(), budget,
                                          &written, &consumed, &scratch);
      covered = begin + consumed;
      if (!st.ok()) {
        if (absl::IsInvalidArgument(st)) {
          s.cut = true;
          ++truncated_streams_;  // the chunks before the damage are kept
        } else {
          return Annotate(st, absl::StrCat("read trace.dat ", path_, ": inflate into ",
                                           inflated_where_));
        }
      }
    } else {
      if (size > file_.size - begin) {
        s.cut = true;
        ++truncated_streams_;
        file_cut_ = true;
        size = file_.size - begin;
      }
      covered = begin + size;
      IOTRACE_RETURN_IF_ERROR(Annotate(WriteToScratchFile(tmp.get(), file_.Sub(begin, size)),
                                       absl::StrCat("read trace.dat ", path_)));
      written += size;
    }
    s.size = written - before;
  }
  inflated_bytes_ = written;
  // The streams are read from the inflated file from now on; the original's metadata is parsed
  // into owned strings by now.
  map_.Reset();
  file_ = ByteView();
  data_fd_ = std::move(tmp);
  return absl::OkStatus();
}

absl::Status TraceDatReader::HandleOption(uint16_t id, ByteView data, bool v7) {
  switch (id) {
    case kOptionCpuStat: {
      std::string_view text = CString(data);
      // iotrace's own notes instead of the kernel's counters: a recording that has not
      // finished (or was recovered after a kill).
      bool note = false;
      if (text.find(kTraceDatRecoveredNote) != std::string_view::npos) {
        unfinished_ = Unfinished::kRecovered;
        note = true;
      }
      if (size_t at = text.find(kTraceDatFlushNote); at != std::string_view::npos) {
        std::string_view ms = text.substr(at + std::strlen(kTraceDatFlushNote));
        uint32_t v = 0;
        if (absl::SimpleAtoi(std::string(ms.substr(0, ms.find(' '))), &v)) {
          flush_interval_ms_ = v;
        }
        note = true;
      }
      if (note) return absl::OkStatus();
      size_t marker = text.find("Buffer: ");
      if (marker != std::string_view::npos && text.find("entries:") == std::string_view::npos) {
        std::string_view name = text.substr(marker + 8);
        stats_buffer_ = std::string(name.substr(0, name.find('\n')));
        return absl::OkStatus();
      }
      auto parsed = ParseFtraceCpuStats(text);
      if (parsed.ok()) {
        if (parsed->cpu < 0) {
          int n = 0;
          for (const StatsRef& s : cpu_stats_) n += s.buffer == stats_buffer_;
          parsed->cpu = n;
        }
        cpu_stats_.push_back({stats_buffer_, *parsed});
      }
      return absl::OkStatus();
    }
    case kOptionBuffer: {
      ByteReader r(data);
      BufferRef b;
      std::string_view name;
      if (!r.Read(&b.offset) || !r.ReadCString(&name)) return Corrupt(path_, "BUFFER option");
      b.name = std::string(name);
      if (v7) {
        std::string_view clock;
        uint32_t cpus = 0;
        if (!r.ReadCString(&clock) || !r.Read(&b.page_size) || !r.Read(&cpus) ||
            cpus > r.remaining() / 20) {
          return Corrupt(path_, "BUFFER option");
        }
        b.clock = std::string(clock);
        for (uint32_t i = 0; i < cpus; ++i) {
          Stream s;
          uint32_t cpu = 0;
          if (!r.Read(&cpu) || !r.Read(&s.offset) || !r.Read(&s.size) || cpu > 65535) {
            return Corrupt(path_, "BUFFER option CPU table");
          }
          s.cpu = static_cast<int>(cpu);
          s.buffer = b.name;
          b.v7_streams.push_back(std::move(s));
        }
      }
      buffers_.push_back(std::move(b));
      return absl::OkStatus();
    }
    case kOptionTraceClock:
      has_trace_clock_option_ = true;
      if (trace_clock_.empty()) trace_clock_ = CurrentClock(CString(data));
      return absl::OkStatus();
    case kOptionUname:
      uname_ = std::string(CString(data));
      return absl::OkStatus();
    case kOptionVersion:
      recorder_ = std::string(CString(data));
      return absl::OkStatus();
    case kOptionOffset: {
      int64_t off = 0;
      std::string_view text = CString(data);
      // Summed as trace-cmd does; a crafted sum saturates instead of overflowing (UB).
      if (absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &off) &&
          __builtin_add_overflow(ts_offset_, off, &ts_offset_)) {
        ts_offset_ = off > 0 ? INT64_MAX : INT64_MIN;
      }
      return absl::OkStatus();
    }
    case kOptionCpuCount: {
      uint32_t cpus = 0;
      if (LoadAt(data, 0, &cpus) && cpus > 0 && cpus <= 65536 && v7) {
        nr_cpus_ = static_cast<int>(cpus);
      }
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();  // DATE, HOOK, TSC2NSEC, ...: not needed for block latency
  }
}

// A crafted file can point at the same metadata many times (an options chain that loops back,
// BUFFER options that share one CPU table), multiplying the work and memory it costs; a real file
// never does. Each range is parsed once: false when [begin, end) overlaps a claimed range.
bool TraceDatReader::ClaimRange(uint64_t begin, uint64_t end) {
  auto next = claimed_.lower_bound(begin);
  if (next != claimed_.end() && next->first < end) return false;
  if (next != claimed_.begin() && std::prev(next)->second > begin) return false;
  claimed_.emplace(begin, end);
  return true;
}

void TraceDatReader::AddStream(Stream s) {
  s.layout = layout_;  // completed in FinishMetadata once header_page is known
  streams_.push_back(std::move(s));
}

absl::Status TraceDatReader::FinishMetadata(uint64_t data_file_size) {
  auto layout = ParseHeaderPage(meta_.header_page, meta_.page_size);
  if (!layout.ok()) return Annotate(layout.status(), absl::StrCat("read trace.dat ", path_));
  IOTRACE_RETURN_IF_ERROR(
      Annotate(CheckHeaderEvent(meta_.header_event), absl::StrCat("read trace.dat ", path_)));
  layout_ = *layout;
  // v7 states each buffer's sub-buffer size; trust it when it is sane (the last one named wins).
  absl::flat_hash_map<std::string, uint32_t> page_sizes;
  for (const BufferRef& b : buffers_) {
    if (b.page_size > layout_.data_offset && b.page_size <= (1u << 27)) {
      page_sizes[b.name] = b.page_size;
    }
  }
  for (Stream& s : streams_) {
    s.layout = layout_;
    if (auto it = page_sizes.find(s.buffer); it != page_sizes.end()) {
      s.layout.page_size = it->second;
    }
    if (s.size == 0 || s.fd >= 0) {
      // An idle CPU: nothing of it is missing, wherever its (empty) data would begin. (A spool
      // is a file of its own, sized when opened.)
    } else if (s.offset > data_file_size) {
      s.size = 0;
      s.cut = true;
      ++truncated_streams_;
      file_cut_ = true;
    } else if (s.size > data_file_size - s.offset) {
      s.size = data_file_size - s.offset;
      s.cut = true;
      ++truncated_streams_;
      file_cut_ = true;
    }
  }
  // Per-CPU data never overlaps in a real file; a crafted one could make every stream cover the
  // whole file (its pages read and delivered once per stream). The later-starting one is dropped.
  std::vector<Stream*> by_offset;
  for (Stream& s : streams_) {
    if (s.size != 0 && s.fd < 0) by_offset.push_back(&s);
  }
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [](const Stream* a, const Stream* b) { return a->offset < b->offset; });
  uint64_t covered = 0;
  for (Stream* s : by_offset) {
    if (s->offset < covered) {
      s->size = 0;
      s->damaged = true;
      ++overlapping_streams_;
    } else {
      covered = s->offset + s->size;
    }
  }
  streams_.erase(
      // (A stream cut or dropped stays, empty: its CPU's data is missing, and coverage says so.)
      std::remove_if(streams_.begin(), streams_.end(),
                     [](const Stream& s) { return s.size == 0 && !s.cut && !s.damaged; }),
      streams_.end());

  for (const FormatText& f : meta_.event_formats) {
    auto fmt = ParseUntrustedEventFormat(f.system, f.text);
    if (!fmt.ok()) {
      ++unparsed_formats_;
      continue;
    }
    formats_.push_back(*std::move(fmt));
  }
  if (!formats_.empty()) {
    const FieldInfo* pid = formats_.front().FindField("common_pid");
    if (pid != nullptr && pid->size == 4) common_pid_offset_ = pid->offset;
  }

  std::string_view cmdlines = meta_.saved_cmdlines;
  while (!cmdlines.empty()) {
    size_t nl = cmdlines.find('\n');
    std::string_view line = cmdlines.substr(0, nl);
    cmdlines = nl == std::string_view::npos ? std::string_view() : cmdlines.substr(nl + 1);
    size_t space = line.find(' ');
    int32_t pid = 0;
    if (space == std::string_view::npos ||
        !absl::SimpleAtoi(absl::string_view(line.data(), space), &pid)) {
      continue;
    }
    comms_[pid] = std::string(line.substr(space + 1));
  }

  std::string buffers;
  for (const BufferRef& b : buffers_) absl::StrAppend(&buffers, buffers.empty() ? "" : ",", b.name);
  info_ = {{"file version", std::to_string(version_)},
           {"trace clock", trace_clock_.empty() ? "local" : trace_clock_},
           {"cpus", std::to_string(nr_cpus_)},
           {"sub-buffer size", std::to_string(layout_.page_size)}};
  if (!uname_.empty()) info_.emplace_back("uname", uname_);
  if (!recorder_.empty()) info_.emplace_back("recorded by", recorder_);
  if (unfinished_ == Unfinished::kSpools) {
    info_.emplace_back("unfinished",
                       absl::StrFormat("the recording did not finish; its data was read from "
                                       "%s ... (iotrace recover %s writes a complete file)",
                                       TraceDatSpoolPath(path_, 0), path_));
  } else if (unfinished_ == Unfinished::kRecovered) {
    info_.emplace_back("unfinished", "the recording did not finish; recovered by iotrace recover");
  }
  if (!buffers.empty()) info_.emplace_back("buffer instances", buffers);
  if (version_ == 7)
    info_.emplace_back("compression", compression_.empty() ? "none" : compression_);
  if (inflater_.has_value() && inflated_bytes_ > 0) {
    info_.emplace_back("inflated", absl::StrFormat("%u bytes of trace data, into an unlinked file in %s",
                                                   inflated_bytes_, inflated_where_));
  }

  // The metadata is parsed into owned strings: let the kernel drop the mapping's pages (the data
  // is read with pread, never through the mapping).
  if (!map_.valid()) return absl::OkStatus();
  size_t first_data = map_.size();
  for (const Stream& s : streams_) {
    if (s.fd < 0) first_data = std::min<size_t>(first_data, s.offset);
  }
  size_t sys_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t meta_end = first_data / sys_page * sys_page;
  if (meta_end > 0) madvise(map_.addr(), meta_end, MADV_DONTNEED);
  return absl::OkStatus();
}

bool TraceDatReader::AdvancePage(Cursor* c, std::array<uint64_t, kHotCount>* problems) const {
  // The walk has found the current page exhausted (or is on none yet): its problem comes first.
  for (bool on_new_page = false;; on_new_page = true) {
    if (on_new_page && c->walker.Next(&c->rec)) {
      Prefetch(c->rec);
      return true;
    }
    if (c->walker.problem() != FtracePageProblem::kNone) {
      ++(*problems)[static_cast<int>(c->walker.problem())];
      c->MarkGap(GapCause::kDamaged);
    }
    const uint32_t page_size = c->stream->layout.page_size;
    if (c->next_off >= c->end_off) return false;
    if (c->end_off - c->next_off < page_size) {
      ++(*problems)[kHotPartialPage];
      c->MarkGap(c->stream->cut ? GapCause::kCut : GapCause::kDamaged);
      c->next_off = c->end_off;
      return false;
    }
    c->page_off = c->next_off;
    c->next_off += page_size;
    // The pages before this one are done with (nothing delivered points into them any more).
    c->ring.Release(c->page_off);
    if (c->ring.Fill(c->page_off, page_size) < page_size) {
      ++(*problems)[kHotReadError];  // the stream ends here, as a cut file would
      c->MarkGap(GapCause::kDamaged);
      c->next_off = c->end_off;
      return false;
    }
    // A page whose header is unusable is counted at the top of the loop, like any problem.
    if (!c->walker.Reset(ByteView(c->ring.At(c->page_off), page_size))) continue;
    if (c->walker.missed_events()) {
      ++c->missed_pages;
      if (!c->loss_pending) {
        c->loss = LossRecord{};
        c->loss.kind = LossRecord::Kind::kFtraceDropped;
        c->loss.cpu = c->stream->cpu;
        c->loss.ts = c->walker.page_timestamp() + ts_offset_;
        c->loss_pending = true;
      }
      c->loss.placed = true;
      if (c->walker.missed_count_known()) {
        c->loss.count += c->walker.missed_count();
        c->located_missed += c->walker.missed_count();
        c->MarkGap(GapCause::kFtraceOverrun, c->walker.missed_count());
      } else {
        ++(*problems)[kHotMissedUncounted];
        c->MarkGap(GapCause::kFtraceOverrun);
      }
    }
    if (c->walker.data_size() == 0) continue;
    // Pages of one CPU are in time order; a page that starts before the previous one ended is
    // corrupt (or from another recording) and would break the merge.
    FtraceRecord first;
    FtracePageWalker probe = c->walker;
    if (probe.Next(&first)) {
      if (first.ts < c->last_ts()) {
        ++(*problems)[static_cast<int>(FtracePageProblem::kTimeBackwards)];
        c->MarkGap(GapCause::kDamaged);
        // Either this page or one before it is damaged: when an earlier page's time was wrong
        // (in the future), the records since are not where their times say. The gap starts
        // before the skipped page's first record, not at the suspect time.
        if (first.ts != 0) c->gap_after = std::min(c->gap_after, first.ts - 1);
        c->walker.SkipRest();
        continue;
      }
      if (c->first_ts == 0) c->first_ts = first.ts;
      if (c->gap_pending) c->CloseGap(first.ts);
    }
  }
}

bool TraceDatReader::PageTime(const Stream& s, uint64_t index, uint64_t* ts) const {
  uint8_t b[8];
  const uint64_t at = s.offset + index * s.layout.page_size + s.layout.timestamp_offset;
  if (::pread(DataFd(s), b, sizeof(b), static_cast<off_t>(at)) != sizeof(b)) return false;
  std::memcpy(ts, b, sizeof(b));
  return true;
}

uint64_t TraceDatReader::PageAtOrBefore(const Stream& s, uint64_t ts, PageTimes* known) const {
  // Binary search over the pages' header times (in order in a sound stream; in a damaged one
  // the answer is only a place to start, and the caller checks what was read).
  uint64_t lo = 0, hi = s.size / s.layout.page_size;  // the answer is in [lo, hi)
  if (hi == 0) return 0;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    uint64_t t = 0;
    if (known == nullptr) {
      if (!PageTime(s, mid, &t)) return lo;
    } else if (const auto it = known->find(mid); it != known->end()) {
      t = it->second;
    } else {
      if (!PageTime(s, mid, &t)) return lo;
      known->emplace(mid, t);
    }
    if (t <= ts) lo = mid; else hi = mid;
  }
  return lo;
}

std::optional<TraceTimeSpan> TraceDatReader::TimeSpan() const {
  TraceTimeSpan span;
  span.first_ts = ~uint64_t{0};
  uint64_t pages = 0;
  std::vector<uint64_t> middles;
  // Each stream's page times as they are read: the searches below, for times near one another,
  // take the same first steps (256 CPUs: 20 k preads of 8 bytes without these, before either
  // range can start).
  std::vector<PageTimes> known(streams_.size());
  for (size_t i = 0; i < streams_.size(); ++i) {
    const Stream& s = streams_[i];
    const uint64_t n = s.size / s.layout.page_size;
    if (n == 0) continue;
    uint64_t first = 0, last = 0, middle = 0;
    if (!PageTime(s, 0, &first) || !PageTime(s, n - 1, &last) || !PageTime(s, n / 2, &middle)) {
      return std::nullopt;
    }
    known[i].emplace(n / 2, middle);
    span.first_ts = std::min(span.first_ts, first);
    span.last_ts = std::max(span.last_ts, last);
    middles.push_back(middle);
    pages += n;
    span.data_bytes += s.size;
  }
  if (pages == 0) return std::nullopt;
  span.starts_anywhere = true;
  // Of the streams' middle times, the one that halves the pages best. The pages that begin at or
  // before a time grow with it, so the best is next to where they pass half: found by a binary
  // search over the middles in time order. (Trying every middle took a binary search of every
  // stream for each, CPUs^2 x log2(pages) preads: 515 k of them, 0.2 s, at 256 CPUs.)
  auto pages_before = [&](uint64_t t) {
    uint64_t before = 0;
    for (size_t i = 0; i < streams_.size(); ++i) {
      const Stream& s = streams_[i];
      if (s.size / s.layout.page_size != 0) before += PageAtOrBefore(s, t, &known[i]);
    }
    return before;
  };
  auto gap = [&](uint64_t before) {
    return before > pages / 2 ? before - pages / 2 : pages / 2 - before;
  };
  std::sort(middles.begin(), middles.end());
  size_t lo = 0, hi = middles.size();  // the first middle with half the pages before it
  uint64_t at_hi = ~uint64_t{0};       // pages_before(middles[hi]), once known
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const uint64_t before = pages_before(middles[mid]);
    if (before < pages / 2) {
      lo = mid + 1;
    } else {
      hi = mid;
      at_hi = before;
    }
  }
  if (lo == middles.size()) {
    span.middle_ts = middles.back();
  } else if (lo == 0 || gap(at_hi) <= gap(pages_before(middles[lo - 1]))) {
    span.middle_ts = middles[lo];
  } else {
    span.middle_ts = middles[lo - 1];
  }
  auto shift = [this](uint64_t t) {
    const int64_t v = static_cast<int64_t>(t) + ts_offset_;
    return v < 0 ? uint64_t{0} : static_cast<uint64_t>(v);
  };
  span.first_ts = shift(span.first_ts);
  span.middle_ts = shift(span.middle_ts);
  span.last_ts = shift(span.last_ts);
  return span;
}

template <bool kRanged>
absl::Status TraceDatReader::Read(EventSink* sink, const TimeRange& range,
                                  RangeReadResult* out) const {
  *out = RangeReadResult{};
  ReadStats& stats = out->stats;
  std::array<uint64_t, kHotCount> problems{};
  // The rings read in this thread, side by side in one mapping (huge pages where it is 2 MiB
  // or more; see FileRing::Create). Declared before the cursors: it outlives their rings.
  UniqueMapping ring_memory;
  std::unique_ptr<FileRingGroup> group;  // also before the cursors
  std::vector<Cursor> cursors;
  cursors.reserve(streams_.size());
  // Read ahead: the streams long enough to gain from a thread of their own (more than half
  // their ring), up to kMaxReadAheadStreams of them and while their rings fit the budget (a
  // thread each, asleep but for a wake-up per half ring); the other streams share what is left
  // of the budget. The kernel's copy of the file then runs on the other CPU: on this 2-vCPU VM
  // it was a third of the reading thread's time on trace.dat (the 5.85 M-event file in the
  // host's slow state: 0.26 -> 0.21 s).
  auto ahead_ring = [this](const Stream& s) {
    return FileRing::CapacityFor(
        std::max<size_t>(options_.read_ahead_ring_bytes, 2 * size_t{s.layout.page_size}));
  };
  auto is_long = [&](const Stream& s) { return s.size > ahead_ring(s) / 2; };
  size_t long_streams = 0;
  size_t ahead_total = 0;
  for (const Stream& s : streams_) {
    if (is_long(s)) {
      ++long_streams;
      ahead_total += ahead_ring(s);
    }
  }
  const bool ahead = read_ahead_ && long_streams > 0 &&
                     long_streams <= kMaxReadAheadStreams && ahead_total <= kRingBudget;
  const size_t others = streams_.size() - (ahead ? long_streams : 0);
  const size_t ring_bytes =
      std::min({kRingBytes, kCallerRingBudget / std::max<size_t>(others, 1),
                (kRingBudget - (ahead ? ahead_total : 0)) / std::max<size_t>(others, 1)});
  auto ring_capacity = [&](const Stream& s) {
    return std::max<size_t>(ring_bytes, 2 * size_t{s.layout.page_size});
  };
  size_t shared_bytes = 0;
  for (const Stream& s : streams_) {
    if (!(ahead && is_long(s))) {
      shared_bytes += FileRing::MemoryFor(ring_capacity(s), s.layout.page_size);
    }
  }
  uint8_t* shared = nullptr;
  if (shared_bytes > 0) {
    IOTRACE_ASSIGN_OR_RETURN(ring_memory, MapHugeAnonymous(shared_bytes));
    shared = static_cast<uint8_t*>(ring_memory.addr());
  }
  for (const Stream& s : streams_) {
    Cursor& c = cursors.emplace_back(&s);
    c.page_off = c.next_off = s.offset;
    if (kRanged && range.start_ts != 0) {
      // Start at the page that holds start_ts (the last one that begins at or before it).
      const int64_t raw = static_cast<int64_t>(range.start_ts) - ts_offset_;
      if (raw > 0) {
        c.page_off = c.next_off =
            s.offset + PageAtOrBefore(s, static_cast<uint64_t>(raw)) * s.layout.page_size;
      }
    }
    c.end_off = s.offset + s.size;
    c.order = static_cast<uint32_t>(cursors.size() - 1);
    const bool stream_ahead = ahead && is_long(s);
    const size_t bytes = stream_ahead ? ahead_ring(s) : ring_bytes;
    const size_t capacity = stream_ahead ? bytes : ring_capacity(s);  // both two pages or more
    uint8_t* memory = nullptr;
    if (!stream_ahead) {
      memory = shared;
      shared += FileRing::MemoryFor(capacity, s.layout.page_size);
    }
    IOTRACE_ASSIGN_OR_RETURN(
        c.ring, FileRing::Create(DataFd(s), c.page_off, c.end_off, capacity, bytes / 2,
                                 s.layout.page_size, memory));
    if (stream_ahead) c.ring.StartReadAhead();  // false: read in this thread, as without
  }
  if (options_.batch_reads && streams_.size() - (ahead ? long_streams : 0) >= kGroupRings) {
    absl::StatusOr<std::unique_ptr<BatchReader>> batch = BatchReader::Create(kGroupDepth);
    group = std::make_unique<FileRingGroup>(batch.ok() ? *std::move(batch) : nullptr);
    for (Cursor& c : cursors) {
      if (!c.ring.reading_ahead()) group->Add(&c.ring);
    }
  }

  // A loser tree over the cursors' (timestamp, stream order): ties go to the lower CPU, as in
  // trace-cmd report. Not perf.data's SortedRunMerger, on purpose: that one finds sorted runs in
  // one interleaved stream, holds them until a window or round mark makes them final, and
  // revisits a record by its position alone. Here each CPU's stream is one run known from the
  // start, the top record is final at once, and a record's time is a delta within its page (a
  // cursor is a page walker, not a position). Made to keep these streams in order, that merger
  // holds all the data and is slower: 73 vs 107 M records/s on 2 CPUs, 38 vs 71 M on 8
  // (bench/merge_benchmark.cc, BM_MergeWholeStreams; docs/architecture.md).
  LoserTree tree;
  tree.Reset(cursors.size());
  // Each stream's current payload, by stream order (8 bytes a stream: in the first-level cache
  // at 256 streams; on the stack up to that many), indexed through the bare pointer:
  // InlinedVector's operator[] checks the index and where its elements are, a dozen
  // instructions a record.
  absl::InlinedVector<const uint8_t*, 256> payload_store(cursors.size());
  const uint8_t** const payloads = payload_store.data();
  for (Cursor& c : cursors) {
    if (AdvancePage(&c, &problems)) {  // (a cursor starts on no page)
      tree.Set(c.order, c.rec.ts);
      payloads[c.order] = c.rec.payload.data;
    }
  }
  tree.Build();

  uint64_t records = 0, events = 0;
  RawEvent ev;
  const uint32_t pid_off = common_pid_offset_;
  if (kRanged) {
    out->first_counted.assign(cursors.size(), RangeReadResult::kNoPosition);
    out->stopped_at.assign(cursors.size(), RangeReadResult::kNoPosition);
  }
  uint64_t previous_ts = 0;
  // The file position of the record a cursor is on.
  auto position = [](const Cursor* c) {
    return c->page_off + static_cast<uint64_t>(c->rec.payload.data - c->ring.At(c->page_off));
  };
  // The next winner's cursor and payload are asked for as soon as the tree names it, from the
  // dense array (the cursor itself is likely out of the cache), so that they arrive while the
  // sink works on the record before.
  auto prefetch_top = [&] {
    if (tree.empty()) return;
    const uint32_t next = tree.top();
    iotrace::Prefetch(&cursors[next]);  // its first line: all that an in-page step touches
    iotrace::Prefetch(payloads[next]);
  };
  // Hands `rec`, the cursor's record, to the sink (false: too short to be one).
  auto deliver = [&](Cursor* c, const FtraceRecord& rec, bool counted)
                     __attribute__((always_inline)) {
    const ByteView p = rec.payload;
    if (p.size < 8 || p.size < pid_off + 4) {
      ++problems[kHotShortRecord];
      // Lost: this record (the gap begins just before it) and what it held.
      if (!c->gap_pending) {
        c->MarkGap(GapCause::kDamaged);
        c->gap_after = rec.ts - 1;
      }
      return false;
    }
    ev.ts = rec.ts + ts_offset_;
    if (counted) ++c->delivered;
    ev.cpu = static_cast<uint32_t>(c->cpu);
    std::memcpy(&ev.type, p.data, 2);
    std::memcpy(&ev.pid, p.data + pid_off, 4);
    ev.tid = ev.pid;
    ev.payload = p;
    sink->OnEvent(ev);
    return true;
  };
  // Hands the record of the top cursor `c` (stream `top`) to the sink when `hand`, and moves the
  // cursor on to its next record, or out of the merge at its stream's end. True when the record
  // was handed on (deliver). The record is saved and the cursor moves on first: the tree's replay
  // then names the next winner, whose cursor and payload (each a cache miss at many CPUs, one
  // after the other) load while the sink works. Only on the same page: a new page releases the
  // bytes the saved payload points into, so then the record goes first.
  // (This and deliver inline in both loops: as calls, GCC's choice, they cost 40 instructions a
  // record more.)
  auto take = [&](Cursor* c, uint32_t top, bool hand, bool counted)
                  __attribute__((always_inline)) {
    const FtraceRecord rec = c->rec;
    if (c->walker.Next(&c->rec)) {
      Prefetch(c->rec);
      payloads[top] = c->rec.payload.data;
      tree.ReplaceTop(c->rec.ts);
      prefetch_top();
      return hand && deliver(c, rec, counted);
    }
    const bool handed = hand && deliver(c, rec, counted);
    if (AdvancePage(c, &problems)) {
      payloads[top] = c->rec.payload.data;
      tree.ReplaceTop(c->rec.ts);
    } else {
      tree.PopTop();
    }
    prefetch_top();
    return handed;
  };
  if constexpr (kRanged) {
    // The records before count_from_ts: passed over before start_ts, else delivered but not
    // counted (nor the losses placed before them: the earlier range's).
    while (!tree.empty()) {
      const uint32_t top = tree.top();
      Cursor* c = &cursors[top];
      const uint64_t ts = c->rec.ts + ts_offset_;
      if (ts >= range.count_from_ts || ts >= range.end_ts) break;
      if (ts < previous_ts) ++out->out_of_order;
      previous_ts = ts;
      c->loss_pending = false;
      take(c, top, ts >= range.start_ts, false);
    }
    // Every cursor is on its first record at or after count_from_ts (a later one before it
    // would be out of order, and counted so).
    tree.ForEachStream([&](uint32_t i) { out->first_counted[i] = position(&cursors[i]); });
  }
  while (!tree.empty()) {
    const uint32_t top = tree.top();  // (not c->order: that is on the cursor's second line)
    Cursor* c = &cursors[top];
    if constexpr (kRanged) {
      const uint64_t ts = c->rec.ts + ts_offset_;
      if (ts >= range.end_ts) {
        // Every cursor is on a record at or after end_ts: where each stream stops.
        tree.ForEachStream([&](uint32_t i) { out->stopped_at[i] = position(&cursors[i]); });
        break;
      }
      if (sink->stop_requested()) [[unlikely]]
        break;  // (the result is not used)
      if (ts < previous_ts) ++out->out_of_order;
      previous_ts = ts;
    }
    if (c->loss_pending) {
      sink->OnLoss(c->loss);
      c->loss_pending = false;
    }
    ++records;
    if (take(c, top, true, true)) ++events;
  }

  // Losses placed at the end of a stream, and the file's own totals, belong to the range that
  // reads to the end of the file.
  const bool to_end = !kRanged || range.end_ts == ~uint64_t{0};
  for (Cursor& c : cursors) {
    if (c.loss_pending && to_end) sink->OnLoss(c.loss);
    // Coverage in the trace clock (file time + ts_offset_; 0 stays "none").
    auto shift = [this](uint64_t t) { return t == 0 ? 0 : t + ts_offset_; };
    if (c.delivered != 0) {
      stats.coverage.AddSpan(
          CpuSpan{c.stream->cpu, shift(c.first_ts), shift(c.last_ts()), c.delivered});
    }
    // A stream whose data ends early (the file is cut inside it, or its last part could not be
    // read): nothing of its CPU after its last record is known.
    if (to_end && (c.gap_pending || c.stream->cut || c.stream->damaged)) {
      const GapCause cause = c.stream->cut       ? GapCause::kCut
                             : c.stream->damaged ? GapCause::kDamaged
                                                 : c.gap_cause;
      if (!c.gap_pending) c.gap_after = c.last_ts();
      c.CloseGap(DataGap::kOpenEnd);
      c.gaps.back().cause = cause;
    }
    for (DataGap g : c.gaps) {
      g.after_ts = shift(g.after_ts);
      if (!g.open_end()) g.before_ts = shift(g.before_ts);
      stats.coverage.gaps.push_back(g);
    }
    c.ring = FileRing();
    out->losses_placed += c.missed_pages;
  }
  for (int i = 1; i < kHotCount; ++i) out->problems += problems[i];
  if (!to_end) {
    stats.records = records;
    stats.events = events;
    stats.batched_reads = group != nullptr ? group->batched_reads() : 0;
    return absl::OkStatus();
  }
  // The kernel's totals, minus what the pages already placed in time.
  absl::flat_hash_map<std::pair<std::string, int>, uint64_t> located_by_stream;
  for (const Cursor& c : cursors) {
    if (c.located_missed != 0) {
      located_by_stream[{c.stream->buffer, c.stream->cpu}] += c.located_missed;
    }
  }
  for (const StatsRef& s : cpu_stats_) {
    auto it = located_by_stream.find(std::make_pair(s.buffer, s.stats.cpu));
    const uint64_t located = it == located_by_stream.end() ? 0 : it->second;
    uint64_t overrun = s.stats.overrun + s.stats.commit_overrun;
    if (overrun > located) {
      LossRecord loss;
      loss.kind = LossRecord::Kind::kFtraceOverrun;
      loss.cpu = s.stats.cpu;
      loss.count = overrun - located;
      sink->OnLoss(loss);
    }
    if (s.stats.dropped_events > 0) {
      LossRecord loss;
      loss.kind = LossRecord::Kind::kFtraceDropped;
      loss.cpu = s.stats.cpu;
      loss.count = s.stats.dropped_events;
      sink->OnLoss(loss);
    }
    stats.AddProblem("trace_dat_pages_not_written", s.stats.pages_not_written);
  }

  stats.records = records;
  stats.events = events;
  stats.batched_reads = group != nullptr ? group->batched_reads() : 0;
  for (int i = 1; i < kHotCount; ++i) stats.AddProblem(HotProblemName(i), problems[i]);
  stats.AddProblem("trace_dat_cpu_data_truncated", truncated_streams_);
  stats.AddProblem(kProblemFileCut, file_cut_ ? 1 : 0);
  if (unfinished_ != Unfinished::kNo) {
    // Every CPU's data ends where the kill stopped it; what the kernel still held then, and
    // what it lost before, is not known.
    stats.AddProblem(kProblemUnfinishedFile, 1);
    stats.AddProblem("trace_dat_spool_page_cut", spool_partial_pages_);
    // Every CPU's pages were stored at least every flush interval (an idle CPU's too), so
    // whatever is missing is younger than the newest record less two intervals (one for the
    // flush, one for the drain that did it and the page being written).
    uint64_t newest = 0;
    for (const CpuSpan& s : stats.coverage.cpus) newest = std::max(newest, s.last_ts);
    const uint64_t margin = 2 * uint64_t{flush_interval_ms_} * 1000000;
    const uint64_t known_until =
        flush_interval_ms_ != 0 && newest > margin ? newest - margin : 0;
    stats.coverage.EndAll(nr_cpus_, GapCause::kUnfinished, known_until);
  }
  stats.AddProblem("trace_dat_cpu_data_overlap", overlapping_streams_);
  stats.AddProblem("event_format_unparsed", unparsed_formats_);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceDat(const std::string& path,
                                                          TraceDatReaderOptions options) {
  auto reader = std::make_unique<TraceDatReader>(path, options);
  IOTRACE_RETURN_IF_ERROR(reader->Open());
  return std::unique_ptr<TraceReader>(std::move(reader));
}

}  // namespace iotrace
