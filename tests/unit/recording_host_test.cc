// RecordingHostOf: a file header's facts (TraceReader::Info) as the report's `recorded_on`.
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {
namespace {

using Info = std::vector<std::pair<std::string, std::string>>;

TEST(RecordingHostTest, PerfDataFeaturesGiveEachPartAndABareVersionIsPerfs) {
  const RecordingHost h = RecordingHostOf("perf.data", Info{{"hostname", "db7"},
                                                            {"os_release", "6.1.0-27-amd64"},
                                                            {"perf_version", "6.1.115"},
                                                            {"arch", "x86_64"},
                                                            {"nr_cpus_online", "2"}});
  EXPECT_EQ(h.host, "db7");
  EXPECT_EQ(h.kernel, "6.1.0-27-amd64");
  EXPECT_EQ(h.arch, "x86_64");
  EXPECT_EQ(h.recorder, "perf 6.1.115");
  EXPECT_TRUE(h.known());
}

TEST(RecordingHostTest, TraceDatUnameIsSplitAndABareVersionIsTraceCmds) {
  const RecordingHost h = RecordingHostOf(
      "trace.dat", Info{{"uname", "Linux  db7 6.18.44 aarch64"}, {"recorded by", "3.1.6"}});
  EXPECT_EQ(h.host, "db7");  // (two spaces before it: empty words are skipped)
  EXPECT_EQ(h.kernel, "6.18.44");
  EXPECT_EQ(h.arch, "aarch64");
  EXPECT_EQ(h.recorder, "trace-cmd 3.1.6");
}

TEST(RecordingHostTest, ANamedVersionIsKeptAsItIsAndMissingPartsStayEmpty) {
  RecordingHost h = RecordingHostOf("trace.dat", Info{{"recorded by", "iotrace 0.1.0"}});
  EXPECT_EQ(h.recorder, "iotrace 0.1.0");
  EXPECT_TRUE(h.host.empty());
  EXPECT_TRUE(h.kernel.empty());
  EXPECT_TRUE(h.known());
  // A short uname gives what it has. Several files of both kinds: the header is the first
  // file's, whose kind comes first.
  h = RecordingHostOf("trace.dat+perf.data", Info{{"uname", "Linux db7"}, {"recorded by", "3.1"}});
  EXPECT_EQ(h.host, "db7");
  EXPECT_TRUE(h.kernel.empty());
  EXPECT_TRUE(h.arch.empty());
  EXPECT_EQ(h.recorder, "trace-cmd 3.1");
  h = RecordingHostOf("perf.data+trace.dat", Info{{"perf_version", "6.1.187"}});
  EXPECT_EQ(h.recorder, "perf 6.1.187");
}

TEST(RecordingHostTest, AFileThatSaysNothingIsNotKnown) {
  EXPECT_FALSE(RecordingHostOf("perf.data", Info{}).known());
  EXPECT_FALSE(RecordingHostOf("perf.data", Info{{"data_size", "4096"}, {"cmdline", "x"}}).known());
}

}  // namespace
}  // namespace iotrace
