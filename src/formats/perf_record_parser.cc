#include "iotrace/formats/perf_record_parser.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "iotrace/formats/perf_data.h"

namespace iotrace {

const char* PerfProblemName(PerfProblem problem) {
  switch (problem) {
    case PerfProblem::kNone:
      return "none";
    case PerfProblem::kUnknownSampleId:
      return "unknown_sample_id";
    case PerfProblem::kNonTracepointSample:
      return "non_tracepoint_sample";
    case PerfProblem::kSampleWithoutTime:
      return "sample_without_time";
    case PerfProblem::kSampleWithoutRaw:
      return "sample_without_raw";
    case PerfProblem::kShortSample:
      return "short_sample";
    case PerfProblem::kRawPastRecord:
      return "raw_past_record";
    case PerfProblem::kRawTooShort:
      return "raw_too_short";
    case PerfProblem::kShortRecord:
      return "short_record";
    case PerfProblem::kCompressedRecord:
      return "compressed_record";
    case PerfProblem::kCount:
      break;
  }
  return "unknown_problem";
}

absl::StatusOr<PerfRecordParser> PerfRecordParser::Create(std::vector<PerfAttrInfo> attrs) {
  if (attrs.empty()) return absl::InvalidArgumentError("perf records: no event attrs");
  PerfRecordParser p;
  p.attrs_ = std::move(attrs);
  p.sample_id_all_ = p.attrs_[0].attr.sample_id_all;
  p.id_pos_ = perf::SampleIdPos(p.attrs_[0].attr.sample_type);
  p.trailer_pos_ = perf::TrailerIdPos(p.attrs_[0].attr.sample_type);
  if (p.attrs_.size() > 1) {
    // perf's evlist__valid_sample_type / evlist__valid_sample_id_all.
    for (const PerfAttrInfo& a : p.attrs_) {
      if (perf::SampleIdPos(a.attr.sample_type) != p.id_pos_ || p.id_pos_ < 0 ||
          perf::TrailerIdPos(a.attr.sample_type) != p.trailer_pos_) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "perf records: %d event attrs whose samples do not all carry the event id at the "
            "same place (PERF_SAMPLE_IDENTIFIER or PERF_SAMPLE_ID): cannot tell them apart",
            p.attrs_.size()));
      }
      if (a.attr.sample_id_all != p.sample_id_all_) {
        return absl::InvalidArgumentError("perf records: event attrs disagree on sample_id_all");
      }
    }
  }

  for (const PerfAttrInfo& a : p.attrs_) {
    Layout l;
    const uint64_t st = a.attr.sample_type;
    l.sample_type = st;
    l.read_format = a.attr.read_format;
    if (a.attr.type == PERF_TYPE_TRACEPOINT && a.attr.config <= 0x7fffffff) {
      l.tracepoint_id = static_cast<int32_t>(a.attr.config);
    }
    if (l.tracepoint_id < 0) {
      l.unusable_reason = PerfProblem::kNonTracepointSample;
    } else if (!(st & PERF_SAMPLE_TIME)) {
      l.unusable_reason = PerfProblem::kSampleWithoutTime;
    } else if (!(st & PERF_SAMPLE_RAW)) {
      l.unusable_reason = PerfProblem::kSampleWithoutRaw;
    } else {
      l.usable = true;
    }
    // Sample body order: include/uapi/linux/perf_event.h, PERF_RECORD_SAMPLE.
    uint32_t off = sizeof(perf::EventHeader);
    if (st & PERF_SAMPLE_IDENTIFIER) off += 8;
    if (st & PERF_SAMPLE_IP) off += 8;
    if (st & PERF_SAMPLE_TID) {
      l.tid_off = off;
      off += 8;
    }
    if (st & PERF_SAMPLE_TIME) {
      l.time_off = off;
      off += 8;
    }
    if (st & PERF_SAMPLE_ADDR) off += 8;
    if (st & PERF_SAMPLE_ID) off += 8;
    if (st & PERF_SAMPLE_STREAM_ID) off += 8;
    if (st & PERF_SAMPLE_CPU) {
      l.cpu_off = off;
      off += 8;
    }
    if (st & PERF_SAMPLE_PERIOD) off += 8;
    l.read_off = off;
    if (st & PERF_SAMPLE_READ) {
      if (l.read_format & PERF_FORMAT_GROUP) {
        l.variable = true;
      } else {
        off += static_cast<uint32_t>(perf::ReadValueSize(l.read_format));
      }
    }
    if (st & PERF_SAMPLE_CALLCHAIN) l.variable = true;
    l.raw_off = off;

    l.sample_id_all = a.attr.sample_id_all;
    uint32_t t = 0;
    if (st & PERF_SAMPLE_TID) {
      l.trailer_tid = t;
      t += 8;
    }
    if (st & PERF_SAMPLE_TIME) {
      l.trailer_time = t;
      t += 8;
    }
    if (st & PERF_SAMPLE_ID) t += 8;
    if (st & PERF_SAMPLE_STREAM_ID) t += 8;
    if (st & PERF_SAMPLE_CPU) {
      l.trailer_cpu = t;
      t += 8;
    }
    if (st & PERF_SAMPLE_IDENTIFIER) t += 8;
    l.trailer_size = t;
    p.layouts_.push_back(l);
  }

  // Samples that passed CheckSample are decoded with no id lookup when every usable attr puts
  // the fields FillSample reads at the same offsets (perf record gives all its events one
  // sample_type).
  const Layout* first_usable = nullptr;
  bool uniform = true;
  for (const Layout& l : p.layouts_) {
    if (!l.usable) continue;
    if (l.variable) uniform = false;
    if (first_usable == nullptr) {
      first_usable = &l;
    } else if (l.time_off != first_usable->time_off || l.tid_off != first_usable->tid_off ||
               l.cpu_off != first_usable->cpu_off || l.raw_off != first_usable->raw_off) {
      uniform = false;
    }
  }
  if (first_usable != nullptr && uniform) {
    p.checked_layout_ = *first_usable;
    p.has_checked_layout_ = true;
    // More than one attr: every sample carries its id at id_pos_ (checked above).
    const uint32_t id_end = p.layouts_.size() == 1
                                ? 0
                                : uint32_t(sizeof(perf::EventHeader)) + 8 * uint32_t(p.id_pos_) + 8;
    p.checked_min_size_ = std::max(p.checked_layout_.raw_off + 4, id_end);
  }

  uint64_t lo = UINT64_MAX, hi = 0, count = 0;
  for (const PerfAttrInfo& a : p.attrs_) {
    for (uint64_t id : a.ids) {
      lo = std::min(lo, id);
      hi = std::max(hi, id);
      ++count;
    }
  }
  // Dense only while the table stays small whatever the file says: a crafted file with millions
  // of ids spread out would otherwise cost 8 entries (32 bytes) per id.
  constexpr uint64_t kMaxDenseEntries = uint64_t{1} << 18;  // 1 MiB of int32_t
  const uint64_t span = hi - lo;
  const bool dense =
      count > 0 && span < kMaxDenseEntries && span < std::max<uint64_t>(4096, 8 * count);
  if (dense) {
    p.dense_base_ = lo;
    p.dense_.assign(hi - lo + 1, -1);
  }
  for (size_t i = 0; i < p.attrs_.size(); ++i) {
    for (uint64_t id : p.attrs_[i].ids) {
      int32_t* slot;
      if (dense) {
        slot = &p.dense_[id - lo];
      } else {
        slot = &p.sparse_.try_emplace(id, -1).first->second;
      }
      if (*slot >= 0 && *slot != static_cast<int32_t>(i)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("perf records: event id %d belongs to attrs %d and %d", id, *slot, i));
      }
      *slot = static_cast<int32_t>(i);
    }
  }
  return p;
}

