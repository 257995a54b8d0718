// The reader against every sample layout perf produces: ids by IDENTIFIER or ID, READ (single
// and group), CALLCHAIN, data after RAW, missing TID/CPU, non-tracepoint attrs, AUXTRACE.
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/perf_data_writer.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

namespace iotrace {
namespace {

using test::CollectingSink;
using test::PerfRecordBuilder;
using test::SampleFields;

struct LayoutCase {
  const char* name;
  uint64_t sample_type;
  uint64_t read_format = 0;
  int attrs = 2;
  // Added to the second attr's sample_type: attrs whose fields lie at different offsets.
  uint64_t second_attr_extra = 0;
};

class PerfDataLayoutTest : public ::testing::TestWithParam<LayoutCase> {
 protected:
  void SetUp() override {
    setup_ = test::LoadBlockSetup();
    ASSERT_GE(setup_.formats.size(), 2u);
    path_ = test::TmpPath("iotrace-perfdata-l", std::string("-") + GetParam().name);
  }
  void TearDown() override { ::unlink(path_.c_str()); }

  test::BlockSetup setup_;
  std::string path_;
};

// Read words for `read_format`: a single value, or a group of three members.
std::vector<uint64_t> ReadWords(uint64_t read_format) {
  std::vector<uint64_t> w;
  if (read_format & PERF_FORMAT_GROUP) {
    w.push_back(3);
    if (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) w.push_back(111);
    if (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING) w.push_back(222);
    for (int i = 0; i < 3; ++i) {
      w.push_back(1000 + i);
      if (read_format & PERF_FORMAT_ID) w.push_back(77 + i);
      if (read_format & PERF_FORMAT_LOST) w.push_back(0);
    }
  } else {
    w.push_back(1000);
    if (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) w.push_back(111);
    if (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING) w.push_back(222);
    if (read_format & PERF_FORMAT_ID) w.push_back(77);
    if (read_format & PERF_FORMAT_LOST) w.push_back(0);
  }
  return w;
}

TEST_P(PerfDataLayoutTest, DecodesEverySampleOfTheLayout) {
  const LayoutCase& c = GetParam();
  std::vector<PerfEventSpec> specs;
  for (int e = 0; e < c.attrs; ++e) {
    PerfEventSpec spec;
    spec.attr =
        test::IotraceAttr(setup_.formats[e].id, c.sample_type | (e == 1 ? c.second_attr_extra : 0));
    spec.attr.read_format = c.read_format;
    spec.name = setup_.formats[e].FullName();
    spec.ids = {test::SyntheticId(e, 0, 2), test::SyntheticId(e, 1, 2)};
    specs.push_back(spec);
  }
  auto w = PerfDataWriter::Create(path_, specs, setup_.meta, test::TestHost());
  ASSERT_TRUE(w.ok()) << w.status();

  struct Want {
    uint64_t ts;
    uint32_t cpu;
    int32_t pid, tid;
    uint16_t type;
    std::string raw;
  };
  std::vector<Want> want;
  PerfRecordBuilder b;
  for (int i = 0; i < 40; ++i) {
    const int e = i % c.attrs;
    const uint32_t cpu = (i / 2) % 2;
    SampleFields s;
    s.id = test::SyntheticId(e, cpu, 2);
    s.ip = 0xffffffff81000000ull + i;
    s.pid = 500 + i;
    s.tid = 900 + i;
    s.time = 1000 + 10 * i;
    s.addr = 0xdead0000 + i;
    s.stream_id = 42;
    s.cpu = cpu;
    s.period = 1;
    s.read = ReadWords(c.read_format);
    for (int k = 0; k < i % 6; ++k) s.callchain.push_back(0xffffffff81100000ull + k);
    test::BlockRq rq;
    rq.common_pid = 300 + i;
    rq.sector = 4096 + i;
    s.raw = test::EncodeBlockRq(setup_.formats[e], rq);
    if (c.sample_type & PERF_SAMPLE_BRANCH_STACK) {
      s.after_raw = std::string(8, '\0') + std::string(24, '\x5a');  // nr = 0, then junk
    }
    b.AddSample(specs[e].attr, s);
    const bool tid = c.sample_type & PERF_SAMPLE_TID;
    want.push_back({s.time, (c.sample_type & PERF_SAMPLE_CPU) ? cpu : 0u,
                    tid ? static_cast<int32_t>(s.pid) : rq.common_pid,
                    tid ? static_cast<int32_t>(s.tid) : rq.common_pid,
                    static_cast<uint16_t>(setup_.formats[e].id), s.raw});
  }
  ASSERT_TRUE((*w)->AppendData(b.view()).ok());
  ASSERT_TRUE((*w)->Finish().ok());

  auto reader = OpenPerfData(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_TRUE((*reader)->stats().problems.empty());
  ASSERT_EQ(sink.events.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& got = sink.events[i];
    EXPECT_EQ(got.ts, want[i].ts) << i;
    EXPECT_EQ(got.cpu, want[i].cpu) << i;
    EXPECT_EQ(got.pid, want[i].pid) << i;
    EXPECT_EQ(got.tid, want[i].tid) << i;
    EXPECT_EQ(got.type, want[i].type) << i;
    // The payload is the raw data in place, with the kernel's zero padding.
    ASSERT_EQ(got.payload.size(), perf::Align8(want[i].raw.size() + 4) - 4) << i;
    EXPECT_EQ(got.payload.substr(0, want[i].raw.size()), want[i].raw) << i;
  }
}

constexpr uint64_t kTime = PERF_SAMPLE_TIME, kRaw = PERF_SAMPLE_RAW;

INSTANTIATE_TEST_SUITE_P(
    SampleTypes, PerfDataLayoutTest,
    ::testing::Values(
        LayoutCase{"iotrace", test::kIotraceSampleType},
        LayoutCase{"perf_record", PERF_SAMPLE_IP | PERF_SAMPLE_TID | kTime | PERF_SAMPLE_CPU |
                                      PERF_SAMPLE_PERIOD | kRaw | PERF_SAMPLE_IDENTIFIER},
        LayoutCase{"id_not_identifier",
                   PERF_SAMPLE_IP | PERF_SAMPLE_TID | kTime | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
                       PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | kRaw},
        LayoutCase{"read_single",
                   PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | kTime | PERF_SAMPLE_READ | kRaw,
                   PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
                       PERF_FORMAT_ID | PERF_FORMAT_LOST},
        LayoutCase{"read_group",
                   PERF_SAMPLE_IDENTIFIER | kTime | PERF_SAMPLE_CPU | PERF_SAMPLE_READ | kRaw,
                   PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED},
        LayoutCase{"callchain_and_branch_stack",
                   PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | kTime |
                       PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ |
                       PERF_SAMPLE_CALLCHAIN | kRaw | PERF_SAMPLE_BRANCH_STACK,
                   PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST},
        LayoutCase{"time_raw_only_one_attr", kTime | kRaw, 0, 1},
        // The reader decodes samples with one layout when every attr shares it; here the
        // second attr's CPU and RAW lie 16 bytes further on.
        LayoutCase{"attrs_with_different_layouts",
                   PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | kTime | PERF_SAMPLE_CPU | kRaw, 0, 2,
                   PERF_SAMPLE_ADDR | PERF_SAMPLE_PERIOD}),
    [](const ::testing::TestParamInfo<LayoutCase>& info) { return info.param.name; });

class PerfDataSkipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setup_ = test::LoadBlockSetup();
    ASSERT_GE(setup_.formats.size(), 2u);
    path_ = test::TmpPath("iotrace-perfdata-s");
  }
  void TearDown() override { ::unlink(path_.c_str()); }

