#include "iotrace/formats/perf_data_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/base/arena.h"
#include "iotrace/base/batch_read.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/file_ring.h"
#include "iotrace/base/prefetch.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/perf_data_recover.h"
#include "iotrace/formats/perf_record_parser.h"
#include "iotrace/formats/tracing_data.h"

namespace iotrace {
namespace {

// What to do about a damaged file (the hints of the open errors).
constexpr char kCutHint[] =
    "the file is cut short or damaged: copy it again from where it was recorded, or record again";
constexpr char kDamagedHint[] =
    "the file is damaged: copy it again from where it was recorded, or record again";
constexpr char kFormatsHint[] =
    "give the formats of a recording made on the same kernel: iotrace report --formats-from "
    "FILE (a perf.data or trace.dat), or copy the file again from where it was recorded";

// A record's size is a 16-bit field.
constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 16;

// Sanity caps: a count read from a file never drives an allocation beyond these.
constexpr uint64_t kMaxAttrs = 4096;
constexpr uint64_t kMaxIds = uint64_t{1} << 22;
constexpr uint64_t kMaxAttrSize = 4096;

// Section bounds, overflow-safe.
bool Fits(const perf::FileSection& s, uint64_t file_size) {
  return s.offset <= file_size && s.size <= file_size - s.offset;
}

// perf's do_read_string: u32 padded length, then the NUL-terminated text.
bool ReadPerfString(ByteReader* r, std::string* out) {
  uint32_t len = 0;
  ByteView bytes;
  if (!r->Read(&len) || !r->ReadBytes(len, &bytes)) return false;
  std::string_view s = bytes.AsString();
  size_t nul = s.find('\0');
  *out = std::string(nul == std::string_view::npos ? s : s.substr(0, nul));
  return true;
}

class PerfDataReader final : public TraceReader {
 public:
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path,
                                                           const PerfReadOptions& options);

  std::string_view FileFormat() const override { return "perf.data"; }
  const std::vector<EventFormat>& formats() const override { return formats_; }
  const TracingMetadata& metadata() const override { return metadata_; }
  std::string FormatsSource() const override { return formats_source_; }
  std::string FormatsWarning() const override { return formats_warning_; }
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
  const ReadStats& stats() const override { return stats_; }
  void set_read_ahead(bool on) override { read_ahead_ = on; }
  std::optional<TraceTimeSpan> TimeSpan() const override { return TimeSpanFrom(0.5); }
  std::optional<TraceTimeSpan> TimeSpanFrom(double fraction) const override;
  // Comm records are not collected (CommOf stays what ReadAll found).
  absl::Status ReadRange(EventSink* sink, const TimeRange& range, RangeReadResult* out) override {
    return Read<true>(sink, range, out);
  }
  std::string RangesUnfit(const TimeRange& range, const RangeReadResult& earlier,
                          const RangeReadResult& later) const override;
  bool ShareRanges(const TimeRange& earlier, const TimeRange& later) override;

 private:
  // The data section seen by SortedRunMerger. kRanged: a TimeRange of it (ReadRange), which
  // stops at the first record emitted at or after its end_ts.
  template <bool kRanged>
  class Stream {
   public:
    using Item = PerfRecord;
    Stream(const PerfDataReader* reader, EventSink* sink, FileRing* ring, const TimeRange& range)
        : r_(reader),
          sink_(sink),
          ring_(ring),
          range_(range),
          far_block_bytes_(FarBlockBytes(*reader)),
          far_block_room_(far_block_bytes_),
          auto_far_blocks_(reader->options_.far_block_bytes == 0) {}

    // Far blocks when PerfReadOptions::far_block_bytes is 0: kAutoFarBlocksBytes over three
    // runs a CPU (a recording with round marks: a run a CPU a round, rounds held until two more
    // marks), within kMinAutoFarBlock and 64 KiB; once the pool would pass kAutoFarBlocksBytes,
    // kMinAutoFarBlock (FarRead).
    static constexpr uint64_t kAutoFarBlocksBytes = uint64_t{2} << 20;
    static constexpr uint64_t kMinAutoFarBlock = uint64_t{8} << 10;
    // PerfReadOptions::far_block_bytes, or what 0 stands for with this file's CPUs.
    static uint64_t FarBlockBytes(const PerfDataReader& reader) {
      const uint64_t asked = reader.options_.far_block_bytes;
      if (asked != 0) return std::clamp<uint64_t>(asked, 4096, kMaxRecordBytes);
      const uint64_t runs = 3 * static_cast<uint64_t>(std::max(reader.nr_cpus_, 1));
      return std::clamp<uint64_t>(kAutoFarBlocksBytes / runs, kMinAutoFarBlock,
                                  uint64_t{64} << 10);
    }

    ScanKind Scan(uint64_t pos, uint64_t* next, uint64_t* time) {
      if constexpr (kRanged) {
        if (pos >= range_.end_position && mine_) [[unlikely]] {
          mine_ = false;  // positions only grow: the rest is not this range's
          met_end_position_ = pos == range_.end_position;
        }
      }
      const ScanKind kind = ScanRecord(pos, next, time);
      if constexpr (kRanged) {
        if (kind == ScanKind::kTimed) {
          if (mine_) latest_mine_ = std::max(latest_mine_, *time);
          if (*time < range_.count_from_ts) last_before_count_ = pos;
          // Never delivered (EmitOutside): not merged either. A range that reads from the
          // start of a file whose rounds are as long as much of it (TraceTimeSpan::
          // starts_anywhere) passes half the records this way.
          if (*time < range_.start_ts) return ScanKind::kSkip;
        }
      }
      return kind;
    }
    // The range's end was emitted (EmitOutside): the merge ends, what it holds not emitted.
    // (Or the sink asked to stop: the range's result is not used.)
    bool Stopped() const { return kRanged && (stopped_ || sink_->stop_requested()); }

    ScanKind ScanRecord(uint64_t pos, uint64_t* next, uint64_t* time) {
      // The whole record into the ring before any look at it (a record's size is 16 bits):
      // `end` is where the readable bytes end, the data's end unless a read failed.
      const uint64_t end = pos + ring_->Fill(pos, kMaxRecordBytes);
      const uint8_t* at = ring_->At(pos);
      Prefetch(at + 1024);
      perf::EventHeader h;
      if (end - pos < sizeof(h)) {
        ++truncated_;
        return ScanKind::kStop;
      }
      std::memcpy(&h, at, sizeof(h));
      if (h.size < sizeof(h)) {
        ++bad_size_;
        return ScanKind::kStop;
      }
      if (h.size > end - pos) {
        ++truncated_;
        return ScanKind::kStop;
      }
      uint64_t n = pos + h.size;
      if (h.type == perf::kRecordAuxtrace) {
        // The AUX payload follows the record without being counted in its size. (Its size word
        // is read only once the record is known to fit in what the ring holds.)
        uint64_t extra = 0;
        if (h.size >= 16) std::memcpy(&extra, at + 8, 8);
        n = extra > r_->data_end_ ? r_->data_end_ + 1 : n + extra;
      }
      if (n > r_->data_end_) {
        ++truncated_;
        return ScanKind::kStop;
      }
      *next = n;
      if constexpr (kRanged) {
        records_ += mine_ ? 1 : 0;
      } else {
        ++records_;
      }
      if (h.type == perf::kRecordSample) {
        // Nearly every record: checked, timed, and decoded only when its cursor reaches it.
        PerfProblem p = r_->parser_.SampleTime(ByteView(at, h.size), time);
        if (p == PerfProblem::kNone) return ScanKind::kTimed;
        ++problems_[static_cast<size_t>(p)];
        return ScanKind::kUntimed;
      }
      PerfRecord rec;
      PerfRecord* item = &rec;
      PerfProblem p = r_->parser_.Parse(ByteView(at, h.size), item);
      if (p != PerfProblem::kNone) {
        ++problems_[static_cast<size_t>(p)];
        return ScanKind::kUntimed;
      }
      switch (item->kind) {
        case PerfRecord::Kind::kEvent:
          *time = item->time;
          return ScanKind::kTimed;
        case PerfRecord::Kind::kLoss:
          if (item->has_time) {
            *time = item->time;
            return ScanKind::kTimed;
          }
          if (mine_) sink_->OnLoss(item->loss);  // nothing to order it by: deliver as met
          return ScanKind::kUntimed;
        case PerfRecord::Kind::kComm:
          if (comms_ != nullptr) (*comms_)[item->comm_tid] = std::string(item->comm);
          return ScanKind::kUntimed;
        case PerfRecord::Kind::kRoundEnd:
          return ScanKind::kRoundEnd;
        case PerfRecord::Kind::kOther:
          break;
      }
      return ScanKind::kUntimed;
    }

    bool Peek(uint64_t pos, uint64_t* next, PerfRecord* item) {
      return PeekAt(ring_->At(pos), pos, next, item);
    }
    bool PeekAt(const uint8_t* at, uint64_t pos, uint64_t* next, PerfRecord* item) {
      perf::EventHeader h;
      std::memcpy(&h, at, sizeof(h));
      uint64_t n = pos + h.size;
      if (h.type == perf::kRecordAuxtrace) {
        uint64_t extra = 0;
        if (h.size >= 16) std::memcpy(&extra, at + 8, 8);
        n += extra;
      }
      *next = n;
      if (h.type != perf::kRecordSample && h.type != perf::kRecordLost &&
          h.type != perf::kRecordLostSamples) {
        return false;
      }
      if (r_->parser_.Parse(ByteView(at, h.size), item) != PerfProblem::kNone) {
        return false;
      }
      return item->kind == PerfRecord::Kind::kEvent ||
             (item->kind == PerfRecord::Kind::kLoss && item->has_time);
    }

    // Revisit of a record Scan timed: a sample that passed its checks, or a loss with a time.
    void PeekTimed(uint64_t pos, uint64_t* next, PerfRecord* item) {
      PeekTimedAt(ring_->At(pos), pos, next, item);
    }
    void PeekTimedAt(const uint8_t* at, uint64_t pos, uint64_t* next, PerfRecord* item) {
      perf::EventHeader h;
      std::memcpy(&h, at, sizeof(h));
      *next = pos + h.size;  // never an AUXTRACE record: those are not timed
      const ByteView record(at, h.size);
      if (h.type == perf::kRecordSample) {
        r_->parser_.ParseCheckedSample(record, item);
      } else {
        r_->parser_.Parse(record, item);
      }
    }

    void Emit(const PerfRecord& item, bool out_of_order) {
      if (!out_of_order) Delivered(item);
      if constexpr (kRanged) {
        if (item.time >= range_.end_ts || item.time < range_.count_from_ts) [[unlikely]] {
          return EmitOutside(item);
        }
      }
      if (item.kind == PerfRecord::Kind::kEvent) [[likely]] {
        ++events_;
        Cover(item.event.cpu, item.time);
        sink_->OnEvent(item.event);
        return;
      }
      EmitLoss(item);
    }

    [[gnu::noinline]] void EmitLoss(const PerfRecord& item) {
      if (item.loss.kind == LossRecord::Kind::kRingLost && item.loss.cpu >= 0 &&
          item.loss.cpu < static_cast<int32_t>(kMaxCoveredCpu)) {
        // A ring loss with a time and a CPU: the events were lost on that CPU after its last
        // record so far (those before are emitted first, in time order) and before this one.
        LossRecord loss = item.loss;
        loss.placed = true;
        // Kernels before 5.11 time the LOST record after the sample whose write found the
        // ring free again, and that sample follows it in the ring, timed earlier: emitted
        // first, it is this CPU's last record. The gap then starts at the one before it.
        const CpuCover* c = CoverOf(loss.cpu);
        uint64_t after = 0;
        if (c != nullptr) {
          after = c->span.last_ts + kLostAfterSample > item.time ? c->before_last
                                                                 : c->span.last_ts;
        }
        gaps_.push_back(DataGap{loss.cpu, after, item.time, GapCause::kRingLost, loss.count});
        sink_->OnLoss(loss);
      } else {
        sink_->OnLoss(item.loss);
      }
    }

