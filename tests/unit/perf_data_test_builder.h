// Test helpers for perf.data: encodes perf ring records exactly as the kernel writes them for a
// given attr (kernel/events/core.c, perf_output_sample and perf_event__output_id_sample), builds
// block_rq_* tracepoint payloads from the fixture formats, and writes synthetic perf.data files
// through PerfDataWriter the way `iotrace record` does (per-CPU sorted chunks, one drain after
// another, a round mark after each drain). Header-only so unit tests and benchmarks share it.
#ifndef IOTRACE_TESTS_UNIT_PERF_DATA_TEST_BUILDER_H_
#define IOTRACE_TESTS_UNIT_PERF_DATA_TEST_BUILDER_H_

#include <linux/perf_event.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "fixtures.h"
#include "iotrace/base/status.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/perf_data_writer.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace::test {

// A perf.data header's data offset and size (u64 each) and feature bitmap (32 bytes).
inline constexpr size_t kHeaderDataOffsetAt = 40, kHeaderDataSizeAt = 48, kHeaderFeaturesAt = 72,
                        kHeaderFeaturesSize = 32;

inline uint64_t HeaderU64(const std::string& file, size_t at) {
  uint64_t v;
  std::memcpy(&v, file.data() + at, 8);
  return v;
}

// The bytes a kill leaves of a finished iotrace perf.data: the same up to the end of the data,
// the header without data size or features (as PerfDataWriter::WritePrefix wrote it), no
// feature table after the data.
inline std::string Unfinished(const std::string& finished) {
  std::string b = finished.substr(
      0, HeaderU64(finished, kHeaderDataOffsetAt) + HeaderU64(finished, kHeaderDataSizeAt));
  std::memset(b.data() + kHeaderDataSizeAt, 0, 8);
  std::memset(b.data() + kHeaderFeaturesAt, 0, kHeaderFeaturesSize);
  return b;
}

inline std::string ReadFixtureFile(const std::string& relative) {
  return ::iotrace::test::ReadFixture(relative);
}

// The attr `iotrace record` opens per tracepoint (see the perfdata brief).
inline constexpr uint64_t kIotraceSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;

inline perf_event_attr IotraceAttr(uint64_t tracepoint_id,
                                   uint64_t sample_type = kIotraceSampleType) {
  perf_event_attr a{};
  a.type = PERF_TYPE_TRACEPOINT;
  a.size = sizeof(a);
  a.config = tracepoint_id;
  a.sample_period = 1;
  a.sample_type = sample_type;
  a.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
  a.disabled = 1;
  a.sample_id_all = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  return a;
}

// Everything PERF_RECORD_SAMPLE can carry up to RAW, plus bytes after RAW (BRANCH_STACK, ...)
// that readers must ignore.
struct SampleFields {
  uint64_t id = 0;  // IDENTIFIER and ID
  uint64_t ip = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 1;
  std::vector<uint64_t> read;  // READ words, already laid out for the attr's read_format
  std::vector<uint64_t> callchain;
  std::string raw;        // the tracepoint record (common header + fields)
  std::string after_raw;  // appended verbatim after RAW (e.g. a BRANCH_STACK)
};

class PerfRecordBuilder {
 public:
  template <typename T>
  static void Put(std::string* out, T v) {
    out->append(reinterpret_cast<const char*>(&v), sizeof(v));
  }

