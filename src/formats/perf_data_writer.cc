#include "iotrace/formats/perf_data_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/tracing_data.h"

namespace iotrace {
namespace {

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void PadTo8(std::string* out) { out->resize(perf::Align8(out->size()), '\0'); }

// perf's do_write_string: u32 length including the NUL, rounded up to 64, then the padded text.
void PutString(std::string* out, std::string_view s) {
  uint32_t len = static_cast<uint32_t>((s.size() + 1 + perf::kNameAlign - 1) / perf::kNameAlign *
                                       perf::kNameAlign);
  Put<uint32_t>(out, len);
  out->append(s);
  out->append(len - s.size(), '\0');
}

bool IsNoSpace(int err) { return err == ENOSPC || err == EDQUOT; }

absl::StatusOr<int> OpenOutput(const std::string& path) {
  // O_NONBLOCK so that a FIFO in the way cannot block the open; cleared below.
  const int flags = O_WRONLY | O_CLOEXEC | O_NONBLOCK;
  bool via_symlink = false;
  int fd = ::open(path.c_str(), flags | O_CREAT | O_NOFOLLOW, 0600);
  if (fd < 0 && errno == ELOOP) {
    // `path` is a symlink: follow it, but create nothing through it, and only onto our file.
    via_symlink = true;
    fd = ::open(path.c_str(), flags);
    if (fd < 0 && errno == ENOENT) {
      return absl::PermissionDeniedError(
          absl::StrFormat("create %s: refusing to create a file through a dangling symlink", path));
    }
  }
  if (fd < 0) return ErrnoError(errno, "create", path);
  UniqueFd owner(fd);
  struct stat st;
  if (fstat(fd, &st) != 0) return ErrnoError(errno, "stat", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat("create %s: not a regular file", path));
  }
  if (via_symlink && st.st_uid != geteuid()) {
    return absl::PermissionDeniedError(
        absl::StrFormat("create %s: refusing to follow a symlink onto a file owned by uid %d", path,
                        static_cast<int>(st.st_uid)));
  }
  if (st.st_size != 0 && ftruncate(fd, 0) != 0) return ErrnoError(errno, "truncate", path);
  if (st.st_uid == geteuid() && (st.st_mode & 07777) != 0600 && fchmod(fd, 0600) != 0) {
    return ErrnoError(errno, "chmod 0600", path);
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) return ErrnoError(errno, "fcntl", path);
  return owner.Release();
}

class RealFileIo : public PerfFileIo {};

}  // namespace

ssize_t PerfFileIo::PWriteV(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  return ::pwritev(fd, iov, iovcnt, offset);
}

int PerfFileIo::Fallocate(int fd, int mode, off_t offset, off_t len) {
  return ::fallocate(fd, mode, offset, len);
}

int PerfFileIo::Ftruncate(int fd, off_t length) { return ::ftruncate(fd, length); }

PerfFileIo* PerfFileIo::Default() {
  static RealFileIo io;
  return &io;
}