    // Coverage by CPU number: the span, and the time of the record before the last.
    struct CpuCover {
      CpuSpan span;
      uint64_t before_last = 0;
    };
    // A LOST record this close after a CPU's last record may be timed after the sample that
    // follows it in the ring (see EmitLoss); the kernel takes both times within microseconds.
    static constexpr uint64_t kLostAfterSample = 1'000'000;  // ns
    // The coverage of `cpu`'s records so far (nullptr: none yet).
    const CpuCover* CoverOf(int32_t cpu) const {
      const size_t i = static_cast<size_t>(cpu);
      return i < spans_.size() && spans_[i].span.records != 0 ? &spans_[i] : nullptr;
    }
    // Coverage: every event widens its CPU's span (one compare and three stores on the way).
    void Cover(uint32_t cpu, uint64_t time) {
      if (cpu < spans_size_) [[likely]] {
        CpuCover& c = spans_data_[cpu];
        CpuSpan& s = c.span;
        c.before_last = s.last_ts;
        s.last_ts = time;
        if (s.records++ == 0) [[unlikely]] s.first_ts = time;
        return;
      }
      CoverNewCpu(cpu, time);
    }
    [[gnu::noinline]] void CoverNewCpu(uint32_t cpu, uint64_t time) {
      if (cpu >= kMaxCoveredCpu) return;  // a crafted CPU number: not covered, not counted
      spans_.resize(cpu + 1);
      spans_data_ = spans_.data();
      spans_size_ = spans_.size();
      Cover(cpu, time);
    }

    // kRanged: a record outside what the range counts. The first at or after end_ts stops the
    // merge (Stopped): every record the runs still hold comes at or after it, since each run is
    // in order and the merge emits the least of their records. Before count_from_ts, events
    // from start_ts on are delivered, uncounted; losses are the earlier range's.
    void EmitOutside(const PerfRecord& item) {
      if (item.time >= range_.end_ts) {
        stopped_ = true;
        return;
      }
      if (item.time < range_.start_ts) return;  // (a record Scan could not time)
      if (item.kind == PerfRecord::Kind::kEvent) sink_->OnEvent(item.event);
    }

    // A record the merger dropped as a copy of one emitted just before (SameRecord).
    void Duplicate(const PerfRecord& item) {
      if (!kRanged || (item.time >= range_.count_from_ts && item.time < range_.end_ts)) {
        ++duplicates_;
      }
    }

    // Records with equal times are compared byte by byte (SameRecord), which below the ring
    // costs a pread of each (records of many CPUs meet at equal times: 8.8 k times in 3 M events
    // at 16 to 256 CPUs, 17 k of the 57 k far reads). Byte-identical records decode the same,
    // so a record cannot repeat one of another CPU or task: the merger asks that first.
    // Tracked of the records emitted in order: the last one's CPU and task, and those of the
    // records before it with the same time.
    static uint64_t RepeatKey(const PerfRecord& item) {
      if (item.kind != PerfRecord::Kind::kEvent) return kAnyRecord;
      return uint64_t{item.event.cpu} << 32 | static_cast<uint32_t>(item.event.tid);
    }
    void Delivered(const PerfRecord& item) {
      if (item.time == last_time_) [[unlikely]] {
        if (tie_time_ != item.time || tie_count_ == kTieKeys) {
          tie_any_ = tie_time_ == item.time;  // more ties than kept: anything may repeat
          tie_time_ = item.time;
          tie_count_ = 0;
        }
        tie_keys_[tie_count_++] = last_key_;
      }
      last_time_ = item.time;
      last_key_ = RepeatKey(item);
    }
    bool MayRepeat(const PerfRecord& item) const {
      const uint64_t key = RepeatKey(item);
      if (key == kAnyRecord || last_key_ == kAnyRecord || key == last_key_) return true;
      if (tie_time_ != item.time) return false;
      if (tie_any_) return true;
      for (size_t i = 0; i < tie_count_; ++i) {
        if (tie_keys_[i] == kAnyRecord || tie_keys_[i] == key) return true;
      }
      return false;
    }

    // perf record (6.1, on this kernel) writes some samples twice: the last records of one
    // drain of a CPU's ring again at the start of the next. Byte-identical records (time, CPU,
    // task, payload) cannot be two events: the merger drops the second copy.
    // The far path (SortedRunMerger): a run's records read again from the file (its pages are
    // in the page cache: the scan read them a few rounds before) into a block of the run's own,
    // once its cursor is far behind the scan, so that the ring need not hold the rounds between
    // them. Each run is read in order, a block at a time; a record across a block's end starts
    // the next read, and one larger than a block gets a block of the largest record size.
    //
    // With many runs far at once (a round of a many-CPU recording: 256 runs), each far run also
    // has a block read ahead, the bytes after its block's, and a run that must read fills every
    // empty one in the same system call (BatchReader): at 256 CPUs a run then moves on to its
    // next block without a call of its own, and ~39 k preads of 8 KiB become a few hundred calls.
    // A record across the two blocks' seam is copied in front of the ahead block's bytes (into
    // kHeadroom bytes kept free there): the block a run reads from is always contiguous.
    struct RunBytes {
      uint8_t* block = nullptr;       // from the pool; null: none
      const uint8_t* data = nullptr;  // the byte at `begin`, within block
      uint64_t begin = 0;             // file offset of data[0]
      uint64_t end = 0;               // of the byte after the last read
      bool big = false;               // a kMaxRecordBytes block, not a far_block_bytes one
      uint32_t ahead = kNoAhead;      // its block read ahead, in aheads_
    };
    static constexpr uint32_t kNoAhead = ~uint32_t{0};
    // Records below what the ring holds are read again from the file (rare: only records with
    // equal times are compared), each into a block of its own.
    bool SameRecord(uint64_t a, uint64_t b) {
      const uint8_t* x = RecordAt(a, &same_a_);
      const uint8_t* y = RecordAt(b, &same_b_);
      if (x == nullptr || y == nullptr) return false;
      perf::EventHeader hx, hy;
      std::memcpy(&hx, x, sizeof(hx));
      std::memcpy(&hy, y, sizeof(hy));
      return hx.size == hy.size && hx.type == hy.type && std::memcmp(x, y, hx.size) == 0;
    }
    const uint8_t* RecordAt(uint64_t pos, RunBytes* block) {
      return pos >= ring_->released() ? ring_->At(pos) : FarRecord(pos, block);
    }

    void Release(uint64_t below) { ring_->Release(below); }

    bool PeekFar(uint64_t pos, uint64_t* next, PerfRecord* item, RunBytes* run) {
      const uint8_t* at = FarRecordOrStay(pos, next, run);
      return at != nullptr && PeekAt(at, pos, next, item);
    }
    bool PeekTimedFar(uint64_t pos, uint64_t* next, PerfRecord* item, RunBytes* run) {
      const uint8_t* at = FarRecordOrStay(pos, next, run);
      if (at != nullptr) PeekTimedAt(at, pos, next, item);
      return at != nullptr;
    }
    // FarRecord; where it cannot be read, the cursor stays at `pos`.
    const uint8_t* FarRecordOrStay(uint64_t pos, uint64_t* next, RunBytes* run) {
      const uint8_t* at = FarRecord(pos, run);
      if (at == nullptr) *next = pos;
      return at;
    }
    // The payload of a decoded event, which the sink reads.
    static void PrefetchItem(const PerfRecord& item) {
      Prefetch(item.event.payload.data);
    }
    void DropFar(RunBytes* run) {
      if (run->block != nullptr) (run->big ? free_big_ : free_blocks_).push_back(run->block);
      if (run->ahead != kNoAhead) {
        free_blocks_.push_back(aheads_[run->ahead].block);
        aheads_[run->ahead] = Ahead{};
        free_aheads_.push_back(run->ahead);
      }
      *run = RunBytes{};
    }

    // The record at `pos` whole in the run's block (read when it is not there): null when the
    // file cannot give it again (counted in far_errors_).
    const uint8_t* FarRecord(uint64_t pos, RunBytes* run) {
      if (pos < run->begin || pos + sizeof(perf::EventHeader) > run->end) [[unlikely]] {
        if (!FarRead(pos, sizeof(perf::EventHeader), run)) return nullptr;
      }
      const uint8_t* at = run->data + (pos - run->begin);
      perf::EventHeader h;
      std::memcpy(&h, at, sizeof(h));
      if (h.size < sizeof(h)) [[unlikely]] {
        // Not what the scan read here (the file changed under the reader): the run ends.
        ++far_errors_;
        return nullptr;
      }
      if (pos + h.size > run->end) [[unlikely]] {
        if (!FarRead(pos, h.size, run)) return nullptr;
        at = run->data;
      }
      return at;
    }
    // Fills the run's block from `pos`, at least `need` bytes (a block from the pool when it has
    // none, or none that large): from its block read ahead when that holds them, else read.
    [[gnu::noinline]] bool FarRead(uint64_t pos, uint64_t need, RunBytes* run) {
      const bool big = need > far_block_room_;
      if (!big && run->ahead != kNoAhead && !run->big && TakeAhead(pos, need, run)) return true;
      if (run->block != nullptr && big && !run->big) DropFar(run);
      if (run->block == nullptr) {
        run->block = TakeBlock(big);
        run->big = big;
      }
      uint8_t* const dst = run->block + (run->big ? 0 : kHeadroom);
      // (A small block may read less than it holds, but never less than the record asked for.)
      const uint64_t want = std::min(run->big ? kMaxRecordBytes : std::max(far_block_bytes_, need),
                                     r_->data_end_ - std::min(pos, r_->data_end_));
      const uint64_t got = run->big || !Batching(run) ? PreadUpTo(r_->fd_.get(), dst, want, pos)
                                                      : ReadWithAheads(run, dst, want, pos);
      run->data = dst;
      run->begin = pos;
      run->end = pos + got;
      if (got < need) {
        ++far_errors_;
        return false;
      }
      return true;
    }

    // A small block from the pool (its kHeadroom bytes first), or a big one.
    uint8_t* TakeBlock(bool big) {
      auto& free = big ? free_big_ : free_blocks_;
      if (free.empty()) {
        if (!big && auto_far_blocks_ &&
            (blocks_made_ + 1) * far_block_room_ > kAutoFarBlocksBytes) {
          // More runs far at once than the size was chosen for (a file without round marks
          // holds as many as its window): the blocks from now on are the smallest. (Blocks
          // only shrink: every block in the pool holds a block of the size now.)
          far_block_room_ = std::min(far_block_room_, kMinAutoFarBlock);
          far_block_bytes_ = std::min(far_block_bytes_, far_block_room_);
        }
        free.push_back(NewBlock(big ? kMaxRecordBytes : kHeadroom + far_block_room_));
        ++blocks_made_;
        free.reserve(blocks_made_);
      }
      uint8_t* b = free.back();
      free.pop_back();
      return b;
    }

    // Many runs far at once in a file of many CPUs (the header's, or those met in the data so
    // far, whichever is more): kBatchFromBlocks blocks made, kBatchFromCpus CPUs.
    bool ManyFarRuns() const {
      return blocks_made_ >= kBatchFromBlocks &&
             std::max<size_t>(r_->nr_cpus_, spans_size_) >= kBatchFromCpus;
    }

    // A new block's memory, carved from chunks. Once ManyFarRuns, chunks of kHugeBlockChunkBytes in
    // huge pages (where the kernel gives them): a heap allocation of its own each, the 1,300 blocks
    // of a 256-CPU perf.data's far runs were ~2,400 first touches of fresh 4 KiB pages, ~10 us each
    // on this VM, in the thread that merges (fd.h, MapHugeAnonymous); 0.386-0.397 -> 0.367-0.378
    // s. Before that, chunks of kBlockChunkBytes in 4 KiB pages, touched as the blocks are used,
    // as the heap's were: a few CPUs' file without round marks keeps ~1,000 runs far, and a huge
    // page rounding up its blocks took the bounded-memory test from 6.1 to 8.0 of its 9 MiB; a
    // file whose far path reads a record or two needs no 2 MiB. Blocks live as long as the
    // stream. Under AddressSanitizer each block is an allocation of its own (the arenas hold
    // nothing), so that a write past a block is caught, not taken for the next block's bytes.
    uint8_t* NewBlock(uint64_t bytes) {
      return static_cast<uint8_t*>(block_chunks_.Allocate(
          bytes, 64, [this] { return ManyFarRuns() ? kHugeBlockChunkBytes : kBlockChunkBytes; }));
    }

