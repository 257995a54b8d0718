// Writer -> reader round trips of ring bytes encoded as the kernel writes them.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/batch_read.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/perf_data_writer.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

namespace iotrace {
namespace {

using test::BlockRq;
using test::CollectingSink;
using test::PerfRecordBuilder;
using test::SampleFields;

std::string TempPath(const std::string& name) {
  return test::TmpPath("iotrace-perfdata", "-" + name);
}

class PerfDataRoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setup_ = test::LoadBlockSetup();
    ASSERT_GE(setup_.formats.size(), 3u) << "fixture formats missing";
  }
  void TearDown() override {
    for (const std::string& p : paths_) ::unlink(p.c_str());
  }
  std::string Path(const std::string& name) {
    paths_.push_back(TempPath(name));
    return paths_.back();
  }
  const EventFormat& Issue() const { return setup_.formats[0]; }
  const EventFormat& Complete() const { return setup_.formats[1]; }

  test::BlockSetup setup_;
  std::vector<std::string> paths_;
};

// Checks that `sink` holds exactly `expected`, in order.
void ExpectEvents(const test::BlockSetup& setup, const CollectingSink& sink,
                  const std::vector<test::ExpectedEvent>& expected) {
  ASSERT_EQ(sink.events.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& got = sink.events[i];
    const auto& want = expected[i];
    ASSERT_EQ(got.ts, want.ts) << "event " << i;
    EXPECT_EQ(got.cpu, want.cpu) << "event " << i;
    EXPECT_EQ(got.pid, want.pid) << "event " << i;
    EXPECT_EQ(got.type, want.type) << "event " << i;
    const EventFormat& f = want.type == setup.formats[0].id ? setup.formats[0] : setup.formats[1];
    EXPECT_EQ(test::FieldOf(f, got.payload, "sector"), want.sector) << "event " << i;
  }
}

TEST_F(PerfDataRoundTripTest, DeliversInterleavedCpuDrainsInTimeOrder) {
  for (uint32_t cpus : {1u, 2u, 4u}) {
    SCOPED_TRACE(cpus);
    std::string path = Path("interleaved" + std::to_string(cpus));
    test::SyntheticOptions o;
    o.samples = 5000;
    o.cpus = cpus;
    o.drain_stagger_ns = 10000;
    std::vector<test::ExpectedEvent> expected;
    ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, &expected).ok());
    auto reader = OpenPerfData(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    CollectingSink sink;
    ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
    ExpectEvents(setup_, sink, expected);
    EXPECT_EQ((*reader)->stats().events, expected.size());
    EXPECT_TRUE((*reader)->stats().problems.empty());
  }
}

TEST_F(PerfDataRoundTripTest, SamplesWrittenAgainInTheNextDrainAreDeliveredOnceAndCounted) {
  for (uint32_t records : {1u, 3u}) {
    SCOPED_TRACE(records);
    std::string path = Path("repeats" + std::to_string(records));
    test::SyntheticOptions o;
    o.samples = 6000;
    o.repeat_every = 3;
    o.repeat_records = records;
    uint64_t repeated = 0;
    o.repeated = &repeated;
    std::vector<test::ExpectedEvent> expected;
    ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, &expected).ok());
    ASSERT_GT(repeated, 20u);
    auto reader = OpenPerfData(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    CollectingSink sink;
    ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
    ExpectEvents(setup_, sink, expected);
    EXPECT_EQ((*reader)->stats().events, expected.size());
    EXPECT_EQ((*reader)->stats().Problem("duplicate_record"), repeated);
    EXPECT_EQ((*reader)->stats().Problem("out_of_order_beyond_window"), 0u);
  }
}

