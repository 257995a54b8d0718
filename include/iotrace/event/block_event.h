// Block-layer tracepoint records decoded into one small fixed struct (BlockEvent), with field
// offsets resolved by name once from the file's event formats (BlockDecoder).
#ifndef IOTRACE_EVENT_BLOCK_EVENT_H_
#define IOTRACE_EVENT_BLOCK_EVENT_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "iotrace/event/block_dev.h"
#include "iotrace/event/event_format.h"
#include "iotrace/event/raw_event.h"

namespace iotrace {

// The block tracepoints iotrace understands (include/trace/events/block.h).
enum class BlockEventKind : uint8_t {
  kInsert,         // block_rq_insert: request enters the I/O scheduler / dispatch list
  kIssue,          // block_rq_issue: request handed to the driver
  kComplete,       // block_rq_complete: (part of) a request finished
  kRequeue,        // block_rq_requeue: driver gave the request back; it will be issued again
  kMerge,          // block_rq_merge: request merged into another one; it disappears
  kBioQueue,       // block_bio_queue: a bio entered the block layer
  kBioFrontMerge,  // block_bio_frontmerge: a bio merged in front of a request (sector moves)
  kBioBackMerge,   // block_bio_backmerge: a bio appended to a request
  kIoStart,        // block_io_start: I/O accounting starts
  kIoDone,         // block_io_done: I/O accounting ends
};
inline constexpr int kBlockEventKindCount = 10;
// "block_rq_insert", ... (the tracepoint name).
std::string_view BlockEventKindName(BlockEventKind kind);

// The operation of a request, from the op letter of rwbs.
enum class BlockOp : uint8_t { kRead, kWrite, kFlush, kDiscard, kWriteZeroes, kOther };
inline constexpr int kBlockOpCount = 6;
// "read", "write", "flush", "discard", "write_zeroes", "other"
std::string_view BlockOpName(BlockOp op);
// Parses "read" ... "other"; false when unknown.
bool ParseBlockOp(std::string_view name, BlockOp* op);

// Request flags carried in rwbs.
enum BlockFlag : uint8_t {
  kBlockFlagPreflush = 1 << 0,   // leading F
  kBlockFlagFua = 1 << 1,        // F after the op
  kBlockFlagReadahead = 1 << 2,  // A
  kBlockFlagSync = 1 << 3,       // S
  kBlockFlagMeta = 1 << 4,       // M
};

// Parses an rwbs string as blk_fill_rwbs (kernel/trace/blktrace.c) writes it: an optional
// leading 'F' (REQ_PREFLUSH), the op ("W", "R", "D", "DE" secure erase, "F" flush, "N" other,
// "WZ" write zeroes, "Z?" zone ops), then 'F' (FUA), 'A' (readahead), 'S' (sync), 'M' (meta);
// later kernels append atomic-write letters, which are ignored. Stops at NUL or the end of the
// view. Write-zeroes, zone ops and "N" are kOther. Returns false when no op letter is found
// (*op is then kOther).
bool ParseRwbs(std::string_view rwbs, BlockOp* op, uint8_t* flags);

inline constexpr size_t kCommSize = 16;  // TASK_COMM_LEN

// A decoded block event. Fields the event's format lacks are zero (bytes: nr_sector * 512).
struct BlockEvent {
  uint64_t ts = 0;
  uint64_t sector = 0;
  uint32_t dev = 0;  // kernel dev_t: MAJOR << 20 | MINOR (block_dev.h)
  uint32_t nr_sector = 0;
  uint32_t bytes = 0;
  int32_t error = 0;
  int32_t pid = -1;  // the process the reader names (tgid when known), else common_pid
  uint32_t cpu = 0;
  BlockEventKind kind = BlockEventKind::kIssue;
  BlockOp op = BlockOp::kOther;
  uint8_t flags = 0;  // BlockFlag bits
  // The request's I/O priority (class << 13 | hints << 3 | level) where the event carries it
  // (insert and issue since Linux 6.11), else 0.
  uint16_t ioprio = 0;
  char comm[kCommSize] = {};  // always NUL-terminated; empty when the event has no comm