    // Whether `run` reads with blocks ahead: from kBatchFromBlocks blocks in the pool (many runs
    // far at once), blocks of the smallest size, and where io_uring can be had; it then gets its
    // ahead block.
    bool Batching(RunBytes* run) {
      if (batch_ == nullptr) {
        // Only where the blocks are already the smallest (from ~90 CPUs, or a pool past 2 MiB):
        // at 16 CPUs (43 KiB blocks) the 4 KiB ones of the batched reads made 0.30 -> 0.33 s.
        // And only in a file of many CPUs: a few CPUs' file without round marks keeps as many
        // runs far as the window holds (~1,000 in 60 MB at 2 CPUs), and blocks ahead would
        // double what they hold (the bounded-memory test read 9.16 MiB against its 9 MiB bound;
        // 6.3 without). Not "round marks seen": a 256-CPU file's first mark may come after
        // most of its data (3 M events: 257 of 320 MB), and with it most of the far reads.
        // Nor in a time range: the two ranges of a split read run at once (the earlier one's
        // reading on, after them, is rare), every CPU of this VM busy, and there the batches
        // cost more than the calls they save (256 CPUs, 3 M
        // events, 8 runs each: 0.36-0.51 s batched, 0.26-0.42 s not; 64 CPUs 0.25-0.39 against
        // 0.25-0.40 s).
        if (kRanged || batch_failed_ || !r_->options_.batch_far_reads || !ManyFarRuns() ||
            far_block_room_ > kMinAutoFarBlock) {
          return false;
        }
        absl::StatusOr<std::unique_ptr<BatchReader>> b = BatchReader::Create(kBatchDepth);
        if (!b.ok()) {
          batch_failed_ = true;
          return false;
        }
        batch_ = *std::move(b);
        // Each far run now holds two blocks, and a call fills one for every run: reads of
        // 4 KiB keep what a call brings in the second-level cache until it is read (256 CPUs,
        // 3 M events, one thread: 8 KiB 0.43 s, 4 KiB 0.42 s). The blocks still hold
        // far_block_room_ (records up to 8 KiB stay small: a 64 KiB block each for the 4 KiB
        // samples of `perf record --call-graph dwarf,4096` would be ~48 MiB at 256 CPUs).
        if (auto_far_blocks_) far_block_bytes_ = std::min(far_block_bytes_, kBatchBlockBytes);
      }
      if (batch_->broken() || run == &same_a_ || run == &same_b_) return false;
      if (run->ahead == kNoAhead) {
        if (free_aheads_.empty()) {
          // Bounded (~10 MiB of blocks ahead): the runs beyond read alone, as without io_uring. A
          // 256-CPU file read in one pass keeps ~770 runs far (three rounds): at 10 M events 512
          // left 51 k reads alone, 1.16 s; 1024 all but a few hundred, 1.11 s, 2 MiB more.
          if (aheads_.size() >= kMaxAheads) return false;
          aheads_.emplace_back();
          // The lists that hold as many as there are blocks ahead: grown here, not when the
          // runs end (no allocation while the merge drains).
          free_aheads_.reserve(aheads_.capacity());
          reads_.reserve(aheads_.capacity() + 1);
          read_aheads_.reserve(aheads_.capacity());
          free_aheads_.push_back(static_cast<uint32_t>(aheads_.size() - 1));
        }
        run->ahead = free_aheads_.back();
        free_aheads_.pop_back();
        aheads_[run->ahead].block = TakeBlock(false);
      }
      return true;
    }

    // Reads `want` bytes at `pos` into `dst` (the run's block), the run's ahead block after them,
    // and every other empty ahead block, in one call. The bytes read into dst.
    uint64_t ReadWithAheads(RunBytes* run, uint8_t* dst, uint64_t want, uint64_t pos) {
      const int fd = r_->fd_.get();
      reads_.clear();
      read_aheads_.clear();
      reads_.push_back({fd, dst, static_cast<uint32_t>(want), pos, 0});
      Ahead& mine = aheads_[run->ahead];
      mine.from = mine.end = pos + want;  // empty, to be read from there
      for (uint32_t i = 0; i < aheads_.size(); ++i) {
        Ahead& a = aheads_[i];
        if (a.block == nullptr || a.filled() || a.from >= r_->data_end_) continue;
        const uint64_t len = std::min(far_block_bytes_, r_->data_end_ - a.from);
        reads_.push_back({fd, a.block + kHeadroom, static_cast<uint32_t>(len), a.from, 0});
        read_aheads_.push_back(i);
      }
      batch_->Run(absl::MakeSpan(reads_));
      for (size_t k = 0; k < read_aheads_.size(); ++k) {
        const BatchReader::Read& rd = reads_[k + 1];
        Ahead& a = aheads_[read_aheads_[k]];
        if (rd.result <= 0) {
          // Left empty, and not asked again (a file shorter than its header says) until its run
          // reads for itself and sets it from there: the run reads itself when it gets there.
          a.from = r_->data_end_;
          continue;
        }
        a.end = a.from + static_cast<uint64_t>(rd.result);
      }
      uint64_t got = reads_[0].result > 0 ? static_cast<uint64_t>(reads_[0].result) : 0;
      if (got < want) {
        // Short or failed: read again alone (what PreadUpTo gets is what the file gives), and
        // the ahead block does not follow on from it.
        got = PreadUpTo(fd, dst, want, pos);
        mine.end = mine.from;
      }
      return got;
    }

    // Moves `run` on to its ahead block when that holds [pos, pos + need) with the bytes before
    // it from the run's block (at most kHeadroom of them, copied in front).
    bool TakeAhead(uint64_t pos, uint64_t need, RunBytes* run) {
      Ahead& a = aheads_[run->ahead];
      if (!a.filled() || a.from != run->end || pos < run->begin || pos > run->end ||
          run->end - pos > kHeadroom || pos + need > a.end) {
        return false;
      }
      const uint64_t tail = run->end - pos;
      uint8_t* const data = a.block + kHeadroom - tail;
      std::memcpy(data, run->data + (pos - run->begin), tail);
      std::swap(run->block, a.block);  // the run's old block is the empty ahead now
      ++aheads_taken_;
      run->data = data;
      run->begin = pos;
      run->end = a.end;
      a.from = a.end;  // empty, to be read from the run's new end
      return true;
    }

    // A block read ahead for a run: the bytes [from, end) at block + kHeadroom; empty while
    // end <= from (to be read from `from`, or, past the data, not at all).
    struct Ahead {
      uint8_t* block = nullptr;  // null: the entry is free
      uint64_t from = 0;
      uint64_t end = 0;
      bool filled() const { return end > from; }
    };
    // Bytes free before a small block's data: a record across the seam of a run's block and its
    // ahead block moves there (longer ones are read again).
    static constexpr uint64_t kHeadroom = 2048;
    static constexpr size_t kBatchFromBlocks = 16;
    static constexpr size_t kBatchFromCpus = 32;
    static constexpr uint64_t kBatchBlockBytes = uint64_t{4} << 10;
    static constexpr unsigned kBatchDepth = 256;
    static constexpr size_t kMaxAheads = 1024;

    static constexpr uint32_t kMaxCoveredCpu = 1 << 16;
    uint64_t records_ = 0;
    uint64_t events_ = 0;
    uint64_t duplicates_ = 0;
    std::vector<CpuCover> spans_;
    CpuCover* spans_data_ = nullptr;
    size_t spans_size_ = 0;
    std::vector<DataGap> gaps_;
    uint64_t truncated_ = 0;
    uint64_t bad_size_ = 0;
    std::array<uint64_t, static_cast<size_t>(PerfProblem::kCount)> problems_{};
    uint64_t far_errors_ = 0;  // records the far path could not read again
    uint64_t aheads_taken_ = 0;  // blocks read ahead together and used (ReadStats::batched_reads)
    absl::flat_hash_map<int32_t, std::string>* comms_ = nullptr;  // collected when set
    // kRanged: see RangeReadResult.
    bool met_end_position_ = false;
    uint64_t latest_mine_ = 0;
    uint64_t last_before_count_ = 0;

   private:
    const PerfDataReader* r_;
    EventSink* sink_;
    FileRing* ring_;
    const TimeRange& range_;
    // The far path's blocks, all owned here; those not in a run's RunBytes are free.
    uint64_t far_block_bytes_ = 0;  // read into a small block at a time
    uint64_t far_block_room_ = 0;   // what every small block holds (after kHeadroom)
    bool auto_far_blocks_ = false;
    static constexpr uint64_t kBlockChunkBytes = uint64_t{256} << 10;
    static constexpr uint64_t kHugeBlockChunkBytes = uint64_t{2} << 20;
    ArenaChunks block_chunks_{/*populate=*/false};  // touched as used
    size_t blocks_made_ = 0;
    std::vector<uint8_t*> free_blocks_;
    // Blocks read ahead (see RunBytes), by RunBytes::ahead; reads made together.
    std::vector<Ahead> aheads_;
    std::vector<uint32_t> free_aheads_;
    std::unique_ptr<BatchReader> batch_;
    bool batch_failed_ = false;
    std::vector<BatchReader::Read> reads_;
    std::vector<uint32_t> read_aheads_;  // reads_[k + 1] is for aheads_[read_aheads_[k]]
    std::vector<uint8_t*> free_big_;
    RunBytes same_a_, same_b_;  // SameRecord's, for records below the ring
    // MayRepeat's (see there). kAnyRecord: a record other than an event, which may repeat or be
    // repeated by anything (an event whose key it equals is only asked about more often).
    static constexpr uint64_t kAnyRecord = ~uint64_t{0};
    static constexpr size_t kTieKeys = 16;
    uint64_t last_time_ = ~uint64_t{0};
    uint64_t last_key_ = kAnyRecord;
    uint64_t tie_time_ = ~uint64_t{0};
    size_t tie_count_ = 0;
    bool tie_any_ = false;
    uint64_t tie_keys_[kTieKeys] = {};
    bool stopped_ = false;
    bool mine_ = true;  // the record being scanned lies before range_.end_position
  };

  template <bool kRanged>
  absl::Status Read(EventSink* sink, const TimeRange& range, RangeReadResult* out);
  // The end of Read and ReadShared: what the stream and the merge counted, into `out`.
  template <bool kRanged, typename Merger>
  void PutResult(Stream<kRanged>& stream, const Merger& merger, bool read_failed,
                 const TimeRange& range, RangeReadResult* out) const;

