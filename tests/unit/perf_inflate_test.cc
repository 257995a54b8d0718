// perf record -z files (PERF_RECORD_COMPRESSED and COMPRESSED2, the compressed feature) read
// as the plain file they were made from, in file and pipe mode; damaged compressed bytes and a
// recording perf never finished are counted and shown, not read wrong.
#include "iotrace/formats/perf_inflate.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/analysis/report.h"
#include "iotrace/formats/perf_data.h"
#include "iotrace/formats/perf_data_recover.h"
#include "iotrace/formats/trace_reader_open.h"
#include "synth_recording.h"
#include "test_files.h"

namespace iotrace {
namespace {

using test::ScratchPath;
using test::Slurp;
using test::Spit;

constexpr uint32_t kCompressed2 = 83;
constexpr char kPrefix[] = "iotrace_perf_inflate";

void Put(std::string* out, const void* p, size_t n) { out->append(static_cast<const char*>(p), n); }

// Each feature's section bytes, by feature (from the table after the data).
std::map<int, std::string> FeatureBytes(const std::string& file) {
  perf::FileHeader h;
  std::memcpy(&h, file.data(), sizeof(h));
  std::map<int, std::string> out;
  uint64_t at = h.data.offset + h.data.size;
  for (int f = 0; f < perf::kFeatBits; ++f) {
    if (!perf::HasFeature(h, f)) continue;
    perf::FileSection s;
    std::memcpy(&s, file.data() + at, sizeof(s));
    at += sizeof(s);
    out[f] = file.substr(s.offset, s.size);
  }
  return out;
}

// What perf record -z writes, made from a plain perf.data: the data's records pushed through
// one zstd stream in pieces of `piece` bytes (which end inside records, as perf's pushes of a
// ring that wrapped do), each piece's output in compressed records of `type` (81 or 83) no
// larger than `max_record`; round marks kept between them, uncompressed; the compressed feature
// added to the header and the table.
// With `across_rounds`, each push before a round mark stops 20 bytes short, inside the last
// record, whose end then comes after the mark (perf's compressor can hold output back so).
std::string Compress(const std::string& plain, uint32_t type, size_t piece, size_t max_record,
                     bool across_rounds = false) {
  perf::FileHeader h;
  std::memcpy(&h, plain.data(), sizeof(h));
  const uint64_t data_end = h.data.offset + h.data.size;
  std::string out = plain.substr(0, h.data.offset);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
  std::string pending;  // the records not pushed yet
  auto emit = [&](const std::string& zbytes) {
    for (size_t at = 0; at < zbytes.size(); at += max_record) {
      const size_t n = std::min(max_record, zbytes.size() - at);
      perf::EventHeader eh;
      eh.type = type;
      if (type == kCompressed2) {
        eh.size = static_cast<uint16_t>(perf::Align8(sizeof(eh) + 8 + n));
        Put(&out, &eh, sizeof(eh));
        const uint64_t size = n;
        Put(&out, &size, 8);
        out.append(zbytes, at, n);
        out.append(eh.size - sizeof(eh) - 8 - n, '\0');
      } else {
        eh.size = static_cast<uint16_t>(sizeof(eh) + n);  // not padded, as perf's
        Put(&out, &eh, sizeof(eh));
        out.append(zbytes, at, n);
      }
    }
  };
  auto push = [&](size_t keep) {
    const size_t upto = pending.size() - std::min(keep, pending.size());
    for (size_t at = 0; at < upto; at += piece) {
      const size_t n = std::min(piece, upto - at);
      ZSTD_inBuffer in{pending.data() + at, n, 0};
      std::string zbytes;
      for (;;) {
        char buf[1 << 16];
        ZSTD_outBuffer o{buf, sizeof(buf), 0};
        const size_t left = ZSTD_compressStream2(cctx, &o, &in, ZSTD_e_flush);
        zbytes.append(buf, o.pos);
        if (left == 0) break;
      }
      emit(zbytes);
    }
    pending.erase(0, upto);
  };
  for (uint64_t pos = h.data.offset; pos < data_end;) {
    perf::EventHeader eh;
    std::memcpy(&eh, plain.data() + pos, sizeof(eh));
    if (eh.type == perf::kRecordFinishedRound) {
      push(across_rounds ? 20 : 0);
      out.append(plain, pos, eh.size);
    } else {
      pending.append(plain, pos, eh.size);
    }
    pos += eh.size;
  }
  push(0);
  ZSTD_freeCCtx(cctx);

  // The feature table again, with the compressed feature (version, type zstd, level, ratio,
  // mmap_len) in its place among the others.
  std::map<int, std::string> sections = FeatureBytes(plain);
  const uint32_t comp[5] = {1, 1, 3, 10, 528384};
  sections[perf::kFeatCompressed] = std::string(reinterpret_cast<const char*>(comp), sizeof(comp));
  h.features[perf::kFeatCompressed / 64] |= uint64_t{1} << (perf::kFeatCompressed % 64);
  h.data.size = out.size() - h.data.offset;
  uint64_t at = out.size() + sections.size() * sizeof(perf::FileSection);
  for (const auto& [f, bytes] : sections) {
    perf::FileSection s{at, bytes.size()};
    Put(&out, &s, sizeof(s));
    at += bytes.size();
  }
  for (const auto& [f, bytes] : sections) out += bytes;
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

struct Summary {
  std::map<std::tuple<uint32_t, BlockOp, Phase>,
           std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, size_t>>
      groups;  // count, sum-ish (mean * count), min, max, buckets
  std::vector<uint64_t> events;
  uint64_t reader_events = 0;
  std::map<std::string, uint64_t> problems;
  bool complete = false;
  std::string formats_source;
};

Summary Report(const std::string& path) {
  Summary s;
  auto reader = OpenTraceReader(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return s;
  s.formats_source = (*reader)->FormatsSource();
  ReportOptions ro;
  ro.input = path;
  ro.threads = 1;
  ro.sysfs_root = std::string(IOTRACE_FIXTURES) + "/devices/sys";
  ro.procfs_root = std::string(IOTRACE_FIXTURES) + "/devices/proc";
  auto report = BuildLatencyReport(**reader, ro);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return s;
  for (const LatencyGroup& g : report->groups) {
    s.groups[{g.dev, g.op, g.phase}] = {g.summary.count,
                                        static_cast<uint64_t>(g.summary.mean_ns * g.summary.count),
                                        g.summary.min_ns, g.summary.max_ns, g.buckets.size()};
  }
  const Completeness& c = report->completeness;
  s.events.assign(std::begin(c.events), std::end(c.events));
  s.reader_events = c.reader_events;
  for (const auto& [name, count] : c.reader_problems) {
    if (count != 0) s.problems[name] = count;
  }
  s.complete = report->coverage.complete;
  return s;
}

class PerfInflateTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    bench::SynthOptions o;
    o.trace_dat = false;
    o.cpus = 2;
    o.devices = 3;
    o.in_flight = 16;
    o.events = 30000;
    o.wake_bytes = 64 << 10;  // several rounds
    o.formats_dir = std::string(IOTRACE_FIXTURES) + "/formats/6.18";
    plain_path_ = ScratchPath(kPrefix, "plain.data");
    bench::SynthExpected expected;
    const absl::Status st = bench::WriteSynthRecording(plain_path_, o, &expected);
    ASSERT_TRUE(st.ok()) << st;
    plain_ = Slurp(plain_path_);
    ASSERT_GT(plain_.size(), 0u);
    want_ = Report(plain_path_);
    ASSERT_EQ(want_.reader_events, expected.events);
    ASSERT_TRUE(want_.problems.empty());
  }
  void TearDown() override {
    for (const std::string& p : made_) std::remove(p.c_str());
    std::remove(plain_path_.c_str());
  }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = ScratchPath(kPrefix, name);
    Spit(path, bytes);
    made_.push_back(path);
    return path;
  }