  PerfRecordBuilder& AddSample(const perf_event_attr& attr, const SampleFields& s) {
    const uint64_t st = attr.sample_type;
    std::string b;
    if (st & PERF_SAMPLE_IDENTIFIER) Put<uint64_t>(&b, s.id);
    if (st & PERF_SAMPLE_IP) Put<uint64_t>(&b, s.ip);
    if (st & PERF_SAMPLE_TID) {
      Put<uint32_t>(&b, s.pid);
      Put<uint32_t>(&b, s.tid);
    }
    if (st & PERF_SAMPLE_TIME) Put<uint64_t>(&b, s.time);
    if (st & PERF_SAMPLE_ADDR) Put<uint64_t>(&b, s.addr);
    if (st & PERF_SAMPLE_ID) Put<uint64_t>(&b, s.id);
    if (st & PERF_SAMPLE_STREAM_ID) Put<uint64_t>(&b, s.stream_id);
    if (st & PERF_SAMPLE_CPU) {
      Put<uint32_t>(&b, s.cpu);
      Put<uint32_t>(&b, 0);
    }
    if (st & PERF_SAMPLE_PERIOD) Put<uint64_t>(&b, s.period);
    if (st & PERF_SAMPLE_READ) {
      for (uint64_t v : s.read) Put<uint64_t>(&b, v);
    }
    if (st & PERF_SAMPLE_CALLCHAIN) {
      Put<uint64_t>(&b, s.callchain.size());
      for (uint64_t ip : s.callchain) Put<uint64_t>(&b, ip);
    }
    if (st & PERF_SAMPLE_RAW) {
      // The kernel pads the raw data so that the u32 size plus the data fill whole u64s
      // (perf_trace_buf_alloc), and zeroes the padding.
      const uint32_t size = static_cast<uint32_t>(perf::Align8(s.raw.size() + 4) - 4);
      Put<uint32_t>(&b, size);
      b.append(s.raw);
      b.append(size - s.raw.size(), '\0');
    }
    b.append(s.after_raw);
    return AddRecord(perf::kRecordSample, PERF_RECORD_MISC_KERNEL, b);
  }

  PerfRecordBuilder& AddLost(const perf_event_attr& attr, uint64_t id, uint64_t lost,
                             const perf::SampleId& sid) {
    std::string b;
    Put<uint64_t>(&b, id);
    Put<uint64_t>(&b, lost);
    if (attr.sample_id_all) perf::AppendSampleId(attr.sample_type, sid, &b);
    return AddRecord(perf::kRecordLost, 0, b);
  }

  PerfRecordBuilder& AddLostSamples(const perf_event_attr& attr, uint64_t lost,
                                    const perf::SampleId& sid) {
    std::string b;
    Put<uint64_t>(&b, lost);
    if (attr.sample_id_all) perf::AppendSampleId(attr.sample_type, sid, &b);
    return AddRecord(perf::kRecordLostSamples, 0, b);
  }

  PerfRecordBuilder& AddComm(const perf_event_attr& attr, uint32_t pid, uint32_t tid,
                             std::string_view comm, const perf::SampleId& sid) {
    std::string b;
    Put<uint32_t>(&b, pid);
    Put<uint32_t>(&b, tid);
    b.append(comm);
    b.push_back('\0');
    b.resize(perf::Align8(b.size()), '\0');
    if (attr.sample_id_all) perf::AppendSampleId(attr.sample_type, sid, &b);
    return AddRecord(perf::kRecordComm, 0, b);
  }

  PerfRecordBuilder& AddFinishedRound() { return AddRecord(perf::kRecordFinishedRound, 0, ""); }

  // Any record: header + body (padded to 8 unless `pad` is false).
  PerfRecordBuilder& AddRecord(uint32_t type, uint16_t misc, std::string_view body,
                               bool pad = true) {
    size_t size = sizeof(perf::EventHeader) + body.size();
    if (pad) size = perf::Align8(size);
    perf::EventHeader h{type, misc, static_cast<uint16_t>(size)};
    Put(&bytes_, h);
    bytes_.append(body);
    bytes_.resize(bytes_.size() + (size - sizeof(h) - body.size()), '\0');
    return *this;
  }

  const std::string& bytes() const { return bytes_; }
  ByteView view() const { return ByteView(bytes_.data(), bytes_.size()); }
  void Clear() { bytes_.clear(); }

 private:
  std::string bytes_;
};