  static constexpr uint64_t kFlushCompleteSector = ~uint64_t{0};
  // A flush request: op flush, or an empty preflush, or a completion at sector -1
  // (docs/kernel-notes.md: flush issue "FF" sector 0 + 0, complete at sector 2^64-1).
  bool IsFlush() const {
    return op == BlockOp::kFlush ||
           (nr_sector == 0 && ((flags & kBlockFlagPreflush) != 0 || sector == kFlushCompleteSector));
  }
};

// An ioprio as its class and level in one byte (class << 3 | level), without the hints: what
// `--by ioprio` tells apart.
inline uint8_t IoprioClassLevel(uint16_t ioprio) {
  return static_cast<uint8_t>(((ioprio >> 13) & 7) << 3 | (ioprio & 7));
}

// Receives every decoded block event (for consumers other than the matcher, e.g. a dump).
class BlockEventSink {
 public:
  virtual ~BlockEventSink() = default;
  virtual void OnBlockEvent(const BlockEvent& event) = 0;
};

// Why a record was not decoded.
enum class DecodeProblem : uint8_t {
  kShortRecord,      // payload ends before a field the event needs
  kFormatUnusable,   // the event's format lacks a needed field (see format_problems())
  kUnknownOp,        // rwbs without an op letter (decoded as op "other")
};
inline constexpr int kDecodeProblemCount = 3;
std::string_view DecodeProblemName(DecodeProblem problem);

struct DecodeStats {  // uint64_t counters only (AddCounters)
  std::array<uint64_t, kBlockEventKindCount> decoded{};   // per kind
  std::array<uint64_t, kBlockEventKindCount> rejected{};  // per kind, any problem but kUnknownOp
  std::array<uint64_t, kDecodeProblemCount> problems{};
  uint64_t other_events = 0;  // records of events that are not block events we use
};

// Decodes block tracepoint records. Built once from the file's formats: every field is looked
// up by name once and kept as {offset, size}; decoding a record is a table lookup by format id
// and a few bounds-checked loads, with no allocation.
class BlockDecoder {
 public:
  explicit BlockDecoder(const std::vector<EventFormat>& formats);

  // True and *out filled when `raw` is a block event we use; false otherwise (counted).
  // Inline: the common case (this kernel's field sizes, a whole record) is a handful of
  // fixed-size loads; everything else goes through DecodeSlow.
  inline bool Decode(const RawEvent& raw, BlockEvent* out);

  // Whether BlockEvent::comm is filled (default true). The report turns it off when no --comm
  // filter or block event sink needs it: copying and terminating the name costs more than all
  // the other fields together. Without it, comm keeps whatever it held (the builder's is empty).
  void set_decode_comm(bool decode) { decode_comm_ = decode; }

  // True when the file carries a usable format for `kind`.
  bool Has(BlockEventKind kind) const { return has_[static_cast<int>(kind)]; }
  // True when the format of `kind` has the ioprio field (6.11+ insert and issue).
  bool HasIoprio(BlockEventKind kind) const { return has_ioprio_[static_cast<int>(kind)]; }
  // The format id of `kind`, -1 when absent.
  int32_t FormatId(BlockEventKind kind) const { return ids_[static_cast<int>(kind)]; }
  // One line per format that cannot be used, e.g. "block:block_rq_issue: no field 'dev'".
  const std::vector<std::string>& format_problems() const { return format_problems_; }
  const DecodeStats& stats() const { return stats_; }
  DecodeStats* mutable_stats() { return &stats_; }

 private:
  struct Field {
    uint32_t offset = 0;
    uint32_t size = 0;  // 0 = absent
  };
  struct Layout {
    BlockEventKind kind = BlockEventKind::kIssue;
    bool usable = false;
    // The fast path applies: dev u32, sector u64, nr_sector u32, rwbs char[8] (char[10] since
    // Linux 6.11), bytes / error u32 or absent, ioprio u16 or absent, comm char[16] or absent
    // (the layouts of include/trace/events/block.h), and a record that holds every field
    // (>= full_size).
    bool fast = false;
    uint32_t required_size = 0;  // the payload must hold every required field
    uint32_t full_size = 0;      // ... and every field, optional ones included
    Field dev, sector, nr_sector, rwbs, bytes, comm, error, common_pid, ioprio;
  };
  // rwbs strings seen so far, keyed by their bytes up to the NUL (a recording has a handful:
  // "R", "WS", "FF", ...), so that ParseRwbs runs once per distinct string.
  struct RwbsCacheEntry {
    // No key has a zero byte before a non-zero one (they stop at the NUL): this one marks an
    // empty entry.
    uint64_t key = 0xff00;
    bool found = false;
    BlockOp op = BlockOp::kOther;
    uint8_t flags = 0;
  };
  static constexpr int kRwbsCacheBits = 4;

