#include "iotrace/event/block_event.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "iotrace/base/bytes.h"

namespace iotrace {
namespace {

constexpr std::string_view kKindNames[kBlockEventKindCount] = {
    "block_rq_insert",      "block_rq_issue",      "block_rq_complete", "block_rq_requeue",
    "block_rq_merge",       "block_bio_queue",     "block_bio_frontmerge",
    "block_bio_backmerge",  "block_io_start",      "block_io_done",
};

constexpr std::string_view kOpNames[kBlockOpCount] = {"read",    "write",        "flush",
                                                       "discard", "write_zeroes", "other"};

constexpr std::string_view kProblemNames[kDecodeProblemCount] = {
    "short_record", "format_lacks_field", "rwbs_without_op"};

bool IsOpLetter(char c) {
  return c == 'W' || c == 'R' || c == 'D' || c == 'F' || c == 'N' || c == 'Z';
}

}  // namespace

std::string_view BlockEventKindName(BlockEventKind kind) {
  return kKindNames[static_cast<int>(kind)];
}

std::string_view BlockOpName(BlockOp op) { return kOpNames[static_cast<int>(op)]; }

bool ParseBlockOp(std::string_view name, BlockOp* op) {
  for (int i = 0; i < kBlockOpCount; ++i) {
    if (kOpNames[i] == name) {
      *op = static_cast<BlockOp>(i);
      return true;
    }
  }
  return false;
}

std::string_view DecodeProblemName(DecodeProblem problem) {
  return kProblemNames[static_cast<int>(problem)];
}

bool ParseRwbs(std::string_view rwbs, BlockOp* op, uint8_t* flags) {
  size_t len = 0;
  while (len < rwbs.size() && rwbs[len] != '\0') ++len;
  const char* s = rwbs.data();
  *flags = 0;
  *op = BlockOp::kOther;
  size_t i = 0;
  // blk_fill_rwbs writes 'F' for REQ_PREFLUSH before the op letter, so a leading F followed by
  // another op letter is the preflush flag ("FWS", "FF"); an F on its own is the flush op.
  if (len >= 2 && s[0] == 'F' && IsOpLetter(s[1])) {
    *flags |= kBlockFlagPreflush;
    i = 1;
  }
  if (i >= len) return false;
  bool found = true;
  switch (s[i]) {
    case 'W':
      if (i + 1 < len && s[i + 1] == 'Z') {  // REQ_OP_WRITE_ZEROES
        *op = BlockOp::kWriteZeroes;
        i += 2;
      } else {
        *op = BlockOp::kWrite;
        i += 1;
      }
      break;
    case 'R':
      *op = BlockOp::kRead;
      i += 1;
      break;
    case 'D':  // "D" discard, "DE" secure erase
      *op = BlockOp::kDiscard;
      i += (i + 1 < len && s[i + 1] == 'E') ? 2 : 1;
      break;
    case 'F':
      *op = BlockOp::kFlush;
      i += 1;
      break;
    case 'N':
      *op = BlockOp::kOther;
      i += 1;
      break;
    case 'Z': {  // zone ops: ZA, ZR, ZRA, ZF, ZO, ZC
      *op = BlockOp::kOther;
      i += 1;
      if (i < len && std::strchr("ARFOC", s[i]) != nullptr) {
        bool reset = s[i] == 'R';
        i += 1;
        if (reset && i < len && s[i] == 'A') i += 1;
      }
      break;
    }
    default:
      found = false;
      break;
  }
  for (; i < len; ++i) {
    switch (s[i]) {
      case 'F': *flags |= kBlockFlagFua; break;
      case 'A': *flags |= kBlockFlagReadahead; break;
      case 'S': *flags |= kBlockFlagSync; break;
      case 'M': *flags |= kBlockFlagMeta; break;
      default: break;  // atomic ('a' / 'U') and letters of future kernels
    }
  }
  return found;
}

BlockDecoder::BlockDecoder(const std::vector<EventFormat>& formats) {
  ids_.fill(-1);
  for (const EventFormat& format : formats) {
    if (format.system != "block") continue;
    int kind_index = -1;
    for (int k = 0; k < kBlockEventKindCount; ++k) {
      if (format.name == kKindNames[k]) kind_index = k;
    }
    if (kind_index < 0) continue;
    if (format.id > 0xffff) {
      format_problems_.push_back(absl::StrFormat(
          "%s: format id %u does not fit common_type (u16)", format.FullName(), format.id));
      continue;
    }
    Layout layout;
    layout.kind = static_cast<BlockEventKind>(kind_index);
    std::vector<std::string> missing;
    auto field = [&](const char* name, bool required, bool numeric, Field* out) {
      const FieldInfo* f = format.FindField(name);
      bool ok = f != nullptr && !f->is_dynamic && f->size > 0;
      if (ok && numeric && f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8) ok = false;
      if (!ok) {
        if (required) {
          missing.push_back(f == nullptr ? absl::StrFormat("no field '%s'", name)
                                         : absl::StrFormat("field '%s' has an unusable layout "
                                                           "(size %u)", name, f->size));
        }
        return;
      }
      out->offset = f->offset;
      out->size = f->size;
      if (required && f->offset + f->size > layout.required_size) {
        layout.required_size = f->offset + f->size;
      }
    };
    field("dev", true, true, &layout.dev);
    field("sector", true, true, &layout.sector);
    field("nr_sector", true, true, &layout.nr_sector);
    field("rwbs", true, false, &layout.rwbs);
    field("bytes", false, true, &layout.bytes);
    field("comm", false, false, &layout.comm);
    field("error", false, true, &layout.error);
    field("common_pid", false, true, &layout.common_pid);
    field("ioprio", false, true, &layout.ioprio);
    layout.usable = missing.empty();
    for (const Field* f : {&layout.dev, &layout.sector, &layout.nr_sector, &layout.rwbs,
                           &layout.bytes, &layout.comm, &layout.error, &layout.common_pid,
                           &layout.ioprio}) {
      if (f->size != 0) layout.full_size = std::max(layout.full_size, f->offset + f->size);
    }
    layout.fast = layout.usable && layout.dev.size == 4 && layout.sector.size == 8 &&
                  layout.nr_sector.size == 4 && layout.rwbs.size >= 8 &&
                  (layout.bytes.size == 0 || layout.bytes.size == 4) &&
                  (layout.error.size == 0 || layout.error.size == 4) &&
                  (layout.ioprio.size == 0 || layout.ioprio.size == 2) &&
                  (layout.comm.size == 0 || layout.comm.size == kCommSize);
    for (const std::string& m : missing) {
      format_problems_.push_back(absl::StrFormat("%s: %s", format.FullName(), m));
    }
    if (layout.usable) {
      has_[kind_index] = true;
      has_ioprio_[kind_index] = layout.ioprio.size != 0;
      ids_[kind_index] = static_cast<int32_t>(format.id);
    }
    layouts_.push_back(layout);
    slot_by_id_.resize(std::max<size_t>(slot_by_id_.size(), format.id + 1), -1);
    slot_by_id_[format.id] = static_cast<int16_t>(layouts_.size() - 1);
  }
}

const BlockDecoder::RwbsCacheEntry& BlockDecoder::RwbsMiss(RwbsCacheEntry* entry, uint64_t key) {
  char text[sizeof(key)];
  std::memcpy(text, &key, sizeof(key));
  entry->key = key;
  entry->found = ParseRwbs(std::string_view(text, sizeof(text)), &entry->op, &entry->flags);
  return *entry;
}

// Any layout and any record: every load bounds-checked, optional fields past the end of a
// short record count as absent. (Decode has already counted events that are not ours.)
bool BlockDecoder::DecodeSlow(const RawEvent& raw, BlockEvent* out) {
  const int slot = slot_by_id_[raw.type];
  const Layout& l = layouts_[slot];
  const int kind = static_cast<int>(l.kind);
  if (!l.usable) {
    ++stats_.problems[static_cast<int>(DecodeProblem::kFormatUnusable)];
    ++stats_.rejected[kind];
    return false;
  }
  const ByteView p = raw.payload;
  if (p.size < l.required_size) {
    ++stats_.problems[static_cast<int>(DecodeProblem::kShortRecord)];
    ++stats_.rejected[kind];
    return false;
  }
  uint64_t dev = 0, sector = 0, nr_sector = 0;
  // The required fields fit (checked above), so these loads cannot fail.
  LoadUnsigned(p, l.dev.offset, l.dev.size, &dev);
  LoadUnsigned(p, l.sector.offset, l.sector.size, &sector);
  LoadUnsigned(p, l.nr_sector.offset, l.nr_sector.size, &nr_sector);
  out->ts = raw.ts;
  out->cpu = raw.cpu;
  out->kind = l.kind;
  out->dev = static_cast<uint32_t>(dev);
  out->sector = sector;
  out->nr_sector = static_cast<uint32_t>(nr_sector);
  // Optional fields: present in the format but past the end of this record count as absent.
  uint64_t v = 0;
  out->bytes = (l.bytes.size != 0 && LoadUnsigned(p, l.bytes.offset, l.bytes.size, &v))
                   ? static_cast<uint32_t>(v)
                   : static_cast<uint32_t>(nr_sector << 9);
  v = 0;
  out->error = (l.error.size != 0 && LoadUnsigned(p, l.error.offset, l.error.size, &v))
                   ? static_cast<int32_t>(static_cast<uint32_t>(v))
                   : 0;
  v = 0;
  out->ioprio = (l.ioprio.size != 0 && LoadUnsigned(p, l.ioprio.offset, l.ioprio.size, &v))
                    ? static_cast<uint16_t>(v)
                    : 0;
  out->pid = raw.pid;
  if (out->pid < 0 && l.common_pid.size != 0 &&
      LoadUnsigned(p, l.common_pid.offset, l.common_pid.size, &v)) {
    out->pid = static_cast<int32_t>(static_cast<uint32_t>(v));
  }
  // Bytes after the name's NUL may be stale (older kernels did not pad task->comm); every user
  // stops at the first NUL, so only the terminator at the end is forced.
  ByteView comm = l.comm.size != 0 ? p.Sub(l.comm.offset, l.comm.size) : ByteView();
  if (!decode_comm_) {
    // Not needed by anyone.
  } else if (comm.size >= kCommSize) {
    std::memcpy(out->comm, comm.data, kCommSize);
    out->comm[kCommSize - 1] = '\0';
  } else {
    if (comm.size != 0) std::memcpy(out->comm, comm.data, comm.size);
    out->comm[comm.size] = '\0';
  }
  ByteView rwbs = p.Sub(l.rwbs.offset, l.rwbs.size);
  if (!ParseRwbs(rwbs.AsString(), &out->op, &out->flags)) {
    ++stats_.problems[static_cast<int>(DecodeProblem::kUnknownOp)];
  }
  ++stats_.decoded[kind];
  return true;
}

}  // namespace iotrace
