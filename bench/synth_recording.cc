#include "synth_recording.h"

#include <linux/perf_event.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/event/block_dev.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/perf_data_writer.h"
#include "iotrace/formats/trace_dat_writer.h"

namespace iotrace::bench {
namespace {

enum Kind { kInsert, kIssue, kComplete, kKinds };
constexpr const char* kEventNames[kKinds] = {"block_rq_insert", "block_rq_issue",
                                             "block_rq_complete"};
constexpr int32_t kFirstPid = 4000;  // CPU c's submitter is pid kFirstPid + c

// One kind's raw record, laid out by its format, patched per event at dev, sector and rwbs.
struct RawTemplate {
  std::string bytes;
  const FieldInfo* dev = nullptr;
  const FieldInfo* sector = nullptr;
  const FieldInfo* rwbs = nullptr;
  const FieldInfo* pid = nullptr;

  void Init(const EventFormat& format) {
    uint32_t size = 8;
    for (const FieldInfo& f : format.fields) size = std::max(size, f.offset + f.size);
    bytes.assign(size, '\0');
    auto put = [&](const char* name, const void* v, size_t n) {
      if (const FieldInfo* f = format.FindField(name)) {
        std::memcpy(&bytes[f->offset], v, std::min<size_t>(n, f->size));
      }
    };
    const uint16_t type = static_cast<uint16_t>(format.id);
    const uint32_t nr_sector = 8, nbytes = 4096;
    put("common_type", &type, 2);
    put("nr_sector", &nr_sector, 4);
    put("bytes", &nbytes, 4);
    put("comm", "fio", 4);
    // The kernel's __data_loc cmd of file system I/O: an empty string after the fixed fields.
    if (const FieldInfo* cmd = format.FindField("cmd"); cmd != nullptr && cmd->is_dynamic) {
      const uint32_t loc = (1u << 16) | static_cast<uint32_t>(bytes.size());
      std::memcpy(&bytes[cmd->offset], &loc, 4);
      bytes.push_back('\0');
    }
    dev = format.FindField("dev");
    sector = format.FindField("sector");
    rwbs = format.FindField("rwbs");
    pid = format.FindField("common_pid");
  }