  // A split read whose two ranges share one walk of the data (ShareRanges): in a file whose
  // rounds are so long that both ranges read from the start of the data, and that has no more
  // round marks than the merge's round lag, or one more as its last record (iotrace and perf
  // write a mark after the last drain: a file of lag + 1 rounds), a merge emits nothing before
  // its scan has met every record (no record is final before), so each range's merge is a
  // merge of every run of the file, which a scan made elsewhere can set up
  // (SortedRunMerger::Seed). Each range's thread walks half the data (the first range's up to a
  // record boundary near the middle, which its walk must land on) and finds its runs and
  // untimed records; both then merge their own range of all the runs. The alternative, each range
  // scanning every record for itself, read a 256-CPU file's 320 MB twice (bench/README.md).
  static constexpr uint64_t kNoPos = ~uint64_t{0};
  // A run as the walk found it: records whose times do not decrease.
  struct WalkRun {
    uint64_t start = 0;  // its first timed record
    uint64_t first_time = 0;
    uint64_t last_time = 0;
    // Per range (0 earlier, 1 later): its first record at or after the range's start_ts, which
    // the range's scan would not have skipped (kNoPos: none), where the range's run begins.
    std::array<uint64_t, 2> kept = {kNoPos, kNoPos};
  };
  // What one half's walk found, and what each range's scan would have counted there.
  struct WalkPart {
    bool sound = false;  // walked to its end, with nothing a seeded merge cannot stand for
    std::vector<WalkRun> runs;
    std::vector<uint64_t> untimed;  // positions of the records Scan does not time
    uint64_t records = 0;
    std::vector<uint64_t> marks;  // positions of the round marks
    uint64_t last_mark_end = 0;   // where the record after the last of them begins
    // Per range, as Stream::Scan counts them: records before end_position, the latest time
    // among them, the last record timed before count_from_ts; whether a record at or after
    // end_position was met, and the first of them lay exactly there.
    std::array<uint64_t, 2> mine = {0, 0};
    std::array<uint64_t, 2> latest_mine = {0, 0};
    std::array<uint64_t, 2> last_before_count = {0, 0};
    std::array<bool, 2> crossed = {false, false};
    std::array<bool, 2> met = {false, false};
  };
  struct SharedWalk {
    std::array<TimeRange, 2> ranges;
    uint64_t middle = 0;  // part 0 walks [data_begin_, middle), part 1 [middle, data_end_)
    // Both parts' marks: the walks give up past lag + 1, or at kGiveUp (a walk ended unsound).
    std::atomic<uint64_t> marks{0};
    static constexpr uint64_t kGiveUp = uint64_t{1} << 62;
    std::mutex mu;
    std::condition_variable cv;
    std::array<bool, 2> taken = {false, false};    // a read of each part came
    std::array<std::optional<WalkPart>, 2> parts;  // each set once, when its walk ended
  };
  std::unique_ptr<SharedWalk> shared_;
  // The merge's round lag, as SortedRunMerger takes it (1 to 8).
  uint64_t RoundLag() const {
    return static_cast<uint64_t>(std::clamp(options_.merge.round_lag, 1, 8));
  }
  void Walk(SharedWalk& w, int part, WalkPart* out) const;
  absl::Status ReadShared(EventSink* sink, const TimeRange& range, RangeReadResult* out);
  // Whether a chain of records that look sound (sizes, types, samples that parse with a time)
  // starts at `pos` of `bytes` (file offset `base`) and runs to near its end.
  bool LooksLikeRecords(ByteView bytes, uint64_t base, uint64_t pos, uint64_t* first_time) const;
  // A record boundary at or after `from` (within 64 KiB), found by LooksLikeRecords; with the
  // time of the earliest sample in the chain after it (and the chain's times in `times`, the
  // CPU of its first event in `cpu`, -1 when none decodes).
  std::optional<uint64_t> BoundaryNear(uint64_t from, uint64_t* time, uint8_t* buf,
                                       std::vector<uint64_t>* times = nullptr,
                                       int64_t* cpu = nullptr) const;
  // From the record boundary `from` on, the first two FINISHED_ROUND marks (within
  // PerfReadOptions::marks_look_bytes):
  // where the round after the first begins, the largest sample time before the first (from
  // `from`) and between the two. False when two marks are not found there; `*unreadable` then
  // says whether the records there could not be walked (else the rounds are longer).
  bool RoundsAfter(uint64_t from, uint64_t* after_first, uint64_t* max_before_first,
                   uint64_t* max_between, uint8_t* buf, bool* unreadable) const;
  // TimeSpan of a file whose rounds are too long to cut at a mark (a many-CPU machine's rings
  // drained once or twice in the whole recording): both ranges read from the start of the
  // data, the later one passing over what lies before its time (starts_anywhere). The times
  // are those of the records in kTimeLooks looks spread over the data, the middle their median.
  // Nullopt where the rounds interleave fewer than PerfReadOptions::min_interleave_from_start
  // CPUs' drains.
  std::optional<TraceTimeSpan> SpanFromStart(uint8_t* buf) const;
  static constexpr int kTimeLooks = 16;
  // The bytes a look's chain spans: from a boundary within its first 64 KiB to the end of the
  // 320 KiB it reads (usually from near its start: ~10% more than this).
  static constexpr uint64_t kLookBytes = (uint64_t{32} + 256) << 10;
  // The file's first and last sample times as TimeSpanFrom's looks at both ends found them,
  // kept for its next call (the split plan asks again from earlier in the file); the file does
  // not change under a reader.
  struct Ends {
    uint64_t first_ts = 0;
    uint64_t last_ts = 0;
  };
  mutable std::optional<Ends> ends_;
  // Where TimeSpan's looks read the file: kScanBufferBytes, enough for either look; mapped at
  // the first look, let go when a read begins (ranges are read after the plan's looks).
  static constexpr size_t kScanChunk = size_t{1} << 20;
  static constexpr size_t kScanBufferBytes = size_t{2} << 20;
  static_assert(kScanChunk + kMaxRecordBytes <= kScanBufferBytes);
  mutable std::mutex scan_mu_;  // two ranges' reads begin at once
  // scan_'s memory, mapped when there is none (under scan_mu_); null when it cannot be.
  uint8_t* ScanBuffer() const {
    if (!scan_.has_value()) {
      absl::StatusOr<UniqueMapping> scan = MapHugeAnonymous(kScanBufferBytes);
      if (!scan.ok()) return nullptr;
      scan_ = *std::move(scan);
    }
    return static_cast<uint8_t*>(scan_->addr());
  }
  // SpanFromStart's looks, in data order, that met a lower CPU than the look before them: round
  // boundaries seen (-1: no such looks made). Under scan_mu_.
  mutable int look_wraps_ = -1;
  mutable std::optional<UniqueMapping> scan_;

  PerfDataReader() = default;
  absl::Status Parse();
  absl::Status ParseFeatures(const perf::FileHeader& h);
  void ParseFeature(int feature, ByteView bytes);
  void AdoptTracingData(TracingMetadata meta);
  void FindUnfinishedTracingData(uint64_t from, uint64_t to);
  // Formats from outside the file (FormatsFallback), taken when they fit the file; `why` says
  // why the file's own are missing.
  absl::Status UseFallbackFormats(const FormatsFallback& fallback, const std::string& why);
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrFormat("read %s: %s", path_, what));
  }
  // "(bytes B to E) runs past the end of the file (N bytes)", overflow-safe.
  std::string PastEnd(const perf::FileSection& s) const {
    return absl::StrFormat("(bytes %u to %s) runs past the end of the file (%u bytes)", s.offset,
                           s.size > ~uint64_t{0} - s.offset ? std::string("2^64")
                                                            : absl::StrCat(s.offset + s.size),
                           file_size_);
  }

  std::string path_;
  PerfReadOptions options_;
  UniqueMapping mapping_;
  const uint8_t* base_ = nullptr;
  uint64_t file_size_ = 0;
  UniqueFd fd_;     // the data section is read from it through a FileRing, not the mapping
  bool read_ahead_ = false;
  uint64_t data_begin_ = 0;
  uint64_t data_end_ = 0;

  std::vector<PerfAttrInfo> attrs_;
  PerfRecordParser parser_;
  std::vector<std::string> event_names_;
  TracingMetadata metadata_;
  bool has_tracing_data_ = false;
  std::vector<EventFormat> formats_;
  std::vector<std::pair<std::string, std::string>> info_;
  int nr_cpus_ = 0;
  absl::flat_hash_map<int32_t, std::string> comms_;
  std::vector<std::pair<std::string, uint64_t>> open_problems_;
  bool features_cut_ = false;  // feature sections past the end of the file (ParseFeatures)
  bool perf_killed_ = false;   // unfinished, with perf's first header (its feature bits)
  std::string formats_source_ = "file";
  std::string formats_warning_;
  ReadStats stats_;
};

absl::StatusOr<std::unique_ptr<TraceReader>> PerfDataReader::Open(const std::string& path,
                                                                  const PerfReadOptions& options) {
  std::unique_ptr<PerfDataReader> r(new PerfDataReader());
  r->path_ = path;
  r->options_ = options;
  UniqueFd& fd = r->fd_;
  fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open", path);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError(errno, "stat", path);
  if (!S_ISREG(st.st_mode)) return r->Error("not a regular file");
  r->file_size_ = static_cast<uint64_t>(st.st_size);
  if (r->file_size_ < perf::kPipeHeaderSize) {
    return WithHint(r->Error(absl::StrFormat(
                        "header: %d bytes are too short for a perf.data header", r->file_size_)),
                    kCutHint);
  }
  void* addr = ::mmap(nullptr, r->file_size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) return ErrnoError(errno, "mmap", path);
  r->mapping_ = UniqueMapping(addr, r->file_size_);
  r->base_ = static_cast<const uint8_t*>(addr);
  IOTRACE_RETURN_IF_ERROR(r->Parse());
  // Nothing parsed so far points into the mapping: let go of the pages the header reads touched.
  ::madvise(addr, r->file_size_, MADV_DONTNEED);
  return std::unique_ptr<TraceReader>(std::move(r));
}