absl::StatusOr<std::unique_ptr<PerfDataWriter>> PerfDataWriter::Create(
    const std::string& path, std::vector<PerfEventSpec> events, const TracingMetadata& tracing,
    const HostInfo& host, PerfWriterOptions options) {
  if (events.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("create %s: no events to record", path));
  }
  if (events.size() > 1) {
    // Several attrs: readers find a record's attr through its id, which must sit at the same
    // place in every attr's samples (perf's evlist__valid_sample_type).
    int id_pos = perf::SampleIdPos(events[0].attr.sample_type);
    for (const PerfEventSpec& e : events) {
      if (id_pos < 0 || perf::SampleIdPos(e.attr.sample_type) != id_pos ||
          perf::TrailerIdPos(e.attr.sample_type) !=
              perf::TrailerIdPos(events[0].attr.sample_type) ||
          e.attr.sample_id_all != events[0].attr.sample_id_all) {
        return absl::InvalidArgumentError(
            absl::StrFormat("create %s: events must all carry the sample id at the same place "
                            "(PERF_SAMPLE_IDENTIFIER) and agree on sample_id_all",
                            path));
      }
    }
  }
  for (PerfEventSpec& e : events) {
    if (e.name.empty() || e.ids.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("create %s: every event needs a name and at least one id", path));
    }
    e.attr.size = sizeof(perf_event_attr);
  }

  std::unique_ptr<PerfDataWriter> w(new PerfDataWriter());
  w->path_ = path;
  w->options_ = options;
  w->io_ = options.io != nullptr ? options.io : PerfFileIo::Default();
  w->events_ = std::move(events);

  if (w->stream()) {
    // Pipe mode: the header, then the attrs and the event formats as records.
    std::string& s = w->prefix_;
    Put<uint64_t>(&s, perf::kMagic);
    Put<uint64_t>(&s, perf::kPipeHeaderSize);
    for (const PerfEventSpec& e : w->events_) {
      const uint64_t size = sizeof(perf::EventHeader) + sizeof(e.attr) + 8 * e.ids.size();
      if (size > 0xffff) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "stream %s: event %s has too many ids for a pipe-mode attr record", path, e.name));
      }
      perf::EventHeader h{perf::kRecordHeaderAttr, 0, static_cast<uint16_t>(size)};
      s.append(reinterpret_cast<const char*>(&h), sizeof(h));
      s.append(reinterpret_cast<const char*>(&e.attr), sizeof(e.attr));
      for (uint64_t id : e.ids) Put<uint64_t>(&s, id);
    }
    const std::string formats = EncodeTracingData(tracing, "0.6");
    perf::EventHeader h{perf::kRecordHeaderTracingData, 0, 16};
    s.append(reinterpret_cast<const char*>(&h), sizeof(h));
    // Its bytes follow the record, outside its size, padded to 8; the size it states is the
    // padded one (perf checks that what it parsed plus the padding makes that size).
    Put<uint32_t>(&s, static_cast<uint32_t>(perf::Align8(formats.size())));
    Put<uint32_t>(&s, 0);
    s.append(formats);
    PadTo8(&s);
    w->fd_ = options.stream_fd;
    w->data_offset_ = w->data_end_ = w->reserve_end_ = s.size();
    struct iovec iov = {s.data(), s.size()};
    IOTRACE_RETURN_IF_ERROR(w->Write(&iov, 1, 0));
    return w;
  }

  // Everything before the data is known now, including every header feature: they are written
  // ahead of the data so that the trailer (only the feature section table) is small and fixed.
  std::string& p = w->prefix_;
  p.assign(sizeof(perf::FileHeader), '\0');
  std::vector<std::pair<int, perf::FileSection>> features;
  auto add_feature = [&](int feature, const std::string& bytes) {
    features.push_back({feature, {p.size(), bytes.size()}});
    p.append(bytes);
    PadTo8(&p);
  };
  auto add_string = [&](int feature, const std::string& s) {
    if (s.empty()) return;
    std::string b;
    PutString(&b, s);
    add_feature(feature, b);
  };

  add_feature(perf::kFeatTracingData, EncodeTracingData(tracing, "0.6"));
  add_string(perf::kFeatHostname, host.hostname);
  add_string(perf::kFeatOsRelease, host.os_release);
  add_string(perf::kFeatVersion, host.tool_version);
  add_string(perf::kFeatArch, host.arch);
  if (host.nr_cpus_online != 0 || host.nr_cpus_available != 0) {
    std::string b;
    Put<uint32_t>(&b, host.nr_cpus_available);
    Put<uint32_t>(&b, host.nr_cpus_online);
    add_feature(perf::kFeatNrCpus, b);
  }
  add_string(perf::kFeatCpuDesc, host.cpu_desc);
  add_string(perf::kFeatCpuId, host.cpuid);
  if (host.total_mem_kb != 0) {
    std::string b;
    Put<uint64_t>(&b, host.total_mem_kb);
    add_feature(perf::kFeatTotalMem, b);
  }
  if (!host.cmdline.empty()) {
    std::string b;
    Put<uint32_t>(&b, static_cast<uint32_t>(host.cmdline.size()));
    for (const std::string& arg : host.cmdline) PutString(&b, arg);
    add_feature(perf::kFeatCmdline, b);
  }
  {
    std::string b;
    Put<uint32_t>(&b, static_cast<uint32_t>(w->events_.size()));
    Put<uint32_t>(&b, static_cast<uint32_t>(sizeof(perf_event_attr)));
    for (const PerfEventSpec& e : w->events_) {
      b.append(reinterpret_cast<const char*>(&e.attr), sizeof(e.attr));
      Put<uint32_t>(&b, static_cast<uint32_t>(e.ids.size()));
      PutString(&b, e.name);
      for (uint64_t id : e.ids) Put<uint64_t>(&b, id);
    }
    add_feature(perf::kFeatEventDesc, b);
  }
  {
    struct timespec res = {};
    uint64_t res_ns = 1;
    if (clock_getres(host.clockid, &res) == 0) {
      res_ns = std::max<uint64_t>(1, uint64_t(res.tv_sec) * 1000000000ull + uint64_t(res.tv_nsec));
    }
    std::string b;
    Put<uint64_t>(&b, res_ns);
    add_feature(perf::kFeatClockId, b);
  }
  if (host.clock_ref_wall_ns != 0) {
    std::string b;
    Put<uint32_t>(&b, 1);  // version
    Put<uint32_t>(&b, static_cast<uint32_t>(host.clockid));
    Put<uint64_t>(&b, host.clock_ref_wall_ns);
    Put<uint64_t>(&b, host.clock_ref_clock_ns);
    add_feature(perf::kFeatClockData, b);
  }

  std::vector<perf::FileSection> id_sections;
  for (const PerfEventSpec& e : w->events_) {
    id_sections.push_back({p.size(), e.ids.size() * sizeof(uint64_t)});
    for (uint64_t id : e.ids) Put<uint64_t>(&p, id);
  }
  const uint64_t attrs_offset = p.size();
  for (size_t i = 0; i < w->events_.size(); ++i) {
    perf::FileAttr fa{};
    fa.attr = w->events_[i].attr;
    fa.ids = id_sections[i];
    p.append(reinterpret_cast<const char*>(&fa), sizeof(fa));
  }
  PadTo8(&p);

  std::sort(features.begin(), features.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  perf::FileHeader& h = w->header_;
  h.attr_size = sizeof(perf::FileAttr);
  h.attrs = {attrs_offset, w->events_.size() * sizeof(perf::FileAttr)};
  for (const auto& [feature, section] : features) {
    h.features[feature / 64] |= uint64_t{1} << (feature % 64);
    Put<uint64_t>(&w->trailer_, section.offset);
    Put<uint64_t>(&w->trailer_, section.size);
  }
  // The finished header and trailer, kept right before the data (readers go by the sections'
  // offsets and never look here): what RecoverPerfData writes to finish a killed recording.
  w->data_offset_ = w->data_end_ = w->reserve_end_ =
      p.size() + perf::RecoveryBlockSize(w->trailer_.size());
  h.data = {w->data_offset_, 0};
  p.append(perf::kRecoveryMagic, sizeof(perf::kRecoveryMagic));
  p.append(reinterpret_cast<const char*>(&h), sizeof(h));
  p.append(w->trailer_);
  Put<uint64_t>(&p, w->trailer_.size());

  IOTRACE_ASSIGN_OR_RETURN(w->fd_, OpenOutput(path));
  absl::Status s = w->WritePrefix();
  if (!s.ok()) {
    ::close(w->fd_);
    w->fd_ = -1;
    w->finished_ = true;
    ::unlink(path.c_str());
    return s;
  }
  return w;
}