  const std::string& Fill(uint32_t d, uint64_t s, bool write, int32_t p) {
    std::memcpy(&bytes[dev->offset], &d, 4);
    std::memcpy(&bytes[sector->offset], &s, 8);
    char op[2] = {write ? 'W' : 'R', '\0'};
    std::memcpy(&bytes[rwbs->offset], op, 2);
    std::memcpy(&bytes[pid->offset], &p, 4);
    return bytes;
  }
};

// Where the events go: one of the two file layouts.
class Sink {
 public:
  virtual ~Sink() = default;
  // `ts` is the true time: drains and flushes happen on it; `cpu_ts` is what CPU `cpu`'s clock
  // says (the true time plus its skew).
  virtual absl::Status Add(Kind kind, uint64_t ts, uint64_t cpu_ts, uint32_t cpu, int32_t pid,
                           const std::string& raw) = 0;
  virtual absl::Status Finish() = 0;
};

HostInfo SynthHost(uint32_t cpus) {
  HostInfo h;
  h.hostname = "synth";
  h.os_release = "6.18.0-synth";
  h.version = "#1 SMP PREEMPT_DYNAMIC";
  h.arch = "x86_64";
  h.cpu_desc = "Synthetic CPU";
  h.cpuid = "GenuineIntel,6,143,8";
  h.tool_version = "iotrace_synth";
  h.nr_cpus_online = h.nr_cpus_available = cpus;
  h.total_mem_kb = uint64_t{1} << 30;
  h.cmdline = {"iotrace", "record"};
  h.clockid = CLOCK_MONOTONIC;
  h.clock_ref_wall_ns = 1'700'000'000'000'000'000ull;
  h.clock_ref_clock_ns = 1'000'000'000ull;
  return h;
}

// perf.data as `iotrace record -b perf` writes it: samples go to their CPU's ring; a round of
// drains (each one AppendData of what the ring held) starts at a ring's wake-up watermark or
// the flush interval, CPU after CPU, and a FINISHED_ROUND follows every full round.
class PerfSink : public Sink {
 public:
  static absl::StatusOr<std::unique_ptr<PerfSink>> Create(const std::string& path,
                                                         const SynthOptions& o,
                                                         const TracingMetadata& meta,
                                                         const std::vector<EventFormat>& f) {
    auto sink = std::unique_ptr<PerfSink>(new PerfSink(o));
    std::vector<PerfEventSpec> specs;
    for (int k = 0; k < kKinds; ++k) {
      PerfEventSpec spec;
      spec.attr.type = PERF_TYPE_TRACEPOINT;
      spec.attr.size = sizeof(spec.attr);
      spec.attr.config = f[k].id;
      spec.attr.sample_period = 1;
      spec.attr.sample_type = kSampleType;
      spec.attr.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
      spec.attr.disabled = 1;
      spec.attr.sample_id_all = 1;
      spec.attr.use_clockid = 1;
      spec.attr.clockid = CLOCK_MONOTONIC;
      spec.name = f[k].FullName();
      for (uint32_t c = 0; c < o.cpus; ++c) spec.ids.push_back(sink->Id(k, c));
      specs.push_back(std::move(spec));
    }
    IOTRACE_ASSIGN_OR_RETURN(sink->writer_,
                             PerfDataWriter::Create(path, specs, meta, SynthHost(o.cpus)));
    // The submitters' names, as record writes those of the processes running at its start.
    for (uint32_t c = 0; c < o.cpus; ++c) {
      perf::SampleId sid;
      sid.pid = sid.tid = static_cast<uint32_t>(kFirstPid) + c;
      sid.id = sink->Id(0, c);
      sid.cpu = c;
      IOTRACE_RETURN_IF_ERROR(sink->writer_->AppendComm(sid.pid, sid.tid, "fio", sid));
    }
    return sink;
  }

  absl::Status Add(Kind kind, uint64_t ts, uint64_t cpu_ts, uint32_t cpu, int32_t pid,
                   const std::string& raw) override {
    if (last_round_ == 0) last_round_ = ts;
    while (in_round_ && ts >= round_start_ + next_cpu_ * drain_ns_) {
      IOTRACE_RETURN_IF_ERROR(DrainNext(ts));
    }
    // PERF_SAMPLE_IDENTIFIER, TID, TIME, CPU, RAW (perf_output_sample's order); RAW's u32 size
    // and data fill whole u64s, the padding zeroed.
    const uint32_t raw_size = static_cast<uint32_t>(perf::Align8(raw.size() + 4) - 4);
    const uint16_t size = static_cast<uint16_t>(sizeof(perf::EventHeader) + 8 + 8 + 8 + 8 + 4 +
                                                raw_size);
    std::string& ring = rings_[cpu];
    const perf::EventHeader h{perf::kRecordSample, PERF_RECORD_MISC_KERNEL, size};
    Put(&ring, h);
    Put<uint64_t>(&ring, Id(kind, cpu));
    Put<uint32_t>(&ring, static_cast<uint32_t>(pid));
    Put<uint32_t>(&ring, static_cast<uint32_t>(pid));
    Put<uint64_t>(&ring, cpu_ts);
    Put<uint32_t>(&ring, cpu);
    Put<uint32_t>(&ring, 0);
    Put<uint32_t>(&ring, raw_size);
    ring.append(raw);
    ring.append(raw_size - raw.size(), '\0');
    if (!in_round_ && (ring.size() >= wake_bytes_ || ts >= last_round_ + flush_)) {
      in_round_ = true;
      round_start_ = ts;
      next_cpu_ = 0;
    }
    return absl::OkStatus();
  }

  absl::Status Finish() override {
    // The round under way, then one that drains every ring.
    while (in_round_) IOTRACE_RETURN_IF_ERROR(DrainNext(0));
    in_round_ = true;
    next_cpu_ = 0;
    while (in_round_) IOTRACE_RETURN_IF_ERROR(DrainNext(0));
    return writer_->Finish();
  }

