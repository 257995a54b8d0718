// libFuzzer target for the trace FILE readers: the input is a whole file (perf.data or
// trace.dat, sniffed by TraceReader::Open) -> the reader's header, attr, feature, tracing-data,
// event-format and option parsing -> ReadAll (perf record parser + sorted-run merge, or the
// ftrace page walker + per-CPU merge) -> BuildLatencyReport -> every report formatter, then a
// second ReadAll through the per-event dump (EventDumper). Anything but a clean error or a
// counted skip (crash, hang, ASan/UBSan report, memory growth) is a bug.
//
// Run by hand, not in CI: scripts/fuzz.sh trace_file_fuzzer 600 (builds build-fuzz with clang,
// instruments iotrace_core too, runs with -rss_limit_mb=512 -timeout=10 on
// tests/fuzz/corpus/trace_file_fuzzer).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "iotrace/event_dump.h"
#include "iotrace/latency_report.h"
#include "iotrace/report_format.h"
#include "iotrace/trace_reader.h"

namespace {

// The readers take a path: every input goes into one memfd, opened by path through /proc.
class InputFile {
 public:
  InputFile() {
    fd_ = memfd_create("iotrace-fuzz-input", MFD_CLOEXEC);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const std::string& Write(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < size) {
      ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    return path_;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

// Feeds every record to an EventDumper; one line per record, as event_dump.h promises.
class DumpSink : public iotrace::EventSink {
 public:
  DumpSink(iotrace::TraceReader* reader, iotrace::DumpFormat format)
      : reader_(reader), dumper_(reader->formats(), format) {}
  void OnEvent(const iotrace::RawEvent& event) override {
    ++events_;
    line_.clear();
    const std::string comm = reader_->CommOf(event.pid);
    dumper_.Append(event, comm, &line_);
    if (line_.empty() || line_.back() != '\n') __builtin_trap();
  }
  void OnLoss(const iotrace::LossRecord& loss) override { ++losses_; }
  uint64_t events() const { return events_; }

 private:
  iotrace::TraceReader* reader_;
  iotrace::EventDumper dumper_;
  std::string line_;
  uint64_t events_ = 0;
  uint64_t losses_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static InputFile* file = new InputFile();
  const std::string& path = file->Write(data, size);

  auto opened = iotrace::TraceReader::Open(path);
  if (!opened.ok()) {
    if (opened.status().message().empty()) __builtin_trap();  // errors must say what is wrong
    return 0;
  }
  iotrace::TraceReader& reader = **opened;
  for (const auto& [key, value] : reader.Info()) (void)key.size(), (void)value.size();
  (void)reader.CommOf(0);
  (void)reader.CommOf(1);

  // The report, as `iotrace report` builds it (a time series for half of the inputs).
  iotrace::ReportOptions options;
  options.input = path;
  options.sysfs_root = options.procfs_root = "/nonexistent";
  if (size % 2) options.interval_s = 0.001;
  auto report = iotrace::BuildLatencyReport(reader, options);
  if (report.ok()) {
    const iotrace::ReadStats& st = reader.stats();
    if (st.events > st.records) __builtin_trap();
    std::ostringstream sink;
    iotrace::WriteTextReport(*report, iotrace::TimeUnit::kUs, sink);
    iotrace::WriteBucketCsv(*report, sink);
    iotrace::WriteSummaryCsv(*report, sink);
    iotrace::WriteJsonReport(*report, sink);
  }

  // `iotrace report --events`: a second pass over the same reader.
  static constexpr iotrace::DumpFormat kFormats[] = {
      iotrace::DumpFormat::kText, iotrace::DumpFormat::kCsv, iotrace::DumpFormat::kJson};
  DumpSink dump(&reader, kFormats[size % 3]);
  if (!reader.ReadAll(&dump).ok()) return 0;
  if (dump.events() != reader.stats().events) __builtin_trap();
  return 0;
}
