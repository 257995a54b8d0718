#include "iotrace/formats/perf_pipe.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/perf_data_writer.h"
#include "iotrace/formats/perf_inflate.h"
#include "iotrace/formats/tracing_data.h"

namespace iotrace {
namespace {

// A run of kernel records, copied in one AppendData. Runs are cut at this size so that a huge
// stream never needs one huge write, and the bytes behind can be released as it goes.
constexpr uint64_t kMaxRun = uint64_t{8} << 20;

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

namespace {

// One pass over the stream: the writer is created once the attrs and the tracing data have
// gone by (perf sends them first); kernel records met before that are remembered by position.
class PipeConverter {
 public:
  PipeConverter(ByteView stream, const std::string& out_path,
                const std::function<void(uint64_t)>& release, PipeConversion* result)
      : stream_(stream), out_path_(out_path), release_(release), result_(result) {}

  absl::Status Run() {
    uint64_t pos = perf::kPipeHeaderSize;
    while (pos < stream_.size) {
      perf::EventHeader h;
      if (!LoadAt(stream_, pos, &h) || h.size < sizeof(h) || !stream_.Contains(pos, h.size)) {
        result_->truncated = 1;
        break;
      }
      const ByteView body = stream_.Sub(pos + sizeof(h), h.size - sizeof(h));
      uint64_t next = pos + h.size;
      ByteView compressed;
      if (h.type < perf::kRecordHeaderAttr || h.type == perf::kRecordFinishedRound) {
        // The kernel's records (and perf's round marks): copied as they are, in runs.
        IOTRACE_RETURN_IF_ERROR(AddRecord(pos, next));
        if (h.type < perf::kRecordHeaderAttr) ++result_->records;
      } else if (PerfRecordInflater::IsCompressed(stream_, pos, h.type, h.size, &compressed)) {
        // perf record -z: the kernel's records, inflated (perf_inflate.h). Damaged, the stream
        // cannot go on: what came before is kept, as for a stream cut short.
        std::string records;
        if (!inflater_.Inflate(compressed, &records)) {
          result_->compressed_damaged = 1;
          break;
        }
        IOTRACE_RETURN_IF_ERROR(AddInflated(std::move(records)));
      } else if (h.type == perf::kRecordHeaderAttr) {
        IOTRACE_RETURN_IF_ERROR(AddAttr(pos, body));
      } else if (h.type == perf::kRecordHeaderTracingData) {
        // Its bytes follow the record, outside header.size, padded to 8.
        uint32_t size = 0;
        if (!LoadAt(body, 0, &size) || !stream_.Contains(next, size)) {
          result_->truncated = 1;
          break;
        }
        tracing_ = stream_.Sub(next, size);
        next += perf::Align8(size);
      } else if (h.type == perf::kRecordAuxtrace) {
        uint64_t size = 0;  // AUX data follows the record too
        if (!LoadAt(body, 0, &size) || size > stream_.size - next) {
          result_->truncated = 1;
          break;
        }
        next += size;
      } else if (h.type == perf::kRecordHeaderFeature) {
        AddFeature(body);
      }
      // Other user records (EVENT_UPDATE, ID_INDEX, THREAD_MAP, CPU_MAP, TIME_CONV, ...)
      // carry nothing the report reads.
      pos = next;
    }
    // A record the last compressed batch began and the stream never finished: cut short.
    if (inflater_.held() != 0) result_->truncated = 1;
    if (writer_ == nullptr) IOTRACE_RETURN_IF_ERROR(CreateWriter());
    IOTRACE_RETURN_IF_ERROR(Flush());
    return writer_->Finish();
  }

 private:
  // The writer, as soon as the attrs and the tracing data have gone by.
  absl::Status CreateWriterOnceKnown() {
    if (writer_ != nullptr || events_.empty() || tracing_.empty()) return absl::OkStatus();
    return CreateWriter();
  }

  absl::Status AddRecord(uint64_t begin, uint64_t end) {
    IOTRACE_RETURN_IF_ERROR(CreateWriterOnceKnown());
    if (!runs_.empty() && runs_.back().first != kInflated && runs_.back().second == begin &&
        begin - runs_.back().first < kMaxRun) {
      runs_.back().second = end;
      return absl::OkStatus();
    }
    if (writer_ != nullptr) IOTRACE_RETURN_IF_ERROR(Flush());
    runs_.emplace_back(begin, end);
    return absl::OkStatus();
  }

  // Records inflated from a compressed one: after the runs before them (kept until the writer
  // exists, as runs are).
  absl::Status AddInflated(std::string records) {
    IOTRACE_RETURN_IF_ERROR(CreateWriterOnceKnown());
    if (writer_ != nullptr) {
      IOTRACE_RETURN_IF_ERROR(Flush());
      return writer_->AppendData(ByteView(records.data(), records.size()));
    }
    // perf sends the attrs and the tracing data first: a stream that holds back more than this
    // before them is not one to keep in memory.
    held_bytes_ += records.size();
    if (held_bytes_ > kMaxHeldInflated) {
      return absl::InvalidArgumentError(
          "pipe-mode perf.data: more than 64 MiB of compressed records before its attrs and "
          "tracing data");
    }
    runs_.emplace_back(kInflated, inflated_.size());
    inflated_.push_back(std::move(records));
    return absl::OkStatus();
  }