 private:
  static constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID |
                                          PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;

  explicit PerfSink(const SynthOptions& o)
      : rings_(o.cpus), wake_bytes_(o.wake_bytes), drain_ns_(o.drain_ns),
        flush_(o.flush_interval_ns) {}

  template <typename T>
  static void Put(std::string* out, const T& v) {
    out->append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  uint64_t Id(int kind, uint32_t cpu) const { return 1000 + kind * rings_.size() + cpu; }

  absl::Status DrainNext(uint64_t ts) {
    std::string& ring = rings_[next_cpu_];
    if (!ring.empty()) {
      IOTRACE_RETURN_IF_ERROR(writer_->AppendData(ByteView(ring.data(), ring.size())));
      ring.clear();
    }
    if (++next_cpu_ == rings_.size()) {
      IOTRACE_RETURN_IF_ERROR(writer_->AppendFinishedRound());
      in_round_ = false;
      last_round_ = ts;
    }
    return absl::OkStatus();
  }

  std::unique_ptr<PerfDataWriter> writer_;
  std::vector<std::string> rings_;
  uint64_t wake_bytes_;
  uint64_t drain_ns_;
  uint64_t flush_;
  bool in_round_ = false;
  uint64_t round_start_ = 0;
  uint64_t last_round_ = 0;
  uint32_t next_cpu_ = 0;
};

// trace.dat as `iotrace record -b ftrace` writes it: each CPU's ring-buffer sub-buffers
// (kernel/trace/ring_buffer.c's layout: a u64 time stamp, a u64 commit, then events whose
// 32-bit header holds type_len and a 27-bit delta, a time extend before a larger delta),
// stored whole when full, or partly filled once the flush interval passed since their first
// event (the capture stores the page being filled of a CPU that filled none meanwhile).
class TraceDatSink : public Sink {
 public:
  static absl::StatusOr<std::unique_ptr<TraceDatSink>> Create(const std::string& path,
                                                             const SynthOptions& o,
                                                             const TracingMetadata& meta) {
    auto sink = std::unique_ptr<TraceDatSink>(new TraceDatSink(o));
    TraceDatWriterOptions wo;
    wo.meta = meta;
    wo.nr_cpus = static_cast<int>(o.cpus);
    wo.trace_clock = "mono";
    wo.uname = "Linux synth 6.18.0-synth x86_64";
    wo.flush_interval_ms = static_cast<uint32_t>(o.flush_interval_ns / 1'000'000);
    IOTRACE_ASSIGN_OR_RETURN(sink->writer_, TraceDatWriter::Create(path, wo));
    sink->page_size_ = sink->writer_->page_size();
    for (Page& p : sink->pages_) p.bytes.assign(sink->page_size_, '\0');
    return sink;
  }

  absl::Status Add(Kind kind, uint64_t ts, uint64_t cpu_ts, uint32_t cpu, int32_t pid,
                   const std::string& raw) override {
    Page& p = pages_[cpu];
    if (p.used != 0 && ts >= p.first_true_ts + flush_) IOTRACE_RETURN_IF_ERROR(Store(cpu));
    const uint32_t len = static_cast<uint32_t>((raw.size() + 3) & ~size_t{3});
    const bool long_form = len > 4 * kRbTypeDataMax;
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (p.used == 0) {
        p.page_ts = p.last_ts = cpu_ts;
        p.first_true_ts = ts;
      }
      uint64_t delta = cpu_ts - p.last_ts;
      const bool extend = delta >= (uint64_t{1} << kRbTimeShift);
      const size_t need = (extend ? 8 : 0) + 4 + (long_form ? 4 : 0) + len;
      if (16 + p.used + need > page_size_) {
        IOTRACE_RETURN_IF_ERROR(Store(cpu));
        continue;
      }
      if (extend) {
        Put32(&p, kRbTypeTimeExtend | static_cast<uint32_t>(delta & ((1u << 27) - 1)) << 5);
        Put32(&p, static_cast<uint32_t>(delta >> kRbTimeShift));
        delta = 0;
      }
      if (long_form) {
        Put32(&p, static_cast<uint32_t>(delta) << 5);
        Put32(&p, len + 4);
      } else {
        Put32(&p, (len / 4) | static_cast<uint32_t>(delta) << 5);
      }
      std::memcpy(&p.bytes[16 + p.used], raw.data(), raw.size());
      std::memset(&p.bytes[16 + p.used + raw.size()], 0, len - raw.size());
      p.used += len;
      p.last_ts = cpu_ts;
      ++p.events;
      return absl::OkStatus();
    }
    return absl::InternalError("an event larger than a sub-buffer");
  }