const PerfRecordParser::Layout* PerfRecordParser::TrailerLayout(ByteView record) const {
  if (!sample_id_all_) return nullptr;
  if (layouts_.size() == 1) return &layouts_[0];
  const size_t back = 8 * size_t(trailer_pos_);
  if (record.size < sizeof(perf::EventHeader) + back) return nullptr;
  uint64_t id;
  if (!LoadAt(record, record.size - back, &id)) return nullptr;
  // Records perf synthesizes carry id 0; perf then uses the first attr (evlist__event2evsel).
  if (id == 0) return &layouts_[0];
  int a = AttrOfId(id);
  return a < 0 ? nullptr : &layouts_[a];
}

void PerfRecordParser::ReadTrailer(ByteView record, uint32_t body, const Layout* layout,
                                   PerfRecord* out, int32_t* cpu) const {
  out->has_time = false;
  out->time = 0;
  *cpu = -1;
  if (layout == nullptr || !layout->sample_id_all) return;
  if (record.size < sizeof(perf::EventHeader) + body + layout->trailer_size) return;
  const size_t start = record.size - layout->trailer_size;
  if (layout->trailer_time != kAbsent && LoadAt(record, start + layout->trailer_time, &out->time)) {
    out->has_time = true;
  }
  uint32_t c;
  if (layout->trailer_cpu != kAbsent && LoadAt(record, start + layout->trailer_cpu, &c)) {
    *cpu = static_cast<int32_t>(c);
  }
}

