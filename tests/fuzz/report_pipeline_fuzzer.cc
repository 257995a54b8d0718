// libFuzzer target for the report pipeline after the reader: arbitrary records of this kernel's
// block event formats (and of unknown types), arbitrary sizes and timestamps, and loss records
// -> LatencyReportBuilder (decode, match, histograms, intervals) -> every formatter.
// Run by hand (not in CI):
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DIOTRACE_FUZZ=ON -DIOTRACE_SANITIZE=ON \
//     -DIOTRACE_BUILD_TESTS=OFF -DIOTRACE_BUILD_BENCH=OFF \
//     -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link   # coverage inside iotrace_core too && cmake
//     --build build-fuzz --target report_pipeline_fuzzer
//   ./build-fuzz/report_pipeline_fuzzer -max_total_time=300
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/output/report_format.h"

namespace {

// tests/fixtures/formats/6.18, found from this file's path (the fuzz build defines no fixture dir).
std::string FixturesDir() {
  std::string here = __FILE__;
  return here.substr(0, here.rfind("/fuzz/")) + "/fixtures";
}

std::vector<iotrace::EventFormat> LoadFormats() {
  std::vector<iotrace::EventFormat> out;
  for (const char* name : {"block_rq_insert", "block_rq_issue", "block_rq_complete",
                           "block_rq_requeue", "block_rq_merge", "block_bio_queue"}) {
    std::ifstream in(FixturesDir() + "/formats/6.18/events/block/" + name + "/format");
    std::stringstream ss;
    ss << in.rdbuf();
    auto f = iotrace::ParseEventFormat("block", ss.str());
    if (f.ok()) out.push_back(*f);
  }
  return out;
}


}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<iotrace::EventFormat> formats = LoadFormats();
  if (formats.empty()) return 0;
  iotrace::fuzz::Input in(data, size);
  iotrace::ReportOptions options;
  options.sysfs_root = options.procfs_root = "/nonexistent";
  options.max_inflight = 16 + in.Take<uint8_t>();
  options.expiry_s = 1e-6 * (1 + in.Take<uint16_t>());
  if (in.Take<uint8_t>() & 1) options.interval_s = 1e-6 * (1 + in.Take<uint8_t>());
  auto builder = iotrace::LatencyReportBuilder::Create(formats, options);
  if (!builder.ok()) return 0;
  uint64_t ts = 0;
  std::vector<uint8_t> record;
  while (!in.empty()) {
    const uint8_t op = in.Take<uint8_t>();
    if (op == 0xff) {
      iotrace::LossRecord loss;
      loss.kind = static_cast<iotrace::LossRecord::Kind>(in.Take<uint8_t>() % 4);
      loss.cpu = in.Take<int8_t>();
      loss.event_id = in.Take<int16_t>();
      loss.count = in.Take<uint16_t>();
      (*builder)->OnLoss(loss);
      continue;
    }
    iotrace::RawEvent raw;
    const iotrace::EventFormat& f = formats[op % formats.size()];
    raw.type = (op & 0x80) ? in.Take<uint16_t>() : static_cast<uint16_t>(f.id);
    ts += in.Take<uint16_t>();
    raw.ts = ts;
    raw.cpu = op & 1;
    raw.pid = in.Take<int8_t>();
    const std::string_view bytes = in.Bytes(in.Take<uint8_t>());
    record.assign(bytes.begin(), bytes.end());  // exact size: ASan catches reads past the record
    raw.payload = iotrace::ByteView(record.data(), record.size());
    (*builder)->OnEvent(raw);
  }
  iotrace::LatencyReport report = (*builder)->Finish(iotrace::ReadStats());
  std::ostringstream sink;
  iotrace::WriteTextReport(report, iotrace::TimeUnit::kUs, sink);
  iotrace::WriteTextReport(report, iotrace::TimeUnit::kMs, sink, iotrace::HistogramView::kFull);
  iotrace::WriteBucketCsv(report, sink);
  iotrace::WriteSummaryCsv(report, sink);
  iotrace::WriteJsonReport(report, sink);
  return 0;
}
