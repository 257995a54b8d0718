// Test helper: the checks of a report on a damaged or lossy file against the intact one (a
// cut file reports exactly the intact file's samples inside the window it covers; every paired
// sample is drawn or counted as outside coverage), for the unit tests on fixtures and the live
// tests on fresh recordings.
#ifndef IOTRACE_TESTS_UNIT_COVERAGE_CHECK_H_
#define IOTRACE_TESTS_UNIT_COVERAGE_CHECK_H_

#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/formats/external_formats.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "test_files.h"

namespace iotrace::testing {

// The histograms of a report, by device x op x phase.
using Buckets = std::map<std::tuple<uint32_t, BlockOp, Phase>, LatencyBuckets>;

inline Buckets BucketsOf(const LatencyReport& r) {
  Buckets out;
  for (const LatencyGroup& g : r.groups) out[{g.dev, g.op, g.phase}] = g.buckets;
  return out;
}

inline bool SameBuckets(const Buckets& a, const Buckets& b, std::string* why) {
  std::ostringstream w;
  for (const auto& [key, buckets] : a) {
    auto it = b.find(key);
    const size_t other = it == b.end() ? 0 : it->second.size();
    bool same = it != b.end() && buckets.size() == other;
    if (same) {
      const std::vector<LatencyBucket> x = buckets.ToVector(), y = it->second.ToVector();
      for (size_t i = 0; same && i < x.size(); ++i) {
        same = x[i].lo_ns == y[i].lo_ns && x[i].count == y[i].count;
      }
    }
    if (!same) {
      uint64_t n = 0, m = 0;
      for (const LatencyBucket& x : buckets) n += x.count;
      if (it != b.end()) {
        for (const LatencyBucket& x : it->second) m += x.count;
      }
      w << PhaseName(std::get<2>(key)) << " " << BlockOpName(std::get<1>(key)) << " dev "
        << std::get<0>(key) << ": " << n << " against " << m << " samples; ";
    }
  }
  for (const auto& [key, buckets] : b) {
    if (!a.count(key)) w << "only in the second: " << PhaseName(std::get<2>(key)) << "; ";
  }
  *why = w.str();
  return why->empty();
}

// The report of `path`, opened as `iotrace report` opens it (the running kernel's formats for a
// perf.data that lost its own); nullopt, with the reason in *error, when it cannot be opened.
inline std::optional<LatencyReport> Report(const std::string& path, ReportOptions o = {},
                                           std::string* error = nullptr) {
  o.input = path;
  o.sysfs_root = o.procfs_root = "/nonexistent";
  o.threads = 1;
  const FormatsFallback fallback = RunningKernelFormats(o.kernel_tracefs);
  auto reader = OpenTraceReader(path, &fallback);
  if (!reader.ok()) {
    if (error != nullptr) *error = std::string(reader.status().message());
    return std::nullopt;
  }
  auto report = BuildLatencyReport(**reader, o);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return std::nullopt;
  return *std::move(report);
}

// Every request sample the matcher paired is in a histogram, or counted as outside coverage.
inline void ExpectEverySampleAccountedFor(const LatencyReport& r, const std::string& what) {
  std::array<uint64_t, kPhaseCount> kept{};
  for (const LatencyGroup& g : r.groups) kept[static_cast<int>(g.phase)] += g.summary.count;
  for (int p = 0; p < kPhaseCount; ++p) {
    uint64_t outside = 0;
    for (uint64_t n : r.coverage.outside[p]) outside += n;
    // (Requests a filter removed are counted per request, not per phase sample.)
    if (r.completeness.samples_filtered == 0) {
      EXPECT_EQ(r.completeness.match.paired[p], kept[p] + outside)
          << what << " " << PhaseName(static_cast<Phase>(p));
    } else {
      EXPECT_GE(r.completeness.match.paired[p], kept[p] + outside)
          << what << " " << PhaseName(static_cast<Phase>(p));
    }
  }
}

// Cuts `intact_path` at 10%, 50% and 90% of its size, at a page boundary and in the middle of
// a record: every cut that can still be read reports, for the window every CPU's data covers,
// the intact file's samples whose end lies in it (they start in it too: the window starts with
// the recording), bucket for bucket; no sample is larger than the intact file's largest of its
// group; every paired sample is drawn or counted as outside coverage. Returns how many cuts
// could be read, and how many left samples out. (A cut into the metadata cannot be read: the
// readers' tests check that message.)
struct CutsChecked {
  int read = 0;
  int left_out = 0;
  int before_data = 0;  // cuts not read that lie before a trace.dat's data (in its metadata)
};
inline CutsChecked CheckCuts(const std::string& intact_path, const ReportOptions& options = {}) {
  std::optional<LatencyReport> intact = Report(intact_path, options);
  EXPECT_TRUE(intact.has_value());
  if (!intact.has_value()) return {};
  // The intact file's own gaps (perf record under load loses events in its rings): the cut
  // file has those before the cut too, and the reference leaves out what crosses them.
  std::vector<DataGap> intact_gaps;
  if (!intact->coverage.complete) {
    auto reader = OpenTraceReader(intact_path);
    struct Nothing : EventSink {
      void OnEvent(const RawEvent&) override {}
    } nothing;
    EXPECT_TRUE(reader.ok() && (*reader)->ReadAll(&nothing).ok());
    if (reader.ok()) intact_gaps = (*reader)->stats().coverage.gaps;
  }
  std::map<std::tuple<uint32_t, BlockOp, Phase>, uint64_t> intact_max;
  for (const LatencyGroup& g : intact->groups) intact_max[{g.dev, g.op, g.phase}] = g.summary.max_ns;
  std::ifstream in(intact_path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t half = bytes.size() / 2;
  const std::vector<size_t> cuts = {bytes.size() / 10, half, bytes.size() * 9 / 10,
                                    half / 4096 * 4096, half / 4096 * 4096 + 1234};
  // A trace.dat's data is its end: a cut before it lies in the metadata.
  size_t data_start = 0;
  if (auto reader = OpenTraceReader(intact_path);
      reader.ok() && (*reader)->FileFormat() == "trace.dat") {
    if (const std::optional<TraceTimeSpan> span = (*reader)->TimeSpan(); span.has_value()) {
      data_start = bytes.size() - std::min<size_t>(bytes.size(), span->data_bytes);
    }
  }
  const std::string path = test::TmpPath("iotrace_coverage_test", ".cut");
  int read = 0, left_out = 0, before_data = 0;
  for (size_t cut : cuts) {
    SCOPED_TRACE(intact_path + " cut at " + std::to_string(cut) + " of " +
                 std::to_string(bytes.size()));
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(cut));
    std::string error;
    std::optional<LatencyReport> r = Report(path, options, &error);
    if (!r.has_value()) {
      std::printf("%s cut at %zu of %zu: not read: %s\n", intact_path.c_str(), cut, bytes.size(),
                  error.c_str());
      before_data += cut < data_start;
      continue;
    }
    ++read;
    EXPECT_FALSE(r->coverage.complete);
    ExpectEverySampleAccountedFor(*r, intact_path);
    for (const LatencyGroup& g : r->groups) {
      EXPECT_TRUE(g.partial);
      if (g.summary.count != 0) {
        EXPECT_LE(g.summary.max_ns, (intact_max[{g.dev, g.op, g.phase}])) << PhaseName(g.phase);
      }
    }
    left_out += r->coverage.outside_total() != 0;
    if (!r->coverage.has_window) {
      EXPECT_TRUE(r->groups.empty());
      continue;
    }
    if (intact_gaps.empty()) EXPECT_TRUE(r->coverage.gaps.empty());  // a cut only ends data
    EXPECT_EQ(r->first_ts_ns, intact->first_ts_ns);
    ReportOptions until = options;
    until.assume_gaps = intact_gaps;
    until.until_s = static_cast<double>(r->coverage.window_end_ns - intact->first_ts_ns) / 1e9;
    std::optional<LatencyReport> reference = Report(intact_path, until);
    EXPECT_TRUE(reference.has_value());
    if (!reference.has_value()) continue;
    std::string why;
    EXPECT_TRUE(SameBuckets(BucketsOf(*r), BucketsOf(*reference), &why)) << why;
  }
  ::unlink(path.c_str());
  return {read, left_out, before_data};
}

}  // namespace iotrace::testing

#endif  // IOTRACE_TESTS_UNIT_COVERAGE_CHECK_H_