  SampleFields Sample(uint64_t id, uint64_t t) {
    SampleFields s;
    s.id = id;
    s.time = t;
    s.raw = test::EncodeBlockRq(setup_.formats[0], test::BlockRq());
    return s;
  }

  test::BlockSetup setup_;
  std::string path_;
};

TEST_F(PerfDataSkipTest, SamplesTheReportCannotUseAreSkippedAndCounted) {
  // perf record -e block:block_rq_issue,cycles with a tracking dummy event, plus tracepoint
  // attrs that lack TIME or RAW.
  const uint64_t common = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_CPU;
  std::vector<PerfEventSpec> specs(5);
  specs[0].attr = test::IotraceAttr(setup_.formats[0].id, common | PERF_SAMPLE_TIME | kRaw);
  specs[0].name = "block:block_rq_issue";
  specs[1].attr = test::IotraceAttr(0, common | PERF_SAMPLE_TIME);
  specs[1].attr.type = PERF_TYPE_HARDWARE;
  specs[1].name = "cycles";
  specs[2].attr = test::IotraceAttr(PERF_COUNT_SW_DUMMY, common | PERF_SAMPLE_TIME);
  specs[2].attr.type = PERF_TYPE_SOFTWARE;
  specs[2].name = "dummy:HG";
  specs[3].attr = test::IotraceAttr(setup_.formats[1].id, common | kRaw);
  specs[3].name = "block:block_rq_complete";
  specs[4].attr = test::IotraceAttr(setup_.formats[2].id, common | PERF_SAMPLE_TIME);
  specs[4].name = "block:block_rq_insert";
  for (size_t i = 0; i < specs.size(); ++i) specs[i].ids = {10 + i};
  auto w = PerfDataWriter::Create(path_, specs, setup_.meta, test::TestHost());
  ASSERT_TRUE(w.ok()) << w.status();
  PerfRecordBuilder b;
  b.AddSample(specs[0].attr, Sample(10, 100));
  b.AddSample(specs[1].attr, Sample(11, 101));
  b.AddSample(specs[2].attr, Sample(12, 102));
  b.AddSample(specs[1].attr, Sample(11, 103));
  b.AddSample(specs[3].attr, Sample(13, 104));
  b.AddSample(specs[4].attr, Sample(14, 105));
  b.AddSample(specs[0].attr, Sample(10, 106));
  // A PERF_RECORD_AUXTRACE carries `size` bytes of AUX data after its header-sized part.
  std::string aux;
  PerfRecordBuilder::Put<uint64_t>(&aux, 24);  // size of the AUX payload that follows
  aux += std::string(32, '\0');                // offset, reference, idx, tid, cpu, reserved
  b.AddRecord(perf::kRecordAuxtrace, 0, aux);
  std::string ring = b.bytes() + std::string(24, '\x09');  // AUX bytes that look like nothing
  b.Clear();
  b.AddSample(specs[0].attr, Sample(10, 107));
  ring += b.bytes();
  ASSERT_TRUE((*w)->AppendData(ByteView(ring.data(), ring.size())).ok());
  ASSERT_TRUE((*w)->Finish().ok());

  auto reader = OpenPerfData(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  ASSERT_EQ(sink.events.size(), 3u);
  EXPECT_EQ(sink.events[0].ts, 100u);
  EXPECT_EQ(sink.events[1].ts, 106u);
  EXPECT_EQ(sink.events[2].ts, 107u);
  const ReadStats& stats = (*reader)->stats();
  EXPECT_EQ(stats.Problem("non_tracepoint_sample"), 3u);
  EXPECT_EQ(stats.Problem("sample_without_time"), 1u);
  EXPECT_EQ(stats.Problem("sample_without_raw"), 1u);
  EXPECT_EQ(stats.records, 9u);
  std::string events;
  for (const auto& [k, v] : (*reader)->Info()) {
    if (k == "events") events = v;
  }
  EXPECT_EQ(events,
            "block:block_rq_issue,cycles,dummy:HG,block:block_rq_complete,block:block_rq_insert");
}

TEST_F(PerfDataSkipTest, LossRecordsWithoutSampleIdAreDeliveredAsMet) {
  PerfEventSpec spec;
  spec.attr = test::IotraceAttr(setup_.formats[0].id);
  spec.attr.sample_id_all = 0;
  spec.name = "block:block_rq_issue";
  spec.ids = {5};
  auto w = PerfDataWriter::Create(path_, {spec}, setup_.meta, test::TestHost());
  ASSERT_TRUE(w.ok()) << w.status();
  PerfRecordBuilder b;
  b.AddSample(spec.attr, Sample(5, 100));
  b.AddLost(spec.attr, 5, 9, perf::SampleId());
  b.AddSample(spec.attr, Sample(5, 200));
  ASSERT_TRUE((*w)->AppendData(b.view()).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto reader = OpenPerfData(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  ASSERT_EQ(sink.losses.size(), 1u);
  EXPECT_EQ(sink.losses[0].count, 9u);
  EXPECT_EQ(sink.losses[0].cpu, -1);
  EXPECT_EQ(sink.losses[0].ts, 0u);
  EXPECT_EQ(sink.events.size(), 2u);
  EXPECT_TRUE((*reader)->stats().problems.empty());
}

}  // namespace
}  // namespace iotrace

namespace iotrace {
namespace {

// Re-packs the attrs section of a writer-made file with `attr_bytes` per perf_event_attr (older
// perf: fewer; newer perf: more, zero-filled), appended at the end of the file.
std::string WithAttrSize(const std::string& file, size_t attr_bytes) {
  perf::FileHeader h;
  std::memcpy(&h, file.data(), sizeof(h));
  const size_t n = h.attrs.size / h.attr_size;
  std::string out = file;
  const uint64_t offset = out.size();
  for (size_t i = 0; i < n; ++i) {
    perf::FileAttr fa;
    std::memcpy(&fa, file.data() + h.attrs.offset + i * h.attr_size, sizeof(fa));
    fa.attr.size = static_cast<uint32_t>(attr_bytes);
    std::string entry(reinterpret_cast<const char*>(&fa.attr),
                      std::min(attr_bytes, sizeof(fa.attr)));
    entry.resize(attr_bytes, '\0');
    entry.append(reinterpret_cast<const char*>(&fa.ids), sizeof(fa.ids));
    out += entry;
  }
  h.attr_size = attr_bytes + sizeof(perf::FileSection);
  h.attrs = {offset, n * h.attr_size};
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

TEST(PerfDataAttrSizeTest, ReadsAttrsWrittenByOlderAndNewerPerf) {
  const std::string path = test::TmpPath("iotrace-perfdata-as");
  test::SyntheticOptions o;
  o.samples = 50;
  std::vector<test::ExpectedEvent> expected;
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, &expected).ok());
  std::ifstream in(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // PERF_ATTR_SIZE_VER5 (perf 4.x), VER6, and a future attr 16 bytes larger than ours.
  for (size_t attr_bytes : {size_t{112}, size_t{120}, sizeof(perf_event_attr) + 16}) {
    SCOPED_TRACE(attr_bytes);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      std::string bytes = WithAttrSize(file, attr_bytes);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    auto reader = OpenPerfData(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    CollectingSink sink;
    ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
    ASSERT_EQ(sink.events.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(sink.events[i].ts, expected[i].ts);
      EXPECT_EQ(sink.events[i].type, expected[i].type);
    }
  }
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace iotrace