absl::Status PerfDataWriter::WritePrefix() {
  // Until Finish, the header says "no data, no features": a recording killed before Finish
  // still opens as an empty file rather than as garbage.
  perf::FileHeader initial = header_;
  std::memset(initial.features, 0, sizeof(initial.features));
  initial.data.size = 0;
  std::memcpy(prefix_.data(), &initial, sizeof(initial));
  struct iovec iov = {prefix_.data(), prefix_.size()};
  IOTRACE_RETURN_IF_ERROR(Write(&iov, 1, 0));
  absl::Status s = EnsureReserve(0);
  if (!s.ok()) {
    return WithHint(Annotate(s, "reserve room for the perf.data trailer"),
                    "free some disk space or record to another filesystem (-o)");
  }
  return absl::OkStatus();
}

PerfDataWriter::~PerfDataWriter() {
  if (!finished_) Finish().IgnoreError();
  if (fd_ >= 0 && !stream()) ::close(fd_);
}

absl::Status PerfDataWriter::Write(const struct iovec* iov, int iovcnt, uint64_t offset) {
  struct iovec local[2];
  int n = 0;
  size_t left = 0;
  for (int i = 0; i < iovcnt; ++i) {
    if (iov[i].iov_len == 0) continue;
    local[n++] = iov[i];
    left += iov[i].iov_len;
  }
  struct iovec* cur = local;
  while (left > 0) {
    // A stream is written in order; a file at its offsets.
    ssize_t w = stream() ? ::writev(fd_, cur, n)
                         : io_->PWriteV(fd_, cur, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "write", path_);
    }
    if (w == 0) return ErrnoError(EIO, "write (no progress)", path_);
    size_t done = static_cast<size_t>(w);
    left -= done;
    offset += done;
    while (done > 0 && n > 0) {
      if (done >= cur->iov_len) {
        done -= cur->iov_len;
        ++cur;
        --n;
      } else {
        cur->iov_base = static_cast<char*>(cur->iov_base) + done;
        cur->iov_len -= done;
        done = 0;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status PerfDataWriter::EnsureReserve(uint64_t bytes) {
  if (!reserve_supported_ || stream()) return absl::OkStatus();
  const uint64_t need = data_end_ + bytes + TrailerReserve(data_end_ + bytes);
  if (need <= reserve_end_) return absl::OkStatus();
  const uint64_t want = std::max(need, reserve_end_ + options_.reserve_step);
  const uint64_t attempts[2] = {want, need};
  int err = 0;
  for (uint64_t target : attempts) {
    int r;
    do {
      r = io_->Fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(reserve_end_),
                         static_cast<off_t>(target - reserve_end_));
    } while (r != 0 && errno == EINTR);
    if (r == 0) {
      reserve_end_ = target;
      return absl::OkStatus();
    }
    err = errno;
    if (err == EOPNOTSUPP || err == ENOSYS) {
      // This filesystem cannot reserve: write without a reserve and, if the trailer does not
      // fit at Finish, cut the data back by whole appends (see WriteTrailer).
      reserve_supported_ = false;
      return absl::OkStatus();
    }
    if (!IsNoSpace(err)) break;
    if (target == need) break;
  }
  return ErrnoError(err, "reserve disk space for", path_);
}

absl::Status PerfDataWriter::Stop(absl::Status status, uint64_t refused) {
  bytes_refused_ += refused;
  if (stopped_.ok()) {
    disk_full_ = status.code() == absl::StatusCode::kResourceExhausted;
    stopped_ = Annotate(
        status, absl::StrFormat("perf.data stopped accepting data after %d bytes", data_size()));
  }
  return stopped_;
}

void PerfDataWriter::RememberChunkStart(uint64_t offset) {
  chunk_starts_[chunk_next_] = offset;
  chunk_next_ = (chunk_next_ + 1) % kChunkHistory;
  chunk_count_ = std::min(chunk_count_ + 1, kChunkHistory);
}

absl::Status PerfDataWriter::AppendData(ByteView first, ByteView second) {
  const uint64_t n = first.size + second.size;
  if (finished_) {
    bytes_refused_ += n;
    return absl::FailedPreconditionError(
        absl::StrFormat("append to %s after it was finished", path_));
  }
  if (!stopped_.ok()) {
    bytes_refused_ += n;
    return stopped_;
  }
  if (n == 0) return absl::OkStatus();
  absl::Status s = EnsureReserve(n);
  if (!s.ok()) return Stop(std::move(s), n);
  struct iovec iov[2] = {{const_cast<uint8_t*>(first.data), first.size},
                         {const_cast<uint8_t*>(second.data), second.size}};
  s = Write(iov, 2, data_end_);
  if (!s.ok() && stream()) return Stop(std::move(s), n);  // the reader went away
  if (!s.ok()) {
    // Cut the partly written append back to the last whole record: its bytes may hold the
    // space the trailer needs. Truncating drops the reserve too, so take it again.
    int r;
    do {
      r = io_->Ftruncate(fd_, static_cast<off_t>(data_end_));
    } while (r != 0 && errno == EINTR);
    reserve_end_ = data_end_;
    if (reserve_supported_) {
      do {
        r = io_->Fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(data_end_),
                           static_cast<off_t>(TrailerReserve(data_end_)));
      } while (r != 0 && errno == EINTR);
      if (r == 0) reserve_end_ = data_end_ + TrailerReserve(data_end_);
    }
    return Stop(std::move(s), n);
  }
  RememberChunkStart(data_end_);
  data_end_ += n;
  return absl::OkStatus();
}

absl::Status PerfDataWriter::AppendRecord(uint32_t type, uint16_t misc, ByteView body) {
  const uint64_t size = perf::Align8(sizeof(perf::EventHeader) + body.size);
  if (size > 0xffff) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "append record type %d to %s: %d bytes do not fit a record", type, path_, size));
  }
  perf::EventHeader h{type, misc, static_cast<uint16_t>(size)};
  scratch_.assign(reinterpret_cast<const char*>(&h), sizeof(h));
  scratch_.append(reinterpret_cast<const char*>(body.data), body.size);
  scratch_.resize(size, '\0');
  return AppendData(ByteView(scratch_.data(), scratch_.size()));
}

