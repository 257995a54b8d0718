#include "bench_support.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "iotrace/event/block_event.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/trace_dat_reader.h"

namespace iotrace::bench {
namespace {
bool g_smoke = false;
bool g_failed = false;
}  // namespace

bool Smoke() { return g_smoke; }

void Fail(benchmark::State& state, const std::string& why) {
  g_failed = true;
  state.SkipWithError(why.c_str());
}

bool Failed() { return g_failed; }

namespace {

// Appends a payload (zeros when `data` is null) to `bytes` at 4 mod 8; returns its offset.
size_t AppendPayload(std::vector<uint8_t>* bytes, const uint8_t* data, size_t size) {
  const size_t at = (bytes->size() + 4 + 7) / 8 * 8 + 4;
  bytes->resize(at + size, 0);
  if (data != nullptr && size != 0) std::memcpy(bytes->data() + at, data, size);
  return at;
}

// Points every event's payload at its offset in `bytes` (kept in payload.data until then).
void FixPayloads(RawBlockStream* s) {
  for (RawEvent& e : s->events) {
    e.payload =
        ByteView(s->bytes.data() + reinterpret_cast<uintptr_t>(e.payload.data), e.payload.size);
  }
}

class CopyingSink : public EventSink {
 public:
  explicit CopyingSink(RawBlockStream* s) : s_(s) {}
  void OnEvent(const RawEvent& event) override {
    RawEvent e = event;
    const size_t at = AppendPayload(&s_->bytes, event.payload.data, event.payload.size);
    e.payload = ByteView(reinterpret_cast<const uint8_t*>(at), event.payload.size);
    s_->events.push_back(e);
  }

 private:
  RawBlockStream* s_;
};

}  // namespace

EventFormat LoadBlockFormat(const std::string& name) {
  std::ifstream in(std::string(IOTRACE_FIXTURES) + "/formats/6.18/events/block/" + name +
                   "/format");
  std::stringstream ss;
  ss << in.rdbuf();
  auto f = ParseEventFormat("block", ss.str());
  if (!f.ok()) std::abort();
  return *std::move(f);
}

RawBlockStream MakeRawBlockStream(size_t requests) {
  RawBlockStream s;
  for (const char* n : {"block_rq_insert", "block_rq_issue", "block_rq_complete"}) {
    s.formats.push_back(LoadBlockFormat(n));
  }
  auto add = [&](int which, uint64_t ts, uint32_t dev, uint64_t sector) {
    const EventFormat& f = s.formats[which];
    size_t size = 0;
    for (const FieldInfo& fi : f.fields) size = std::max<size_t>(size, fi.offset + fi.size);
    const size_t at = AppendPayload(&s.bytes, nullptr, size);
    auto put = [&](const char* name, const void* v, size_t n) {
      const FieldInfo* fi = f.FindField(name);
      if (fi != nullptr) std::memcpy(&s.bytes[at + fi->offset], v, std::min<size_t>(n, fi->size));
    };
    const uint16_t id = static_cast<uint16_t>(f.id);
    const uint32_t nr = 8;
    const uint32_t bytes = nr * 512;
    const int32_t pid = 100;
    put("common_type", &id, 2);
    put("common_pid", &pid, 4);
    put("dev", &dev, 4);
    put("sector", &sector, 8);
    put("nr_sector", &nr, 4);
    put("bytes", &bytes, 4);
    put("rwbs", "R", 1);
    put("comm", "fio", 3);
    RawEvent e;
    e.ts = ts;
    e.cpu = which == 2 ? 1 : 0;
    e.pid = e.tid = pid;
    e.type = id;
    e.payload = ByteView(reinterpret_cast<const uint8_t*>(at), size);  // fixed up below
    s.events.push_back(e);
  };
  std::mt19937_64 rng(3);
  std::vector<std::pair<uint64_t, uint32_t>> inflight;
  uint64_t ts = 0;
  for (size_t i = 0; i < requests; ++i) {
    const uint32_t dev = KernelDev(7, static_cast<uint32_t>(i % 2));
    const uint64_t sector = (rng() % (1ull << 30)) & ~7ull;
    add(0, ts += 700, dev, sector);
    add(1, ts += 700, dev, sector);
    inflight.emplace_back(sector, dev);
    if (inflight.size() == 32) {
      const size_t k = rng() % inflight.size();
      add(2, ts += 700, inflight[k].second, inflight[k].first);
      inflight[k] = inflight.back();
      inflight.pop_back();
    }
  }
  for (const auto& [sector, dev] : inflight) add(2, ts += 700, dev, sector);
  FixPayloads(&s);
  return s;
}

RawBlockStream LoadRecordedStream(const std::string& relative) {
  const std::string path = std::string(IOTRACE_FIXTURES) + "/" + relative;
  auto reader = relative.ends_with(".dat") ? OpenTraceDat(path) : OpenPerfData(path);
  if (!reader.ok()) std::abort();
  RawBlockStream s;
  s.formats = (*reader)->formats();
  CopyingSink sink(&s);
  if (!(*reader)->ReadAll(&sink).ok()) std::abort();
  FixPayloads(&s);
  return s;
}

}  // namespace iotrace::bench

int main(int argc, char** argv) {
  std::vector<char*> args;
  static char min_time[] = "--benchmark_min_time=0.01";
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iotrace_smoke") == 0) {
      iotrace::bench::g_smoke = true;
      args.push_back(min_time);
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return iotrace::bench::Failed() ? 1 : 0;
}