uint64_t PerfRecordParser::VariableRawOffset(const Layout& layout, ByteView record) {
  const Layout* l = &layout;
  uint64_t off = l->read_off;
  if (l->sample_type & PERF_SAMPLE_READ) {
    if (l->read_format & PERF_FORMAT_GROUP) {
      uint64_t nr;
      if (!LoadAt(record, off, &nr)) return 0;
      const uint64_t f = l->read_format;
      const uint64_t head = 8 + ((f & PERF_FORMAT_TOTAL_TIME_ENABLED) ? 8 : 0) +
                            ((f & PERF_FORMAT_TOTAL_TIME_RUNNING) ? 8 : 0);
      const uint64_t per = 8 + ((f & PERF_FORMAT_ID) ? 8 : 0) + ((f & PERF_FORMAT_LOST) ? 8 : 0);
      if (nr > record.size / per) return 0;
      off += head + nr * per;
    } else {
      off += perf::ReadValueSize(l->read_format);
    }
  }
  if (l->sample_type & PERF_SAMPLE_CALLCHAIN) {
    uint64_t nr;
    if (!LoadAt(record, off, &nr)) return 0;
    if (nr > record.size / 8) return 0;
    off += 8 + nr * 8;
  }
  if (off > record.size) return 0;
  return off;
}

PerfProblem PerfRecordParser::ParseOther(uint32_t type, ByteView record, PerfRecord* out) const {
  switch (type) {
    case perf::kRecordLost: {
      uint64_t lost;
      if (!LoadAt(record, 16, &lost)) return PerfProblem::kShortRecord;
      int32_t cpu;
      ReadTrailer(record, 16, TrailerLayout(record), out, &cpu);
      out->kind = PerfRecord::Kind::kLoss;
      out->loss = LossRecord{LossRecord::Kind::kRingLost, cpu, -1, lost, out->time};
      return PerfProblem::kNone;
    }
    case perf::kRecordLostSamples: {
      uint64_t lost;
      if (!LoadAt(record, 8, &lost)) return PerfProblem::kShortRecord;
      const Layout* l = TrailerLayout(record);
      int32_t cpu;
      ReadTrailer(record, 8, l, out, &cpu);
      out->kind = PerfRecord::Kind::kLoss;
      out->loss = LossRecord{LossRecord::Kind::kSilentDrop, cpu,
                             l != nullptr ? l->tracepoint_id : -1, lost, out->time};
      return PerfProblem::kNone;
    }
    case perf::kRecordComm: {
      uint32_t pt[2];
      if (!LoadAt(record, 8, &pt)) return PerfProblem::kShortRecord;
      const Layout* l = TrailerLayout(record);
      size_t end = record.size;
      if (l != nullptr && record.size >= 16 + size_t(l->trailer_size)) end -= l->trailer_size;
      if (end <= 16) return PerfProblem::kShortRecord;
      const char* s = reinterpret_cast<const char*>(record.data + 16);
      const void* nul = std::memchr(s, 0, end - 16);
      size_t len = nul ? static_cast<const char*>(nul) - s : end - 16;
      out->kind = PerfRecord::Kind::kComm;
      out->comm_pid = static_cast<int32_t>(pt[0]);
      out->comm_tid = static_cast<int32_t>(pt[1]);
      out->comm = std::string_view(s, len);
      return PerfProblem::kNone;
    }
    case perf::kRecordFinishedRound:
      out->kind = PerfRecord::Kind::kRoundEnd;
      return PerfProblem::kNone;
    case perf::kRecordCompressed:
    case perf::kRecordCompressed2:
      return PerfProblem::kCompressedRecord;
    default:
      return PerfProblem::kNone;
  }
}

}  // namespace iotrace
