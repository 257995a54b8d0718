// Tracepoint event formats: the text of events/<system>/<event>/format parsed once (through
// libtraceevent) into field layouts that hot paths use by offset, never by name.
#ifndef IOTRACE_EVENT_EVENT_FORMAT_H_
#define IOTRACE_EVENT_EVENT_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace iotrace {

struct FieldInfo {
  std::string name;
  std::string type;  // C type as written in the format file, e.g. "char rwbs[10]" -> "char"
  uint32_t offset = 0;
  uint32_t size = 0;  // for __data_loc/__rel_loc fields: 4 (the u16 offset + u16 length word)
  uint32_t element_size = 0;
  uint32_t array_len = 0;  // fixed arrays only
  bool is_signed = false;
  bool is_array = false;
  bool is_string = false;    // char arrays and dynamic strings
  bool is_dynamic = false;   // __data_loc: payload holds (u16 offset | u16 len << 16)
  bool is_relative = false;  // __rel_loc: offset is relative to the end of this field
  bool is_common = false;    // common_type, common_flags, common_preempt_count, common_pid
};

struct EventFormat {
  uint32_t id = 0;
  std::string system;
  std::string name;
  std::vector<FieldInfo> fields;  // common fields first, in file order
  std::string print_fmt;
  std::string text;  // the format file exactly as the kernel printed it (stored in output files)

  // nullptr when the event has no such field.
  const FieldInfo* FindField(std::string_view field_name) const;
  std::string FullName() const { return system + ":" + name; }
};

// Parses one format file (the kernel's text for events/<system>/<event>/format).
// `system` is needed because the text names only the event.
absl::StatusOr<EventFormat> ParseEventFormat(std::string_view system, std::string_view text);

// The same for a format text read from a file (perf.data tracing data, trace.dat), which may be
// anything: libtraceevent 1.7.1 crashes on some malformed texts, so only plain ASCII is accepted
// and libtraceevent parses the fields with an empty print fmt. print_fmt and text keep the
// file's originals.
absl::StatusOr<EventFormat> ParseUntrustedEventFormat(std::string_view system,
                                                      std::string_view text);

// The format text of one event as stored in a file, before parsing.
struct FormatText {
  std::string system;
  std::string text;
};

// Everything a reader needs to decode tracepoint records offline; both perf.data (the
// HEADER_TRACING_DATA feature) and trace.dat carry it.
struct TracingMetadata {
  std::string header_page;   // events/header_page
  std::string header_event;  // events/header_event
  std::vector<FormatText> ftrace_formats;  // events/ftrace/*/format, may be empty
  std::vector<FormatText> event_formats;   // every recorded event
  std::string kallsyms;       // /proc/kallsyms text, may be empty
  std::string printk_formats; // printk_formats text, may be empty
  std::string saved_cmdlines; // "pid comm\n" lines, may be empty
  uint32_t page_size = 4096;
  uint32_t long_size = 8;
  bool big_endian = false;
};

// Facts about the recording machine, written into the output file's header sections
// (sys/host_info.h fills them on the machine that records).
struct HostInfo {
  std::string hostname;
  std::string os_release;  // uname -r
  std::string version;     // uname -v
  std::string arch;        // uname -m
  std::string cpu_desc;
  std::string cpuid;
  std::string tool_version;  // iotrace's own version, e.g. "iotrace 0.1.0"
  uint32_t nr_cpus_online = 0;
  uint32_t nr_cpus_available = 0;
  uint64_t total_mem_kb = 0;
  std::vector<std::string> cmdline;  // argv of the recording command
  int32_t clockid = 1;               // CLOCK_MONOTONIC
  uint64_t clock_ref_wall_ns = 0;    // the same instant read from CLOCK_REALTIME ...
  uint64_t clock_ref_clock_ns = 0;   // ... and from `clockid`
};

}  // namespace iotrace

#endif  // IOTRACE_EVENT_EVENT_FORMAT_H_