absl::Status PerfDataReader::Parse() {
  const ByteView file(base_, file_size_);
  uint64_t magic = 0, hsize = 0;
  LoadAt(file, 0, &magic);
  LoadAt(file, 8, &hsize);
  if (magic == perf::kMagicSwapped) {
    return absl::UnimplementedError(
        absl::StrFormat("read %s: big-endian perf.data files are not supported", path_));
  }
  if (magic != perf::kMagic) return Error("not a perf.data file (bad magic)");
  if (hsize == perf::kPipeHeaderSize) {
    return WithHint(
        absl::UnimplementedError(absl::StrFormat(
            "read %s: pipe-mode perf.data (perf record -o -) is not supported", path_)),
        absl::StrFormat("convert it first: perf inject -i %s -o converted.data", path_));
  }
  if (hsize != sizeof(perf::FileHeader) && hsize != perf::kFileHeaderSizeNoFeatures) {
    return WithHint(Error(absl::StrFormat("header: unknown header size %d", hsize)),
                    kDamagedHint);
  }
  if (file_size_ < hsize) {
    return WithHint(Error(absl::StrFormat("header: the file ends at byte %d, inside its %d-byte "
                                          "header: it is cut short",
                                          file_size_, hsize)),
                    kCutHint);
  }
  perf::FileHeader h;  // zeroed features: a 72-byte header has no feature bitmap
  std::memcpy(&h, base_, hsize);

  if (h.attr_size < PERF_ATTR_SIZE_VER0 + sizeof(perf::FileSection) || h.attr_size > kMaxAttrSize) {
    return WithHint(Error(absl::StrFormat("header: attr size %d is not valid", h.attr_size)),
                    kDamagedHint);
  }
  if (!Fits(h.attrs, file_size_)) {
    return WithHint(Error(absl::StrCat("attr section ", PastEnd(h.attrs))), kCutHint);
  }
  // A recording whose writer was killed (SIGKILL, a crash, power loss): iotrace record's header
  // still says "no data, no features" (PerfDataWriter::WritePrefix), and the records run from
  // the data offset to the end of the file. Read them, and say the file was not finished.
  const bool unfinished = perf::NeverFinished(file, h, hsize);
  if (unfinished) {
    for (uint64_t word : h.features) perf_killed_ |= word != 0;  // perf's first header
    h.data.size = file_size_ - h.data.offset;
    // perf's header names the features it meant to write at the end: none are in the file.
    for (uint64_t& word : h.features) word = 0;
    open_problems_.emplace_back(kProblemUnfinishedFile, 1);
  } else if (PerfDataWasRecovered(file, h.data.offset)) {
    // Finished by `iotrace recover` after a kill: whole, but without what record writes at the
    // end (the silent-drop counts).
    open_problems_.emplace_back(kProblemUnfinishedFile, 1);
  }
  // A file cut short (a copy cut off, a disk that filled): the data section runs past the end.
  // Read what is there, up to the last whole record; the feature sections after the data are
  // lost with the end (FindUnfinishedTracingData and formats_fallback stand in for the tracing
  // data).
  bool cut = false;
  if (!Fits(h.data, file_size_)) {
    if (h.data.offset < hsize || h.data.offset >= file_size_) {
      return WithHint(Error(absl::StrCat("data section ", PastEnd(h.data),
                                         h.data.offset < file_size_ ? ""
                                                                    : ": no event is in the file")),
                      kCutHint);
    }
    h.data.size = file_size_ - h.data.offset;
    cut = true;
    open_problems_.emplace_back(kProblemFileCut, 1);
  }
  const uint64_t nr_attrs = h.attrs.size / h.attr_size;
  if (nr_attrs == 0) return WithHint(Error("attr section: no event attrs"), kDamagedHint);
  if (nr_attrs > kMaxAttrs) {
    return WithHint(Error(absl::StrFormat("attr section: %d event attrs is too many", nr_attrs)),
                    kDamagedHint);
  }
  data_begin_ = h.data.offset;
  data_end_ = h.data.offset + h.data.size;

  uint64_t total_ids = 0;
  const uint64_t attr_bytes = h.attr_size - sizeof(perf::FileSection);
  for (uint64_t i = 0; i < nr_attrs; ++i) {
    const uint64_t at = h.attrs.offset + i * h.attr_size;
    PerfAttrInfo info;
    std::memcpy(&info.attr, base_ + at, std::min<uint64_t>(attr_bytes, sizeof(info.attr)));
    // Fields this build knows but the file's perf did not write stay zero.
    info.attr.size = sizeof(info.attr);
    perf::FileSection ids;
    std::memcpy(&ids, base_ + at + attr_bytes, sizeof(ids));
    if (!Fits(ids, file_size_)) {
      return WithHint(Error(absl::StrFormat("ids of attr %d %s", i, PastEnd(ids))), kCutHint);
    }
    if (ids.size % 8 != 0) {
      return WithHint(Error(absl::StrFormat("ids of attr %d: size %d is not a multiple of 8", i,
                                            ids.size)),
                      kDamagedHint);
    }
    total_ids += ids.size / 8;
    if (total_ids > kMaxIds) {
      return WithHint(Error("attr section: too many event ids"), kDamagedHint);
    }
    info.ids.resize(ids.size / 8);
    if (ids.size > 0) std::memcpy(info.ids.data(), base_ + ids.offset, ids.size);
    attrs_.push_back(std::move(info));
  }

  if (hsize == sizeof(perf::FileHeader) && !cut) IOTRACE_RETURN_IF_ERROR(ParseFeatures(h));
  if ((unfinished || cut || features_cut_) && !has_tracing_data_) {
    FindUnfinishedTracingData(hsize, h.data.offset);
  }
  if (nr_cpus_ == 0) {
    // No NRCPUS feature (an unfinished file): a system-wide recording opens one fd, so one id,
    // per CPU and event.
    for (const PerfAttrInfo& a : attrs_) {
      nr_cpus_ = std::max(nr_cpus_, static_cast<int>(std::min<size_t>(a.ids.size(), 1u << 20)));
    }
  }

  bool any_tracepoint = false;
  for (const PerfAttrInfo& a : attrs_) any_tracepoint |= a.attr.type == PERF_TYPE_TRACEPOINT;
  auto parser = PerfRecordParser::Create(attrs_);
  if (!parser.ok()) {
    return WithHint(Error(absl::StrCat("attr section: ", parser.status().message())),
                    kDamagedHint);
  }
  parser_ = std::move(parser).value();

  if (any_tracepoint && !has_tracing_data_) {
    const bool lost = cut || features_cut_;
    const std::string why =
        lost ? "the file is cut short, and its tracing data (HEADER_TRACING_DATA, the event "
               "formats), which perf writes after the data, is lost with its end"
             : unfinished ? "the file was not finished (its writer was killed?) and holds no "
                            "tracing data (HEADER_TRACING_DATA, which perf writes at the end)"
                          : "the file holds no tracing data (HEADER_TRACING_DATA)";
    if (options_.formats_fallback == nullptr) {
      return WithHint(Error(absl::StrCat("event formats: ", why,
                                         ": the tracepoint fields cannot be decoded")),
                      kFormatsHint);
    }
    IOTRACE_RETURN_IF_ERROR(UseFallbackFormats(*options_.formats_fallback, why));
  }

  // Names: EVENT_DESC where present, else the tracepoint's format, else type/config.
  event_names_.resize(attrs_.size());
  std::vector<std::string> names;
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if (event_names_[i].empty() && attrs_[i].attr.type == PERF_TYPE_TRACEPOINT) {
      for (const EventFormat& f : formats_) {
        if (f.id == attrs_[i].attr.config) event_names_[i] = f.FullName();
      }
    }
    if (event_names_[i].empty()) {
      event_names_[i] =
          absl::StrFormat("type%d:config%d", attrs_[i].attr.type, attrs_[i].attr.config);
    }
    names.push_back(event_names_[i]);
  }
  info_.emplace_back("events", absl::StrJoin(names, ","));
  info_.emplace_back("data_offset", absl::StrCat(h.data.offset));
  info_.emplace_back("data_size", absl::StrCat(h.data.size));
  for (const auto& [name, count] : open_problems_) {
    if (name != kProblemUnfinishedFile) continue;
    info_.emplace_back(
        "unfinished",
        !unfinished    ? "the recording did not finish; recovered by iotrace recover"
        : perf_killed_ ? "perf record did not finish (killed?); its records up to the end of the "
                         "file are read"
                       : absl::StrCat("the recording did not finish; its records up to the end "
                                      "of the file are read (iotrace recover ",
                                      path_, " makes a file perf reads too)"));
  }
  if (attrs_[0].attr.use_clockid) {
    info_.emplace_back("clockid", absl::StrCat(attrs_[0].attr.clockid));
  }

  // Saved cmdlines ("pid comm" lines) name processes that no COMM record mentions.
  std::string_view lines = metadata_.saved_cmdlines;
  while (!lines.empty()) {
    size_t nl = lines.find('\n');
    std::string_view line = lines.substr(0, nl);
    lines = nl == std::string_view::npos ? std::string_view() : lines.substr(nl + 1);
    size_t sp = line.find(' ');
    int32_t pid;
    if (sp != std::string_view::npos &&
        absl::SimpleAtoi(absl::string_view(line.data(), sp), &pid)) {
      comms_.try_emplace(pid, std::string(line.substr(sp + 1)));
    }
  }
  return absl::OkStatus();
}

void PerfDataReader::AdoptTracingData(TracingMetadata meta) {
  metadata_ = std::move(meta);
  has_tracing_data_ = true;
  for (const FormatText& f : metadata_.event_formats) {
    auto format = ParseUntrustedEventFormat(f.system, f.text);
    if (format.ok()) {
      formats_.push_back(std::move(format).value());
    } else {
      open_problems_.emplace_back("bad_event_format", 1);
    }
  }
}

// An unfinished file has no feature table, but iotrace record writes the tracing data before
// the attrs and the data: look for its block between the header and the data.
void PerfDataReader::FindUnfinishedTracingData(uint64_t from, uint64_t to) {
  const std::string_view magic(kTracingMagic, kTracingMagicSize);
  const std::string_view region(reinterpret_cast<const char*>(base_) + from, to - from);
  // A few tries: a crafted file full of magic bytes must not cost a decode attempt each.
  int tries = 0;
  for (size_t at = region.find(magic); at != std::string_view::npos && tries++ < 16;
       at = region.find(magic, at + 1)) {
    auto decoded =
        DecodeTracingData(ByteView(base_ + from + at, to - from - at), /*keep_kallsyms=*/false);
    if (decoded.ok()) {
      AdoptTracingData(std::move(decoded->meta));
      return;
    }
  }
}

// Why `raw` (a sample's raw data) cannot be an event laid out as `f` says, or "" when it can.
// perf pads the raw data to 4 bytes past an 8-byte boundary (kernel/events/core.c,
// perf_prepare_sample); the event itself is the format's fields, rounded up to their 8-byte
// alignment, plus any dynamic (__data_loc / __rel_loc) data.
std::string RawMisfit(ByteView raw, const EventFormat& f) {
  uint64_t fixed_end = 0;
  bool dynamic = false;
  for (const FieldInfo& field : f.fields) {
    fixed_end = std::max<uint64_t>(fixed_end, uint64_t{field.offset} + field.size);
    dynamic |= field.is_dynamic;
  }
  if (raw.size < fixed_end) {
    return absl::StrFormat("%u bytes of raw data, but its fields end at byte %u", raw.size,
                           fixed_end);
  }
  // The kernel places dynamic data after the fields, empty or not (its offset is never 0).
  uint64_t dynamic_bytes = 0;
  for (const FieldInfo& field : f.fields) {
    if (!field.is_dynamic) continue;
    uint32_t loc = 0;
    std::memcpy(&loc, raw.data + field.offset, 4);
    uint64_t at = loc & 0xffff, len = loc >> 16;
    if (field.is_relative) at += uint64_t{field.offset} + field.size;
    if (at + len > raw.size || at < fixed_end) {
      return absl::StrFormat(
          "%u bytes of raw data, but its field %s points at bytes %u to %u (its fields end at "
          "byte %u)",
          raw.size, field.name, at, at + len, fixed_end);
    }
    dynamic_bytes += len;
  }
  const uint64_t most = ((fixed_end + 7) / 8 * 8 + dynamic_bytes + 4 + 7) / 8 * 8 - 4;
  if (raw.size > most) {
    return absl::StrFormat("%u bytes of raw data, but its fields end at byte %u%s", raw.size,
                           fixed_end,
                           dynamic ? absl::StrFormat(" (and %u bytes of dynamic data)",
                                                     dynamic_bytes)
                                   : "");
  }
  return "";
}

