// Several trace files read as one recording (the files of a rotated recording, `report -i A -i
// B`, a glob): each file's reader runs on a thread of its own and the streams are merged by
// time, so that a request inserted in one file and completed in the next is paired. Any mix of
// perf.data and trace.dat; event ids are mapped onto the first file's.
#ifndef IOTRACE_FORMATS_MULTI_TRACE_READER_H_
#define IOTRACE_FORMATS_MULTI_TRACE_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {

// The combined coverage of files read as one recording, `parts` in any order. Spans widen and
// every file's gaps are kept, except at the seams: the time between one file's last record of a
// CPU and a later file's first record of it is no gap of its own (a rotation hands over without
// losing events; events lost at a switch are losses, and gaps, of a file), but a file that says
// its data ends early on a CPU (cut short, unfinished: a gap open to the end) or that events are
// missing before its first record of a CPU (a gap from 0) has that gap bounded by the next
// (previous) file's record of the CPU, instead of reaching over the whole other file.
Coverage CombineCoverage(const std::vector<Coverage>& parts);

class MultiTraceReader : public TraceReader {
 public:
  // `paths[i]` names `readers[i]`, for messages. Fails, naming both files and the event, when
  // two files lay out the same event differently.
  static absl::StatusOr<std::unique_ptr<MultiTraceReader>> Create(
      std::vector<std::string> paths, std::vector<std::unique_ptr<TraceReader>> readers);
  ~MultiTraceReader() override;

  // "perf.data" or "trace.dat" when every file is one; "perf.data+trace.dat" for a mix.
  std::string_view FileFormat() const override { return file_format_; }
  // The first file's formats, with every other file's events not among them added.
  const std::vector<EventFormat>& formats() const override { return formats_; }
  const TracingMetadata& metadata() const override { return readers_[0]->metadata(); }
  std::string FormatsSource() const override { return readers_[0]->FormatsSource(); }
  std::string FormatsWarning() const override;
  int nr_cpus() const override;
  std::vector<std::pair<std::string, std::string>> Info() const override;
  std::string CommOf(int32_t pid) const override;
  // The k-way merge: by time, a tie to the file whose first record is earlier (then the file
  // given first). Each call reads every file again.
  absl::Status ReadAll(EventSink* sink) override;
  void set_read_ahead(bool on) override;
  // Every file's records and events added up, problems added up by name, coverage combined
  // (CombineCoverage).
  const ReadStats& stats() const override { return stats_; }
  // TimeSpan stays nullopt: two_range_report's two time ranges of one large file do not apply
  // to several files, which are read in one pass.

  // The paths, in the order of the files' first records once ReadAll has run (before, as given).
  std::vector<std::string> Files() const override { return ordered_paths_; }

  struct Stream;

 private:
  MultiTraceReader() = default;

  std::vector<std::string> paths_;          // as given: readers_[i] reads paths_[i]
  std::vector<std::string> ordered_paths_;  // by first record (Files())
  std::vector<std::unique_ptr<TraceReader>> readers_;
  std::vector<std::vector<uint16_t>> id_maps_;  // per file: its event id -> formats_' id
  std::vector<EventFormat> formats_;
  std::string file_format_;
  ReadStats stats_;
};

// Opens every path (OpenTraceReader) and reads them as one recording; one path gives its own
// reader. `formats_fallback` as OpenTraceReader's.
absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceReaders(
    const std::vector<std::string>& paths, const FormatsFallback* formats_fallback = nullptr);

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_MULTI_TRACE_READER_H_