absl::Status PerfDataWriter::AppendLostSamples(size_t event_index, uint64_t lost,
                                               const perf::SampleId& id) {
  if (event_index >= events_.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("lost samples: no event #%d", event_index));
  }
  const perf_event_attr& attr = events_[event_index].attr;
  std::string body;
  Put<uint64_t>(&body, lost);
  if (attr.sample_id_all) perf::AppendSampleId(attr.sample_type, id, &body);
  return AppendRecord(perf::kRecordLostSamples, PERF_RECORD_MISC_KERNEL,
                      ByteView(body.data(), body.size()));
}

absl::Status PerfDataWriter::AppendFinishedRound() {
  return AppendRecord(perf::kRecordFinishedRound, 0, ByteView());
}

absl::Status PerfDataWriter::AppendComm(uint32_t pid, uint32_t tid, std::string_view comm,
                                        const perf::SampleId& id, size_t event_index, bool exec) {
  if (event_index >= events_.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("comm: no event #%d", event_index));
  }
  const perf_event_attr& attr = events_[event_index].attr;
  comm = comm.substr(0, std::min<size_t>(comm.size(), 255));
  std::string body;
  Put<uint32_t>(&body, pid);
  Put<uint32_t>(&body, tid);
  body.append(comm);
  body.push_back('\0');
  PadTo8(&body);
  if (attr.sample_id_all) perf::AppendSampleId(attr.sample_type, id, &body);
  return AppendRecord(perf::kRecordComm, exec ? perf::kMiscCommExec : 0,
                      ByteView(body.data(), body.size()));
}

