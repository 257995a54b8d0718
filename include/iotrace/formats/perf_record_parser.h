// Decodes perf records in place (from a perf.data file or raw ring bytes): finds each record's
// attr through its sample id (perf's id_pos / is_pos rules), then reads tracepoint samples,
// PERF_RECORD_LOST / LOST_SAMPLES and COMM with offsets computed once per attr, so that a
// sample costs a few bounds-checked loads and no allocation.
#ifndef IOTRACE_FORMATS_PERF_RECORD_PARSER_H_
#define IOTRACE_FORMATS_PERF_RECORD_PARSER_H_

#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {

// One attr of a recording and the event ids that belong to it.
struct PerfAttrInfo {
  perf_event_attr attr{};
  std::vector<uint64_t> ids;
};

// A decoded record; views point into the bytes given to Parse.
struct PerfRecord {
  enum class Kind : uint8_t { kOther, kEvent, kLoss, kComm, kRoundEnd };
  Kind kind = Kind::kOther;
  bool has_time = false;  // events always have one; loss records when sample_id_all says so
  uint64_t time = 0;
  RawEvent event;        // kEvent
  LossRecord loss;       // kLoss
  int32_t comm_pid = 0;  // kComm
  int32_t comm_tid = 0;
  std::string_view comm;
};

// Why a record was not decoded; counted by the caller, never fatal.
enum class PerfProblem : uint8_t {
  kNone,
  kUnknownSampleId,      // the sample's id belongs to no attr
  kNonTracepointSample,  // a sample from a non-tracepoint attr (cycles, dummy, ...)
  kSampleWithoutTime,
  kSampleWithoutRaw,
  kShortSample,       // shorter than its attr's sample_type says
  kRawPastRecord,     // the RAW size runs past the end of the record
  kRawTooShort,       // RAW data shorter than the 8-byte common header
  kShortRecord,       // a LOST / LOST_SAMPLES / COMM record too short for its body
  kCompressedRecord,  // PERF_RECORD_COMPRESSED (perf record -z): not decoded
  kCount,
};
// "unknown_sample_id", "raw_past_record", ...: the names ReadStats shows.
const char* PerfProblemName(PerfProblem problem);

class PerfRecordParser {
 public:
  PerfRecordParser() = default;  // knows no attr; Create() builds a usable one
  // Fails when the attrs cannot be told apart (several attrs whose samples carry no id, ids at
  // different places, an id shared by two attrs).
  static absl::StatusOr<PerfRecordParser> Create(std::vector<PerfAttrInfo> attrs);

  // Decodes one whole record (`record.size` must equal its header's size, >= 8).
  PerfProblem Parse(ByteView record, PerfRecord* out) const;
  // For a PERF_RECORD_SAMPLE: the checks of Parse, but only the time is read. kNone (and *time
  // set) exactly when Parse would decode the record as an event with that time. What a reader
  // needs to order records it decodes later.
  PerfProblem SampleTime(ByteView record, uint64_t* time) const;
  // Decodes a PERF_RECORD_SAMPLE that SampleTime accepted before (the same bytes): Parse
  // without the checks that cannot fail again.
  void ParseCheckedSample(ByteView record, PerfRecord* out) const;

  size_t attr_count() const { return layouts_.size(); }
  const perf_event_attr& attr(size_t i) const { return attrs_[i].attr; }
  const std::vector<uint64_t>& ids(size_t i) const { return attrs_[i].ids; }
  // Index of the attr that owns `id`, or -1.
  int AttrOfId(uint64_t id) const;

 private:
  static constexpr uint32_t kAbsent = 0xffffffff;

  // Offsets from the start of a record, computed once from the attr.
  struct Layout {
    uint64_t sample_type = 0;
    uint64_t read_format = 0;
    int32_t tracepoint_id = -1;  // attr.config for PERF_TYPE_TRACEPOINT, else -1
    bool usable = false;         // tracepoint with TIME and RAW
    PerfProblem unusable_reason = PerfProblem::kNone;
    bool variable = false;  // READ group or CALLCHAIN before RAW: walk from read_off
    uint32_t tid_off = kAbsent;
    uint32_t time_off = kAbsent;
    uint32_t cpu_off = kAbsent;
    uint32_t read_off = 0;  // start of READ / CALLCHAIN / RAW
    uint32_t raw_off = 0;   // RAW's u32 size, when !variable
    // sample_id trailer of non-sample records (sample_id_all), offsets from its start.
    bool sample_id_all = false;
    uint32_t trailer_size = 0;
    uint32_t trailer_tid = kAbsent;
    uint32_t trailer_time = kAbsent;
    uint32_t trailer_cpu = kAbsent;
  };

