// libFuzzer target for the data inside valid trace files: the container (header, attrs, tracing
// data, feature sections; or trace.dat header, options, CPU tables) is written by the project's
// own writers, so every input reaches the record and page decoders instead of dying in a header
// check; the records and ring-buffer pages in it come from the input. Then the same pipeline as
// trace_file_fuzzer (fuzz_pipeline.h). Complements trace_file_fuzzer, which mutates whole files.
//
// Input: byte 0 picks the container and the layout, then a list of chunks:
//   perf.data (byte 0 even): sample_type variant = (byte 0 >> 1) % 6 (see kVariants);
//     chunk = op u8, arg u8, dt u16, len u8, then len bytes:
//       op % 8 = 0..3: a sample of attr arg % 5 on CPU (arg >> 4) & 1, RAW = the bytes
//                      (op & 8: common_type set to that attr's format id so that it decodes;
//                       op & 16: time goes back by dt instead of forward; op >> 5: entries of
//                       the group read / callchain in the layouts that have them);
//                4: PERF_RECORD_LOST, 5: PERF_RECORD_LOST_SAMPLES (count arg, sample_id trailer);
//                6: PERF_RECORD_FINISHED_ROUND; 7: a record of type arg with the bytes as body.
//   trace.dat (byte 0 odd): CPUs = 1 + ((byte 0 >> 1) & 1);
//     chunk = cpu u8, flags u8, len u16, then len bytes: one 4096-byte sub-buffer of that CPU,
//       timestamp advancing, commit = len (flags & 1: | RB_MISSED_EVENTS, flags & 2: | STORED,
//       flags & 4: commit = the next 8 bytes instead), data = the bytes (ring-buffer events);
//       flags & 8: the chunk is instead that CPU's stats text (CPUSTAT).
//
// Run by hand: scripts/fuzz.sh trace_records_fuzzer 600 (IOTRACE_FUZZ_KEEP=1 keeps the last
// file written, in /dev/shm, to replay a crash with `iotrace report -i`).
#include <linux/perf_event.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "fuzz_pipeline.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/perf_data_writer.h"
#include "iotrace/formats/trace_dat_writer.h"

