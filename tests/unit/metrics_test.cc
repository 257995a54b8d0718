// MetricsTap (the figures `iotrace live --listen` exports) and the Prometheus writers: bucket
// indexes at their edges, exact sums, the series cap, the text format line by line, and the
// protobuf format decoded by protoc against the published schema's field numbers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "gtest/gtest.h"
#include "iotrace/analysis/metrics_tap.h"
#include "iotrace/output/prometheus_format.h"
#include "test_files.h"

namespace iotrace {
namespace {

constexpr uint32_t kLoop0 = 7u << 20;
constexpr uint32_t kLoop1 = (7u << 20) | 1;

RequestSample Completed(uint32_t dev, BlockOp op, uint64_t d2c_ns, uint32_t bytes) {
  RequestSample s;
  s.dev = dev;
  s.op = op;
  s.phases = PhaseBit(Phase::kD2C);
  s.issue_ts = 1'000'000;
  s.complete_ts = s.issue_ts + d2c_ns;
  s.bytes = bytes;
  return s;
}

RequestSample Issued(uint32_t dev, BlockOp op, uint64_t i2d_ns) {
  RequestSample s;
  s.dev = dev;
  s.op = op;
  s.phases = PhaseBit(Phase::kI2D);
  s.insert_ts = 1'000'000;
  s.issue_ts = s.insert_ts + i2d_ns;
  return s;
}

TEST(MetricsTest, NativeIndexAtPowersOfTwo) {
  for (int schema : {0, 3, 8}) {
    SCOPED_TRACE(schema);
    const int32_t per_octave = 1 << schema;
    // Bucket i holds (2^((i-1)/2^s), 2^(i/2^s)]: a power of two closes the bucket below it.
    EXPECT_EQ(NativeBucketIndex(1.0, schema), 0);
    EXPECT_EQ(NativeBucketIndex(std::nextafter(1.0, 0.0), schema), 0);
    EXPECT_EQ(NativeBucketIndex(std::nextafter(1.0, 2.0), schema), 1);
    EXPECT_EQ(NativeBucketIndex(2.0, schema), per_octave);
    EXPECT_EQ(NativeBucketIndex(std::nextafter(2.0, 3.0), schema), per_octave + 1);
    EXPECT_EQ(NativeBucketIndex(0.5, schema), -per_octave);
    EXPECT_EQ(NativeBucketIndex(std::nextafter(0.5, 1.0), schema), -per_octave + 1);
    EXPECT_EQ(NativeBucketIndex(std::ldexp(1.0, -20), schema), -20 * per_octave);
    EXPECT_EQ(NativeBucketIndex(32.0, schema), 5 * per_octave);
  }
}

TEST(MetricsTest, NativeIndexBetweenPowersOfTwo) {
  // Schema 3: bounds 2^(1/8) = 1.0905, 2^(2/8) = 1.1892, ..., 2^(7/8) = 1.8340.
  EXPECT_EQ(NativeBucketIndex(1.05, 3), 1);
  EXPECT_EQ(NativeBucketIndex(1.1, 3), 2);
  EXPECT_EQ(NativeBucketIndex(1.9, 3), 8);
  EXPECT_EQ(NativeBucketIndex(0.75, 3), -3);  // 2^(-4/8) = 0.7071 < 0.75 <= 2^(-3/8) = 0.7711
  // Schema 8: 2^(1/256) = 1.0027, 2^(2/256) = 1.0054.
  EXPECT_EQ(NativeBucketIndex(1.001, 8), 1);
  EXPECT_EQ(NativeBucketIndex(1.004, 8), 2);
  // Schema 0: one bucket per power of two.
  EXPECT_EQ(NativeBucketIndex(3.0, 0), 2);
  EXPECT_EQ(NativeBucketIndex(1e-6, 0), -19);  // 2^-20 = 9.54e-7 < 1e-6 <= 2^-19
  // Every index agrees with the bucket's bounds computed directly.
  for (int schema : {0, 3, 8}) {
    for (double v : {1e-6, 3.3e-5, 0.000123, 0.0042, 0.37, 1.7, 12.0}) {
      const int32_t i = NativeBucketIndex(v, schema);
      const double n = 1 << schema;
      EXPECT_LT(std::exp2((i - 1) / n), v) << schema << " " << v;
      EXPECT_LE(v, std::exp2(i / n)) << schema << " " << v;
    }
  }
}

// client_golang's way, spelled out: frexp, then a binary search among 2^(j/2^s - 1).
int32_t ReferenceNativeIndex(double v, int schema) {
  const int n = 1 << schema;
  std::vector<double> bounds;
  for (int j = 0; j < n; ++j) bounds.push_back(std::exp2(double(j) / n - 1.0));
  int exp = 0;
  const double frac = std::frexp(v, &exp);
  return static_cast<int32_t>(std::lower_bound(bounds.begin(), bounds.end(), frac) -
                              bounds.begin()) +
         (exp - 1) * n;
}

TEST(MetricsTest, NativeIndexAgreesWithClientGolangsSearch) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> log2_value(-30, 10);
  for (int schema = kMinNativeSchema; schema <= kMaxNativeSchema; ++schema) {
    SCOPED_TRACE(schema);
    const int n = 1 << schema;
    std::vector<double> values;
    for (int i = 0; i < 20000; ++i) values.push_back(std::exp2(log2_value(rng)));
    // At every bound of a few powers of two, and one ulp either side.
    for (int i = -3 * n; i <= 3 * n; ++i) {
      const double bound = std::exp2(double(i) / n);
      values.insert(values.end(), {std::nextafter(bound, 0.0), bound, std::nextafter(bound, 8.0)});
    }
    for (double v : values) {
      ASSERT_EQ(NativeBucketIndex(v, schema), ReferenceNativeIndex(v, schema)) << v;
    }
  }
}

TEST(MetricsTest, ClassicBucketEdges) {
  const double min = std::ldexp(1.0, kClassicMinExponent);
  EXPECT_EQ(ClassicBucketIndex(0), 0);
  EXPECT_EQ(ClassicBucketIndex(1e-9), 0);
  EXPECT_EQ(ClassicBucketIndex(min), 0);
  EXPECT_EQ(ClassicBucketIndex(std::nextafter(min, 1.0)), 1);
  EXPECT_EQ(ClassicBucketIndex(1.0), 20);
  EXPECT_EQ(ClassicBucketIndex(std::nextafter(1.0, 2.0)), 21);
  EXPECT_EQ(ClassicBucketIndex(32.0), kClassicBounds - 1);
  EXPECT_EQ(ClassicBucketIndex(std::nextafter(32.0, 64.0)), kClassicBounds);  // over
}

TEST(MetricsTest, TapKeepsExactCountsSumsAndBuckets) {
  DeviceNames names("/nonexistent", "/nonexistent");
  MetricsTap tap({.native_schema = 3, .max_series = 100}, &names);
  // 953 ns lies below 2^-20 s (953.67 ns), 954 ns above it; 1 s closes classic bucket 20 and
  // native bucket 0; 0 ns goes to the zero bucket; 40 s is over the last classic bound.
  for (uint64_t ns : {953ull, 954ull, 1'000'000'000ull, 0ull, 40'000'000'000ull}) {
    RequestSample s = Completed(kLoop0, BlockOp::kRead, ns, 4096);
    tap.OnSample(s, s.phases);
  }
  RequestSample issued = Issued(kLoop0, BlockOp::kRead, 2'000);  // I2D: no request counted
  tap.OnSample(issued, issued.phases);
  RequestSample write = Completed(kLoop1, BlockOp::kWrite, 1'000'000, 512);
  tap.OnSample(write, write.phases);

  MetricsSnapshot snap;
  tap.Snapshot(&snap);
  ASSERT_EQ(snap.latency.size(), 3u);
  // Sorted by device name (here MAJ:MIN), then operation and phase in enum order.
  const LatencySeries& i2d = snap.latency[0];
  EXPECT_EQ(i2d.device, "7:0");
  EXPECT_EQ(i2d.operation, "read");
  EXPECT_EQ(i2d.phase, "i2d");
  EXPECT_EQ(i2d.count, 1u);
  EXPECT_EQ(i2d.sum_ns, 2'000u);
  const LatencySeries& d2c = snap.latency[1];
  EXPECT_EQ(d2c.phase, "d2c");
  EXPECT_EQ(d2c.count, 5u);
  EXPECT_EQ(d2c.sum_ns, 953u + 954u + 1'000'000'000u + 40'000'000'000u);
  std::array<uint64_t, kClassicBounds> classic{};
  classic[0] = 2;   // 0 and 953 ns
  classic[1] = 1;   // 954 ns
  classic[20] = 1;  // 1 s
  EXPECT_EQ(d2c.classic, classic);
  EXPECT_EQ(d2c.over, 1u);
  EXPECT_EQ(d2c.native.schema, 3);
  EXPECT_EQ(d2c.native.zero_count, 1u);
  // 953 ns: -160 (2^-20 s) closes it; 954 ns: just above, -159; 1 s: 0; 40 s: 2^5.32 -> 43.
  const std::vector<std::pair<int32_t, uint64_t>> native = {{-160, 1}, {-159, 1}, {0, 1}, {43, 1}};
  EXPECT_EQ(d2c.native.buckets, native);
  EXPECT_EQ(snap.latency[2].device, "7:1");
  EXPECT_EQ(snap.latency[2].operation, "write");

  ASSERT_EQ(snap.requests.size(), 2u);
  EXPECT_EQ(snap.requests[0].device, "7:0");
  EXPECT_EQ(snap.requests[0].operation, "read");
  EXPECT_EQ(snap.requests[0].requests, 5u);
  EXPECT_EQ(snap.requests[0].bytes, 5u * 4096);
  EXPECT_EQ(snap.requests[1].operation, "write");
  EXPECT_EQ(snap.requests[1].bytes, 512u);
  EXPECT_EQ(snap.series_dropped, 0u);

  // Cumulative: a second snapshot into the same object sees the first's figures and more.
  tap.OnSample(write, write.phases);
  tap.Snapshot(&snap);
  ASSERT_EQ(snap.latency.size(), 3u);
  EXPECT_EQ(snap.latency[2].count, 2u);
  EXPECT_EQ(snap.latency[2].sum_ns, 2'000'000u);
  EXPECT_EQ(snap.requests[1].requests, 2u);
}

TEST(MetricsTest, SeriesPastTheCapAreCountedNotKept) {
  DeviceNames names("/nonexistent", "/nonexistent");
  MetricsTap tap({.native_schema = 0, .max_series = 2}, &names);
  for (BlockOp op : {BlockOp::kRead, BlockOp::kWrite, BlockOp::kFlush, BlockOp::kFlush}) {
    RequestSample s = Completed(kLoop0, op, 1'000, 4096);
    s.phases |= PhaseBit(Phase::kI2C);  // two series per op
    s.insert_ts = s.issue_ts - 500;
    tap.OnSample(s, s.phases);
  }
  MetricsSnapshot snap;
  tap.Snapshot(&snap);
  ASSERT_EQ(snap.latency.size(), 2u);
  EXPECT_EQ(snap.latency[0].phase, "d2c");
  EXPECT_EQ(snap.latency[1].phase, "i2c");
  EXPECT_EQ(snap.latency[0].operation, "read");
  EXPECT_EQ(snap.series_dropped, 6u);  // write, flush, flush: two samples each
  // Requests are still counted: they are bounded by devices x ops, not by the cap.
  ASSERT_EQ(snap.requests.size(), 3u);
  EXPECT_EQ(snap.requests[2].requests, 2u);
}

TEST(MetricsTest, TapAllocatesNothingPerSampleOnceWarm) {
  IOTRACE_REQUIRE_ALLOCATION_COUNTER();
  DeviceNames names("/nonexistent", "/nonexistent");
  MetricsTap tap({.native_schema = 8, .max_series = 100}, &names);
  RequestSample lo = Completed(kLoop0, BlockOp::kRead, 10'000, 4096);
  RequestSample hi = Completed(kLoop0, BlockOp::kRead, 900'000, 4096);
  tap.OnSample(lo, lo.phases);
  tap.OnSample(hi, hi.phases);
  test::ScopedAllocationCount allocations;
  for (uint64_t ns = 10'000; ns <= 900'000; ns += 37) {
    RequestSample s = Completed(kLoop0, BlockOp::kRead, ns, 4096);
    tap.OnSample(s, s.phases);
  }
  EXPECT_EQ(allocations.count(), 0u);
}

MetricsSnapshot SmallSnapshot() {
  MetricsSnapshot m;
  LatencySeries s;
  s.device = "loop0";
  s.operation = "read";
  s.phase = "d2c";
  s.count = 7;
  s.sum_ns = 1'000'123'000;
  s.classic[0] = 1;
  s.classic[1] = 2;
  s.classic[20] = 3;
  s.over = 1;
  s.native.schema = 3;
  s.native.zero_count = 1;
  s.native.buckets = {{-160, 1}, {-159, 2}, {-156, 1}, {0, 2}};
  m.latency.push_back(s);
  m.requests.push_back({"loop0", "read", 6, 24576});
  m.inflight.push_back({"loop0", 2});
  m.unpaired.push_back({"loop0", "complete without issue", 1});
  m.lost.push_back({"", "ring \"full\"\\", 4});
  m.series_dropped = 0;
  m.version = "0.9.0";
  m.backend = "perf";
  m.process_cpu_seconds = 0.25;
  m.process_resident_bytes = 12345678;
  return m;
}

TEST(MetricsTest, PrometheusBoundsParseExactlyAndMatchPrometheusLabels) {
  EXPECT_EQ(PrometheusBound(std::ldexp(1.0, -20)), "9.5367431640625e-07");
  EXPECT_EQ(PrometheusBound(std::ldexp(1.0, -14)), "6.103515625e-05");
  EXPECT_EQ(PrometheusBound(std::ldexp(1.0, -13)), "0.0001220703125");
  EXPECT_EQ(PrometheusBound(0.5), "0.5");
  EXPECT_EQ(PrometheusBound(1.0), "1.0");
  EXPECT_EQ(PrometheusBound(32.0), "32.0");
  for (int e = kClassicMinExponent; e <= kClassicMaxExponent; ++e) {
    EXPECT_EQ(std::strtod(PrometheusBound(std::ldexp(1.0, e)).c_str(), nullptr),
              std::ldexp(1.0, e));
  }
}

TEST(MetricsTest, TextFormat) {
  const std::string l =
      "iotrace_block_latency_seconds_bucket{device=\"loop0\",operation=\"read\","
      "phase=\"d2c\",le=";
  const std::string expected =
      "# HELP iotrace_block_latency_seconds Block request latency in seconds by device, "
      "operation and phase: i2d insert to issue (queue), d2c issue to completion (device), i2c "
      "insert to completion, q2d and q2c from the bio's queueing. The phases overlap (i2c = i2d "
      "+ d2c): never sum across phase.\n"
      "# TYPE iotrace_block_latency_seconds histogram\n" +
      l + "\"9.5367431640625e-07\"} 1\n" + l + "\"1.9073486328125e-06\"} 3\n" + l +
      "\"3.814697265625e-06\"} 3\n" + l + "\"7.62939453125e-06\"} 3\n" + l +
      "\"1.52587890625e-05\"} 3\n" + l + "\"3.0517578125e-05\"} 3\n" + l +
      "\"6.103515625e-05\"} 3\n" + l + "\"0.0001220703125\"} 3\n" + l + "\"0.000244140625\"} 3\n" +
      l + "\"0.00048828125\"} 3\n" + l + "\"0.0009765625\"} 3\n" + l + "\"0.001953125\"} 3\n" + l +
      "\"0.00390625\"} 3\n" + l + "\"0.0078125\"} 3\n" + l + "\"0.015625\"} 3\n" + l +
      "\"0.03125\"} 3\n" + l + "\"0.0625\"} 3\n" + l + "\"0.125\"} 3\n" + l + "\"0.25\"} 3\n" + l +
      "\"0.5\"} 3\n" + l + "\"1.0\"} 6\n" + l + "\"2.0\"} 6\n" + l + "\"4.0\"} 6\n" + l +
      "\"8.0\"} 6\n" + l + "\"16.0\"} 6\n" + l + "\"32.0\"} 6\n" + l + "\"+Inf\"} 7\n" +
      "iotrace_block_latency_seconds_sum{device=\"loop0\",operation=\"read\",phase=\"d2c\"} "
      "1.000123\n"
      "iotrace_block_latency_seconds_count{device=\"loop0\",operation=\"read\",phase=\"d2c\"} 7\n"
      "# HELP iotrace_block_requests_total Block requests completed, by device and operation.\n"
      "# TYPE iotrace_block_requests_total counter\n"
      "iotrace_block_requests_total{device=\"loop0\",operation=\"read\"} 6\n"
      "# HELP iotrace_block_bytes_total Bytes of the block requests completed.\n"
      "# TYPE iotrace_block_bytes_total counter\n"
      "iotrace_block_bytes_total{device=\"loop0\",operation=\"read\"} 24576\n"
      "# HELP iotrace_block_inflight_requests Block requests tracked now: inserted or issued, not "
      "completed.\n"
      "# TYPE iotrace_block_inflight_requests gauge\n"
      "iotrace_block_inflight_requests{device=\"loop0\"} 2\n"
      "# HELP iotrace_block_unpaired_total Block events iotrace could not pair with the rest of "
      "their request, by reason.\n"
      "# TYPE iotrace_block_unpaired_total counter\n"
      "iotrace_block_unpaired_total{device=\"loop0\",reason=\"complete without issue\"} 1\n"
      "# HELP iotrace_events_lost_total Trace events lost before iotrace read them, by reason.\n"
      "# TYPE iotrace_events_lost_total counter\n"
      "iotrace_events_lost_total{reason=\"ring \\\"full\\\"\\\\\"} 4\n"
      "# HELP iotrace_series_dropped_total Latency samples left out because their series came "
      "past --max-series.\n"
      "# TYPE iotrace_series_dropped_total counter\n"
      "iotrace_series_dropped_total 0\n"
      "# HELP iotrace_build_info The iotrace version and tracing backend; always 1.\n"
      "# TYPE iotrace_build_info gauge\n"
      "iotrace_build_info{version=\"0.9.0\",backend=\"perf\"} 1\n"
      "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
      "# TYPE process_cpu_seconds_total counter\n"
      "process_cpu_seconds_total 0.25\n"
      "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
      "# TYPE process_resident_memory_bytes gauge\n"
      "process_resident_memory_bytes 12345678\n";
  EXPECT_EQ(PrometheusText(SmallSnapshot()), expected);
}

TEST(MetricsTest, TextFormatLeavesOutEmptyFamilies) {
  MetricsSnapshot m;
  m.version = "1";
  m.backend = "ftrace";
  const std::string text = PrometheusText(m);
  EXPECT_EQ(text.find("iotrace_block_"), std::string::npos) << text;
  EXPECT_NE(text.find("\niotrace_series_dropped_total 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nprocess_cpu_seconds_total 0\n"), std::string::npos) << text;
}

// Splits the delimited stream (varint length, message) and decodes each message with protoc.
std::vector<std::string> DecodeWithProtoc(const std::string& stream) {
  std::vector<std::string> decoded;
  const std::string dir = test::MakeTempDir("metrics_protobuf_");
  if (dir.empty()) {
    ADD_FAILURE() << "mkdtemp in " << test::TestTmpDir();
    return decoded;
  }
  struct RemoveDir {
    const std::string& dir;
    ~RemoveDir() { test::RemoveTree(dir); }
  } remove_dir{dir};
  size_t pos = 0;
  while (pos < stream.size()) {
    uint64_t length = 0;
    int shift = 0;
    while (true) {
      const uint8_t byte = static_cast<uint8_t>(stream.at(pos++));
      length |= uint64_t{byte & 0x7fu} << shift;
      shift += 7;
      if ((byte & 0x80) == 0) break;
    }
    const std::string message_path = dir + "/message.bin";
    std::ofstream(message_path, std::ios::binary) << stream.substr(pos, length);
    pos += length;
    EXPECT_LE(pos, stream.size());
    const std::string command = "protoc --decode=io.prometheus.client.MetricFamily -I " +
                                std::string(IOTRACE_FIXTURES) + "/prometheus metrics.proto < " +
                                message_path + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) {
      ADD_FAILURE() << "popen " << command;
      return decoded;
    }
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) text.append(buf, n);
    EXPECT_EQ(pclose(pipe), 0) << text;
    decoded.push_back(text);
  }
  return decoded;
}

TEST(MetricsTest, ProtobufDecodesWithThePublishedSchema) {
  if (std::system("protoc --version >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "protoc is not installed (Debian: protobuf-compiler; scripts/install-deps.sh)";
  }
  const std::vector<std::string> families = DecodeWithProtoc(PrometheusProtobuf(SmallSnapshot()));
  ASSERT_EQ(families.size(), 10u);

  const std::string& h = families[0];
  EXPECT_NE(h.find("name: \"iotrace_block_latency_seconds\"\n"), std::string::npos) << h;
  EXPECT_NE(h.find("type: HISTOGRAM\n"), std::string::npos) << h;
  EXPECT_NE(h.find("never sum across phase."), std::string::npos) << h;
  // Labels, count, the exact sum in seconds.
  EXPECT_NE(h.find("label {\n    name: \"device\"\n    value: \"loop0\"\n  }\n"
                   "  label {\n    name: \"operation\"\n    value: \"read\"\n  }\n"
                   "  label {\n    name: \"phase\"\n    value: \"d2c\"\n  }\n"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("sample_count: 7\n"), std::string::npos) << h;
  EXPECT_NE(h.find("sample_sum: 1.000123\n"), std::string::npos) << h;
  // Classic buckets, cumulative, at the powers of two; no +Inf (the count stands for it).
  EXPECT_NE(h.find("bucket {\n      cumulative_count: 1\n      upper_bound: 9.5367431640625e-07\n"
                   "    }\n    bucket {\n      cumulative_count: 3\n"
                   "      upper_bound: 1.9073486328125e-06\n    }\n"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("bucket {\n      cumulative_count: 6\n      upper_bound: 32\n    }\n"
                   "    schema: 3\n"),
            std::string::npos)
      << h;
  EXPECT_EQ(h.find("upper_bound: inf"), std::string::npos) << h;
  // Native: buckets -160, -159, -156, 0 -> spans (-160, 2), (+2, 1), (+155, 1); deltas of the
  // counts 1, 2, 1, 2.
  EXPECT_NE(h.find("    zero_threshold: 0\n    zero_count: 1\n"
                   "    positive_span {\n      offset: -160\n      length: 2\n    }\n"
                   "    positive_span {\n      offset: 2\n      length: 1\n    }\n"
                   "    positive_span {\n      offset: 155\n      length: 1\n    }\n"
                   "    positive_delta: 1\n    positive_delta: 1\n    positive_delta: -1\n"
                   "    positive_delta: 1\n"),
            std::string::npos)
      << h;

  EXPECT_NE(families[1].find("name: \"iotrace_block_requests_total\"\n"), std::string::npos)
      << families[1];
  EXPECT_NE(families[1].find("type: COUNTER\n"), std::string::npos) << families[1];
  EXPECT_NE(families[1].find("counter {\n    value: 6\n  }"), std::string::npos) << families[1];
  EXPECT_NE(families[2].find("counter {\n    value: 24576\n  }"), std::string::npos) << families[2];
  EXPECT_NE(families[3].find("type: GAUGE\n"), std::string::npos) << families[3];
  EXPECT_NE(families[3].find("gauge {\n    value: 2\n  }"), std::string::npos) << families[3];
  EXPECT_NE(families[4].find("value: \"complete without issue\""), std::string::npos)
      << families[4];
  EXPECT_NE(families[5].find("value: \"ring \\\"full\\\"\\\\\""), std::string::npos) << families[5];
  EXPECT_NE(families[6].find("name: \"iotrace_series_dropped_total\""), std::string::npos)
      << families[6];
  EXPECT_NE(families[7].find("value: \"perf\""), std::string::npos) << families[7];
  EXPECT_NE(families[8].find("counter {\n    value: 0.25\n  }"), std::string::npos) << families[8];
  EXPECT_NE(families[9].find("gauge {\n    value: 12345678\n  }"), std::string::npos)
      << families[9];
}

TEST(MetricsTest, ProtobufMarksAnEmptyNativeHistogramWithANoOpSpan) {
  if (std::system("protoc --version >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "protoc is not installed (Debian: protobuf-compiler; scripts/install-deps.sh)";
  }
  MetricsSnapshot m;
  LatencySeries s;
  s.device = "loop0";
  s.operation = "flush";
  s.phase = "d2c";
  s.count = 2;
  s.classic[0] = 2;
  s.native.zero_count = 2;  // two 0 ns latencies: no positive bucket
  m.latency.push_back(s);
  const std::vector<std::string> families = DecodeWithProtoc(PrometheusProtobuf(m));
  ASSERT_FALSE(families.empty());
  EXPECT_NE(families[0].find("zero_count: 2\n    positive_span {\n      offset: 0\n"
                             "      length: 0\n    }\n  }\n"),
            std::string::npos)
      << families[0];
  EXPECT_EQ(families[0].find("positive_delta"), std::string::npos) << families[0];
}

}  // namespace
}  // namespace iotrace