  const Layout* SampleLayout(ByteView record) const;
  const Layout* TrailerLayout(ByteView record) const;
  PerfProblem ParseSample(ByteView record, PerfRecord* out) const;
  // The checks every sample passes before its fields are read: its layout and RAW's place.
  PerfProblem CheckSample(ByteView record, const Layout** layout, uint64_t* raw_off,
                          uint32_t* raw_size) const;
  // Reads the fields of a sample that passed CheckSample.
  void FillSample(ByteView record, const Layout& layout, uint64_t raw_off, uint32_t raw_size,
                  PerfRecord* out) const;
  PerfProblem ParseOther(uint32_t type, ByteView record, PerfRecord* out) const;
  // Offset of RAW's size word after a group READ / CALLCHAIN, or 0 when the record is short.
  static uint64_t VariableRawOffset(const Layout& layout, ByteView record);
  // Reads time/cpu from the trailer of a non-sample record whose body takes `body` bytes.
  void ReadTrailer(ByteView record, uint32_t body, const Layout* layout, PerfRecord* out,
                   int32_t* cpu) const;

  std::vector<PerfAttrInfo> attrs_;
  std::vector<Layout> layouts_;
  // Set when every usable layout has the fixed fields at the same offsets and RAW at a fixed
  // place: ParseCheckedSample reads with it instead of looking the id up again.
  bool has_checked_layout_ = false;
  Layout checked_layout_;
  // With a checked layout: samples at least this long hold the id and RAW's size word, so that
  // SampleTime looks them over with plain loads (0: no such shortcut).
  uint32_t checked_min_size_ = 0;
  int id_pos_ = -1;       // u64 index of the id in samples (after the header)
  int trailer_pos_ = -1;  // u64 index from the end of the id in trailers
  bool sample_id_all_ = false;
  // id -> attr index: a dense table when the ids are close together (the kernel hands them
  // out from one counter), else a hash map.
  uint64_t dense_base_ = 0;
  std::vector<int32_t> dense_;
  absl::flat_hash_map<uint64_t, int32_t> sparse_;
};

// Inline: this is the per-event path of every reader.

inline int PerfRecordParser::AttrOfId(uint64_t id) const {
  if (!dense_.empty()) {
    uint64_t i = id - dense_base_;
    return i < dense_.size() ? dense_[i] : -1;
  }
  auto it = sparse_.find(id);
  return it == sparse_.end() ? -1 : it->second;
}

inline const PerfRecordParser::Layout* PerfRecordParser::SampleLayout(ByteView record) const {
  if (layouts_.size() == 1) return &layouts_[0];
  uint64_t id;
  if (!LoadAt(record, sizeof(perf::EventHeader) + 8 * size_t(id_pos_), &id)) return nullptr;
  int a = AttrOfId(id);
  return a < 0 ? nullptr : &layouts_[a];
}

inline PerfProblem PerfRecordParser::CheckSample(ByteView record, const Layout** layout,
                                                 uint64_t* raw_off, uint32_t* raw_size) const {
  const Layout* l = SampleLayout(record);
  if (l == nullptr) return PerfProblem::kUnknownSampleId;
  if (!l->usable) return l->unusable_reason;
  uint64_t off = l->raw_off;
  if (l->variable) {
    off = VariableRawOffset(*l, record);
    if (off == 0) return PerfProblem::kShortSample;
  }
  uint32_t size;
  if (!LoadAt(record, off, &size)) return PerfProblem::kShortSample;
  if (size > record.size - off - 4) return PerfProblem::kRawPastRecord;
  if (size < 8) return PerfProblem::kRawTooShort;
  *layout = l;
  *raw_off = off;
  *raw_size = size;
  return PerfProblem::kNone;
}