// Reads `path` with `options`, without and with read-ahead (as a one-pass report reads: the
// ring filled on a thread of its own, the far path beside it): every expected event in order,
// the repeated records dropped and counted, nothing out of order or failed.
// `batched`: whether reads must have been made together (ReadStats::batched_reads) when the ring
// is read in this thread (with read-ahead its larger ring may leave too few runs far for it);
// else none may be.
void ExpectReadInOrderWithAndWithoutReadAhead(const test::BlockSetup& setup,
                                              const std::string& path,
                                              const PerfReadOptions& options,
                                              const std::vector<test::ExpectedEvent>& expected,
                                              uint64_t repeated, bool batched = false) {
  for (bool ahead : {false, true}) {
    SCOPED_TRACE(ahead);
    auto reader = OpenPerfData(path, options);
    ASSERT_TRUE(reader.ok()) << reader.status();
    (*reader)->set_read_ahead(ahead);
    CollectingSink sink;
    ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
    ExpectEvents(setup, sink, expected);
    EXPECT_EQ((*reader)->stats().Problem("duplicate_record"), repeated);
    EXPECT_EQ((*reader)->stats().Problem("out_of_order_beyond_window"), 0u);
    EXPECT_EQ((*reader)->stats().Problem("read_error"), 0u);
    if (!batched) {
      EXPECT_EQ((*reader)->stats().batched_reads, 0u);
    } else if (!ahead) {
      EXPECT_GT((*reader)->stats().batched_reads, 0u);
    }
  }
}

// 256 busy CPUs, each drained every 4 ms: rounds of 256 runs.
test::SyntheticOptions ManyCpus(uint64_t samples) {
  test::SyntheticOptions o;
  o.samples = samples;
  o.cpus = 256;
  o.drain_interval_ns = 4000000;
  o.drain_stagger_ns = 15000;
  return o;
}

// Reading through a 256 KiB ring: with ManyCpus' rounds, hundreds of runs read their records
// again from the file at once.
PerfReadOptions FarRunsOptions() {
  PerfReadOptions options;
  options.read_ring_bytes = 256 << 10;
  options.read_step_bytes = 16 << 10;
  options.merge.release_step = 4096;
  return options;
}

// ExpectReadInOrderWithAndWithoutReadAhead with FarRunsOptions, the far reads batched and not
// (as where io_uring cannot be had).
void ExpectReadInOrderBatchedAndNot(const test::BlockSetup& setup, const std::string& path,
                                    const std::vector<test::ExpectedEvent>& expected,
                                    uint64_t repeated) {
  PerfReadOptions options = FarRunsOptions();
  const bool uring = BatchReader::Create(1).ok();
  if (!uring) std::fprintf(stderr, "no io_uring here: both reads are the preads' alone\n");
  for (bool batch : {true, false}) {
    SCOPED_TRACE(batch);
    options.batch_far_reads = batch;
    ExpectReadInOrderWithAndWithoutReadAhead(setup, path, options, expected, repeated,
                                             batch && uring);
  }
}

TEST_F(PerfDataRoundTripTest, RoundsOfManyCpusLargerThanTheRingAreReadAgainFromTheFileInOrder) {
  // 64 busy CPUs drained every 2 ms: rounds of ~400 KiB, through a ring of 256 KiB (so the
  // cursors a round or two behind the scan read their runs again from the file, 4 KiB at a time),
  // with some drains starting with the last samples of the one before (compared, below the
  // ring, with the records emitted before them).
  std::string path = Path("manycpus");
  test::SyntheticOptions o;
  o.samples = 40000;
  o.cpus = 64;
  o.drain_interval_ns = 2000000;
  o.drain_stagger_ns = 20000;
  o.repeat_every = 5;
  o.repeat_records = 2;
  uint64_t repeated = 0;
  o.repeated = &repeated;
  std::vector<test::ExpectedEvent> expected;
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, &expected).ok());
  ASSERT_GT(repeated, 100u);
  PerfReadOptions options;
  options.read_ring_bytes = 256 << 10;
  options.read_ahead_ring_bytes = 512 << 10;
  options.read_step_bytes = 16 << 10;
  options.far_block_bytes = 4096;
  options.merge.release_step = 4096;
  ExpectReadInOrderWithAndWithoutReadAhead(setup_, path, options, expected, repeated,
                                           BatchReader::Create(1).ok());
}

