// `iotrace report --events`: one line per record (tracepoints and probes alike), like perf
// script: time, CPU, pid, comm, event name and every non-common field decoded by its format,
// as text, CSV or JSON lines. In CSV each field of the block events (block:*) has a column of
// its own, empty where an event lacks it, and the other events' fields share the last column. A field plan is built once per format id; formatting a record
// reads only through bounds-checked loads and appends to a caller-owned string (no allocation
// once that string has grown). A record too short for its format prints what fits and says so.
#ifndef IOTRACE_OUTPUT_EVENT_DUMP_H_
#define IOTRACE_OUTPUT_EVENT_DUMP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "iotrace/event/event_format.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {

enum class DumpFormat { kText, kCsv, kJson };

class EventDumper {
 public:
  EventDumper(const std::vector<EventFormat>& formats, DumpFormat format);

  // The first line of the output: the CSV column names; "" for text and JSON. The CSV's are
  // time,cpu,pid,tid,comm,event, then one column per field of the file's block events (dev,
  // sector, nr_sector, bytes, rwbs, event_comm (the event's own comm field), error, ioprio, cmd
  // as far as the formats have them, then any other by name), problem, and fields ("name=value"
  // pairs of the events that are not block events).
  std::string Header() const;

  // Appends one line (ending in '\n') for `event` to *out. `comm` is the process name known
  // from the file (TraceReader::CommOf); when empty, the event's own comm field is used if it
  // has one, else "<...>".
  void Append(const RawEvent& event, std::string_view comm, std::string* out);

  // Records whose type has no format, and records shorter than their format needs.
  uint64_t unknown_types() const { return unknown_types_; }
  uint64_t short_records() const { return short_records_; }

  // How one field is printed, decided from its format once.
  enum class FieldKind : uint8_t {
    kUnsigned,     // decimal
    kSigned,       // decimal
    kHex,          // 0x..: pointers, unsigned long, probe x8..x64 arguments
    kDev,          // dev_t in the kernel's encoding: MAJ,MIN (MAJ:MIN in CSV, as the report's)
    kCharArray,    // char name[N]: up to the first NUL
    kDynString,    // __data_loc / __rel_loc char[]
    kArray,        // fixed array of integers: [a, b, c]
    kDynArray,     // __data_loc / __rel_loc array of integers
  };

 private:
  struct FieldPlan {
    std::string name;
    FieldKind kind = FieldKind::kUnsigned;
    uint32_t offset = 0;
    uint32_t size = 0;          // bytes of the field in the record (4 for dynamic ones)
    uint32_t element_size = 0;  // arrays: bytes per element (1, 2, 4 or 8)
    bool element_signed = false;
    bool element_hex = false;
    bool relative = false;      // __rel_loc: offset counts from the end of this field
    std::string json_key;       // JSON only: "name": with the name escaped
  };
  struct EventPlan {
    std::string name;  // "system:event"
    std::string json_name;  // JSON only: the name escaped
    std::vector<FieldPlan> fields;
    const FieldPlan* comm = nullptr;  // a char[] field named comm, if any
    uint32_t min_size = 0;            // bytes every fixed field needs
    bool block = false;               // a block:* event
    // CSV, block events: per block column, the index in `fields` of its field, or -1.
    std::vector<int32_t> columns;
  };

  static EventPlan BuildPlan(const EventFormat& format);
  // The CSV's block columns, and each block event's place in them.
  void PlanBlockColumns();
  void AppendValue(const FieldPlan& field, ByteView payload, std::string* out, bool* short_read);

  DumpFormat format_;
  std::vector<EventPlan> plans_;
  std::vector<int32_t> plan_by_id_;  // format id -> index in plans_, -1 when unknown
  std::vector<std::string> block_columns_;  // CSV: the block fields' names, in column order
  uint64_t unknown_types_ = 0;
  uint64_t short_records_ = 0;
  std::string scratch_;  // CSV cells, reused
  std::string fields_;   // CSV: the fields cell of an event that is not a block event, reused
};

}  // namespace iotrace

#endif  // IOTRACE_OUTPUT_EVENT_DUMP_H_