// A block_rq_* request as its tracepoint records it.
struct BlockRq {
  int32_t common_pid = 0;
  uint32_t dev = (7u << 20) | 3u;  // kernel dev_t: MAJOR << 20 | MINOR (loop3)
  uint64_t sector = 0;
  uint32_t nr_sector = 8;
  uint32_t bytes = 4096;
  int32_t error = 0;
  std::string rwbs = "W";
  std::string comm = "fio";
};

// The raw record of `format` for `rq`: fields are placed by name at the format's offsets; the
// __data_loc cmd string is empty, as the kernel writes it for file system I/O.
inline std::string EncodeBlockRq(const EventFormat& format, const BlockRq& rq) {
  uint32_t fixed = 0;
  for (const FieldInfo& f : format.fields) fixed = std::max(fixed, f.offset + f.size);
  std::string raw(fixed, '\0');
  auto put = [&](const char* name, const void* value, size_t size) {
    const FieldInfo* f = format.FindField(name);
    if (f == nullptr) return;
    std::memcpy(raw.data() + f->offset, value, std::min<size_t>(size, f->size));
  };
  const uint16_t type = static_cast<uint16_t>(format.id);
  put("common_type", &type, 2);
  put("common_pid", &rq.common_pid, 4);
  put("dev", &rq.dev, 4);
  put("sector", &rq.sector, 8);
  put("nr_sector", &rq.nr_sector, 4);
  put("bytes", &rq.bytes, 4);
  put("error", &rq.error, 4);
  put("rwbs", rq.rwbs.c_str(), rq.rwbs.size() + 1);
  put("comm", rq.comm.c_str(), rq.comm.size() + 1);
  if (const FieldInfo* cmd = format.FindField("cmd"); cmd != nullptr && cmd->is_dynamic) {
    const uint32_t loc = (1u << 16) | static_cast<uint32_t>(raw.size());  // len 1, at the end
    std::memcpy(raw.data() + cmd->offset, &loc, 4);
    raw.push_back('\0');
  }
  return raw;
}

// The block tracepoints of the fixtures, their formats, and the tracing metadata a writer needs.
struct BlockSetup {
  TracingMetadata meta;
  std::vector<EventFormat> formats;  // [0] block_rq_issue, [1] block_rq_complete, [2] insert
};

inline BlockSetup LoadBlockSetup() {
  BlockSetup s;
  s.meta.header_page = ReadFixtureFile("formats/6.18/events/header_page");
  s.meta.header_event = ReadFixtureFile("formats/6.18/events/header_event");
  for (const char* name : {"block_rq_issue", "block_rq_complete", "block_rq_insert"}) {
    std::string text = test::ReadBlockFormat(name);
    s.meta.event_formats.push_back({"block", text});
    auto f = ParseEventFormat("block", text);
    if (f.ok()) s.formats.push_back(*f);
  }
  return s;
}

inline HostInfo TestHost() {
  HostInfo h;
  h.hostname = "testhost";
  h.os_release = "6.18.0-test";
  h.version = "#1 SMP";
  h.arch = "x86_64";
  h.cpu_desc = "Test CPU";
  h.cpuid = "GenuineTest,1,2,3";
  h.tool_version = "iotrace test";
  h.nr_cpus_online = 2;
  h.nr_cpus_available = 2;
  h.total_mem_kb = 1 << 20;
  h.cmdline = {"iotrace", "record", "-o", "test.data"};
  h.clockid = CLOCK_MONOTONIC;
  h.clock_ref_wall_ns = 1700000000000000000ull;
  h.clock_ref_clock_ns = 1000000000ull;
  return h;
}

// The id of event `event` on `cpu` in synthetic files.
inline uint64_t SyntheticId(size_t event, uint32_t cpu, uint32_t cpus) {
  return 1000 + event * cpus + cpu;
}