TEST_F(PerfDataRoundTripTest, ManyRunsReadAgainFromTheFileReadAheadTogether) {
  // Hundreds of runs read their records again from the file at once. With the default block
  // size (8 KiB at 256 CPUs) they read with blocks ahead, 4 KiB a read into blocks that hold 8,
  // many reads a system call (BatchReader), the records across two blocks' seam copied in front
  // of the second: every record must come out once, in order.
  std::string path = Path("readahead");
  test::SyntheticOptions o = ManyCpus(150000);
  o.repeat_every = 7;
  o.repeat_records = 1;
  uint64_t repeated = 0;
  o.repeated = &repeated;
  std::vector<test::ExpectedEvent> expected;
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, &expected).ok());
  ExpectReadInOrderBatchedAndNot(setup_, path, expected, repeated);
}

TEST_F(PerfDataRoundTripTest, LargeRecordsAmongManyFarRunsComeOutWholeAndInOrder) {
  // As above, with every 37th record 2-9 KiB long: records across a block's seam longer than the
  // headroom before the ahead block (read again from the file, not copied), records longer than
  // a small block (a block of the largest size), both among runs reading ahead together.
  std::string path = Path("large");
  test::SyntheticOptions o = ManyCpus(60000);
  o.large_every = 37;
  std::vector<test::ExpectedEvent> expected;
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, &expected).ok());
  ExpectReadInOrderBatchedAndNot(setup_, path, expected, 0);
  // The long records' bytes too, as written (batched where io_uring can be had).
  auto reader = OpenPerfData(path, FarRunsOptions());
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  // Past the event's fields (the longer of the two events' records), up to the kernel's
  // padding (the last 7 bytes at most).
  const size_t fields = std::max(test::EncodeBlockRq(setup_.formats[0], BlockRq()).size(),
                                 test::EncodeBlockRq(setup_.formats[1], BlockRq()).size());
  ASSERT_LT(fields, o.large_min_bytes);
  size_t large = 0;
  for (const CollectingSink::Event& e : sink.events) {
    if (e.payload.size() < o.large_min_bytes) continue;
    ++large;
    ASSERT_GE(e.payload.find_first_not_of('\x5a', fields), e.payload.size() - 7);
  }
  EXPECT_EQ(large, o.samples / o.large_every);
}

TEST_F(PerfDataRoundTripTest, ReadsTheSameEventsTwice) {
  std::string path = Path("twice");
  test::SyntheticOptions o;
  o.samples = 300;
  std::vector<test::ExpectedEvent> expected;
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, &expected).ok());
  auto reader = OpenPerfData(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink a, b;
  ASSERT_TRUE((*reader)->ReadAll(&a).ok());
  ASSERT_TRUE((*reader)->ReadAll(&b).ok());
  ExpectEvents(setup_, a, expected);
  ExpectEvents(setup_, b, expected);
  EXPECT_EQ((*reader)->stats().events, expected.size());
}

TEST_F(PerfDataRoundTripTest, WithoutRoundMarksOrdersWithinTheWindow) {
  std::string path = Path("norounds");
  test::SyntheticOptions o;
  o.samples = 4000;
  o.round_marks = false;
  std::vector<test::ExpectedEvent> expected;
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, &expected).ok());
  auto reader = OpenPerfData(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  ExpectEvents(setup_, sink, expected);
  EXPECT_EQ((*reader)->stats().Problem("out_of_order_beyond_window"), 0u);
}