  bool DecodeSlow(const RawEvent& raw, BlockEvent* out);
  // Parses and caches the rwbs whose bytes up to the NUL are `key` (zero-padded).
  const RwbsCacheEntry& RwbsMiss(RwbsCacheEntry* entry, uint64_t key);

  std::vector<Layout> layouts_;      // a few entries, one per block format in the file
  std::vector<int16_t> slot_by_id_;  // format id -> index into layouts_, -1 when not ours
  std::array<bool, kBlockEventKindCount> has_{};
  std::array<bool, kBlockEventKindCount> has_ioprio_{};
  std::array<int32_t, kBlockEventKindCount> ids_{};
  std::vector<std::string> format_problems_;
  DecodeStats stats_;
  bool decode_comm_ = true;
  std::array<RwbsCacheEntry, 1 << kRwbsCacheBits> rwbs_cache_{};
};

inline bool BlockDecoder::Decode(const RawEvent& raw, BlockEvent* out) {
  const int slot = raw.type < slot_by_id_.size() ? slot_by_id_[raw.type] : -1;
  if (slot < 0) {
    ++stats_.other_events;
    return false;
  }
  const Layout& l = layouts_[slot];
  if (!l.fast || raw.payload.size < l.full_size || raw.pid < 0) return DecodeSlow(raw, out);
  // Every field lies inside the payload (full_size): plain fixed-size loads.
  const uint8_t* p = raw.payload.data;
  uint32_t dev, nr_sector;
  uint64_t sector, rwbs;
  std::memcpy(&dev, p + l.dev.offset, 4);
  std::memcpy(&sector, p + l.sector.offset, 8);
  std::memcpy(&nr_sector, p + l.nr_sector.offset, 4);
  std::memcpy(&rwbs, p + l.rwbs.offset, 8);
  // The bytes after rwbs's NUL may be stale ring contents: the key keeps those before it. The
  // lowest byte flagged by the zero-byte test is exact (higher ones may be false positives).
  const uint64_t zero = (rwbs - 0x0101010101010101ULL) & ~rwbs & 0x8080808080808080ULL;
  // No NUL in the first 8 bytes of a longer field: a string this cache does not hold.
  if (zero == 0 && l.rwbs.size != 8) return DecodeSlow(raw, out);
  const uint64_t key = zero == 0 ? rwbs : rwbs & ((zero & (~zero + 1)) - 1);
  out->ts = raw.ts;
  out->cpu = raw.cpu;
  out->kind = l.kind;
  out->dev = dev;
  out->sector = sector;
  out->nr_sector = nr_sector;
  if (l.bytes.size != 0) {
    std::memcpy(&out->bytes, p + l.bytes.offset, 4);
  } else {
    out->bytes = nr_sector << 9;
  }
  if (l.error.size != 0) {
    std::memcpy(&out->error, p + l.error.offset, 4);
  } else {
    out->error = 0;
  }
  if (l.ioprio.size != 0) {
    std::memcpy(&out->ioprio, p + l.ioprio.offset, 2);
  } else {
    out->ioprio = 0;
  }
  out->pid = raw.pid;
  if (decode_comm_) {
    if (l.comm.size != 0) {
      std::memcpy(out->comm, p + l.comm.offset, kCommSize);
      out->comm[kCommSize - 1] = '\0';
    } else {
      out->comm[0] = '\0';
    }
  }
  RwbsCacheEntry* e = &rwbs_cache_[(key * 0x9e3779b97f4a7c15ULL) >> (64 - kRwbsCacheBits)];
  const RwbsCacheEntry& r = (e->key == key) ? *e : RwbsMiss(e, key);
  out->op = r.op;
  out->flags = r.flags;
  if (!r.found) ++stats_.problems[static_cast<int>(DecodeProblem::kUnknownOp)];
  ++stats_.decoded[static_cast<int>(l.kind)];
  return true;
}

}  // namespace iotrace

#endif  // IOTRACE_EVENT_BLOCK_EVENT_H_