  absl::Status Flush() {
    for (const auto& [begin, end] : runs_) {
      if (begin == kInflated) {
        const std::string& records = inflated_[end];
        IOTRACE_RETURN_IF_ERROR(writer_->AppendData(ByteView(records.data(), records.size())));
        continue;
      }
      IOTRACE_RETURN_IF_ERROR(writer_->AppendData(stream_.Sub(begin, end - begin)));
      if (release_) release_(end);
    }
    runs_.clear();
    inflated_.clear();
    held_bytes_ = 0;
    return absl::OkStatus();
  }

  absl::Status AddAttr(uint64_t pos, ByteView body) {
    uint32_t attr_size = 0;
    if (!LoadAt(body, 4, &attr_size) || attr_size < PERF_ATTR_SIZE_VER0 ||
        attr_size > body.size) {
      return absl::InvalidArgumentError(
          absl::StrFormat("pipe-mode perf.data: bad attr record at offset %u", pos));
    }
    if (writer_ != nullptr) {
      ++result_->late_attrs;  // its samples are counted as of an unknown id
      return absl::OkStatus();
    }
    PerfEventSpec e;
    std::memcpy(&e.attr, body.data, std::min<size_t>(attr_size, sizeof(e.attr)));
    e.attr.size = sizeof(e.attr);
    for (uint64_t off = attr_size; off + 8 <= body.size; off += 8) {
      uint64_t id = 0;
      LoadAt(body, off, &id);
      e.ids.push_back(id);
    }
    events_.push_back(std::move(e));
    return absl::OkStatus();
  }

  void AddFeature(ByteView body) {
    uint64_t feature = 0;
    LoadAt(body, 0, &feature);
    ByteView data = body.Sub(8, body.size >= 8 ? body.size - 8 : 0);
    switch (feature) {
      case perf::kFeatHostname: host_.hostname = FeatureString(data); break;
      case perf::kFeatOsRelease: host_.os_release = FeatureString(data); break;
      case perf::kFeatVersion: host_.tool_version = FeatureString(data); break;
      case perf::kFeatArch: host_.arch = FeatureString(data); break;
      case perf::kFeatNrCpus:
        LoadAt(data, 0, &host_.nr_cpus_available);
        LoadAt(data, 4, &host_.nr_cpus_online);
        break;
      default: break;
    }
  }

  absl::Status CreateWriter() {
    if (events_.empty()) {
      return absl::InvalidArgumentError("pipe-mode perf.data without any attr record");
    }
    if (tracing_.empty()) {
      return WithHint(absl::InvalidArgumentError(
                          "pipe-mode perf.data without tracing data: the tracepoint fields "
                          "cannot be decoded"),
                      "record tracepoints with perf record -e SYSTEM:EVENT (perf then sends "
                      "their formats in the stream)");
    }
    auto decoded = DecodeTracingData(tracing_, /*keep_kallsyms=*/false);
    if (!decoded.ok()) return Annotate(decoded.status(), "pipe-mode perf.data");
    // Names for EVENT_DESC: the tracepoint's, from the formats; "attrN" for anything else.
    std::vector<std::pair<uint32_t, std::string>> names;
    for (const FormatText& f : decoded->meta.event_formats) {
      auto fmt = ParseUntrustedEventFormat(f.system, f.text);
      if (fmt.ok()) names.emplace_back(fmt->id, fmt->FullName());
    }
    std::vector<PerfEventSpec> kept;
    for (size_t i = 0; i < events_.size(); ++i) {
      PerfEventSpec& e = events_[i];
      if (e.ids.empty()) continue;  // its samples cannot be told apart: counted unknown
      e.name = absl::StrFormat("attr%u", i);
      if (e.attr.type == PERF_TYPE_TRACEPOINT) {
        for (const auto& [id, name] : names) {
          if (id == e.attr.config) e.name = name;
        }
      }
      kept.push_back(std::move(e));
    }
    if (kept.empty()) return absl::InvalidArgumentError("pipe-mode perf.data: no attr has an id");
    IOTRACE_ASSIGN_OR_RETURN(writer_, PerfDataWriter::Create(out_path_, std::move(kept),
                                                             decoded->meta, host_));
    return absl::OkStatus();
  }

  ByteView stream_;
  const std::string& out_path_;
  const std::function<void(uint64_t)>& release_;
  PipeConversion* result_;
  std::vector<PerfEventSpec> events_;
  ByteView tracing_;
  HostInfo host_;
  // [begin, end) of kernel records; {kInflated, i}: inflated_[i].
  std::vector<std::pair<uint64_t, uint64_t>> runs_;
  static constexpr uint64_t kInflated = ~uint64_t{0};
  std::vector<std::string> inflated_;
  uint64_t held_bytes_ = 0;  // in inflated_
  static constexpr uint64_t kMaxHeldInflated = uint64_t{64} << 20;
  PerfRecordInflater inflater_{stream_.size};
  std::unique_ptr<PerfDataWriter> writer_;
};

}  // namespace

absl::Status ConvertPipePerfData(ByteView stream, const std::string& out_path,
                                 PipeConversion* result,
                                 const std::function<void(uint64_t)>& release) {
  *result = PipeConversion{};
  if (!IsPipePerfData(stream)) {
    return absl::InvalidArgumentError("not a pipe-mode perf.data stream");
  }
  return PipeConverter(stream, out_path, release, result).Run();
}

}  // namespace iotrace
