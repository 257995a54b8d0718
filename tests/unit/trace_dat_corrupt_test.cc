// Corrupt trace.dat files found by tests/fuzz/trace_file_fuzzer (one test per finding): each is
// a clear error or a counted skip, never a crash, a hang or a file-driven allocation.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ftrace_page_builder.h"
#include "gtest/gtest.h"
#include "iotrace/trace_dat_reader.h"
#include "iotrace/trace_dat_writer.h"
#include "iotrace/trace_reader.h"

namespace iotrace {
namespace {

using testing::ReadFixtureFile;

class CountingSink : public EventSink {
 public:
  void OnEvent(const RawEvent& ev) override { ++events; }
  void OnLoss(const LossRecord& loss) override { ++losses; }
  uint64_t events = 0;
  uint64_t losses = 0;
};

class TraceDatCorruptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/iotrace_tracedat_corrupt_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/t.dat";
    meta_.header_page = testing::HeaderPageText(4096);
    meta_.header_event = ReadFixtureFile("formats/header_event");
    complete_text_ = ReadFixtureFile("formats/block_rq_complete.format");
    auto complete = ParseEventFormat("block", complete_text_);
    ASSERT_TRUE(complete.ok()) << complete.status();
    complete_ = *complete;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // A valid v6 file (TraceDatWriter) with meta_'s formats and one page of events on CPU 0.
  std::string WriteFile(int events = 3) {
    TraceDatWriterOptions o;
    o.meta = meta_;
    o.nr_cpus = 1;
    auto w = TraceDatWriter::Create(path_, o);
    EXPECT_TRUE(w.ok()) << w.status();
    testing::FtracePageBuilder page(1000);
    for (int i = 0; i < events; ++i) {
      EXPECT_TRUE(page.AddEvent(1000 + 10 * i,
                                testing::BlockPayload(complete_, {1, 7u << 20, 8u * i, 8, "W"})));
    }
    const std::string bytes = page.Build();
    EXPECT_TRUE((*w)->AppendPages(0, ByteView(bytes.data(), bytes.size())).ok());
    auto result = (*w)->Finish();
    EXPECT_TRUE(result.ok()) << result.status();
    return Slurp();
  }
  std::string Slurp() const {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void Spit(const std::string& bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  std::string dir_;
  std::string path_;
  TracingMetadata meta_;
  std::string complete_text_;
  EventFormat complete_;
};

TEST_F(TraceDatCorruptTest, FormatTextThatCrashesLibtraceeventIsCountedAndSkipped) {
  // Found by trace_file_fuzzer: a field declaration with non-ASCII bytes ("char comm[" followed
  // by garbage) and a print fmt naming REC->comm made tep_parse_event dereference NULL.
  std::string issue = ReadFixtureFile("formats/block_rq_issue.format");
  const size_t at = issue.find("16];\toff");
  ASSERT_NE(at, std::string::npos);
  issue.replace(at, 8, "\xc8\xc9\xa2\xc4\xf6\x90\x99\x99");
  meta_.event_formats = {{"block", complete_text_}, {"block", issue}};
  WriteFile();

  auto reader = OpenTraceDat(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ((*reader)->formats().size(), 1u);
  EXPECT_EQ((*reader)->formats()[0].name, "block_rq_complete");
  CountingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ(sink.events, 3u);
  EXPECT_EQ((*reader)->stats().Problem("event_format_unparsed"), 1u);
}

}  // namespace
}  // namespace iotrace