inline std::vector<PerfEventSpec> BlockSpecs(const BlockSetup& setup, uint32_t cpus,
                                             size_t nr_events = 2) {
  std::vector<PerfEventSpec> specs;
  for (size_t e = 0; e < nr_events && e < setup.formats.size(); ++e) {
    PerfEventSpec spec;
    spec.attr = IotraceAttr(setup.formats[e].id);
    spec.name = setup.formats[e].FullName();
    for (uint32_t c = 0; c < cpus; ++c) spec.ids.push_back(SyntheticId(e, c, cpus));
    specs.push_back(spec);
  }
  return specs;
}

// What a reader must deliver for one synthetic sample.
struct ExpectedEvent {
  uint64_t ts;
  uint32_t cpu;
  int32_t pid;
  uint16_t type;
  uint64_t sector;
};

struct SyntheticOptions {
  uint64_t samples = 1000;
  uint32_t cpus = 2;
  uint64_t drain_interval_ns = 50000;  // a drain of every CPU's ring per interval
  uint64_t drain_stagger_ns = 20000;   // CPU c is drained c * stagger after CPU 0;
                                       // (cpus - 1) * stagger must stay below the interval
  bool round_marks = true;
  uint32_t seed = 1;
  // Every n-th drain of a CPU starts with the last `repeat_records` samples of that CPU's drain
  // before it written again, as perf record 6.1 does on this machine (0: never). The copies are
  // not in `expected`; *repeated (when set) receives their number.
  uint32_t repeat_every = 0;
  uint32_t repeat_records = 1;
  uint64_t* repeated = nullptr;
  // Every n-th sample's raw data is padded (after the event's fields, which keep their place) to
  // a size between large_min_bytes and large_max_bytes (0: none padded): records of a few KiB
  // among the small ones, as a tracepoint with a long dynamic array writes them.
  uint32_t large_every = 0;
  uint32_t large_min_bytes = 2100;
  uint32_t large_max_bytes = 9000;
};