inline PerfProblem PerfRecordParser::SampleTime(ByteView record, uint64_t* time) const {
  // Nearly every sample: CheckSample's checks with the checked layout's offsets and no bounds
  // to check on the way. Whatever fails one of them goes through CheckSample, which says why.
  if (checked_min_size_ != 0 && record.size >= checked_min_size_) {
    int a = 0;
    if (layouts_.size() != 1) {
      uint64_t id;
      std::memcpy(&id, record.data + sizeof(perf::EventHeader) + 8 * size_t(id_pos_), 8);
      a = AttrOfId(id);
    }
    if (a >= 0 && layouts_[a].usable) {
      const uint32_t off = checked_layout_.raw_off;
      uint32_t size;
      std::memcpy(&size, record.data + off, 4);
      if (size <= record.size - off - 4 && size >= 8) {
        std::memcpy(time, record.data + checked_layout_.time_off, 8);
        return PerfProblem::kNone;
      }
    }
  }
  // Initialized only for GCC's -Wmaybe-uninitialized: CheckSample sets them when it says kNone.
  const Layout* l = nullptr;
  uint64_t raw_off = 0;
  uint32_t raw_size = 0;
  const PerfProblem p = CheckSample(record, &l, &raw_off, &raw_size);
  if (p != PerfProblem::kNone) return p;
  std::memcpy(time, record.data + l->time_off, 8);  // before raw_off: in bounds
  return PerfProblem::kNone;
}

inline PerfProblem PerfRecordParser::ParseSample(ByteView record, PerfRecord* out) const {
  const Layout* l = nullptr;  // set by CheckSample when it says kNone (see SampleTime)
  uint64_t raw_off = 0;
  uint32_t raw_size = 0;
  const PerfProblem p = CheckSample(record, &l, &raw_off, &raw_size);
  if (p != PerfProblem::kNone) return p;
  FillSample(record, *l, raw_off, raw_size, out);
  return PerfProblem::kNone;
}

inline void PerfRecordParser::ParseCheckedSample(ByteView record, PerfRecord* out) const {
  const Layout* l;
  if (has_checked_layout_) {
    l = &checked_layout_;
  } else if (layouts_.size() == 1) {
    l = &layouts_[0];
  } else {
    uint64_t id;
    std::memcpy(&id, record.data + sizeof(perf::EventHeader) + 8 * size_t(id_pos_), 8);
    l = &layouts_[AttrOfId(id)];
  }
  const uint64_t raw_off = l->variable ? VariableRawOffset(*l, record) : l->raw_off;
  uint32_t raw_size;
  std::memcpy(&raw_size, record.data + raw_off, 4);
  FillSample(record, *l, raw_off, raw_size, out);
}

inline void PerfRecordParser::FillSample(ByteView record, const Layout& layout, uint64_t raw_off,
                                         uint32_t raw_size, PerfRecord* out) const {
  const Layout* l = &layout;
  // Every fixed field lies before raw_off, which is in bounds: plain loads from here on.
  const uint8_t* r = record.data;
  RawEvent& ev = out->event;
  ev.payload = ByteView(r + raw_off + 4, raw_size);
  std::memcpy(&ev.ts, r + l->time_off, 8);
  std::memcpy(&ev.type, ev.payload.data, 2);
  if (l->tid_off != kAbsent) {
    uint32_t pt[2];
    std::memcpy(pt, r + l->tid_off, 8);
    ev.pid = static_cast<int32_t>(pt[0]);
    ev.tid = static_cast<int32_t>(pt[1]);
  } else {
    std::memcpy(&ev.pid, ev.payload.data + 4, 4);  // common_pid
    ev.tid = ev.pid;
  }
  if (l->cpu_off != kAbsent) {
    std::memcpy(&ev.cpu, r + l->cpu_off, 4);
  } else {
    ev.cpu = 0;
  }
  out->kind = PerfRecord::Kind::kEvent;
  out->has_time = true;
  out->time = ev.ts;
}

inline PerfProblem PerfRecordParser::Parse(ByteView record, PerfRecord* out) const {
  perf::EventHeader h;
  out->kind = PerfRecord::Kind::kOther;
  out->has_time = false;
  if (!LoadAt(record, 0, &h)) return PerfProblem::kShortRecord;
  if (h.type == perf::kRecordSample) return ParseSample(record, out);
  return ParseOther(h.type, record, out);
}

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_PERF_RECORD_PARSER_H_
