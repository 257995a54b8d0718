#include "iotrace/perf_pipe.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "iotrace/event_format.h"
#include "iotrace/perf_data.h"
#include "iotrace/perf_data_writer.h"
#include "iotrace/status.h"
#include "iotrace/tracing_data.h"

namespace iotrace {
namespace {

// A run of kernel records, copied in one AppendData. Runs are cut at this size so that a huge
// stream never needs one huge write.
constexpr uint64_t kMaxRun = uint64_t{64} << 20;

// A HEADER_FEATURE string (u32 length, then the padded bytes) as a C string.
std::string FeatureString(ByteView data) {
  uint32_t len = 0;
  if (!LoadAt(data, 0, &len) || !data.Contains(4, len)) return "";
  std::string_view s = data.Sub(4, len).AsString();
  return std::string(s.substr(0, s.find('\0')));
}

}  // namespace

bool IsPipePerfData(ByteView file) {
  uint64_t magic = 0, size = 0;
  return LoadAt(file, 0, &magic) && LoadAt(file, 8, &size) && magic == perf::kMagic &&
         size == perf::kPipeHeaderSize;
}

absl::Status ConvertPipePerfData(ByteView stream, const std::string& out_path,
                                 PipeConversion* result) {
  *result = PipeConversion{};
  if (!IsPipePerfData(stream)) {
    return absl::InvalidArgumentError("not a pipe-mode perf.data stream");
  }
  std::vector<PerfEventSpec> events;
  ByteView tracing;
  HostInfo host;
  std::vector<std::pair<uint64_t, uint64_t>> runs;  // [begin, end) of kernel records
  uint64_t pos = perf::kPipeHeaderSize;
  while (pos < stream.size) {
    perf::EventHeader h;
    if (!LoadAt(stream, pos, &h) || h.size < sizeof(h) || !stream.Contains(pos, h.size)) {
      result->truncated = 1;
      break;
    }
    const ByteView body = stream.Sub(pos + sizeof(h), h.size - sizeof(h));
    uint64_t next = pos + h.size;
    if (h.type < perf::kRecordHeaderAttr || h.type == perf::kRecordFinishedRound ||
        h.type == perf::kRecordCompressed) {
      // The kernel's records (and perf's round marks, and compressed batches that the reader
      // counts as such): copied as they are.
      if (!runs.empty() && runs.back().second == pos && pos - runs.back().first < kMaxRun) {
        runs.back().second = next;
      } else {
        runs.emplace_back(pos, next);
      }
      if (h.type < perf::kRecordHeaderAttr) ++result->records;
    } else if (h.type == perf::kRecordHeaderAttr) {
      uint32_t attr_size = 0;
      if (!LoadAt(body, 4, &attr_size) || attr_size < PERF_ATTR_SIZE_VER0 ||
          attr_size > body.size) {
        return absl::InvalidArgumentError(
            absl::StrFormat("pipe-mode perf.data: bad attr record at offset %u", pos));
      }
      PerfEventSpec e;
      std::memcpy(&e.attr, body.data, std::min<size_t>(attr_size, sizeof(e.attr)));
      e.attr.size = sizeof(e.attr);
      for (uint64_t off = attr_size; off + 8 <= body.size; off += 8) {
        uint64_t id = 0;
        LoadAt(body, off, &id);
        e.ids.push_back(id);
      }
      events.push_back(std::move(e));
    } else if (h.type == perf::kRecordHeaderTracingData) {
      // Its bytes follow the record, outside header.size, padded to 8.
      uint32_t size = 0;
      if (!LoadAt(body, 0, &size) || !stream.Contains(next, size)) {
        result->truncated = 1;
        break;
      }
      tracing = stream.Sub(next, size);
      next += perf::Align8(size);
    } else if (h.type == perf::kRecordAuxtrace) {
      uint64_t size = 0;  // AUX data follows the record too
      if (!LoadAt(body, 0, &size) || size > stream.size - next) {
        result->truncated = 1;
        break;
      }
      next += size;
    } else if (h.type == perf::kRecordHeaderFeature) {
      uint64_t feature = 0;
      LoadAt(body, 0, &feature);
      ByteView data = body.Sub(8, body.size >= 8 ? body.size - 8 : 0);
      switch (feature) {
        case perf::kFeatHostname: host.hostname = FeatureString(data); break;
        case perf::kFeatOsRelease: host.os_release = FeatureString(data); break;
        case perf::kFeatVersion: host.tool_version = FeatureString(data); break;
        case perf::kFeatArch: host.arch = FeatureString(data); break;
        case perf::kFeatNrCpus:
          LoadAt(data, 0, &host.nr_cpus_available);
          LoadAt(data, 4, &host.nr_cpus_online);
          break;
        default: break;
      }
    }
    // Other user records (EVENT_UPDATE, ID_INDEX, THREAD_MAP, CPU_MAP, TIME_CONV, ...) carry
    // nothing the report reads.
    pos = next;
  }
  if (events.empty()) {
    return absl::InvalidArgumentError("pipe-mode perf.data without any attr record");
  }
  if (tracing.empty()) {
    return WithHint(absl::InvalidArgumentError(
                        "pipe-mode perf.data without tracing data: the tracepoint fields cannot "
                        "be decoded"),
                    "record tracepoints with perf record -e SYSTEM:EVENT (perf then sends their "
                    "formats in the stream)");
  }
  auto decoded = DecodeTracingData(tracing);
  if (!decoded.ok()) return Annotate(decoded.status(), "pipe-mode perf.data");
  // Names for EVENT_DESC: the tracepoint's, from the formats; "attr N" for anything else.
  std::vector<std::pair<uint32_t, std::string>> names;
  for (const FormatText& f : decoded->meta.event_formats) {
    auto fmt = ParseUntrustedEventFormat(f.system, f.text);
    if (fmt.ok()) names.emplace_back(fmt->id, fmt->FullName());
  }
  std::vector<PerfEventSpec> kept;
  for (size_t i = 0; i < events.size(); ++i) {
    PerfEventSpec& e = events[i];
    if (e.ids.empty()) continue;  // its samples (if any) cannot be told apart: counted unknown
    e.name = absl::StrFormat("attr%u", i);
    if (e.attr.type == PERF_TYPE_TRACEPOINT) {
      for (const auto& [id, name] : names) {
        if (id == e.attr.config) e.name = name;
      }
    }
    kept.push_back(std::move(e));
  }
  if (kept.empty()) return absl::InvalidArgumentError("pipe-mode perf.data: no attr has an id");
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<PerfDataWriter> writer,
                           PerfDataWriter::Create(out_path, std::move(kept), decoded->meta, host));
  for (const auto& [begin, end] : runs) {
    IOTRACE_RETURN_IF_ERROR(writer->AppendData(stream.Sub(begin, end - begin)));
  }
  return writer->Finish();
}

}  // namespace iotrace
