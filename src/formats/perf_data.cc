#include "iotrace/formats/perf_data.h"

#include <bit>

#include "absl/strings/str_cat.h"

namespace iotrace::perf {
namespace {

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

}  // namespace

std::string FeatureName(int feature) {
  static constexpr const char* kNames[] = {
      "reserved",        "tracing_data", "build_id",     "hostname",     "os_release",
      "version",         "arch",         "nr_cpus",      "cpu_desc",     "cpuid",
      "total_mem",       "cmdline",      "event_desc",   "cpu_topology", "numa_topology",
      "branch_stack",    "pmu_mappings", "group_desc",   "auxtrace",     "stat",
      "cache",           "sample_time",  "mem_topology", "clockid",      "dir_format",
      "bpf_prog_info",   "bpf_btf",      "compressed",   "cpu_pmu_caps", "clock_data",
      "hybrid_topology", "pmu_caps",
  };
  if (feature >= 0 && feature < static_cast<int>(std::size(kNames))) return kNames[feature];
  return absl::StrCat("feature_", feature);
}

size_t SampleIdSize(uint64_t sample_type) {
  size_t n = 0;
  if (sample_type & PERF_SAMPLE_TID) n += 8;
  if (sample_type & PERF_SAMPLE_TIME) n += 8;
  if (sample_type & PERF_SAMPLE_ID) n += 8;
  if (sample_type & PERF_SAMPLE_STREAM_ID) n += 8;
  if (sample_type & PERF_SAMPLE_CPU) n += 8;
  if (sample_type & PERF_SAMPLE_IDENTIFIER) n += 8;
  return n;
}

void AppendSampleId(uint64_t sample_type, const SampleId& id, std::string* out) {
  if (sample_type & PERF_SAMPLE_TID) {
    Put<uint32_t>(out, id.pid);
    Put<uint32_t>(out, id.tid);
  }
  if (sample_type & PERF_SAMPLE_TIME) Put<uint64_t>(out, id.time);
  if (sample_type & PERF_SAMPLE_ID) Put<uint64_t>(out, id.id);
  if (sample_type & PERF_SAMPLE_STREAM_ID) Put<uint64_t>(out, id.stream_id);
  if (sample_type & PERF_SAMPLE_CPU) {
    Put<uint32_t>(out, id.cpu);
    Put<uint32_t>(out, 0);
  }
  if (sample_type & PERF_SAMPLE_IDENTIFIER) Put<uint64_t>(out, id.id);
}

size_t ReadValueSize(uint64_t read_format) {
  size_t n = 8;
  if (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) n += 8;
  if (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING) n += 8;
  if (read_format & PERF_FORMAT_ID) n += 8;
  if (read_format & PERF_FORMAT_LOST) n += 8;
  return n;
}

int SampleIdPos(uint64_t sample_type) {
  if (sample_type & PERF_SAMPLE_IDENTIFIER) return 0;
  if (!(sample_type & PERF_SAMPLE_ID)) return -1;
  int idx = 0;
  if (sample_type & PERF_SAMPLE_IP) ++idx;
  if (sample_type & PERF_SAMPLE_TID) ++idx;
  if (sample_type & PERF_SAMPLE_TIME) ++idx;
  if (sample_type & PERF_SAMPLE_ADDR) ++idx;
  return idx;
}

int TrailerIdPos(uint64_t sample_type) {
  if (sample_type & PERF_SAMPLE_IDENTIFIER) return 1;
  if (!(sample_type & PERF_SAMPLE_ID)) return -1;
  int idx = 1;
  if (sample_type & PERF_SAMPLE_CPU) ++idx;
  if (sample_type & PERF_SAMPLE_STREAM_ID) ++idx;
  return idx;
}

bool NeverFinished(ByteView file, const FileHeader& h, uint64_t hsize) {
  if (h.data.size != 0 || h.data.offset < hsize || h.data.offset >= file.size) return false;
  uint64_t count = 0;
  for (uint64_t word : h.features) count += static_cast<uint64_t>(std::popcount(word));
  if (count == 0) return true;
  // Is there a feature table at the data offset, naming sections after it in the file?
  if (count > (file.size - h.data.offset) / sizeof(FileSection)) return true;
  const uint64_t table_end = h.data.offset + count * sizeof(FileSection);
  for (uint64_t i = 0; i < count; ++i) {
    FileSection s;
    LoadAt(file, h.data.offset + i * sizeof(FileSection), &s);
    if (s.offset < hsize || s.offset > file.size || s.size > file.size - s.offset) return true;
    if (s.offset < table_end && s.offset + s.size > h.data.offset) return true;  // overlaps
  }
  return false;
}

}  // namespace iotrace::perf