absl::Status PerfDataReader::UseFallbackFormats(const FormatsFallback& fallback,
                                                const std::string& why) {
  auto fail = [&](const std::string& what) {
    return WithHint(
        Error(absl::StrFormat("event formats: %s; the formats of %s do not match: %s", why,
                              fallback.description, what)),
        absl::StrCat("give the formats of a recording made on the kernel that recorded this one: "
                     "iotrace report --formats-from FILE (a perf.data or trace.dat), or copy the "
                     "file again from where it was recorded"));
  };
  std::vector<uint32_t> ids;
  for (const PerfAttrInfo& a : attrs_) {
    if (a.attr.type != PERF_TYPE_TRACEPOINT) continue;
    const uint32_t id = static_cast<uint32_t>(a.attr.config);
    if (a.attr.config != id) return fail(absl::StrFormat("tracepoint id %u", a.attr.config));
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  auto loaded = fallback.load(ids);
  if (!loaded.ok()) {
    return WithHint(Error(absl::StrFormat("event formats: %s; the formats of %s cannot be read: %s",
                                          why, fallback.description, loaded.status().message())),
                    kFormatsHint);
  }
  std::vector<EventFormat> formats;
  for (uint32_t id : ids) {
    auto it = std::find_if(loaded->begin(), loaded->end(),
                           [id](const EventFormat& f) { return f.id == id; });
    if (it == loaded->end()) {
      return fail(absl::StrFormat("the file's event id %u is not an event there", id));
    }
    formats.push_back(*it);
  }
  // The first samples of each id (up to 16, in the first 16 MiB of data) must be laid out as
  // that id's format says: ids are handed out at boot in the order events register, so another
  // kernel (or the same one with other modules loaded) may give an id to another event.
  constexpr int kChecksPerId = 16;
  constexpr uint64_t kScanBytes = uint64_t{16} << 20;
  std::vector<int> checked(formats.size());
  size_t done = 0;
  const uint64_t scan_end = std::min(data_end_, data_begin_ + kScanBytes);
  for (uint64_t pos = data_begin_;
       pos + sizeof(perf::EventHeader) <= scan_end && done < ids.size();) {
    perf::EventHeader h;
    std::memcpy(&h, base_ + pos, sizeof(h));
    if (h.size < sizeof(h) || h.size > scan_end - pos || h.type == perf::kRecordAuxtrace) break;
    PerfRecord rec;
    if (h.type == perf::kRecordSample &&
        parser_.Parse(ByteView(base_ + pos, h.size), &rec) == PerfProblem::kNone &&
        rec.kind == PerfRecord::Kind::kEvent) {
      const ByteView raw = rec.event.payload;
      const auto it = std::find(ids.begin(), ids.end(), rec.event.type);
      if (it == ids.end()) {
        return fail(absl::StrFormat("a sample at byte %u is of event id %u, which no attr names",
                                    pos, rec.event.type));
      }
      const size_t i = static_cast<size_t>(it - ids.begin());
      if (checked[i] < kChecksPerId) {
        const std::string misfit = RawMisfit(raw, formats[i]);
        if (!misfit.empty()) {
          return fail(absl::StrFormat("event id %u is %s there, but the file's sample at byte %u "
                                      "has %s",
                                      ids[i], formats[i].FullName(), pos, misfit));
        }
        done += ++checked[i] == kChecksPerId;
      }
    }
    pos += h.size;
  }
  formats_ = std::move(formats);
  formats_source_ = fallback.source;
  formats_warning_ = absl::StrFormat(
      "event formats taken from %s: %s; check that they are the recording kernel's, or give "
      "--formats-from FILE",
      fallback.description, why);
  return absl::OkStatus();
}

absl::Status PerfDataReader::ParseFeatures(const perf::FileHeader& h) {
  int count = 0;
  for (uint64_t word : h.features) count += std::popcount(word);
  if (count == 0) return absl::OkStatus();
  // The feature table follows the data, and the sections follow the table: a file cut short
  // after its data loses them (counted), but no event.
  const perf::FileSection table{data_end_, uint64_t(count) * sizeof(perf::FileSection)};
  auto lost = [&] {
    if (!features_cut_) open_problems_.emplace_back("file_cut_after_data", 1);
    features_cut_ = true;
  };
  if (!Fits(table, file_size_)) {
    lost();
    return absl::OkStatus();
  }
  int index = 0;
  uint64_t previous_end = 0;  // perf and iotrace write the sections one after the other
  for (int feature = 0; feature < perf::kFeatBits; ++feature) {
    if (!perf::HasFeature(h, feature)) continue;
    perf::FileSection s;
    std::memcpy(&s, base_ + table.offset + sizeof(s) * index++, sizeof(s));
    if (!Fits(s, file_size_)) {
      // Cut off only when it starts where the section before it ended or later, and the first
      // one cut off starts before the end of the file: else the table is bad.
      if (s.offset < previous_end || (!features_cut_ && s.offset > file_size_)) {
        return WithHint(Error(absl::StrFormat("feature section %s %s", perf::FeatureName(feature),
                                              PastEnd(s))),
                        kDamagedHint);
      }
      lost();
      previous_end = s.size > ~uint64_t{0} - s.offset ? ~uint64_t{0} : s.offset + s.size;
      continue;
    }
    previous_end = s.offset + s.size;
    if (feature == perf::kFeatCompressed) {
      // (OpenTraceReader inflates such a file first: perf_inflate.h.)
      return absl::UnimplementedError(absl::StrFormat(
          "read %s: compressed perf.data (perf record -z) must be inflated first", path_));
    }
    if (feature == perf::kFeatTracingData) {
      auto decoded = DecodeTracingData(ByteView(base_ + s.offset, s.size), /*keep_kallsyms=*/false);
      if (!decoded.ok()) {
        return WithHint(Error(absl::StrFormat("feature section tracing_data (bytes %u to %u): %s",
                                              s.offset, s.offset + s.size,
                                              decoded.status().message())),
                        kDamagedHint);
      }
      AdoptTracingData(std::move(decoded->meta));
      continue;
    }
    ParseFeature(feature, ByteView(base_ + s.offset, s.size));
  }
  return absl::OkStatus();
}

void PerfDataReader::ParseFeature(int feature, ByteView bytes) {
  ByteReader r(bytes);
  std::string text;
  auto bad = [&] {
    open_problems_.emplace_back(absl::StrCat("bad_feature_", perf::FeatureName(feature)), 1);
  };
  auto add_string = [&](const char* key) {
    if (!ReadPerfString(&r, &text)) return bad();
    info_.emplace_back(key, text);
  };
  switch (feature) {
    case perf::kFeatHostname:
      return add_string("hostname");
    case perf::kFeatOsRelease:
      return add_string("os_release");
    case perf::kFeatVersion:
      return add_string("perf_version");
    case perf::kFeatArch:
      return add_string("arch");
    case perf::kFeatCpuDesc:
      return add_string("cpu_desc");
    case perf::kFeatCpuId:
      return add_string("cpuid");
    case perf::kFeatNrCpus: {
      uint32_t avail, online;
      if (!r.Read(&avail) || !r.Read(&online)) return bad();
      info_.emplace_back("nr_cpus_online", absl::StrCat(online));
      info_.emplace_back("nr_cpus_available", absl::StrCat(avail));
      nr_cpus_ = static_cast<int>(std::min<uint32_t>(std::max(avail, online), 1u << 20));
      return;
    }
    case perf::kFeatTotalMem: {
      uint64_t kb;
      if (!r.Read(&kb)) return bad();
      info_.emplace_back("total_mem_kb", absl::StrCat(kb));
      return;
    }
    case perf::kFeatCmdline: {
      uint32_t n;
      if (!r.Read(&n) || n > r.remaining() / 4) return bad();
      std::vector<std::string> args;
      for (uint32_t i = 0; i < n; ++i) {
        if (!ReadPerfString(&r, &text)) return bad();
        args.push_back(text);
      }
      info_.emplace_back("cmdline", absl::StrJoin(args, " "));
      return;
    }
    case perf::kFeatEventDesc: {
      uint32_t nre, sz;
      if (!r.Read(&nre) || !r.Read(&sz) || nre > r.remaining() / 8) return bad();
      std::vector<std::string> names;
      for (uint32_t i = 0; i < nre; ++i) {
        uint32_t nri;
        if (!r.Skip(sz) || !r.Read(&nri) || !ReadPerfString(&r, &text) || nri > r.remaining() / 8 ||
            !r.Skip(size_t{nri} * 8)) {
          return bad();
        }
        names.push_back(text);
      }
      // EVENT_DESC lists the attrs in file order.
      event_names_.resize(attrs_.size());
      for (size_t i = 0; i < names.size() && i < attrs_.size(); ++i) event_names_[i] = names[i];
      return;
    }
    case perf::kFeatClockId: {
      uint64_t res;
      if (!r.Read(&res)) return bad();
      info_.emplace_back("clock_res_ns", absl::StrCat(res));
      return;
    }
    case perf::kFeatClockData: {
      uint32_t version, clockid;
      uint64_t wall, clock;
      if (!r.Read(&version) || !r.Read(&clockid) || !r.Read(&wall) || !r.Read(&clock)) {
        return bad();
      }
      info_.emplace_back("clock_ref_wall_ns", absl::StrCat(wall));
      info_.emplace_back("clock_ref_clock_ns", absl::StrCat(clock));
      return;
    }
    case perf::kFeatSampleTime: {
      uint64_t first, last;
      if (!r.Read(&first) || !r.Read(&last)) return bad();
      info_.emplace_back("first_sample_ns", absl::StrCat(first));
      info_.emplace_back("last_sample_ns", absl::StrCat(last));
      return;
    }
    default:
      return;  // features iotrace does not use
  }
}

template <bool kRanged>
absl::Status PerfDataReader::Read(EventSink* sink, const TimeRange& range, RangeReadResult* out) {
  if constexpr (kRanged) {
    if (range.shared_part >= 0 && shared_ != nullptr) return ReadShared(sink, range, out);
  }
  {
    std::lock_guard lock(scan_mu_);
    scan_.reset();  // the looks are over
  }
  *out = RangeReadResult{};
  const uint64_t begin =
      kRanged ? std::clamp(range.start_position, data_begin_, data_end_) : data_begin_;
  IOTRACE_ASSIGN_OR_RETURN(FileRing ring,
                           FileRing::Create(fd_.get(), begin, data_end_,
                                            read_ahead_ ? options_.read_ahead_ring_bytes
                                                        : options_.read_ring_bytes,
                                            options_.read_step_bytes, kMaxRecordBytes));
  if (read_ahead_) ring.StartReadAhead();
  Stream<kRanged> stream(this, sink, &ring, range);
  if (!kRanged) stream.comms_ = &comms_;
  // The ring reuses room as the nearest cursor moves on: tell it often.
  MergeLimits limits = options_.merge;
  limits.release_step = std::min<uint64_t>(limits.release_step, uint64_t{256} << 10);
  // Cursors further behind the scan read through the far path, so that the ring never grows:
  // it holds what the merge keeps near, a release step and the record being scanned, and the
  // room read ahead into (half the ring: a thread reading ahead hears of room half a ring at a
  // time, FileRing).
  const uint64_t in_ring = read_ahead_ ? ring.capacity() / 2 : ring.capacity();
  const uint64_t margin = limits.release_step + kMaxRecordBytes + options_.read_step_bytes;
  limits.near_bytes = std::min(limits.near_bytes, in_ring - std::min(in_ring / 2, margin));
  SortedRunMerger<Stream<kRanged>> merger(&stream, begin, data_end_, limits);
  merger.Run();
  // A failed read (or a file cut short while being read) ends the data early, as a cut would.
  const bool read_failed = !ring.error().empty() || stream.far_errors_ != 0;
  ring = FileRing();
  PutResult(stream, merger, read_failed, range, out);
  return absl::OkStatus();
}

template <bool kRanged, typename Merger>
void PerfDataReader::PutResult(Stream<kRanged>& stream, const Merger& merger, bool read_failed,
                               const TimeRange& range, RangeReadResult* out) const {
  ReadStats& stats = out->stats;
  stats.records = stream.records_;
  stats.batched_reads = stream.aheads_taken_;
  stats.events = stream.events_;
  stats.AddProblem("duplicate_record", stream.duplicates_);
  for (size_t cpu = 0; cpu < stream.spans_.size(); ++cpu) {
    CpuSpan span = stream.spans_[cpu].span;
    span.cpu = static_cast<int32_t>(cpu);
    stats.coverage.AddSpan(span);
  }
  stats.coverage.gaps = std::move(stream.gaps_);
  uint64_t problems = read_failed ? 1 : 0;
  problems += stream.truncated_ + stream.bad_size_;
  for (size_t i = 1; i < stream.problems_.size(); ++i) problems += stream.problems_[i];
  out->problems = problems;
  out->out_of_order = merger.counters().out_of_order;
  out->scan_end = merger.scan_position();
  out->met_end_position = stream.met_end_position_;
  out->latest_before_end_position = stream.latest_mine_;
  out->last_position_before_count = stream.last_before_count_;
  // The problems of the data and the file's own belong to the range that reads to the end.
  if (kRanged && range.end_ts != ~uint64_t{0}) return;
  for (const auto& [name, count] : open_problems_) stats.AddProblem(name, count);
  // The data ends early, for every CPU at once (the records of all CPUs are interleaved in one
  // stream): the file is cut short, its writer never finished it, or its last part is unusable.
  // A CPU's data then ends at its last record; one with none has no data at all.
  bool cut = false, unfinished = false;
  for (const auto& [name, count] : open_problems_) {
    cut |= name == kProblemFileCut;
    unfinished |= name == kProblemUnfinishedFile;
  }
  const bool damaged = read_failed || stream.bad_size_ != 0;
  if (cut || unfinished || damaged || stream.truncated_ != 0) {
    const GapCause cause = unfinished            ? GapCause::kUnfinished
                           : cut || !damaged     ? GapCause::kCut
                                                 : GapCause::kDamaged;
    // The round marks bound what is missing: records not in the file would have come in a
    // later round, so with times past what the rounds before had. Eight marks back allows for
    // records written late (seen up to four rounds late here; see MergeLimits::round_lag).
    stats.coverage.EndAll(nr_cpus_, cause, merger.time_at_mark(8));
  }
  for (size_t i = 1; i < stream.problems_.size(); ++i) {
    stats.AddProblem(PerfProblemName(static_cast<PerfProblem>(i)), stream.problems_[i]);
  }
  stats.AddProblem("truncated_record", stream.truncated_);
  if (read_failed) stats.AddProblem("read_error", 1);
  stats.AddProblem("bad_record_size", stream.bad_size_);
  stats.AddProblem("out_of_order_beyond_window", merger.counters().out_of_order);
}

bool PerfDataReader::ShareRanges(const TimeRange& earlier, const TimeRange& later) {
  shared_.reset();
  if (!options_.share_walk) return false;
  // Only where both ranges would scan every record: both read from the start of the data. Not in
  // a file cut short or never finished, whose coverage ends at a round mark's time, which a
  // seeded merge does not keep.
  if (earlier.start_position > data_begin_ || later.start_position > data_begin_ ||
      !open_problems_.empty()) {
    return false;
  }
  // Where no window or cap of the merge can make a record final before the end of the data
  // (the round marks are counted as the data is walked).
  const MergeLimits& l = options_.merge;
  const uint64_t bytes = data_end_ - data_begin_;
  if (bytes < (uint64_t{1} << 20) || bytes >= std::max(l.window_bytes, l.far_window_bytes) ||
      bytes > l.max_span_bytes) {
    return false;
  }
  std::lock_guard lock(scan_mu_);
  // The looks that chose reading from the start saw the rounds begin again more often than the
  // lag allows: the data most likely holds more marks (each found only by walking up to it).
  if (options_.share_walk_by_looks &&
      (look_wraps_ < 0 || look_wraps_ > static_cast<int>(RoundLag()))) {
    return false;
  }
  uint8_t* buf = ScanBuffer();
  if (buf == nullptr) return false;
  uint64_t time = 0;
  const std::optional<uint64_t> middle = BoundaryNear(data_begin_ + bytes / 2, &time, buf);
  if (!middle.has_value() || *middle <= data_begin_ || *middle >= data_end_) return false;
  shared_ = std::make_unique<SharedWalk>();
  shared_->ranges = {earlier, later};
  shared_->middle = *middle;
  return true;
}

void PerfDataReader::Walk(SharedWalk& w, int part, WalkPart* out) const {
  // Losses without a time are delivered as the scan meets them: not in a seeded merge.
  class LossCount final : public EventSink {
   public:
    void OnEvent(const RawEvent&) override {}
    void OnLoss(const LossRecord&) override { ++losses; }
    uint64_t losses = 0;
  };
  // A walk that ends unsound, wherever it stops, sends both back to a scan each: the other half
  // need walk no further.
  struct GiveUpUnlessSound {
    SharedWalk& w;
    const WalkPart& out;
    ~GiveUpUnlessSound() {
      if (!out.sound) w.marks.store(SharedWalk::kGiveUp, std::memory_order_relaxed);
    }
  } give_up{w, *out};
  const uint64_t from = part == 0 ? data_begin_ : w.middle;
  const uint64_t to = part == 0 ? w.middle : data_end_;
  absl::StatusOr<FileRing> ring = FileRing::Create(fd_.get(), from, to, options_.read_ring_bytes,
                                                   options_.read_step_bytes, kMaxRecordBytes);
  if (!ring.ok()) return;
  LossCount losses;
  const TimeRange all;
  Stream<true> stream(this, &losses, &*ring, all);
  const uint64_t lag = RoundLag();
  const size_t max_runs = std::max<size_t>(options_.merge.max_runs, 2);
  constexpr uint64_t kReleaseStep = uint64_t{256} << 10;
  uint64_t release_at = from + kReleaseStep;
  bool open = false;  // a run is open: the next timed record goes on with it unless earlier
  uint64_t pos = from;
  while (pos < to) {
    uint64_t next = 0;
    uint64_t t = 0;
    const ScanKind kind = stream.ScanRecord(pos, &next, &t);
    if (kind == ScanKind::kStop || next <= pos || next > to) return;
    ++out->records;
    const bool timed = kind == ScanKind::kTimed;
    for (size_t r = 0; r < 2; ++r) {
      const TimeRange& range = w.ranges[r];
      if (pos < range.end_position) {
        ++out->mine[r];
        if (timed) out->latest_mine[r] = std::max(out->latest_mine[r], t);
      } else if (!out->crossed[r]) {
        out->crossed[r] = true;
        out->met[r] = pos == range.end_position;
      }
      if (timed && t < range.count_from_ts) out->last_before_count[r] = pos;
    }
    if (timed) {
      if (!open || t < out->runs.back().last_time) {
        // As many runs as a merge's cap: it would force records out (a range's runs are as
        // many as the walk's at most, and no more than this are kept in memory).
        if (out->runs.size() >= max_runs) return;
        out->runs.push_back(WalkRun{.start = pos, .first_time = t, .last_time = t});
        open = true;
      }
      WalkRun& run = out->runs.back();
      run.last_time = t;
      for (size_t r = 0; r < 2; ++r) {
        if (run.kept[r] == kNoPos && t >= w.ranges[r].start_ts) run.kept[r] = pos;
      }
    } else {
      out->untimed.push_back(pos);
      if (kind == ScanKind::kRoundEnd) {
        out->marks.push_back(pos);
        out->last_mark_end = next;
        // More marks than the lag and the one after the last drain: a merge makes records
        // final before the end.
        if (w.marks.fetch_add(1, std::memory_order_relaxed) + 1 > lag + 1) return;
      }
    }
    pos = next;
    if (pos >= release_at) {
      ring->Release(pos);
      release_at = pos + kReleaseStep;
      if (w.marks.load(std::memory_order_relaxed) > lag + 1) return;  // the other half's
    }
  }
  bool problems = stream.truncated_ != 0 || stream.bad_size_ != 0;
  for (size_t i = 1; i < stream.problems_.size(); ++i) problems |= stream.problems_[i] != 0;
  out->sound = pos == to && !problems && losses.losses == 0 && ring->error().empty();
}

absl::Status PerfDataReader::ReadShared(EventSink* sink, const TimeRange& range,
                                        RangeReadResult* out) {
  {
    std::lock_guard lock(scan_mu_);
    scan_.reset();  // the looks are over
  }
  SharedWalk& w = *shared_;
  TimeRange alone = range;
  alone.shared_part = -1;
  if (range.shared_part != 0 && range.shared_part != 1) return Read<true>(sink, alone, out);
  const size_t part = static_cast<size_t>(range.shared_part);
  {
    // A part read again (the shared read is over) is read alone, without waiting.
    std::lock_guard lock(w.mu);
    if (w.taken[part]) return Read<true>(sink, alone, out);
    w.taken[part] = true;
  }
  // The range ShareRanges was given: else the walk's counts are not this range's.
  const TimeRange& shared = w.ranges[part];
  const bool same = range.start_ts == shared.start_ts &&
                    range.count_from_ts == shared.count_from_ts && range.end_ts == shared.end_ts &&
                    range.start_position == shared.start_position &&
                    range.end_position == shared.end_position;
  {
    // The other range's read waits for this part, whatever happens to this one's walk.
    WalkPart found;
    struct Publish {
      SharedWalk& w;
      size_t part;
      WalkPart& found;
      ~Publish() {
        {
          std::lock_guard lock(w.mu);
          w.parts[part] = std::move(found);
        }
        w.cv.notify_all();
      }
    } publish{w, part, found};
    if (same) {
      Walk(w, static_cast<int>(part), &found);
    } else {
      w.marks.store(SharedWalk::kGiveUp, std::memory_order_relaxed);
    }
  }
  {
    std::unique_lock lock(w.mu);
    w.cv.wait(lock, [&] { return w.parts[1 - part].has_value(); });
  }
  // Both parts are set and no longer written.
  const WalkPart& first = *w.parts[0];
  const WalkPart& second = *w.parts[1];
  const uint64_t lag = RoundLag();
  const MergeLimits& l = options_.merge;
  const uint64_t records = first.records + second.records;
  // From the lag + 1-th mark on, records are final and emitted: only when that mark is the
  // last record of the data has the scan then met every record, as the walk has.
  const uint64_t marks = first.marks.size() + second.marks.size();
  const bool marks_fit = marks <= lag || (marks == lag + 1 && second.last_mark_end == data_end_);
  if (!first.sound || !second.sound || !marks_fit ||
      records >= std::max(l.window_records, l.far_window_bytes / 16)) {
    return Read<true>(sink, alone, out);
  }
  // The runs in data order: the later part's first goes on with the earlier part's last when
  // its first time does not fall below that run's last (the scan would have kept it open).
  std::vector<WalkRun> runs = first.runs;
  size_t joined = 0;
  if (!runs.empty() && !second.runs.empty() &&
      second.runs.front().first_time >= runs.back().last_time) {
    WalkRun& last = runs.back();
    const WalkRun& next = second.runs.front();
    for (size_t r = 0; r < 2; ++r) {
      if (last.kept[r] == kNoPos) last.kept[r] = next.kept[r];
    }
    last.last_time = next.last_time;
    joined = 1;
  }
  runs.insert(runs.end(), second.runs.begin() + static_cast<ptrdiff_t>(joined), second.runs.end());
  // This range's runs: each from its first record the range does not skip (a record it skips
  // ends the run before, and the next one it keeps begins another) to the next run's start.
  using Merger = SortedRunMerger<Stream<true>>;
  std::vector<Merger::SeedRun> seeds;
  seeds.reserve(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].kept[part] == kNoPos) continue;
    const bool last = i + 1 == runs.size();  // the run the scan leaves open
    seeds.push_back({runs[i].kept[part], last ? data_end_ : runs[i + 1].start, last});
  }
  // A merge of as many runs as its cap forces records out before the end.
  if (seeds.size() >= std::max<size_t>(l.max_runs, 2)) return Read<true>(sink, alone, out);

  *out = RangeReadResult{};
  // No bytes in memory: every cursor reads through the far path.
  IOTRACE_ASSIGN_OR_RETURN(FileRing ring,
                           FileRing::Create(fd_.get(), data_end_, data_end_, kMaxRecordBytes,
                                            kMaxRecordBytes, kMaxRecordBytes));
  Stream<true> stream(this, sink, &ring, range);
  std::vector<uint64_t> untimed = first.untimed;
  untimed.insert(untimed.end(), second.untimed.begin(), second.untimed.end());
  MergeLimits limits = options_.merge;
  limits.release_step = std::min<uint64_t>(limits.release_step, uint64_t{256} << 10);
  Merger merger(&stream, data_begin_, data_end_, limits);
  merger.Seed(seeds, std::move(untimed), records);
  merger.Run();
  // What the range's scan would have counted, from both parts.
  stream.records_ = first.mine[part] + second.mine[part];
  stream.met_end_position_ = first.crossed[part] ? first.met[part] : second.met[part];
  stream.latest_mine_ = std::max(first.latest_mine[part], second.latest_mine[part]);
  stream.last_before_count_ = second.last_before_count[part] != 0 ? second.last_before_count[part]
                                                                  : first.last_before_count[part];
  const bool read_failed = !ring.error().empty() || stream.far_errors_ != 0;
  ring = FileRing();
  PutResult(stream, merger, read_failed, range, out);
  out->shared_walk = true;
  return absl::OkStatus();
}

