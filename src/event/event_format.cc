#include "iotrace/event/event_format.h"


#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "iotrace/base/status.h"
#include "traceevent/event-parse.h"

namespace iotrace {
namespace {

struct TepDeleter {
  void operator()(tep_handle* tep) const { tep_free(tep); }
};

FieldInfo ToFieldInfo(const tep_format_field& f, bool is_common) {
  FieldInfo info;
  info.name = f.name ? f.name : "";
  info.type = f.type ? f.type : "";
  info.offset = static_cast<uint32_t>(f.offset);
  info.size = static_cast<uint32_t>(f.size);
  info.element_size = f.elementsize;
  info.array_len = f.arraylen;
  info.is_signed = (f.flags & TEP_FIELD_IS_SIGNED) != 0;
  info.is_array = (f.flags & TEP_FIELD_IS_ARRAY) != 0;
  info.is_string = (f.flags & TEP_FIELD_IS_STRING) != 0;
  info.is_dynamic = (f.flags & TEP_FIELD_IS_DYNAMIC) != 0;
  info.is_relative = (f.flags & TEP_FIELD_IS_RELATIVE) != 0;
  info.is_common = is_common;
  // libtraceevent marks "char x[N]" as a string only when the element is 1 byte.
  if (info.is_array && info.element_size == 1 &&
      (info.type.rfind("char", 0) == 0 || info.type.find(" char") != std::string::npos)) {
    info.is_string = true;
  }
  return info;
}

std::string PrintFmtOf(std::string_view text) {
  size_t pos = text.find("print fmt: ");
  if (pos == std::string_view::npos) return "";
  std::string_view rest = text.substr(pos + 11);
  size_t end = rest.find('\n');
  return std::string(end == std::string_view::npos ? rest : rest.substr(0, end));
}

}  // namespace

const FieldInfo* EventFormat::FindField(std::string_view field_name) const {
  for (const FieldInfo& f : fields) {
    if (f.name == field_name) return &f;
  }
  return nullptr;
}

absl::StatusOr<EventFormat> ParseEventFormat(std::string_view system, std::string_view text) {
  tep_set_loglevel(TEP_LOG_NONE);
  std::unique_ptr<tep_handle, TepDeleter> tep(tep_alloc());
  if (!tep) return absl::ResourceExhaustedError("tep_alloc failed");
  std::string sys(system);
  enum tep_errno err = tep_parse_event(tep.get(), text.data(), text.size(), sys.c_str());
  // A print-fmt that libtraceevent cannot interpret still yields the field layout we need.
  if (err != 0 && err != TEP_ERRNO__READ_PRINT_FAILED && err != TEP_ERRNO__READ_FORMAT_FAILED) {
    char buf[256];
    tep_strerror(tep.get(), err, buf, sizeof(buf));
    return absl::InvalidArgumentError(
        absl::StrFormat("parse event format for system %s: %s", system, buf));
  }
  if (tep_get_events_count(tep.get()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("parse event format for system %s: no event in the text", system));
  }
  tep_event* ev = tep_get_event(tep.get(), 0);
  if (ev == nullptr || ev->name == nullptr) {
    return absl::InvalidArgumentError("parse event format: event without a name");
  }
  EventFormat out;
  out.id = static_cast<uint32_t>(ev->id);
  out.system = sys;
  out.name = ev->name;
  for (tep_format_field* f = ev->format.common_fields; f != nullptr; f = f->next) {
    out.fields.push_back(ToFieldInfo(*f, true));
  }
  for (tep_format_field* f = ev->format.fields; f != nullptr; f = f->next) {
    out.fields.push_back(ToFieldInfo(*f, false));
  }
  if (out.fields.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("parse event format %s:%s: no fields", system, out.name));
  }
  out.print_fmt = PrintFmtOf(text);
  out.text = std::string(text);
  return out;
}

// libtraceevent 1.7.1 crashes on a print fmt with __print_symbolic over a REC->field the format
// does not have, and on a non-ASCII byte in a field declaration (found by PerfDataCorruptTest and
// trace_file_fuzzer). The kernel prints format files in plain ASCII, and iotrace decodes by field
// offsets only: anything else is refused, and the print fmt is kept away from libtraceevent.
absl::StatusOr<EventFormat> ParseUntrustedEventFormat(std::string_view system,
                                                      std::string_view text) {
  for (char c : text) {
    if ((c < 0x20 || c > 0x7e) && c != '\t' && c != '\n') {
      return absl::InvalidArgumentError(
          absl::StrFormat("parse event format for system %s: text is not plain ASCII", system));
    }
  }
  constexpr std::string_view kPrintFmt = "\nprint fmt: ";
  const size_t at = text.find(kPrintFmt);
  if (at == std::string_view::npos) return ParseEventFormat(system, text);
  std::string safe(text.substr(0, at));
  safe += "\nprint fmt: \"\"\n";
  auto format = ParseEventFormat(system, safe);
  if (!format.ok()) return format;
  std::string_view print_fmt = text.substr(at + kPrintFmt.size());
  format->print_fmt = std::string(print_fmt.substr(0, print_fmt.find('\n')));
  format->text = std::string(text);
  return format;
}


}  // namespace iotrace
