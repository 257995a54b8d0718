// Recordings cut short (a copy cut off, a disk that filled), of both backends and of perf's and
// trace-cmd's own files: each is read up to the cut, saying so, or fails with an error that
// names the damaged part and carries a hint. A perf.data that lost its event formats with its
// end is read with formats from elsewhere only when they fit it.
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "iotrace/cli/report_runner.h"
#include "iotrace/formats/external_formats.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "report_text.h"

namespace iotrace {
namespace {

const std::string kFixtures = IOTRACE_FIXTURES;

std::string Release() {
  struct utsname u;
  return uname(&u) == 0 ? u.release : "";
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class CutFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("iotrace-cut-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The first `len` bytes of the fixture, as a file of its own.
  std::string Cut(const std::string& fixture, size_t len) {
    const std::string bytes = test::ReadFixture(fixture);
    EXPECT_GT(bytes.size(), len);
    const std::string path = (dir_ / "cut").string();
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(len));
    return path;
  }

  struct Outcome {
    bool opened = false;
    std::string error, hint;
    uint64_t events = 0;
    ReadStats stats;
  };
  Outcome Read(const std::string& path, const FormatsFallback* fallback) {
    Outcome o;
    auto reader = OpenTraceReader(path, fallback);
    if (!reader.ok()) {
      o.error = std::string(reader.status().message());
      o.hint = HintOf(reader.status());
      return o;
    }
    o.opened = true;
    struct Counter : EventSink {
      uint64_t n = 0;
      void OnEvent(const RawEvent&) override { ++n; }
    } sink;
    EXPECT_TRUE((*reader)->ReadAll(&sink).ok());
    o.events = sink.n;
    o.stats = (*reader)->stats();
    return o;
  }

  std::filesystem::path dir_;
};

// Every fixture, cut at 10%, 50% and 90% of its size, at a page boundary and in the middle of a
// record (the byte before a page boundary: no record of these files ends there), read with the
// 6.18 formats of tests/fixtures/formats/6.18 standing in for the running kernel's.
TEST_F(CutFileTest, EveryCutIsReadUpToTheCutOrFailsNamingThePartWithAHint) {
  const FormatsFallback kernel = RunningKernelFormats(kFixtures + "/formats/6.18", "fixture");
  for (const char* fixture :
       {"golden/perf_mq.data", "golden/iotrace_mq.data", "perf/block-mq-deadline.data",
        "tracedat/dd_v6.dat", "tracedat/dd_v7_none.dat", "tracedat/dd_v7_zstd.dat"}) {
    const std::string whole_path = kFixtures + "/" + fixture;
    const Outcome whole = Read(whole_path, nullptr);
    ASSERT_TRUE(whole.opened) << fixture << ": " << whole.error;
    const size_t size = test::ReadFixture(fixture).size();
    for (size_t len : {size / 10, size / 2, size * 9 / 10, size_t{4096} * (size / 2 / 4096),
                       size_t{4096} * (size / 2 / 4096) + 4095}) {
      SCOPED_TRACE(std::string(fixture) + " cut at " + std::to_string(len) + " of " +
                   std::to_string(size));
      const Outcome cut = Read(Cut(fixture, len), &kernel);
      if (!cut.opened) {
        EXPECT_NE(cut.hint, "") << cut.error;
        continue;
      }
      if (cut.stats.Problem("file_cut_after_data") != 0) {
        EXPECT_EQ(cut.events, whole.events);  // perf.data cut in its feature sections
        continue;
      }
      EXPECT_LT(cut.events, whole.events);
      EXPECT_EQ(cut.stats.Problem(kProblemFileCut), 1u);
    }
  }
}

TEST_F(CutFileTest, PerfRecordFileCutInItsDataIsReadWithKernelFormatsThatFit) {
  const std::string path = Cut("perf/block-mq-deadline.data", 42420);  // 50%
  const FormatsFallback kernel = RunningKernelFormats(kFixtures + "/formats/6.18", "6.18-fixture");
  const Outcome o = Read(path, &kernel);
  ASSERT_TRUE(o.opened) << o.error;
  EXPECT_GT(o.events, 0u);
  EXPECT_EQ(o.stats.Problem(kProblemFileCut), 1u);
  EXPECT_EQ(o.stats.Problem("truncated_record"), 1u);

  ReportOptions options;
  options.input = path;
  options.kernel_tracefs = kFixtures + "/formats/6.18";
  std::ostringstream out, err;
  ASSERT_TRUE(RunReport(options, out, err).ok());
  const std::string warning =
      "event formats taken from the running kernel (" + Release() +
      "): the file is cut short, and its tracing data (HEADER_TRACING_DATA, the event formats), "
      "which perf writes after the data, is lost with its end; check that they are the recording "
      "kernel's, or give --formats-from FILE";
  // Right after the header's first line (the text wraps at 80 columns).
  const std::string text = test::Squeezed(out.str());
  EXPECT_NE(text.find(" of trace WARNING: " + warning + " "), std::string::npos) << out.str();
  EXPECT_NE(text.find("file_cut_short 1, truncated_record 1"), std::string::npos);

  options.format = OutputFormat::kJson;
  std::ostringstream json, json_err;
  ASSERT_TRUE(RunReport(options, json, json_err).ok());
  EXPECT_NE(json.str().find("\"formats_source\": \"running kernel\""), std::string::npos);
  EXPECT_NE(json.str().find("\"formats_warning\": \"event formats taken from the running"),
            std::string::npos);
  EXPECT_EQ(Lines(json_err.str()).front(), "iotrace: warning: " + warning);
}

TEST_F(CutFileTest, KernelFormatsThatDoNotFitAreAnErrorNamingTheEvent) {
  // Kernels before 6.11 laid block_rq_* out without ioprio and with rwbs[8] (same ids here).
  const std::string path = Cut("perf/block-mq-deadline.data", 42420);
  const FormatsFallback old = RunningKernelFormats(kFixtures + "/formats/6.10", "6.10-fixture");
  const Outcome o = Read(path, &old);
  ASSERT_FALSE(o.opened);
  EXPECT_EQ(o.error,
            "read " + path +
                ": event formats: the file is cut short, and its tracing data "
                "(HEADER_TRACING_DATA, the event formats), which perf writes after the data, is "
                "lost with its end; the formats of the running kernel (6.10-fixture) do not "
                "match: event id 2105 is block:block_rq_insert there, but the file's sample at "
                "byte 19336 has 68 bytes of raw data, but its field cmd points at bytes 0 to 0 "
                "(its fields end at byte 60)");
  EXPECT_EQ(o.hint,
            "give the formats of a recording made on the kernel that recorded this one: iotrace "
            "report --formats-from FILE (a perf.data or trace.dat), or copy the file again from "
            "where it was recorded");

  // No tracefs where the kernel's formats were to be read (a folder of recordings, no events/).
  const FormatsFallback none = RunningKernelFormats(kFixtures + "/golden", "x");
  const Outcome missing = Read(path, &none);
  ASSERT_FALSE(missing.opened);
  EXPECT_NE(missing.error.find("the formats of the running kernel (x) cannot be read: open "
                               "tracefs " +
                               kFixtures + "/golden/events: "),
            std::string::npos)
      << missing.error;
}

TEST_F(CutFileTest, KernelFormatsThatLackAnEventOfTheFileAreAnErrorNamingItsId) {
  // perf_mq.data recorded 15 block events; the fixture tree has 8 of them.
  const std::string path = Cut("golden/perf_mq.data", 807316);
  const FormatsFallback kernel = RunningKernelFormats(kFixtures + "/formats/6.18", "6.18");
  const Outcome o = Read(path, &kernel);
  ASSERT_FALSE(o.opened);
  EXPECT_NE(o.error.find("; the formats of the running kernel (6.18) do not match: the file's "
                         "event id 2091 is not an event there"),
            std::string::npos)
      << o.error;
}

TEST_F(CutFileTest, TraceDatErrorsNameThePartAndWhatToDo) {
  std::string path = Cut("tracedat/dd_v7_none.dat", 40808);  // 90%: the last options are lost
  Outcome o = Read(path, nullptr);
  ASSERT_FALSE(o.opened);
  EXPECT_EQ(o.error, "read trace.dat " + path +
                         ": options section 3, at byte 45056, lies past the end of the file "
                         "(40808 bytes): the file is cut short (or damaged), and the options "
                         "that say where each CPU's data lies are lost with its end");
  EXPECT_EQ(o.hint,
            "copy the file again from where it was recorded, or record again; trace-cmd's file "
            "version 7 keeps the CPU data table at the end of the file, version 6 (trace-cmd "
            "record --file-version 6, iotrace record -b ftrace) before the data, so a cut "
            "version 6 file is read up to the cut");

  path = Cut("tracedat/dd_v6.dat", 12697);  // 10%: inside the event formats
  o = Read(path, nullptr);
  ASSERT_FALSE(o.opened);
  EXPECT_EQ(o.error, "read trace.dat " + path +
                         " (12697 bytes): file header and event formats: tracing data: "
                         "truncated or corrupt event format");
  EXPECT_EQ(o.hint,
            "the file is cut short or damaged: copy it again from where it was recorded, or "
            "record again");

  o = Read(Cut("tracedat/dd_v6.dat", 63488), nullptr);  // 50%: CPU 1's data is gone
  ASSERT_TRUE(o.opened) << o.error;
  EXPECT_EQ(o.stats.Problem(kProblemFileCut), 1u);
  EXPECT_EQ(o.stats.Problem("trace_dat_cpu_data_truncated"), 2u);
}

TEST_F(CutFileTest, WithoutFormatsToFallBackOnTheErrorSaysTheyWereLostAndWhatToDo) {
  const std::string path = Cut("golden/perf_mq.data", 807316);  // 50%
  const Outcome o = Read(path, nullptr);
  ASSERT_FALSE(o.opened);
  EXPECT_EQ(o.error, "read " + path +
                         ": event formats: the file is cut short, and its tracing data "
                         "(HEADER_TRACING_DATA, the event formats), which perf writes after the "
                         "data, is lost with its end: the tracepoint fields cannot be decoded");
  EXPECT_EQ(o.hint,
            "give the formats of a recording made on the same kernel: iotrace report "
            "--formats-from FILE (a perf.data or trace.dat), or copy the file again from where "
            "it was recorded");
}

TEST_F(CutFileTest, IotracesOwnFileKeepsItsFormatsButNotAnAttrSectionCutOff) {
  // iotrace record writes the tracing data first: a cut in the data needs no formats from
  // elsewhere.
  const Outcome half = Read(Cut("golden/iotrace_mq.data", 132684), nullptr);
  ASSERT_TRUE(half.opened) << half.error;
  EXPECT_GT(half.events, 0u);
  EXPECT_EQ(half.stats.Problem(kProblemFileCut), 1u);
  // Its attrs follow the tracing data: a cut before them leaves no event.
  const std::string path = Cut("golden/iotrace_mq.data", 26536);  // 10%
  const Outcome o = Read(path, nullptr);
  ASSERT_FALSE(o.opened);
  EXPECT_EQ(o.error, "read " + path +
                         ": attr section (bytes 30048 to 30768) runs past the end of the file "
                         "(26536 bytes)");
  EXPECT_EQ(o.hint,
            "the file is cut short or damaged: copy it again from where it was recorded, or "
            "record again");
}

}  // namespace
}  // namespace iotrace