std::string PerfDataReader::RangesUnfit(const TimeRange& range, const RangeReadResult& earlier,
                                        const RangeReadResult& later) const {
  if (earlier.problems + later.problems != 0) return "problems in the data";
  if (earlier.out_of_order + later.out_of_order != 0) return "records out of time order";
  // The later range read from end_position on: a record must begin there, nothing before it
  // may belong after the cut, and every record before the cut that the later range met must
  // lie where the earlier one had scanned (and so delivered) before it stopped.
  if (!earlier.met_end_position) return "the ranges do not meet at the cut";
  if (earlier.latest_before_end_position >= range.end_ts) return "records late across the cut";
  if (later.last_position_before_count >= earlier.scan_end) return "records late across the cut";
  return "";
}

bool PerfDataReader::LooksLikeRecords(ByteView bytes, uint64_t base, uint64_t pos,
                                      uint64_t* first_time) const {
  int records = 0, samples = 0;
  *first_time = ~uint64_t{0};
  while (pos + sizeof(perf::EventHeader) <= bytes.size) {
    perf::EventHeader h;
    std::memcpy(&h, bytes.data + pos, sizeof(h));
    const bool type_ok = (h.type >= 1 && h.type < 32) ||
                         (h.type >= 64 && h.type < 128 && h.type != perf::kRecordAuxtrace);
    if (h.size < sizeof(h) || h.size % 8 != 0 || !type_ok) return false;
    if (pos + h.size > bytes.size) break;
    if (base + pos + h.size > data_end_) return false;
    if (h.type == perf::kRecordSample) {
      uint64_t t = 0;
      if (parser_.SampleTime(ByteView(bytes.data + pos, h.size), &t) != PerfProblem::kNone) {
        return false;
      }
      *first_time = std::min(*first_time, t);
      ++samples;
    }
    ++records;
    pos += h.size;
  }
  return records >= 256 && samples >= 128;
}