absl::Status PerfDataWriter::WriteTrailer() {
  for (;;) {
    // perf warns that a file whose data size is 0 was "not properly terminated": an empty
    // recording gets one FINISHED_ROUND record (its room is part of the trailer reserve).
    const bool empty = data_end_ == data_offset_;
    perf::EventHeader round{perf::kRecordFinishedRound, 0, sizeof(perf::EventHeader)};
    struct iovec iov[2] = {{&round, empty ? sizeof(round) : 0}, {trailer_.data(), trailer_.size()}};
    absl::Status s = Write(iov, 2, data_end_);
    if (s.ok()) {
      if (empty) data_end_ += sizeof(round);
      return s;
    }
    if (s.code() != absl::StatusCode::kResourceExhausted || chunk_count_ == 0) return s;
    // No room for the trailer (a filesystem without fallocate): give up the newest append.
    chunk_next_ = (chunk_next_ + kChunkHistory - 1) % kChunkHistory;
    --chunk_count_;
    const uint64_t start = chunk_starts_[chunk_next_];
    bytes_refused_ += data_end_ - start;
    data_end_ = start;
    disk_full_ = true;
    int r;
    do {
      r = io_->Ftruncate(fd_, static_cast<off_t>(data_end_));
    } while (r != 0 && errno == EINTR);
  }
}

absl::Status PerfDataWriter::Finish() {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  if (fd_ < 0) return absl::FailedPreconditionError("finish: the file is not open");
  if (stream()) {
    fd_ = -1;  // a stream has no end to write, and its descriptor is the caller's
    return absl::OkStatus();
  }
  absl::Status s = WriteTrailer();
  if (s.ok()) {
    int r;
    do {
      r = io_->Ftruncate(fd_, static_cast<off_t>(data_end_ + trailer_.size()));
    } while (r != 0 && errno == EINTR);
    if (r != 0) s = ErrnoError(errno, "truncate", path_);
  }
  if (s.ok()) {
    // The header goes last: until it is written the file reads as empty, never as garbage.
    header_.data.size = data_end_ - data_offset_;
    struct iovec iov = {&header_, sizeof(header_)};
    s = Write(&iov, 1, 0);
  }
  if (::close(fd_) != 0 && s.ok()) s = ErrnoError(errno, "close", path_);
  fd_ = -1;
  return s.ok() ? s : Annotate(s, "finish perf.data");
}

}  // namespace iotrace
