#include "iotrace/output/event_dump.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <iterator>
#include <utility>

#include "format_cells.h"
#include "iotrace/event/block_dev.h"

namespace iotrace {
namespace {

void AppendU64(uint64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

void AppendS64(int64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

void AppendHex(uint64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v, 16);
  out->append("0x");
  out->append(buf, r.ptr);
}

// Zero-padded decimal of `width` digits.
void AppendPadded(uint64_t v, int width, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  for (int n = static_cast<int>(r.ptr - buf); n < width; ++n) out->push_back('0');
  out->append(buf, r.ptr);
}

int64_t SignExtend(uint64_t v, uint32_t size) {
  switch (size) {
    case 1: return static_cast<int8_t>(v);
    case 2: return static_cast<int16_t>(v);
    case 4: return static_cast<int32_t>(v);
    default: return static_cast<int64_t>(v);
  }
}

// A string from a record: printable ASCII as is; other bytes escaped so that one record stays
// one line (\xNN in text and CSV, \u00NN in JSON). Plain stretches are appended whole.
// Bytes that go out as they are: [0] text and CSV, [1] JSON.
constexpr std::array<std::array<bool, 256>, 2> kPlainBytes = [] {
  std::array<std::array<bool, 256>, 2> t{};
  for (int c = 0x20; c < 0x7f; ++c) t[0][c] = t[1][c] = c != '\\';
  t[1]['"'] = false;
  return t;
}();

void AppendEscaped(std::string_view s, DumpFormat format, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  const bool json = format == DumpFormat::kJson;
  const std::array<bool, 256>& plain = kPlainBytes[json ? 1 : 0];
  size_t from = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (plain[c]) continue;
    out->append(s.data() + from, i - from);
    from = i + 1;
    if (json && (c == '"' || c == '\\')) {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
      continue;
    }
    out->append(json ? "\\u00" : "\\x");
    out->push_back(kHex[c >> 4]);
    out->push_back(kHex[c & 15]);
  }
  out->append(s.data() + from, s.size() - from);
}

// CSV cell: quoted when it holds a separator, a quote or a newline (the fields cell of a probe
// or another tracepoint often holds a comma, so it is looked for first); each look is a memchr,
// and the quoted copy goes in spans between quotes (a byte-by-byte copy cost a third of the
// time of a CSV line).
void AppendCsvCell(std::string_view s, std::string* out) {
  const bool special = s.find(',') != std::string_view::npos ||
                       s.find('"') != std::string_view::npos ||
                       s.find('\n') != std::string_view::npos ||
                       s.find('\r') != std::string_view::npos;
  if (!special) {
    out->append(s.data(), s.size());
    return;
  }
  out->push_back('"');
  size_t from = 0;
  for (size_t q = s.find('"'); q != std::string_view::npos; q = s.find('"', from)) {
    out->append(s.data() + from, q + 1 - from);  // up to and with the quote, which is doubled
    out->push_back('"');
    from = q + 1;
  }
  out->append(s.data() + from, s.size() - from);
  out->push_back('"');
}

std::string_view UpToNul(ByteView bytes) {
  const void* nul = bytes.size ? std::memchr(bytes.data, 0, bytes.size) : nullptr;
  size_t len = nul ? static_cast<const uint8_t*>(nul) - bytes.data : bytes.size;
  return std::string_view(reinterpret_cast<const char*>(bytes.data), len);
}

std::string_view StripQualifiers(std::string_view type) {
  for (std::string_view q : {"const ", "volatile "}) {
    while (type.substr(0, q.size()) == q) type.remove_prefix(q.size());
  }
  return type;
}

bool IsHexType(std::string_view type) {
  type = StripQualifiers(type);
  return type.find('*') != std::string_view::npos || type == "unsigned long" ||
         type == "unsigned long int" || type == "long unsigned int";
}

// Probe arguments of type x8..x64 appear as plain uN in the format; their print fmt says
// "NAME=0x%...". Any event whose print fmt prints a field that way gets it in hex.
bool PrintFmtSaysHex(const std::string& print_fmt, const std::string& name) {
  const std::string needle = name + "=0x%";
  for (size_t at = print_fmt.find(needle); at != std::string::npos;
       at = print_fmt.find(needle, at + 1)) {
    char before = at == 0 ? ' ' : print_fmt[at - 1];
    if (before == ' ' || before == '"' || before == '(' || before == ',') return true;
  }
  return false;
}

// "char name[16]", "__data_loc char[] cmd": printed as text. libtraceevent also flags u8 arrays
// as strings; those (addresses, ids) print as byte lists.
bool IsCharArrayType(std::string_view type) {
  for (std::string_view prefix : {"__data_loc ", "__rel_loc "}) {
    if (type.substr(0, prefix.size()) == prefix) type.remove_prefix(prefix.size());
  }
  type = StripQualifiers(type);
  type = type.substr(0, type.find('['));
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  return type == "char" || type == "unsigned char" || type == "signed char";
}

bool IsIntSize(uint32_t size) { return size == 1 || size == 2 || size == 4 || size == 8; }

}  // namespace

EventDumper::EventPlan EventDumper::BuildPlan(const EventFormat& format) {
  EventPlan plan;
  plan.name = format.FullName();
  plan.block = format.system == "block";
  for (const FieldInfo& f : format.fields) {
    if (f.is_common || f.name.rfind("common_", 0) == 0) continue;
    FieldPlan p;
    p.name = f.name;
    p.offset = f.offset;
    p.size = f.size;
    p.relative = f.is_relative;
    const bool hex = IsHexType(f.type) || PrintFmtSaysHex(format.print_fmt, f.name);
    if (f.is_dynamic) {
      p.size = 4;
      const bool text = f.is_string && IsCharArrayType(f.type);
      p.kind = text ? FieldKind::kDynString : FieldKind::kDynArray;
      p.element_size = IsIntSize(f.element_size) ? f.element_size : 1;
      p.element_signed = f.is_signed && !f.is_string;
      p.element_hex = hex || (f.is_string && !text);
    } else if (f.is_array) {
      if (f.is_string && IsCharArrayType(f.type)) {
        p.kind = FieldKind::kCharArray;
      } else {
        p.kind = FieldKind::kArray;
        p.element_size = IsIntSize(f.element_size) ? f.element_size : 1;
        p.element_signed = f.is_signed && !f.is_string;
        p.element_hex = hex || f.is_string || !IsIntSize(f.element_size);
      }
    } else if (!IsIntSize(f.size)) {
      // An odd-sized scalar (a struct member copied whole): its bytes, in hex.
      p.kind = FieldKind::kArray;
      p.element_size = 1;
      p.element_hex = true;
    } else if (StripQualifiers(f.type) == "dev_t" && f.size == 4) {
      p.kind = FieldKind::kDev;
    } else if (hex) {
      p.kind = FieldKind::kHex;
    } else {
      p.kind = f.is_signed ? FieldKind::kSigned : FieldKind::kUnsigned;
    }
    plan.min_size = std::max(plan.min_size, p.offset + p.size);
    plan.fields.push_back(std::move(p));
  }
  return plan;
}

EventDumper::EventDumper(const std::vector<EventFormat>& formats, DumpFormat format)
    : format_(format) {
  plans_.reserve(formats.size());
  for (const EventFormat& f : formats) {
    if (f.id > 0xffff) continue;  // common_type is a u16: such an id can never match
    if (plan_by_id_.size() <= f.id) plan_by_id_.resize(f.id + 1, -1);
    plan_by_id_[f.id] = static_cast<int32_t>(plans_.size());
    plans_.push_back(BuildPlan(f));
  }
  // Pointers into each plan's own field vector, taken once the plans stop moving; JSON's names
  // escaped once here rather than on every line.
  for (EventPlan& plan : plans_) {
    if (format_ == DumpFormat::kJson) {
      AppendEscaped(plan.name, format_, &plan.json_name);
      for (FieldPlan& p : plan.fields) {
        p.json_key.push_back('"');
        AppendEscaped(p.name, format_, &p.json_key);
        p.json_key.push_back('"');
        p.json_key.push_back(':');
      }
    }
    plan.comm = nullptr;
    for (const FieldPlan& p : plan.fields) {
      if (p.name == "comm" && p.kind == FieldKind::kCharArray) plan.comm = &p;
    }
  }
  if (format_ == DumpFormat::kCsv) PlanBlockColumns();
}

void EventDumper::PlanBlockColumns() {
  // The fields a request is read by first (where, how much, which way, who, how it ended);
  // fields of other layouts (remaps, splits, older or newer kernels) after them by name, so that
  // the columns do not depend on the order of the formats in the file.
  static constexpr std::string_view kLeading[] = {"dev",  "sector", "nr_sector", "bytes", "rwbs",
                                                  "comm", "error",  "ioprio",    "cmd"};
  auto rank = [](std::string_view name) {
    return static_cast<size_t>(std::find(std::begin(kLeading), std::end(kLeading), name) -
                               std::begin(kLeading));
  };
  for (const EventPlan& plan : plans_) {
    if (!plan.block) continue;
    for (const FieldPlan& f : plan.fields) {
      if (std::find(block_columns_.begin(), block_columns_.end(), f.name) == block_columns_.end()) {
        block_columns_.push_back(f.name);
      }
    }
  }
  std::sort(block_columns_.begin(), block_columns_.end(),
            [&rank](const std::string& a, const std::string& b) {
              return std::make_pair(rank(a), std::string_view(a)) <
                     std::make_pair(rank(b), std::string_view(b));
            });
  for (EventPlan& plan : plans_) {
    if (!plan.block) continue;
    plan.columns.assign(block_columns_.size(), -1);
    for (size_t i = 0; i < plan.fields.size(); ++i) {
      const size_t column =
          std::find(block_columns_.begin(), block_columns_.end(), plan.fields[i].name) -
          block_columns_.begin();
      plan.columns[column] = static_cast<int32_t>(i);
    }
  }
}

std::string EventDumper::Header() const {
  if (format_ != DumpFormat::kCsv) return "";
  std::string header = "time,cpu,pid,tid,comm,event";
  for (const std::string& name : block_columns_) {
    // A field named like one of the record's own columns (the event's comm) is told apart.
    const bool taken = name == "time" || name == "cpu" || name == "pid" || name == "tid" ||
                       name == "comm" || name == "event" || name == "problem" || name == "fields";
    header.append(taken ? ",event_" : ",");
    AppendCsvCell(name, &header);
  }
  return header + ",problem,fields\n";
}

void EventDumper::AppendValue(const FieldPlan& field, ByteView payload, std::string* out,
                              bool* short_read) {
  const bool json = format_ == DumpFormat::kJson;
  auto mark_short = [&] {
    *short_read = true;
    out->append(json ? "null" : "<short>");
  };
  auto append_element = [&](ByteView bytes, size_t at, uint32_t size, bool is_signed,
                            bool hex) {
    uint64_t v = 0;
    LoadUnsigned(bytes, at, size, &v);
    if (hex) {
      if (json) out->push_back('"');
      AppendHex(v, out);
      if (json) out->push_back('"');
    } else if (is_signed) {
      AppendS64(SignExtend(v, size), out);
    } else {
      AppendU64(v, out);
    }
  };
  auto append_string = [&](std::string_view s) {
    if (json) out->push_back('"');
    AppendEscaped(s, format_, out);
    if (json) out->push_back('"');
  };
  auto append_list = [&](ByteView bytes, uint32_t el, bool is_signed, bool hex) {
    out->push_back('[');
    for (size_t at = 0; at + el <= bytes.size; at += el) {
      if (at) out->append(json ? "," : ", ");
      append_element(bytes, at, el, is_signed, hex);
    }
    out->push_back(']');
  };

  switch (field.kind) {
    case FieldKind::kUnsigned:
    case FieldKind::kSigned:
    case FieldKind::kHex: {
      if (!payload.Contains(field.offset, field.size)) return mark_short();
      append_element(payload, field.offset, field.size, field.kind == FieldKind::kSigned,
                     field.kind == FieldKind::kHex);
      return;
    }
    case FieldKind::kDev: {
      uint32_t dev = 0;
      if (!LoadAt(payload, field.offset, &dev)) return mark_short();
      if (format_ == DumpFormat::kCsv) {
        AppendU64(KernelDevMajor(dev), out);
        out->push_back(':');
        AppendU64(KernelDevMinor(dev), out);
        return;
      }
      if (json) out->push_back('"');
      AppendTracedDev(dev, out);
      if (json) out->push_back('"');
      return;
    }
    case FieldKind::kCharArray: {
      if (!payload.Contains(field.offset, field.size)) return mark_short();
      append_string(UpToNul(payload.Sub(field.offset, field.size)));
      return;
    }
    case FieldKind::kArray: {
      if (!payload.Contains(field.offset, field.size)) return mark_short();
      append_list(payload.Sub(field.offset, field.size), field.element_size,
                  field.element_signed, field.element_hex);
      return;
    }
    case FieldKind::kDynString:
    case FieldKind::kDynArray: {
      // __data_loc: u32 = offset (low 16 bits) | length << 16; __rel_loc: the offset counts
      // from the end of the field (include/trace/stages/stage2_data_offsets.h).
      uint32_t loc = 0;
      if (!LoadAt(payload, field.offset, &loc)) return mark_short();
      size_t start = loc & 0xffff;
      size_t len = loc >> 16;
      if (field.relative) start += field.offset + field.size;
      if (!payload.Contains(start, len)) return mark_short();
      ByteView data = payload.Sub(start, len);
      if (field.kind == FieldKind::kDynString) {
        append_string(UpToNul(data));
      } else {
        append_list(data, field.element_size, field.element_signed, field.element_hex);
      }
      return;
    }
  }
}

void EventDumper::Append(const RawEvent& event, std::string_view comm, std::string* out) {
  const EventPlan* plan = nullptr;
  if (event.type < plan_by_id_.size() && plan_by_id_[event.type] >= 0) {
    plan = &plans_[plan_by_id_[event.type]];
  }
  if (plan == nullptr) ++unknown_types_;
  if (comm.empty() && plan != nullptr && plan->comm != nullptr &&
      event.payload.Contains(plan->comm->offset, plan->comm->size)) {
    comm = UpToNul(event.payload.Sub(plan->comm->offset, plan->comm->size));
  }
  if (comm.empty()) comm = "<...>";
  const uint64_t sec = event.ts / 1000000000ull;
  const uint64_t usec = (event.ts % 1000000000ull) / 1000;
  bool short_read = false;

  switch (format_) {
    case DumpFormat::kText: {
      std::string_view name = plan ? std::string_view(plan->name) : std::string_view();
      AppendU64(sec, out);
      out->push_back('.');
      AppendPadded(usec, 6, out);
      out->append(" [");
      AppendPadded(event.cpu, 3, out);
      out->append("] ");
      // pid (and /tid when the thread differs), right-aligned like perf script.
      char pid_buf[32];
      char* p = std::to_chars(pid_buf, pid_buf + 12, event.pid).ptr;
      if (event.tid >= 0 && event.tid != event.pid) {
        *p++ = '/';
        p = std::to_chars(p, pid_buf + sizeof(pid_buf), event.tid).ptr;
      }
      AppendAligned(out, std::string_view(pid_buf, p - pid_buf), 7, /*align_left=*/false);
      out->push_back(' ');
      size_t before = out->size();
      AppendEscaped(comm, format_, out);
      if (out->size() - before < 16) out->append(16 - (out->size() - before), ' ');
      out->push_back(' ');
      if (plan == nullptr) {
        out->append("unknown:type_");
        AppendU64(event.type, out);
        out->append(" len=");
        AppendU64(event.payload.size, out);
        out->push_back('\n');
        return;
      }
      out->append(name.data(), name.size());
      for (const FieldPlan& f : plan->fields) {
        out->push_back(' ');
        out->append(f.name);
        out->push_back('=');
        AppendValue(f, event.payload, out, &short_read);
      }
      if (short_read) {
        ++short_records_;
        out->append(" [short record: ");
        AppendU64(event.payload.size, out);
        out->append(" of ");
        AppendU64(plan->min_size, out);
        out->append(" bytes]");
      }
      out->push_back('\n');
      return;
    }
    case DumpFormat::kCsv: {
      AppendU64(sec, out);
      out->push_back('.');
      AppendPadded(usec, 6, out);
      out->push_back(',');
      AppendU64(event.cpu, out);
      out->push_back(',');
      AppendS64(event.pid, out);
      out->push_back(',');
      AppendS64(event.tid, out);
      out->push_back(',');
      scratch_.clear();
      AppendEscaped(comm, format_, &scratch_);
      AppendCsvCell(scratch_, out);
      out->push_back(',');
      if (plan == nullptr) {
        out->append("unknown:type_");
        AppendU64(event.type, out);
        out->append(block_columns_.size(), ',');
        out->append(",unknown type,\n");
        return;
      }
      out->append(plan->name);
      fields_.clear();
      if (plan->block) {
        for (int32_t field : plan->columns) {
          out->push_back(',');
          if (field < 0) continue;
          scratch_.clear();
          AppendValue(plan->fields[field], event.payload, &scratch_, &short_read);
          AppendCsvCell(scratch_, out);
        }
      } else {
        out->append(block_columns_.size(), ',');
        for (const FieldPlan& f : plan->fields) {
          if (!fields_.empty()) fields_.push_back(' ');
          fields_.append(f.name);
          fields_.push_back('=');
          AppendValue(f, event.payload, &fields_, &short_read);
        }
      }
      out->push_back(',');
      if (short_read) {
        ++short_records_;
        out->append("short record");
      }
      out->push_back(',');
      AppendCsvCell(fields_, out);
      out->push_back('\n');
      return;
    }
    case DumpFormat::kJson: {
      out->append("{\"ts\":");
      AppendU64(event.ts, out);
      out->append(",\"time\":");
      AppendU64(sec, out);
      out->push_back('.');
      AppendPadded(usec, 6, out);
      out->append(",\"cpu\":");
      AppendU64(event.cpu, out);
      out->append(",\"pid\":");
      AppendS64(event.pid, out);
      out->append(",\"tid\":");
      AppendS64(event.tid, out);
      out->append(",\"comm\":\"");
      AppendEscaped(comm, format_, out);
      out->append("\",\"event\":\"");
      if (plan == nullptr) {
        out->append("unknown:type_");
        AppendU64(event.type, out);
        out->append("\",\"fields\":{},\"problem\":\"unknown type\"}\n");
        return;
      }
      out->append(plan->json_name);
      out->append("\",\"fields\":{");
      bool first = true;
      for (const FieldPlan& f : plan->fields) {
        if (!first) out->push_back(',');
        first = false;
        out->append(f.json_key);
        AppendValue(f, event.payload, out, &short_read);
      }
      out->push_back('}');
      if (short_read) {
        ++short_records_;
        out->append(",\"problem\":\"short record\"");
      }
      out->append("}\n");
      return;
    }
  }
}

}  // namespace iotrace