  absl::Status Finish() override {
    for (uint32_t c = 0; c < pages_.size(); ++c) {
      if (pages_[c].used != 0) IOTRACE_RETURN_IF_ERROR(Store(c));
      // What the instance's per_cpu/cpuN/stats says after a run that lost nothing.
      const Page& p = pages_[c];
      writer_->SetCpuStats(static_cast<int>(c),
                           absl::StrFormat("entries: 0\noverrun: 0\ncommit overrun: 0\n"
                                           "bytes: 0\noldest event ts: %u.%06u\n"
                                           "now ts: %u.%06u\ndropped events: 0\n"
                                           "read events: %u\n",
                                           p.page_ts / 1'000'000'000, p.page_ts / 1000 % 1'000'000,
                                           p.last_ts / 1'000'000'000, p.last_ts / 1000 % 1'000'000,
                                           p.total_events));
    }
    auto result = writer_->Finish();
    return result.ok() ? result->storage_error : result.status();
  }

 private:
  struct Page {
    std::string bytes;
    uint64_t page_ts = 0;
    uint64_t last_ts = 0;
    uint64_t first_true_ts = 0;
    uint32_t used = 0;  // data bytes after the 16-byte header
    uint32_t events = 0;
    uint64_t total_events = 0;
  };

  explicit TraceDatSink(const SynthOptions& o) : pages_(o.cpus), flush_(o.flush_interval_ns) {}

  static void Put32(Page* p, uint32_t v) {
    std::memcpy(&p->bytes[16 + p->used], &v, 4);
    p->used += 4;
  }

  absl::Status Store(uint32_t cpu) {
    Page& p = pages_[cpu];
    const uint64_t commit = p.used;
    std::memcpy(&p.bytes[0], &p.page_ts, 8);
    std::memcpy(&p.bytes[8], &commit, 8);
    std::memset(&p.bytes[16 + p.used], 0, page_size_ - 16 - p.used);
    IOTRACE_RETURN_IF_ERROR(
        writer_->AppendPages(static_cast<int>(cpu), ByteView(p.bytes.data(), p.bytes.size())));
    p.total_events += p.events;
    p.used = 0;
    p.events = 0;
    return absl::OkStatus();
  }