TEST_F(PerfDataRoundTripTest, RecordsBeyondATinyWindowAreDeliveredAndCounted) {
  std::string path = Path("tinywindow");
  test::SyntheticOptions o;
  o.samples = 4000;
  o.round_marks = false;
  std::vector<test::ExpectedEvent> expected;
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, &expected).ok());
  PerfReadOptions options;
  options.merge.window_records = 2;
  options.merge.window_bytes = 1 << 30;
  options.merge.far_window_bytes = 0;  // else the window is at least that (1 GiB)
  auto reader = OpenPerfData(path, options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  ASSERT_EQ(sink.events.size(), expected.size());
  // Exactly the records delivered below the running maximum are counted.
  uint64_t max = 0, behind = 0;
  for (const auto& e : sink.events) {
    if (e.ts < max) ++behind;
    max = std::max(max, e.ts);
  }
  EXPECT_GT(behind, 0u);
  EXPECT_EQ((*reader)->stats().Problem("out_of_order_beyond_window"), behind);
  // Nothing is lost or duplicated.
  std::multiset<uint64_t> want, got;
  for (const auto& e : expected) want.insert(e.ts);
  for (const auto& e : sink.events) got.insert(e.ts);
  EXPECT_EQ(want, got);
}

TEST_F(PerfDataRoundTripTest, DeliversLossRecordsAndCommsInTimeOrder) {
  std::vector<PerfEventSpec> specs = test::BlockSpecs(setup_, 2);
  const perf_event_attr& attr = specs[0].attr;
  std::string path = Path("losses");
  auto writer = PerfDataWriter::Create(path, specs, setup_.meta, test::TestHost());
  ASSERT_TRUE(writer.ok()) << writer.status();

  auto sample = [&](size_t event, uint32_t cpu, uint64_t t, uint32_t pid, uint64_t sector) {
    SampleFields s;
    s.id = test::SyntheticId(event, cpu, 2);
    s.pid = s.tid = pid;
    s.time = t;
    s.cpu = cpu;
    BlockRq rq;
    rq.sector = sector;
    s.raw = test::EncodeBlockRq(setup_.formats[event], rq);
    return s;
  };
  PerfRecordBuilder cpu0, cpu1;
  cpu0.AddSample(attr, sample(0, 0, 100, 42, 1));
  perf::SampleId lost_id;
  lost_id.time = 150;
  lost_id.cpu = 0;
  lost_id.id = test::SyntheticId(0, 0, 2);
  cpu0.AddLost(attr, lost_id.id, 5, lost_id);
  cpu0.AddSample(attr, sample(1, 0, 200, 42, 2));
  perf::SampleId comm_id;
  comm_id.time = 110;
  comm_id.cpu = 1;
  comm_id.id = test::SyntheticId(0, 1, 2);
  cpu1.AddComm(attr, 42, 42, "dd", comm_id);
  cpu1.AddSample(attr, sample(0, 1, 120, 42, 3));
  ASSERT_TRUE((*writer)->AppendData(cpu0.view()).ok());
  ASSERT_TRUE((*writer)->AppendData(cpu1.view()).ok());
  perf::SampleId drop_id;
  drop_id.time = 300;
  drop_id.cpu = 1;
  drop_id.id = test::SyntheticId(1, 1, 2);
  ASSERT_TRUE((*writer)->AppendLostSamples(1, 7, drop_id).ok());
  ASSERT_TRUE((*writer)->AppendComm(43, 44, "kworker/1:2", perf::SampleId()).ok());
  ASSERT_TRUE((*writer)->AppendFinishedRound().ok());
  ASSERT_TRUE((*writer)->Finish().ok());

  auto reader = OpenPerfData(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ(sink.order, "eelel");
  ASSERT_EQ(sink.events.size(), 3u);
  EXPECT_EQ(sink.events[0].ts, 100u);
  EXPECT_EQ(sink.events[1].ts, 120u);
  EXPECT_EQ(sink.events[1].cpu, 1u);
  EXPECT_EQ(sink.events[2].ts, 200u);
  EXPECT_EQ(sink.events[2].type, Complete().id);
  ASSERT_EQ(sink.losses.size(), 2u);
  EXPECT_EQ(sink.losses[0].kind, LossRecord::Kind::kRingLost);
  EXPECT_EQ(sink.losses[0].count, 5u);
  EXPECT_EQ(sink.losses[0].cpu, 0);
  EXPECT_EQ(sink.losses[0].event_id, -1);
  EXPECT_EQ(sink.losses[0].ts, 150u);
  EXPECT_EQ(sink.losses[1].kind, LossRecord::Kind::kSilentDrop);
  EXPECT_EQ(sink.losses[1].count, 7u);
  EXPECT_EQ(sink.losses[1].cpu, 1);
  EXPECT_EQ(sink.losses[1].event_id, static_cast<int32_t>(Complete().id));
  EXPECT_EQ(sink.losses[1].ts, 300u);
  EXPECT_EQ((*reader)->CommOf(42), "dd");
  EXPECT_EQ((*reader)->CommOf(44), "kworker/1:2");
  EXPECT_EQ((*reader)->CommOf(7), "");
  EXPECT_EQ((*reader)->stats().records, 8u);
  EXPECT_EQ((*reader)->stats().events, 3u);
}

TEST_F(PerfDataRoundTripTest, EqualTimestampsKeepFileOrder) {
  std::vector<PerfEventSpec> specs = test::BlockSpecs(setup_, 1);
  std::string path = Path("equal");
  auto writer = PerfDataWriter::Create(path, specs, setup_.meta, test::TestHost());
  ASSERT_TRUE(writer.ok()) << writer.status();
  PerfRecordBuilder a, b;
  auto add = [&](PerfRecordBuilder& rb, uint64_t t, uint64_t sector) {
    SampleFields s;
    s.id = test::SyntheticId(0, 0, 1);
    s.time = t;
    BlockRq rq;
    rq.sector = sector;
    s.raw = test::EncodeBlockRq(Issue(), rq);
    rb.AddSample(specs[0].attr, s);
  };
  add(a, 10, 1);
  add(a, 20, 2);
  add(b, 10, 3);
  add(b, 20, 4);
  ASSERT_TRUE((*writer)->AppendData(a.view()).ok());
  ASSERT_TRUE((*writer)->AppendData(b.view()).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  auto reader = OpenPerfData(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  std::vector<uint64_t> sectors;
  for (const auto& e : sink.events) sectors.push_back(test::FieldOf(Issue(), e.payload, "sector"));
  EXPECT_EQ(sectors, (std::vector<uint64_t>{1, 3, 2, 4}));
}

TEST_F(PerfDataRoundTripTest, CopiesAmongRecordsOfOtherCpusWithTheSameTimeAreDropped) {
  // Samples of four CPUs at t=20; CPU 0's and CPU 1's are written again at the start of their
  // next drains. Each copy follows records of other CPUs with its time, not its original: it is
  // found among the earlier ones, and the records of other CPUs are not taken for copies.
  std::vector<PerfEventSpec> specs = test::BlockSpecs(setup_, 4);
  const perf_event_attr& attr = specs[0].attr;
  std::string path = Path("tiecopies");
  auto writer = PerfDataWriter::Create(path, specs, setup_.meta, test::TestHost());
  ASSERT_TRUE(writer.ok()) << writer.status();
  auto sample = [&](uint32_t cpu, uint64_t t, uint64_t sector) {
    SampleFields s;
    s.id = test::SyntheticId(0, cpu, 4);
    s.pid = s.tid = 40 + cpu;
    s.time = t;
    s.cpu = cpu;
    BlockRq rq;
    rq.sector = sector;
    s.raw = test::EncodeBlockRq(Issue(), rq);
    return s;
  };
  std::vector<PerfRecordBuilder> drains(6);
  drains[0].AddSample(attr, sample(0, 10, 1));
  drains[0].AddSample(attr, sample(0, 20, 2));
  drains[1].AddSample(attr, sample(1, 20, 3));
  drains[2].AddSample(attr, sample(2, 20, 4));
  drains[3].AddSample(attr, sample(0, 20, 2));  // a copy
  drains[3].AddSample(attr, sample(0, 30, 5));
  drains[4].AddSample(attr, sample(1, 20, 3));  // a copy
  drains[4].AddSample(attr, sample(1, 40, 6));
  drains[5].AddSample(attr, sample(3, 20, 7));
  for (const PerfRecordBuilder& d : drains) ASSERT_TRUE((*writer)->AppendData(d.view()).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  auto reader = OpenPerfData(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  std::vector<uint64_t> sectors;
  for (const auto& e : sink.events) sectors.push_back(test::FieldOf(Issue(), e.payload, "sector"));
  EXPECT_EQ(sectors, (std::vector<uint64_t>{1, 2, 3, 4, 7, 5, 6}));
  EXPECT_EQ((*reader)->stats().Problem("duplicate_record"), 2u);
  EXPECT_EQ((*reader)->stats().events, 7u);
}

TEST_F(PerfDataRoundTripTest, ExposesHeaderFactsFormatsAndMetadata) {
  std::string path = Path("info");
  test::SyntheticOptions o;
  o.samples = 10;
  ASSERT_TRUE(test::WriteSyntheticBlockFile(path, o, nullptr).ok());
  auto reader = OpenPerfData(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const TraceReader& r = **reader;
  EXPECT_EQ(r.FileFormat(), "perf.data");
  EXPECT_EQ(r.nr_cpus(), 2);
  std::map<std::string, std::string> info;
  for (const auto& [k, v] : r.Info()) info[k] = v;
  HostInfo host = test::TestHost();
  EXPECT_EQ(info["hostname"], host.hostname);
  EXPECT_EQ(info["os_release"], host.os_release);
  EXPECT_EQ(info["perf_version"], host.tool_version);
  EXPECT_EQ(info["arch"], host.arch);
  EXPECT_EQ(info["cpu_desc"], host.cpu_desc);
  EXPECT_EQ(info["cpuid"], host.cpuid);
  EXPECT_EQ(info["nr_cpus_online"], "2");
  EXPECT_EQ(info["total_mem_kb"], std::to_string(host.total_mem_kb));
  EXPECT_EQ(info["cmdline"], "iotrace record -o test.data");
  EXPECT_EQ(info["events"], "block:block_rq_issue,block:block_rq_complete");
  EXPECT_EQ(info["clockid"], "1");
  EXPECT_EQ(info["clock_ref_wall_ns"], std::to_string(host.clock_ref_wall_ns));
  EXPECT_EQ(info["clock_ref_clock_ns"], std::to_string(host.clock_ref_clock_ns));
  EXPECT_FALSE(info["clock_res_ns"].empty());
  ASSERT_EQ(r.formats().size(), 3u);
  EXPECT_EQ(r.formats()[0].FullName(), "block:block_rq_issue");
  EXPECT_EQ(r.formats()[0].id, Issue().id);
  EXPECT_NE(r.formats()[0].FindField("rwbs"), nullptr);
  EXPECT_EQ(r.metadata().header_page, setup_.meta.header_page);
  EXPECT_EQ(r.metadata().event_formats.size(), 3u);
}

TEST_F(PerfDataRoundTripTest, SavedCmdlinesNameProcessesWithoutCommRecords) {
  test::BlockSetup setup = setup_;
  setup.meta.saved_cmdlines = "77 jbd2/loop3-8\n78 fio\n";
  std::string path = Path("cmdlines");
  auto writer =
      PerfDataWriter::Create(path, test::BlockSpecs(setup, 1), setup.meta, test::TestHost());
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->AppendComm(78, 78, "fio-worker", perf::SampleId()).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  auto reader = OpenPerfData(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_EQ((*reader)->CommOf(77), "jbd2/loop3-8");
  EXPECT_EQ((*reader)->CommOf(78), "fio-worker");  // the COMM record is newer
}

}  // namespace
}  // namespace iotrace