// Writes issue/complete samples, CPUs chosen at random, times strictly increasing in
// generation order. Drains are modelled as the recorder does them: CPU c's ring is drained
// (one AppendData) at round start + c * stagger, so a round holds samples of CPU 0 that are
// older than samples of CPU 1 in the round before; a round mark follows each full drain.
// `expected` (optional) receives every sample in time order.
inline absl::Status WriteSyntheticBlockFile(const std::string& path, const SyntheticOptions& o,
                                            std::vector<ExpectedEvent>* expected) {
  BlockSetup setup = LoadBlockSetup();
  if (setup.formats.size() < 2) return absl::NotFoundError("block fixture formats missing");
  std::vector<PerfEventSpec> specs = BlockSpecs(setup, o.cpus);
  IOTRACE_ASSIGN_OR_RETURN(auto writer,
                           PerfDataWriter::Create(path, specs, setup.meta, TestHost()));
  // Raw templates, patched per sample at the sector field.
  std::string raw[2];
  uint32_t sector_off[2];
  for (int e = 0; e < 2; ++e) {
    BlockRq rq;
    rq.common_pid = 100;
    raw[e] = EncodeBlockRq(setup.formats[e], rq);
    sector_off[e] = setup.formats[e].FindField("sector")->offset;
  }
  const perf_event_attr attr = specs[0].attr;  // both events share the sample layout
  // Ring contents per CPU since its last drain. CPU c is drained at round_start + c * stagger;
  // the round mark follows the last CPU's drain.
  std::vector<std::string> ring(o.cpus);
  // Per CPU: the samples of its last drain (for repeat_every) and the number of its drains.
  std::vector<std::vector<std::string>> drained(o.cpus), pending(o.cpus);
  std::vector<uint64_t> drains(o.cpus);
  if (o.repeated != nullptr) *o.repeated = 0;
  uint64_t t = 1000000;
  uint64_t round_start = t + o.drain_interval_ns;
  uint32_t next_cpu = 0;
  auto flush = [&](uint32_t c) -> absl::Status {
    if (ring[c].empty()) return absl::OkStatus();
    std::string bytes;
    if (o.repeat_every != 0 && ++drains[c] % o.repeat_every == 0) {
      const size_t n = std::min<size_t>(drained[c].size(), o.repeat_records);
      for (size_t i = drained[c].size() - n; i < drained[c].size(); ++i) bytes += drained[c][i];
      if (o.repeated != nullptr) *o.repeated += n;
    }
    bytes += ring[c];
    absl::Status st = writer->AppendData(ByteView(bytes.data(), bytes.size()));
    ring[c].clear();
    drained[c].swap(pending[c]);
    pending[c].clear();
    return st;
  };
  std::mt19937 rng(o.seed);
  SampleFields s;
  PerfRecordBuilder b;
  for (uint64_t i = 0; i < o.samples; ++i) {
    t += 1 + rng() % 997;
    while (t >= round_start + next_cpu * o.drain_stagger_ns) {
      IOTRACE_RETURN_IF_ERROR(flush(next_cpu));
      if (++next_cpu == o.cpus) {
        if (o.round_marks) IOTRACE_RETURN_IF_ERROR(writer->AppendFinishedRound());
        next_cpu = 0;
        round_start += o.drain_interval_ns;
      }
    }
    const uint32_t cpu = rng() % o.cpus;
    const int e = static_cast<int>(i & 1);
    const uint64_t sector = i * 8;
    std::memcpy(raw[e].data() + sector_off[e], &sector, 8);
    s.id = SyntheticId(e, cpu, o.cpus);
    s.pid = s.tid = 100 + cpu;
    s.time = t;
    s.cpu = cpu;
    s.raw = raw[e];
    if (o.large_every != 0 && i % o.large_every == o.large_every - 1) {
      s.raw.resize(o.large_min_bytes + rng() % (o.large_max_bytes - o.large_min_bytes + 1), '\x5a');
    }
    b.Clear();
    b.AddSample(attr, s);
    ring[cpu] += b.bytes();
    if (o.repeat_every != 0) pending[cpu].emplace_back(b.bytes());
    if (expected != nullptr) {
      expected->push_back({t, cpu, static_cast<int32_t>(100 + cpu),
                           static_cast<uint16_t>(setup.formats[e].id), sector});
    }
  }
  for (uint32_t c = 0; c < o.cpus; ++c) IOTRACE_RETURN_IF_ERROR(flush(c));
  if (o.round_marks) IOTRACE_RETURN_IF_ERROR(writer->AppendFinishedRound());
  return writer->Finish();
}

// Keeps a copy of everything a reader delivers.
class CollectingSink : public EventSink {
 public:
  struct Event {
    uint64_t ts;
    uint32_t cpu;
    int32_t pid;
    int32_t tid;
    uint16_t type;
    std::string payload;
  };
  void OnEvent(const RawEvent& e) override {
    events.push_back({e.ts, e.cpu, e.pid, e.tid, e.type,
                      std::string(reinterpret_cast<const char*>(e.payload.data), e.payload.size)});
    order.push_back('e');
  }
  void OnLoss(const LossRecord& l) override {
    losses.push_back(l);
    order.push_back('l');
  }
  std::vector<Event> events;
  std::vector<LossRecord> losses;
  std::string order;  // 'e' / 'l' in delivery order
};

// The u64 field `name` of a delivered payload, per `format`.
inline uint64_t FieldOf(const EventFormat& format, const std::string& payload, const char* name) {
  const FieldInfo* f = format.FindField(name);
  uint64_t v = 0;
  if (f != nullptr && f->offset + f->size <= payload.size()) {
    std::memcpy(&v, payload.data() + f->offset, std::min<size_t>(f->size, 8));
  }
  return v;
}

}  // namespace iotrace::test

#endif  // IOTRACE_TESTS_UNIT_PERF_DATA_TEST_BUILDER_H_