std::optional<uint64_t> PerfDataReader::BoundaryNear(uint64_t from, uint64_t* time, uint8_t* buf,
                                                     std::vector<uint64_t>* times,
                                                     int64_t* cpu) const {
  constexpr uint64_t kSearch = uint64_t{64} << 10;
  constexpr uint64_t kChain = uint64_t{256} << 10;
  static_assert(kSearch + kChain <= kScanBufferBytes);
  from = data_begin_ + (from - data_begin_) / 8 * 8;  // records keep 8-byte alignment
  if (from >= data_end_) return std::nullopt;
  const size_t n = PreadUpTo(fd_.get(), buf, std::min(kSearch + kChain, data_end_ - from), from);
  if (n == 0) return std::nullopt;
  const ByteView bytes(buf, n);
  for (uint64_t off = 0; off < kSearch && off < bytes.size; off += 8) {
    if (!LooksLikeRecords(bytes, from, off, time)) continue;
    // The chain again, for its sample times (LooksLikeRecords checked every record of it).
    if (cpu != nullptr) *cpu = -1;
    for (uint64_t pos = off;
         (times != nullptr || cpu != nullptr) && pos + sizeof(perf::EventHeader) <= bytes.size;) {
      perf::EventHeader h;
      std::memcpy(&h, bytes.data + pos, sizeof(h));
      if (pos + h.size > bytes.size) break;
      if (cpu != nullptr && *cpu < 0 && h.type == perf::kRecordSample) {
        PerfRecord rec;
        if (parser_.Parse(ByteView(bytes.data + pos, h.size), &rec) == PerfProblem::kNone &&
            rec.kind == PerfRecord::Kind::kEvent) {
          *cpu = rec.event.cpu;
        }
      }
      if (times == nullptr) {
        if (*cpu >= 0) break;
        pos += h.size;
        continue;
      }
      uint64_t t = 0;
      if (h.type == perf::kRecordSample &&
          parser_.SampleTime(ByteView(bytes.data + pos, h.size), &t) == PerfProblem::kNone) {
        times->push_back(t);
      }
      pos += h.size;
    }
    return from + off;
  }
  return std::nullopt;
}

std::optional<TraceTimeSpan> PerfDataReader::TimeSpanFrom(double fraction) const {
  // Records are not in time order, and their boundaries are not marked: a record boundary near
  // the middle is found by looking for a long chain of sound records (RangesUnfit then checks
  // that the earlier range's scan met a record there), the first and last times by the same
  // look near both ends.
  if (data_end_ - data_begin_ < (uint64_t{1} << 20)) return std::nullopt;
  if (!(fraction > 0 && fraction < 1)) return std::nullopt;
  // One buffer for every look, in huge pages: buffers of their own each (zeroed, 4 KiB pages
  // touched for the first time) cost a 3 M-event perf.data's look 7-9 ms on this VM, and one
  // whose rounds are longer than the look (256 CPUs) 16 ms. Kept for the next look (the split
  // plan asks again from earlier in the file: its huge page was touched for the first time
  // twice, 0.4-5 ms each here) until a read begins.
  std::lock_guard lock(scan_mu_);
  uint8_t* buf = ScanBuffer();
  if (buf == nullptr) return std::nullopt;
  TraceTimeSpan span;
  span.data_bytes = data_end_ - data_begin_;
  if (!ends_.has_value()) {
    Ends ends;
    if (!BoundaryNear(data_begin_, &ends.first_ts, buf).has_value() ||
        !BoundaryNear(data_end_ - std::min<uint64_t>(data_end_ - data_begin_, 1 << 19),
                      &ends.last_ts, buf)
             .has_value()) {
      return std::nullopt;
    }
    ends_ = ends;
  }
  span.first_ts = ends_->first_ts;
  const uint64_t from =
      data_begin_ + static_cast<uint64_t>(static_cast<double>(data_end_ - data_begin_) * fraction);
  uint64_t chain_ts = 0;  // (the round's times below are what the plan uses)
  const std::optional<uint64_t> middle = BoundaryNear(from, &chain_ts, buf);
  if (!middle.has_value()) return std::nullopt;
  // Cut where a round begins: the records before it reach past the largest time met in the
  // round it ends (the drains before the middle, not looked at, came earlier) by about the time
  // of a round, which the cut must lie beyond. With as many rings drained a round as a busy
  // many-CPU machine has, a round is tens of MiB and that time a good part of the file's.
  //
  // The walk for the marks reads up to marks_look_bytes. In a many-CPU machine's file whose looks
  // from the start (SpanFromStart) see rounds of twice that or longer (a round drains the rings
  // in CPU order: the looks meeting a lower CPU than the one before count the round boundaries
  // they pass), it would find none, and the plan is that of the looks without it: a 256-CPU
  // file's first 27 ms before its two threads start were 9 ms at 2 CPUs, most of the difference
  // the 64 MiB read for nothing (0.232 -> 0.216 s a report).
  std::optional<TraceTimeSpan> from_start;
  bool looked = false;
  if (options_.min_interleave_from_start > 0 && nr_cpus_ >= options_.min_interleave_from_start) {
    from_start = SpanFromStart(buf);
    looked = true;
    if (from_start.has_value() && look_wraps_ >= 0 &&
        (data_end_ - data_begin_) / static_cast<uint64_t>(look_wraps_ + 1) >=
            2 * options_.marks_look_bytes) {
      return from_start;
    }
  }
  uint64_t round_start = 0, before = 0, between = 0;
  bool unreadable = false;
  if (!RoundsAfter(*middle, &round_start, &before, &between, buf, &unreadable)) {
    if (unreadable) return std::nullopt;
    return looked ? from_start : SpanFromStart(buf);
  }
  if (before == 0) return std::nullopt;
  span.split_position = round_start;
  span.middle_ts = before;
  span.late_ns = between > before ? between - before : 0;
  span.last_ts = ends_->last_ts;  // about the end: within the last half MiB of records
  return span;
}

bool PerfDataReader::RoundsAfter(uint64_t from, uint64_t* after_first, uint64_t* max_before_first,
                                 uint64_t* max_between, uint8_t* buf, bool* unreadable) const {
  *unreadable = true;
  const uint64_t limit = options_.marks_look_bytes;
  size_t buf_len = 0;
  uint64_t buf_at = 0;
  uint64_t pos = from;
  int marks = 0;
  uint64_t max_time = 0;
  *max_before_first = *max_between = 0;
  const uint64_t end = std::min(data_end_, from + limit);
  while (pos + sizeof(perf::EventHeader) <= end) {
    if (buf_len == 0 || pos + kMaxRecordBytes > buf_at + buf_len) {
      buf_len = PreadUpTo(fd_.get(), buf,
                          std::min<uint64_t>(kScanChunk + kMaxRecordBytes, data_end_ - pos), pos);
      if (buf_len < sizeof(perf::EventHeader)) return false;
      buf_at = pos;
    }
    const uint8_t* at = buf + (pos - buf_at);
    perf::EventHeader h;
    std::memcpy(&h, at, sizeof(h));
    if (h.size < sizeof(h) || pos + h.size > buf_at + buf_len ||
        h.type == perf::kRecordAuxtrace) {
      return false;
    }
    if (h.type == perf::kRecordSample) {
      uint64_t time = 0;
      if (parser_.SampleTime(ByteView(at, h.size), &time) == PerfProblem::kNone) {
        max_time = std::max(max_time, time);
      }
    } else if (h.type == perf::kRecordFinishedRound) {
      if (marks++ == 0) {
        *after_first = pos + h.size;
        *max_before_first = max_time;
        max_time = 0;
      } else {
        *max_between = max_time;
        return true;
      }
    }
    pos += h.size;
  }
  *unreadable = false;  // fewer than two marks in the bytes looked at
  return false;
}

std::optional<TraceTimeSpan> PerfDataReader::SpanFromStart(uint8_t* buf) const {
  std::vector<uint64_t> times;
  std::vector<uint64_t> look_spans;  // the time each look's records span
  std::vector<int64_t> look_cpus;    // the CPU of each look's first event
  const uint64_t bytes = data_end_ - data_begin_;
  for (int i = 0; i < kTimeLooks; ++i) {
    const uint64_t from = data_begin_ + bytes / kTimeLooks * static_cast<uint64_t>(i);
    uint64_t first = 0;  // the look's earliest time (a chain found holds 128 samples or more)
    const size_t before = times.size();
    int64_t cpu = -1;
    if (!BoundaryNear(from, &first, buf, &times, &cpu).has_value()) return std::nullopt;
    look_spans.push_back(
        *std::max_element(times.begin() + static_cast<ptrdiff_t>(before), times.end()) - first);
    look_cpus.push_back(cpu);
  }
  // A round drains the CPUs' rings in the order of their numbers: each look after one of a
  // higher CPU lies in a later round.
  look_wraps_ = 0;
  for (size_t i = 1; i < look_cpus.size(); ++i) {
    look_wraps_ += look_cpus[i] < look_cpus[i - 1] ? 1 : 0;
  }
  std::sort(times.begin(), times.end());
  const uint64_t first_ts = std::min(ends_->first_ts, times.front());
  const uint64_t last_ts = std::max(ends_->last_ts, times.back());
  if (last_ts <= first_ts) return std::nullopt;
  // How many CPUs' drains a round interleaves: a look (~kLookBytes) inside one CPU's drain
  // spans its share of the file's time times the CPUs. (A look across two drains spans about
  // all of it, so with drains shorter than a look the estimate runs high; the median of the
  // looks keeps a few such looks from deciding.) Both ranges scan every record from
  // the start, each merging about half, which pays where the merge of many runs costs more
  // than the scan: 64 and 256 CPUs read faster this way, 16 slower (3 M events; bench/README.md,
  // "Fifth session of 12-07").
  std::nth_element(look_spans.begin(), look_spans.begin() + kTimeLooks / 2, look_spans.end());
  const double interleave = static_cast<double>(look_spans[kTimeLooks / 2]) /
                            static_cast<double>(last_ts - first_ts) * static_cast<double>(bytes) /
                            static_cast<double>(kLookBytes);
  if (interleave < options_.min_interleave_from_start) return std::nullopt;
  TraceTimeSpan span;
  span.data_bytes = bytes;
  span.first_ts = first_ts;
  span.last_ts = last_ts;
  span.middle_ts = times[times.size() / 2];
  span.split_position = data_begin_;
  span.starts_anywhere = true;
  return span;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> OpenPerfData(const std::string& path) {
  return PerfDataReader::Open(path, PerfReadOptions());
}

absl::StatusOr<std::unique_ptr<TraceReader>> OpenPerfData(const std::string& path,
                                                          const PerfReadOptions& options) {
  return PerfDataReader::Open(path, options);
}

}  // namespace iotrace