  std::unique_ptr<TraceDatWriter> writer_;
  std::vector<Page> pages_;
  uint64_t flush_;
  uint32_t page_size_ = 4096;
};

absl::StatusOr<std::string> ReadFixture(const SynthOptions& o, const std::string& relative) {
  return ReadFileToString(o.formats_dir + "/events/" + relative);
}

// A request in flight.
struct Request {
  uint32_t dev_index;
  uint64_t sector;
  uint64_t issued_ts;  // 0 until issued
  uint32_t cpu;        // where it was inserted and issued
  bool write;
};

}  // namespace

uint32_t SynthDev(uint32_t i) { return KernelDev(259, i); }

absl::Status WriteSynthRecording(const std::string& path, const SynthOptions& o,
                                 SynthExpected* expected) {
  if (o.cpus < 1 || o.devices < 1 || o.in_flight < 1 || o.events < 3) {
    return absl::InvalidArgumentError("cpus, devices, in-flight >= 1; events >= 3");
  }
  *expected = SynthExpected();
  expected->requests.assign(o.devices, {});
  expected->device_events.assign(o.devices, {});
  TracingMetadata meta;
  IOTRACE_ASSIGN_OR_RETURN(meta.header_page, ReadFixture(o, "header_page"));
  IOTRACE_ASSIGN_OR_RETURN(meta.header_event, ReadFixture(o, "header_event"));
  std::vector<EventFormat> formats;
  RawTemplate raw[kKinds];
  for (int k = 0; k < kKinds; ++k) {
    IOTRACE_ASSIGN_OR_RETURN(std::string text,
                             ReadFixture(o, std::string("block/") + kEventNames[k] + "/format"));
    meta.event_formats.push_back({"block", text});
    IOTRACE_ASSIGN_OR_RETURN(EventFormat f, ParseEventFormat("block", text));
    formats.push_back(std::move(f));
    raw[k].Init(formats.back());
    if (raw[k].dev == nullptr || raw[k].sector == nullptr || raw[k].rwbs == nullptr ||
        raw[k].pid == nullptr) {
      return absl::FailedPreconditionError(std::string(kEventNames[k]) + ": fields missing");
    }
  }
  std::string cmdlines;
  for (uint32_t c = 0; c < o.cpus; ++c) cmdlines += absl::StrFormat("%d fio\n", kFirstPid + c);
  meta.saved_cmdlines = cmdlines;

  std::unique_ptr<Sink> sink;
  if (o.trace_dat) {
    IOTRACE_ASSIGN_OR_RETURN(sink, TraceDatSink::Create(path, o, meta));
  } else {
    IOTRACE_ASSIGN_OR_RETURN(sink, PerfSink::Create(path, o, meta, formats));
  }

  std::mt19937_64 rng(o.seed);
  std::vector<int64_t> skew(o.cpus);
  for (int64_t& s : skew) {
    s = static_cast<int64_t>(rng() % (2 * o.skew_ns + 1)) - static_cast<int64_t>(o.skew_ns);
  }
  std::vector<uint64_t> next_sector(o.devices);
  // In flight: `inserted` (FIFO: issued in insert order), `issued` (completed in random order).
  std::vector<Request> inserted_ring(o.in_flight);
  size_t ins_head = 0, ins_count = 0;
  std::vector<Request> issued;
  issued.reserve(o.in_flight);

  const uint64_t requests = o.events / 3;
  uint64_t started = 0;
  uint64_t t = 1'000'000'000;  // one second after boot
  const uint64_t step_lo = std::max<uint64_t>(1, o.step_ns / 2);
  const uint64_t step_span = std::max<uint64_t>(1, o.step_ns);
  // Every request on another CPU than its issue is at least this far after it, so that no
  // clock skew can put a completion before its issue.
  const uint64_t remote_gap = 2 * o.skew_ns + 1;

  auto emit = [&](Kind kind, uint32_t cpu, const Request& rq) -> absl::Status {
    t += step_lo + rng() % step_span;
    const uint64_t cpu_ts = t + skew[cpu];
    if (expected->events == 0) expected->first_ts = cpu_ts;
    expected->first_ts = std::min(expected->first_ts, cpu_ts);
    expected->last_ts = std::max(expected->last_ts, cpu_ts);
    ++expected->events;
    ++expected->kinds[kind];
    ++expected->device_events[rq.dev_index][kind];
    // A completion runs in interrupt context: the pid is whatever that CPU was running.
    const int32_t pid = kind == kComplete ? 0 : kFirstPid + static_cast<int32_t>(cpu);
    return sink->Add(kind, t, cpu_ts, cpu, pid,
                     raw[kind].Fill(SynthDev(rq.dev_index), rq.sector, rq.write, pid));
  };

  uint64_t completed = 0;
  while (completed < requests) {
    const uint64_t in_flight = ins_count + issued.size();
    expected->max_in_flight = std::max(expected->max_in_flight, in_flight);
    if (in_flight < o.in_flight && started < requests) {
      Request rq;
      rq.cpu = static_cast<uint32_t>(rng() % o.cpus);
      const uint32_t d = static_cast<uint32_t>(rng() % o.devices);
      rq.dev_index = d;
      // Sectors go up per device, so the requests in flight on a device never share one.
      rq.sector = next_sector[d];
      next_sector[d] += 8;
      rq.write = rng() % 10 < 3;
      rq.issued_ts = 0;
      IOTRACE_RETURN_IF_ERROR(emit(kInsert, rq.cpu, rq));
      inserted_ring[(ins_head + ins_count) % o.in_flight] = rq;
      ++ins_count;
      ++started;
      continue;
    }
    // Issue while the queue holds more inserted requests than the device has; else complete
    // one at random (completions come back out of order).
    if (ins_count > 0 && (ins_count >= issued.size() || issued.empty())) {
      Request rq = inserted_ring[ins_head];
      ins_head = (ins_head + 1) % o.in_flight;
      --ins_count;
      IOTRACE_RETURN_IF_ERROR(emit(kIssue, rq.cpu, rq));
      rq.issued_ts = t;
      issued.push_back(rq);
      continue;
    }
    const size_t i = rng() % issued.size();
    const Request rq = issued[i];
    issued[i] = issued.back();
    issued.pop_back();
    uint32_t cpu = rq.cpu;
    // The next event's time is at least t + step_lo: far enough after the issue?
    if (o.cpus > 1 && o.remote_complete_every != 0 && rng() % o.remote_complete_every == 0 &&
        t + step_lo >= rq.issued_ts + remote_gap) {
      cpu = static_cast<uint32_t>((rq.cpu + 1 + rng() % (o.cpus - 1)) % o.cpus);
      ++expected->remote_completes;
    }
    IOTRACE_RETURN_IF_ERROR(emit(kComplete, cpu, rq));
    ++expected->requests[rq.dev_index][rq.write ? 1 : 0];
    ++completed;
  }
  return sink->Finish();
}

std::string SynthExpectedJson(const SynthOptions& o, const SynthExpected& e) {
  std::ostringstream out;
  out << "{\n  \"format\": \"" << (o.trace_dat ? "trace.dat" : "perf.data") << "\""
      << ", \"cpus\": " << o.cpus << ", \"devices\": " << o.devices
      << ", \"in_flight\": " << o.in_flight << ", \"seed\": " << o.seed << ",\n"
      << "  \"events\": " << e.events << ", \"inserts\": " << e.kinds[0]
      << ", \"issues\": " << e.kinds[1] << ", \"completes\": " << e.kinds[2]
      << ", \"remote_completes\": " << e.remote_completes
      << ", \"max_in_flight\": " << e.max_in_flight << ", \"first_ts_ns\": " << e.first_ts
      << ", \"last_ts_ns\": " << e.last_ts << ",\n  \"groups\": [";
  bool first = true;
  for (uint32_t d = 0; d < e.requests.size(); ++d) {
    for (int w = 0; w < 2; ++w) {
      if (e.requests[d][w] == 0) continue;
      for (const char* phase : {"I2D", "D2C", "I2C"}) {
        out << (first ? "\n" : ",\n") << "    {\"dev\": \"" << DevString(SynthDev(d))
            << "\", \"op\": \"" << (w ? "write" : "read") << "\", \"phase\": \"" << phase
            << "\", \"count\": " << e.requests[d][w] << "}";
        first = false;
      }
    }
  }
  out << "\n  ],\n  \"device_events\": [";
  first = true;
  for (uint32_t d = 0; d < e.device_events.size(); ++d) {
    const auto& n = e.device_events[d];
    if (n[0] + n[1] + n[2] == 0) continue;
    out << (first ? "\n" : ",\n") << "    {\"dev\": \"" << DevString(SynthDev(d))
        << "\", \"insert\": " << n[0] << ", \"issue\": " << n[1] << ", \"complete\": " << n[2]
        << "}";
    first = false;
  }
  out << "\n  ]\n}\n";
  return out.str();
}

}  // namespace iotrace::bench
