// What the file fuzz targets run on a trace file: everything `iotrace report` (and its per-event
// dump) does with it, with invariants that trap when broken. Shared by trace_file_fuzzer and
// trace_records_fuzzer.
#ifndef IOTRACE_TESTS_FUZZ_FUZZ_PIPELINE_H_
#define IOTRACE_TESTS_FUZZ_FUZZ_PIPELINE_H_

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "iotrace/analysis/latency_report.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "iotrace/output/event_dump.h"
#include "iotrace/output/report_format.h"

namespace iotrace::fuzz {

// Feeds every record to an EventDumper; one line per record, as event_dump.h promises.
class DumpSink : public EventSink {
 public:
  DumpSink(TraceReader* reader, DumpFormat format)
      : reader_(reader), dumper_(reader->formats(), format) {}
  void OnEvent(const RawEvent& event) override {
    ++events_;
    line_.clear();
    const std::string comm = reader_->CommOf(event.pid);
    dumper_.Append(event, comm, &line_);
    if (line_.empty() || line_.back() != '\n') __builtin_trap();
  }
  void OnLoss(const LossRecord& loss) override {}
  uint64_t events() const { return events_; }

 private:
  TraceReader* reader_;
  EventDumper dumper_;
  std::string line_;
  uint64_t events_ = 0;
};

// Opens `path` as `iotrace report` does, builds the report (a time series when `variant` is
// odd), prints it in every format, checks that reading it as two time ranges gives the
// one-pass report, then dumps every event in the format `variant` picks.
inline void RunReportPipeline(const std::string& path, size_t variant) {
  auto opened = OpenTraceReader(path);
  if (!opened.ok()) {
    if (opened.status().message().empty()) __builtin_trap();  // errors must say what is wrong
    return;
  }
  TraceReader& reader = **opened;
  for (const auto& [key, value] : reader.Info()) (void)key.size(), (void)value.size();
  (void)reader.CommOf(0);
  (void)reader.CommOf(1);

  ReportOptions options;
  options.input = path;
  options.sysfs_root = options.procfs_root = "/nonexistent";
  // The matcher's tables are sized by max_inflight: the default (131072) costs more per input
  // than reading it, and a small bound also reaches the eviction paths.
  options.max_inflight = 4096;
  if (variant % 2) options.interval_s = 0.001;
  auto report = BuildLatencyReport(reader, options);
  if (report.ok()) {
    const ReadStats& st = reader.stats();
    if (st.events > st.records) __builtin_trap();
    std::ostringstream sink;
    WriteTextReport(*report, TimeUnit::kUs, sink);
    WriteBucketCsv(*report, sink);
    WriteSummaryCsv(*report, sink);
    WriteJsonReport(*report, sink);
  }

  // Auto reading two time ranges (whatever the size): the one-pass report, byte for byte,
  // however the split ends.
  {
    ReportOptions split = options;
    split.interval_s = 0;
    split.split_min_bytes = 1;
    split.split_on_one_cpu = true;
    ReportOptions one = split;
    one.threads = 1;
    auto a = BuildLatencyReport(reader, split);
    auto b = BuildLatencyReport(reader, one);
    if (a.ok() != b.ok()) __builtin_trap();
    if (a.ok()) {
      std::ostringstream ja, jb;
      WriteJsonReport(*a, ja);
      WriteJsonReport(*b, jb);
      if (ja.str() != jb.str()) __builtin_trap();
    }
  }

  // `iotrace report --events`: a second pass over the same reader.
  static constexpr DumpFormat kFormats[] = {DumpFormat::kText, DumpFormat::kCsv, DumpFormat::kJson};
  DumpSink dump(&reader, kFormats[variant % 3]);
  if (!reader.ReadAll(&dump).ok()) return;
  if (dump.events() != reader.stats().events) __builtin_trap();
}

}  // namespace iotrace::fuzz

#endif  // IOTRACE_TESTS_FUZZ_FUZZ_PIPELINE_H_
