#include "iotrace/formats/tracing_data.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"

namespace iotrace {
namespace {

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void PutSized64(std::string* out, std::string_view text) {
  Put<uint64_t>(out, text.size());
  out->append(text);
}

absl::Status Truncated(std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("tracing data: truncated or corrupt %s", what));
}

// Reads a u64 (or u32) size followed by that many bytes, in place.
bool ReadSized(ByteReader* r, bool wide, std::string_view* out) {
  uint64_t size = 0;
  if (wide) {
    if (!r->Read(&size)) return false;
  } else {
    uint32_t s32;
    if (!r->Read(&s32)) return false;
    size = s32;
  }
  if (size > r->remaining()) return false;
  ByteView bytes;
  if (!r->ReadBytes(static_cast<size_t>(size), &bytes)) return false;
  *out = bytes.AsString();
  return true;
}

}  // namespace

std::string EncodeTracingData(const TracingMetadata& meta, std::string_view version) {
  std::string out;
  out.append(kTracingMagic, kTracingMagicSize);
  out.append(version);
  out.push_back('\0');
  out.push_back(meta.big_endian ? 1 : 0);
  out.push_back(static_cast<char>(meta.long_size));
  Put<uint32_t>(&out, meta.page_size);

  out.append("header_page", 12);  // with its NUL
  PutSized64(&out, meta.header_page);
  out.append("header_event", 13);
  PutSized64(&out, meta.header_event);

  Put<uint32_t>(&out, static_cast<uint32_t>(meta.ftrace_formats.size()));
  for (const FormatText& f : meta.ftrace_formats) PutSized64(&out, f.text);

  std::vector<std::string> systems;
  for (const FormatText& f : meta.event_formats) {
    bool seen = false;
    for (const std::string& s : systems) seen = seen || s == f.system;
    if (!seen) systems.push_back(f.system);
  }
  Put<uint32_t>(&out, static_cast<uint32_t>(systems.size()));
  for (const std::string& system : systems) {
    out.append(system);
    out.push_back('\0');
    uint32_t count = 0;
    for (const FormatText& f : meta.event_formats) count += f.system == system;
    Put<uint32_t>(&out, count);
    for (const FormatText& f : meta.event_formats) {
      if (f.system == system) PutSized64(&out, f.text);
    }
  }

  Put<uint32_t>(&out, static_cast<uint32_t>(meta.kallsyms.size()));
  out.append(meta.kallsyms);
  Put<uint32_t>(&out, static_cast<uint32_t>(meta.printk_formats.size()));
  out.append(meta.printk_formats);
  PutSized64(&out, meta.saved_cmdlines);
  return out;
}

absl::StatusOr<DecodedTracingData> DecodeTracingData(ByteView data, bool keep_kallsyms) {
  DecodedTracingData result;
  TracingMetadata& meta = result.meta;
  ByteReader r(data);
  ByteView magic;
  if (!r.ReadBytes(kTracingMagicSize, &magic) ||
      magic.AsString() != std::string_view(kTracingMagic, kTracingMagicSize)) {
    return absl::InvalidArgumentError("tracing data: bad magic (not a tracing data block)");
  }
  std::string_view version;
  if (!r.ReadCString(&version) || version.size() > 8) return Truncated("version");
  result.version = std::string(version);
  uint8_t endian = 0, long_size = 0;
  if (!r.Read(&endian) || !r.Read(&long_size) || !r.Read(&meta.page_size)) {
    return Truncated("header");
  }
  if (endian != 0) {
    return absl::UnimplementedError("tracing data: big-endian files are not supported");
  }
  meta.big_endian = false;
  meta.long_size = long_size;

  std::string_view label;
  std::string_view text;
  if (!r.ReadCString(&label) || label != "header_page" || !ReadSized(&r, true, &text)) {
    return Truncated("header_page");
  }
  meta.header_page = std::string(text);
  if (!r.ReadCString(&label) || label != "header_event" || !ReadSized(&r, true, &text)) {
    return Truncated("header_event");
  }
  meta.header_event = std::string(text);

  uint32_t count = 0;
  if (!r.Read(&count)) return Truncated("ftrace format count");
  // Each format needs at least its 8-byte size: a count that cannot fit is corrupt.
  if (count > r.remaining() / 8) return Truncated("ftrace format count");
  for (uint32_t i = 0; i < count; ++i) {
    if (!ReadSized(&r, true, &text)) return Truncated("ftrace format");
    meta.ftrace_formats.push_back({"ftrace", std::string(text)});
  }

  uint32_t systems = 0;
  if (!r.Read(&systems)) return Truncated("event system count");
  if (systems > r.remaining() / 5) return Truncated("event system count");
  for (uint32_t s = 0; s < systems; ++s) {
    std::string_view system;
    uint32_t events = 0;
    if (!r.ReadCString(&system) || !r.Read(&events)) return Truncated("event system");
    if (events > r.remaining() / 8) return Truncated("event count");
    for (uint32_t e = 0; e < events; ++e) {
      if (!ReadSized(&r, true, &text)) return Truncated("event format");
      meta.event_formats.push_back({std::string(system), std::string(text)});
    }
  }

  if (!ReadSized(&r, false, &text)) return Truncated("kallsyms");
  if (keep_kallsyms) meta.kallsyms = std::string(text);
  if (!ReadSized(&r, false, &text)) return Truncated("printk formats");
  meta.printk_formats = std::string(text);
  // Saved cmdlines exist from perf's "0.6" and in every trace.dat version.
  if (result.version != "0.5") {
    if (!ReadSized(&r, true, &text)) return Truncated("saved cmdlines");
    meta.saved_cmdlines = std::string(text);
  }
  result.consumed = r.pos();
  return result;
}

}  // namespace iotrace