namespace {

std::string FixturesDir() {
  std::string here = __FILE__;
  return here.substr(0, here.rfind("/fuzz/")) + "/fixtures";
}

std::string ReadFixture(const std::string& name) {
  std::ifstream in(FixturesDir() + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Setup {
  iotrace::TracingMetadata meta;
  std::vector<iotrace::EventFormat> formats;
};

const Setup& GetSetup() {
  static const Setup* setup = [] {
    auto* s = new Setup;
    s->meta.header_page = ReadFixture("formats/6.18/events/header_page");
    s->meta.header_event = ReadFixture("formats/6.18/events/header_event");
    s->meta.page_size = 4096;
    s->meta.long_size = 8;
    s->meta.saved_cmdlines = "1 init\n22 kworker/1:1\n";
    for (const char* name : {"block_rq_insert", "block_rq_issue", "block_rq_complete",
                             "block_rq_requeue", "block_rq_merge"}) {
      std::string text = ReadFixture(std::string("formats/6.18/events/block/") + name + "/format");
      auto f = iotrace::ParseEventFormat("block", text);
      if (!f.ok()) std::abort();
      s->meta.event_formats.push_back({"block", text});
      s->formats.push_back(*f);
    }
    return s;
  }();
  return *setup;
}


template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

struct Variant {
  uint64_t sample_type;
  uint64_t read_format;
  bool sample_id_all;
  bool one_attr;
};
// iotrace record's layout; perf record's; with a callchain; with a group read; one attr without
// ids in its samples; and without sample_id_all.
constexpr Variant kVariants[] = {
    {PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
         PERF_SAMPLE_RAW,
     PERF_FORMAT_ID | PERF_FORMAT_LOST, true, false},
    {PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
         PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW,
     0, true, false},
    {PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
         PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW,
     0, true, false},
    {PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
         PERF_SAMPLE_READ | PERF_SAMPLE_RAW,
     PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED, true, false},
    {PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW, 0, true, true},
    {PERF_SAMPLE_ID | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW, 0,
     false, false},
};

uint64_t IdOf(size_t attr, uint32_t cpu) { return 1 + attr * 2 + cpu; }

// One PERF_RECORD_SAMPLE in `v`'s layout, fields in include/uapi/linux/perf_event.h order.
// `extra` sizes the variable parts (group read entries, callchain entries).
std::string Sample(const Variant& v, uint64_t id, uint64_t time, uint32_t cpu, uint32_t extra,
                   const std::string& raw) {
  std::string body;
  const uint64_t st = v.sample_type;
  if (st & PERF_SAMPLE_IDENTIFIER) Put<uint64_t>(&body, id);
  if (st & PERF_SAMPLE_IP) Put<uint64_t>(&body, 0xffffffff81000000ull);
  if (st & PERF_SAMPLE_TID) {
    Put<uint32_t>(&body, 100 + cpu);
    Put<uint32_t>(&body, 100 + cpu);
  }
  if (st & PERF_SAMPLE_TIME) Put<uint64_t>(&body, time);
  if (st & PERF_SAMPLE_ID) Put<uint64_t>(&body, id);
  if (st & PERF_SAMPLE_CPU) {
    Put<uint32_t>(&body, cpu);
    Put<uint32_t>(&body, 0);
  }
  if (st & PERF_SAMPLE_PERIOD) Put<uint64_t>(&body, 1);
  if (st & PERF_SAMPLE_READ) {  // group: nr, time_enabled, {value, id} x nr
    const uint64_t nr = extra % 4;
    Put<uint64_t>(&body, nr);
    Put<uint64_t>(&body, 12345);
    for (uint64_t i = 0; i < nr; ++i) {
      Put<uint64_t>(&body, i);
      Put<uint64_t>(&body, IdOf(i, cpu));
    }
  }
  if (st & PERF_SAMPLE_CALLCHAIN) {
    const uint64_t nr = extra;
    Put<uint64_t>(&body, nr);
    for (uint64_t i = 0; i < nr; ++i) Put<uint64_t>(&body, 0xffffffff81000000ull + i);
  }
  // RAW: u32 size, then the data; the kernel pads size + 4 to a multiple of 8.
  std::string data = raw;
  data.resize((data.size() + 4 + 7) / 8 * 8 - 4, '\0');
  Put<uint32_t>(&body, static_cast<uint32_t>(data.size()));
  body += data;
  return body;
}

std::string SampleIdTrailer(const Variant& v, uint64_t id, uint64_t time, uint32_t cpu) {
  if (!v.sample_id_all) return "";
  iotrace::perf::SampleId s;
  s.pid = s.tid = 100 + cpu;
  s.time = time;
  s.id = id;
  s.cpu = cpu;
  std::string out;
  iotrace::perf::AppendSampleId(v.sample_type, s, &out);
  return out;
}

void AppendRecord(uint32_t type, const std::string& body, std::string* data) {
  iotrace::perf::EventHeader h;
  h.type = type;
  h.size = static_cast<uint16_t>(std::min<size_t>(8 + body.size(), 0xfff8));
  Put(data, h);
  data->append(body, 0, h.size - 8);
}

bool WritePerf(const std::string& path, uint8_t mode, iotrace::fuzz::Input* in) {
  const Setup& setup = GetSetup();
  const Variant& v = kVariants[(mode >> 1) % (sizeof(kVariants) / sizeof(kVariants[0]))];
  std::vector<iotrace::PerfEventSpec> specs;
  const size_t nattrs = v.one_attr ? 1 : setup.formats.size();
  for (size_t a = 0; a < nattrs; ++a) {
    iotrace::PerfEventSpec spec;
    spec.attr.type = PERF_TYPE_TRACEPOINT;
    spec.attr.size = sizeof(spec.attr);
    spec.attr.config = setup.formats[a].id;
    spec.attr.sample_period = 1;
    spec.attr.sample_type = v.sample_type;
    spec.attr.read_format = v.read_format;
    spec.attr.sample_id_all = v.sample_id_all;
    spec.attr.use_clockid = 1;
    spec.attr.clockid = CLOCK_MONOTONIC;
    spec.name = setup.formats[a].FullName();
    spec.ids = {IdOf(a, 0), IdOf(a, 1)};
    specs.push_back(spec);
  }
  iotrace::HostInfo host;
  host.hostname = "fuzz";
  host.nr_cpus_online = host.nr_cpus_available = 2;
  iotrace::PerfWriterOptions wo;
  wo.reserve_step = 64 << 10;  // the default reserves 8 MiB (in /dev/shm: memory) per input
  auto w = iotrace::PerfDataWriter::Create(path, specs, setup.meta, host, wo);
  if (!w.ok()) std::abort();

  std::string data;
  uint64_t t = 1000000;
  while (!in->empty()) {
    const uint8_t op = in->Take<uint8_t>();
    const uint8_t arg = in->Take<uint8_t>();
    const uint16_t dt = in->Take<uint16_t>();
    const std::string bytes(in->Bytes(in->Take<uint8_t>()));
    t = (op & 16) ? t - dt : t + dt;
    const size_t attr = arg % nattrs;
    const uint32_t cpu = (arg >> 4) & 1;
    const uint64_t id = IdOf(attr, cpu);
    switch (op % 8) {
      case 0:
      case 1:
      case 2:
      case 3: {
        std::string raw = bytes;
        if ((op & 8) && raw.size() >= 2) {
          const uint16_t type = static_cast<uint16_t>(setup.formats[attr].id);
          std::memcpy(raw.data(), &type, 2);
        }
        AppendRecord(iotrace::perf::kRecordSample, Sample(v, id, t, cpu, op >> 5, raw), &data);
        break;
      }
      case 4: {
        std::string body;
        Put<uint64_t>(&body, id);
        Put<uint64_t>(&body, arg);
        AppendRecord(iotrace::perf::kRecordLost, body + SampleIdTrailer(v, id, t, cpu), &data);
        break;
      }
      case 5: {
        std::string body;
        Put<uint64_t>(&body, arg);
        AppendRecord(iotrace::perf::kRecordLostSamples, body + SampleIdTrailer(v, id, t, cpu),
                     &data);
        break;
      }
      case 6:
        AppendRecord(iotrace::perf::kRecordFinishedRound, "", &data);
        break;
      default:
        AppendRecord(arg, bytes, &data);
        break;
    }
  }
  if (!(*w)->AppendData(iotrace::ByteView(data.data(), data.size())).ok()) return false;
  return (*w)->Finish().ok();
}

bool WriteTraceDat(const std::string& path, uint8_t mode, iotrace::fuzz::Input* in) {
  const Setup& setup = GetSetup();
  constexpr uint32_t kPage = 4096;
  iotrace::TraceDatWriterOptions o;
  o.meta = setup.meta;
  o.nr_cpus = 1 + ((mode >> 1) & 1);
  o.uname = "Linux fuzz 6.18.0 x86_64";
  o.recorder = "trace_records_fuzzer";
  auto w = iotrace::TraceDatWriter::Create(path, o);
  if (!w.ok()) std::abort();
  uint64_t ts = 1000000;
  std::string page;
  while (!in->empty()) {
    const int cpu = in->Take<uint8_t>() % o.nr_cpus;
    const uint8_t flags = in->Take<uint8_t>();
    const uint16_t len = in->Take<uint16_t>();
    if (flags & 8) {
      (*w)->SetCpuStats(cpu, std::string(in->Bytes(len)));
      continue;
    }
    uint64_t commit = std::min<uint32_t>(len, kPage - 16);
    if (flags & 1) commit |= uint64_t{1} << 31;
    if (flags & 2) commit |= uint64_t{1} << 30;
    if (flags & 4) commit = in->Take<uint64_t>();
    const std::string bytes(in->Bytes(std::min<uint32_t>(len, kPage - 16)));
    page.assign(kPage, '\0');
    ts += 1000 + len;
    std::memcpy(page.data(), &ts, 8);
    std::memcpy(page.data() + 8, &commit, 8);
    std::memcpy(page.data() + 16, bytes.data(), bytes.size());
    if (!(*w)->AppendPages(cpu, iotrace::ByteView(page.data(), page.size())).ok()) return false;
  }
  return (*w)->Finish().ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  static const std::string base = dir + "/iotrace-records-fuzz-" + std::to_string(getpid());
  if (size == 0) return 0;
  iotrace::fuzz::Input in(data + 1, size - 1);
  const uint8_t mode = data[0];
  const std::string path = base + ((mode & 1) ? ".dat" : ".data");
  const bool ok = (mode & 1) ? WriteTraceDat(path, mode, &in) : WritePerf(path, mode, &in);
  if (ok) iotrace::fuzz::RunReportPipeline(path, size);
  // IOTRACE_FUZZ_KEEP=1 leaves the file (e.g. to run `iotrace report -i` on a crash input).
  static const bool keep = std::getenv("IOTRACE_FUZZ_KEEP") != nullptr;
  if (keep) {
    std::fprintf(stderr, "trace_records_fuzzer: kept %s\n", path.c_str());
  } else {
    ::unlink(path.c_str());
  }
  return 0;
}