  std::string plain_path_, plain_;
  Summary want_;
  std::vector<std::string> made_;
};

TEST_P(PerfInflateTest, ACompressedFileReadsAsThePlainOneItWasMadeFrom) {
  // Pieces of 1000 bytes end inside records; records of at most 300 zstd bytes split a piece's
  // output: a record of the stream spans several compressed records.
  const std::string z = Compress(plain_, GetParam(), 1000, 300);
  ASSERT_LT(z.size(), plain_.size());
  ByteView zv(z.data(), z.size());
  EXPECT_TRUE(PerfDataIsCompressed(zv));
  EXPECT_FALSE(PerfDataIsCompressed(ByteView(plain_.data(), plain_.size())));
  const Summary got = Report(Write("z.data", z));
  EXPECT_EQ(got.groups, want_.groups);
  EXPECT_EQ(got.events, want_.events);
  EXPECT_EQ(got.reader_events, want_.reader_events);
  EXPECT_TRUE(got.problems.empty()) << got.problems.begin()->first;
  EXPECT_TRUE(got.complete);
}

TEST_P(PerfInflateTest, ARecordSplitAcrossARoundMarkIsPutTogether) {
  // Round marks fall inside records of the stream: a record's bytes come before and after one.
  const std::string z = Compress(plain_, GetParam(), 1000, 300, /*across_rounds=*/true);
  const Summary got = Report(Write("across.data", z));
  EXPECT_EQ(got.groups, want_.groups);
  EXPECT_EQ(got.events, want_.events);
  EXPECT_EQ(got.reader_events, want_.reader_events);
  EXPECT_TRUE(got.problems.empty()) << got.problems.begin()->first;
}

TEST_P(PerfInflateTest, AFileCutInsideACompressedRecordKeepsOnlyWholeRecords) {
  const std::string z = Compress(plain_, GetParam(), 1000, 300);
  perf::FileHeader h;
  std::memcpy(&h, z.data(), sizeof(h));
  // Cut inside a compressed record about 60% into the data.
  uint64_t pos = h.data.offset;
  const uint64_t target = h.data.offset + h.data.size * 6 / 10;
  for (;;) {
    perf::EventHeader eh;
    std::memcpy(&eh, z.data() + pos, sizeof(eh));
    if (pos >= target && (eh.type == perf::kRecordCompressed || eh.type == kCompressed2)) break;
    pos += eh.size;
  }
  Summary got = Report(Write("cut.data", z.substr(0, pos + 100)));
  EXPECT_GT(got.problems[kProblemFileCut], 0u);
  EXPECT_FALSE(got.complete);
  EXPECT_GT(got.reader_events, want_.reader_events / 2);
  EXPECT_LT(got.reader_events, want_.reader_events);
  // Nothing but the plain file's own events: every event kind counted no more than there.
  for (size_t k = 0; k < got.events.size(); ++k) EXPECT_LE(got.events[k], want_.events[k]) << k;
  EXPECT_EQ(got.problems.count("short_record"), 0u);
}

TEST_P(PerfInflateTest, TheInflatedFileIsThePlainFileByteForByteButForTheFeature) {
  // Pieces end at record boundaries here, so every record of the data comes back in place.
  const std::string z = Compress(plain_, GetParam(), 1 << 30, 60000);
  UniqueFd tmp(::open(ScratchPath(kPrefix, "inflated.data").c_str(),
                      O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_TRUE(tmp.valid());
  made_.push_back(ScratchPath(kPrefix, "inflated.data"));
  PerfInflation inf;
  ASSERT_TRUE(InflatePerfData(ByteView(z.data(), z.size()), tmp.get(), &inf).ok());
  EXPECT_GT(inf.compressed_records, 0u);
  EXPECT_EQ(inf.level, 3);
  EXPECT_EQ(inf.damaged, 0u);
  // What the compressed records held: every record of the data but the round marks.
  perf::FileHeader h;
  std::memcpy(&h, plain_.data(), sizeof(h));
  uint64_t records_bytes = 0;
  for (uint64_t pos = h.data.offset; pos < h.data.offset + h.data.size;) {
    perf::EventHeader eh;
    std::memcpy(&eh, plain_.data() + pos, sizeof(eh));
    if (eh.type != perf::kRecordFinishedRound) records_bytes += eh.size;
    pos += eh.size;
  }
  EXPECT_EQ(inf.inflated_bytes, records_bytes);
  const std::string back = Slurp(ScratchPath(kPrefix, "inflated.data"));
  // The header's sections, then the data, byte for byte; the same features, each with the same
  // bytes (where the sections lie may differ: iotrace's writer puts them before the data).
  perf::FileHeader b;
  std::memcpy(&b, back.data(), sizeof(b));
  EXPECT_EQ(b.data.offset, h.data.offset);
  EXPECT_EQ(b.data.size, h.data.size);
  EXPECT_EQ(std::memcmp(b.features, h.features, sizeof(h.features)), 0);
  const uint64_t data_end = h.data.offset + h.data.size;
  ASSERT_GE(back.size(), data_end);
  EXPECT_TRUE(
      back.compare(sizeof(h), data_end - sizeof(h), plain_, sizeof(h), data_end - sizeof(h)) == 0);
  EXPECT_EQ(FeatureBytes(back), FeatureBytes(plain_));
  EXPECT_EQ(FeatureBytes(plain_).size(), static_cast<size_t>(std::popcount(h.features[0])));
}

TEST_P(PerfInflateTest, DamagedCompressedBytesAreCountedAndTheDataBeforeThemKept) {
  // One compressed record a piece: each record's zstd bytes begin with a block header.
  std::string z = Compress(plain_, GetParam(), 4096, 60000);
  perf::FileHeader h;
  std::memcpy(&h, z.data(), sizeof(h));
  // About halfway through the data, a compressed record's first block says it is of the
  // reserved type 3, which zstd refuses. (Bytes damaged inside a block's literals would
  // inflate to other bytes without a word: perf writes its frames without checksums, so such
  // damage reads as damaged records, as in a plain file.)
  uint64_t pos = h.data.offset, target = h.data.offset + h.data.size / 2;
  for (;;) {
    perf::EventHeader eh;
    std::memcpy(&eh, z.data() + pos, sizeof(eh));
    if (pos >= target && (eh.type == perf::kRecordCompressed || eh.type == kCompressed2)) {
      const size_t payload = pos + sizeof(eh) + (eh.type == kCompressed2 ? 8 : 0);
      z[payload] = 0x06;  // not the last block, type 3, size 0
      z[payload + 1] = z[payload + 2] = 0;
      break;
    }
    pos += eh.size;
  }
  Summary got = Report(Write("damaged.data", z));
  EXPECT_EQ(got.problems["perf_compressed_damaged"], 1u);
  // The feature sections after the data (perf's layout, as Compress writes) are kept: the
  // events are decoded with the file's own formats.
  EXPECT_EQ(got.formats_source, "file");
  EXPECT_FALSE(got.complete);
  EXPECT_GT(got.reader_events, want_.reader_events / 4);
  EXPECT_LT(got.reader_events, want_.reader_events);
}

TEST_P(PerfInflateTest, AKilledPerfRecordZIsReadToItsEnd) {
  // What perf leaves when killed: the first header (data size 0, the feature bits it meant to
  // write), the records, no feature table.
  const std::string z = Compress(plain_, GetParam(), 1000, 300);
  perf::FileHeader h;
  std::memcpy(&h, z.data(), sizeof(h));
  std::string killed = z.substr(0, h.data.offset + h.data.size);
  h.data.size = 0;
  std::memcpy(killed.data(), &h, sizeof(h));
  ByteView kv(killed.data(), killed.size());
  EXPECT_TRUE(perf::NeverFinished(kv, h, sizeof(h)));
  EXPECT_TRUE(PerfDataIsCompressed(kv));
  Summary got = Report(Write("killed.data", killed));
  EXPECT_EQ(got.reader_events, want_.reader_events);
  EXPECT_EQ(got.events, want_.events);
  EXPECT_EQ(got.problems[kProblemUnfinishedFile], 1u);
  // Not iotrace's to finish: recover says so and leaves the file as it is.
  const std::string path = Write("killed2.data", killed);
  const absl::StatusOr<PerfDataRecovery> rec = RecoverPerfData(path);
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.status().message().find("perf record did not finish it"), std::string::npos)
      << rec.status();
  EXPECT_TRUE(Slurp(path) == killed);
}

TEST_P(PerfInflateTest, APipeModeStreamOfPerfRecordZIsInflatedToo) {
  // `perf record -z -o -`: a pipe header, the attrs and the tracing data as records, then the
  // compressed file's data records.
  const std::string z = Compress(plain_, GetParam(), 1000, 300);
  perf::FileHeader h;
  std::memcpy(&h, z.data(), sizeof(h));
  std::string pipe;
  const uint64_t magic = perf::kMagic, hsize = perf::kPipeHeaderSize;
  Put(&pipe, &magic, 8);
  Put(&pipe, &hsize, 8);
  // HEADER_ATTR records: the attr, then its ids.
  const uint64_t nr_attrs = h.attrs.size / h.attr_size;
  for (uint64_t i = 0; i < nr_attrs; ++i) {
    perf::FileSection ids;
    const uint64_t at = h.attrs.offset + i * h.attr_size;
    std::memcpy(&ids, z.data() + at + h.attr_size - sizeof(ids), sizeof(ids));
    perf::EventHeader eh;
    eh.type = perf::kRecordHeaderAttr;
    eh.size = static_cast<uint16_t>(sizeof(eh) + h.attr_size - sizeof(ids) + ids.size);
    Put(&pipe, &eh, sizeof(eh));
    pipe.append(z, at, h.attr_size - sizeof(ids));
    pipe.append(z, ids.offset, ids.size);
  }
  // HEADER_TRACING_DATA: the feature section's bytes after the record, padded to 8.
  const std::map<int, std::string> features = FeatureBytes(z);
  ASSERT_TRUE(features.count(perf::kFeatTracingData));
  const std::string& td = features.at(perf::kFeatTracingData);
  perf::EventHeader eh;
  eh.type = perf::kRecordHeaderTracingData;
  eh.size = sizeof(eh) + 8;
  Put(&pipe, &eh, sizeof(eh));
  const uint32_t td_size = static_cast<uint32_t>(td.size()), pad = 0;
  Put(&pipe, &td_size, 4);
  Put(&pipe, &pad, 4);
  pipe += td;
  pipe.append(perf::Align8(td.size()) - td.size(), '\0');
  pipe.append(z, h.data.offset, h.data.size);
  const Summary got = Report(Write("pipe.data", pipe));
  EXPECT_EQ(got.groups, want_.groups);
  EXPECT_EQ(got.reader_events, want_.reader_events);
  EXPECT_TRUE(got.problems.empty()) << got.problems.begin()->first;
}

INSTANTIATE_TEST_SUITE_P(Types, PerfInflateTest, ::testing::Values(81u, kCompressed2),
                         [](const auto& info) {
                           return info.param == 81u ? std::string("Compressed")
                                                    : std::string("Compressed2");
                         });

TEST(PerfNeverFinishedTest, AFinishedFileWithoutRecordsIsNotAKilledOne) {
  // A header with data size 0 and one feature, its table at the data offset naming a section
  // after it: finished, nothing recorded.
  std::string f(sizeof(perf::FileHeader), '\0');
  perf::FileHeader h;
  h.data = {sizeof(h), 0};
  h.features[0] = uint64_t{1} << perf::kFeatHostname;
  const perf::FileSection s{sizeof(h) + sizeof(perf::FileSection), 8};
  Put(&f, &s, sizeof(s));
  f.append("host\0\0\0\0", 8);
  std::memcpy(f.data(), &h, sizeof(h));
  EXPECT_FALSE(perf::NeverFinished(ByteView(f.data(), f.size()), h, sizeof(h)));
  // The same header over records (killed perf): the "table" names nothing in the file.
  std::string killed(sizeof(h), '\0');
  std::memcpy(killed.data(), &h, sizeof(h));
  const perf::EventHeader rec{perf::kRecordComm, 0, 48};
  Put(&killed, &rec, sizeof(rec));
  killed.append(40, 'x');
  EXPECT_TRUE(perf::NeverFinished(ByteView(killed.data(), killed.size()), h, sizeof(h)));
  // iotrace record's first header: no feature bits at all.
  perf::FileHeader none = h;
  none.features[0] = 0;
  EXPECT_TRUE(perf::NeverFinished(ByteView(killed.data(), killed.size()), none, sizeof(h)));
  // iotrace's layout: the sections before the data, the table at the data offset.
  std::string before(sizeof(perf::FileHeader), '\0');
  before.append("host\0\0\0\0", 8);
  perf::FileHeader ih;
  ih.data = {sizeof(ih) + 8, 0};
  ih.features[0] = uint64_t{1} << perf::kFeatHostname;
  const perf::FileSection early{sizeof(ih), 8};
  Put(&before, &early, sizeof(early));
  std::memcpy(before.data(), &ih, sizeof(ih));
  EXPECT_FALSE(perf::NeverFinished(ByteView(before.data(), before.size()), ih, sizeof(ih)));
  // A section that overlaps the table is no section: the "table" is records.
  perf::FileHeader overlap = ih;
  std::string o = before;
  const perf::FileSection into{sizeof(ih) + 8, 16};
  std::memcpy(o.data() + sizeof(ih) + 8, &into, sizeof(into));
  EXPECT_TRUE(perf::NeverFinished(ByteView(o.data(), o.size()), overlap, sizeof(ih)));
  // A header whose data has a size is finished, whatever follows.
  perf::FileHeader sized = h;
  sized.data.size = 48;
  EXPECT_FALSE(perf::NeverFinished(ByteView(killed.data(), killed.size()), sized, sizeof(h)));
}

}  // namespace
}  // namespace iotrace
