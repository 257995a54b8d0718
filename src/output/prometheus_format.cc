#include "iotrace/output/prometheus_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>

namespace iotrace {
namespace {

constexpr std::string_view kLatencyHelp =
    "Block request latency in seconds by device, operation and phase: i2d insert to issue "
    "(queue), d2c issue to completion (device), i2c insert to completion, q2d and q2c from the "
    "bio's queueing. The phases overlap (i2c = i2d + d2c): never sum across phase.";
constexpr std::string_view kRequestsHelp = "Block requests completed, by device and operation.";
constexpr std::string_view kBytesHelp = "Bytes of the block requests completed.";
constexpr std::string_view kInflightHelp =
    "Block requests tracked now: inserted or issued, not completed.";
constexpr std::string_view kUnpairedHelp =
    "Block events iotrace could not pair with the rest of their request, by reason.";
constexpr std::string_view kLostHelp = "Trace events lost before iotrace read them, by reason.";
constexpr std::string_view kDroppedHelp =
    "Latency samples left out because their series came past --max-series.";
constexpr std::string_view kBuildHelp = "The iotrace version and tracing backend; always 1.";
constexpr std::string_view kCpuHelp = "Total user and system CPU time spent in seconds.";
constexpr std::string_view kRssHelp = "Resident memory size in bytes.";

using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

double UpperBound(int k) { return std::ldexp(1.0, k + kClassicMinExponent); }

// Shortest round-trip text of `v`, laid out as Go's strconv 'g' with precision -1: exponent
// form below 1e-4 and from 1e6 on, with at least two exponent digits (as C's).
std::string GoFloat(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  char* end = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific).ptr;
  const char* e = static_cast<const char*>(std::memchr(buf, 'e', static_cast<size_t>(end - buf)));
  int exp = 0;
  std::from_chars(e + (e[1] == '+' ? 2 : 1), end, exp);  // to_chars writes no NUL to stop at
  if (v == 0 || (exp >= -4 && exp < 6)) {
    end = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed).ptr;
  }
  return std::string(buf, end);
}

// `ns` in seconds as an exact decimal ("0.000123456"): Prometheus parses it to the double
// nearest the true sum, which a double printed from ns / 1e9 need not be past 2^53 ns.
std::string ExactSeconds(uint64_t ns) {
  std::string s = std::to_string(ns / 1'000'000'000);
  uint64_t frac = ns % 1'000'000'000;
  if (frac == 0) return s;
  int digits = 9;
  while (frac % 10 == 0) {
    frac /= 10;
    --digits;
  }
  const std::string f = std::to_string(frac);
  s += '.';
  s.append(static_cast<size_t>(digits) - f.size(), '0');
  s += f;
  return s;
}

// --- Text format 0.0.4 ---

class TextWriter {
 public:
  void Family(std::string_view name, std::string_view help, std::string_view type) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    Escape(help, /*quote=*/false);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  // A sample line; `extra` (le) follows `labels`.
  void Sample(std::string_view name, std::string_view suffix, Labels labels, std::string_view value,
              std::pair<std::string_view, std::string_view> extra = {}) {
    out_ += name;
    out_ += suffix;
    bool first = true;
    auto label = [&](std::string_view key, std::string_view v) {
      out_ += first ? '{' : ',';
      first = false;
      out_ += key;
      out_ += "=\"";
      Escape(v, /*quote=*/true);
      out_ += '"';
    };
    for (const auto& [key, v] : labels) label(key, v);
    if (!extra.first.empty()) label(extra.first, extra.second);
    if (!first) out_ += '}';
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }

  std::string Take() { return std::move(out_); }

 private:
  // HELP text escapes backslash and line feed; label values (`quote`) the double quote too.
  void Escape(std::string_view text, bool quote) {
    for (char c : text) {
      switch (c) {
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '"':
          out_ += quote ? "\\\"" : "\"";
          break;
        default:
          out_ += c;
      }
    }
  }

  std::string out_;
};

// --- Protobuf (io.prometheus.client, field numbers of client_model's metrics.proto) ---

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };
enum MetricType : uint64_t { kCounter = 0, kGauge = 1, kHistogram = 4 };

class ProtoWriter {
 public:
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      out_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out_ += static_cast<char>(v);
  }
  void Tag(uint32_t field, WireType type) { Varint(uint64_t{field} << 3 | type); }
  void Uint(uint32_t field, uint64_t v) {
    Tag(field, kVarint);
    Varint(v);
  }
  void Sint(uint32_t field, int64_t v) {  // sint32/sint64: zigzag
    Tag(field, kVarint);
    Varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void Double(uint32_t field, double v) {
    Tag(field, kFixed64);
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    for (int i = 0; i < 8; ++i) out_ += static_cast<char>(bits >> (8 * i));  // little-endian
  }
  void Bytes(uint32_t field, std::string_view v) {
    Tag(field, kLengthDelimited);
    Varint(v.size());
    out_ += v;
  }
  const std::string& str() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string LabelPairs(Labels labels) {
  ProtoWriter metric;
  for (const auto& [key, value] : labels) {
    ProtoWriter pair;
    pair.Bytes(1, key);           // name
    pair.Bytes(2, value);         // value
    metric.Bytes(1, pair.str());  // Metric.label
  }
  return metric.Take();
}

// A Metric holding a Counter (field 3) or a Gauge (field 2): both a double `value` (1).
std::string ValueMetric(Labels labels, MetricType type, double value) {
  ProtoWriter v;
  v.Double(1, value);
  ProtoWriter metric;
  metric.Bytes(type == kCounter ? 3 : 2, v.str());
  return LabelPairs(labels) + metric.str();
}

std::string HistogramMetric(const LatencySeries& s) {
  ProtoWriter h;
  h.Uint(1, s.count);                                // sample_count
  h.Double(2, static_cast<double>(s.sum_ns) / 1e9);  // sample_sum
  uint64_t cumulative = 0;
  for (int k = 0; k < kClassicBounds; ++k) {  // bucket; +Inf is implied by the count
    cumulative += s.classic[k];
    ProtoWriter b;
    b.Uint(1, cumulative);       // cumulative_count
    b.Double(2, UpperBound(k));  // upper_bound
    h.Bytes(3, b.str());
  }
  h.Sint(5, s.native.schema);            // schema
  h.Double(6, s.native.zero_threshold);  // zero_threshold
  h.Uint(7, s.native.zero_count);        // zero_count
  // positive_span (12): runs of consecutive indexes, each offset from the end of the one
  // before (the first from 0); positive_delta (13): each count less the one before it.
  // With no bucket, one empty span: Prometheus then still reads the histogram as native.
  const auto& buckets = s.native.buckets;
  size_t i = 0;
  int32_t next = 0;
  do {
    ProtoWriter span;
    if (i < buckets.size()) {
      size_t j = i + 1;
      while (j < buckets.size() && buckets[j].first == buckets[j - 1].first + 1) ++j;
      span.Sint(1, buckets[i].first - next);
      span.Uint(2, j - i);
      next = buckets[j - 1].first + 1;
      i = j;
    } else {
      span.Sint(1, 0);
      span.Uint(2, 0);
    }
    h.Bytes(12, span.str());
  } while (i < buckets.size());
  uint64_t previous = 0;
  for (const auto& [index, count] : buckets) {
    h.Sint(13, static_cast<int64_t>(count - previous));
    previous = count;
  }
  ProtoWriter metric;
  metric.Bytes(7, h.str());  // Metric.histogram
  return LabelPairs({{"device", s.device}, {"operation", s.operation}, {"phase", s.phase}}) +
         metric.str();
}

class FamilyWriter {
 public:
  explicit FamilyWriter(std::string* out) : out_(out) {}
  void Begin(std::string_view name, std::string_view help, MetricType type) {
    family_ = ProtoWriter();
    family_.Bytes(1, name);
    family_.Bytes(2, help);
    family_.Uint(3, type);
  }
  void Metric(const std::string& metric) { family_.Bytes(4, metric); }
  void End() {
    ProtoWriter length;
    length.Varint(family_.str().size());
    *out_ += length.str();
    *out_ += family_.str();
  }

 private:
  std::string* out_;
  ProtoWriter family_;
};

}  // namespace

std::string PrometheusBound(double bound) {
  std::string s = GoFloat(bound);
  if (s.find_first_of(".eIN") == std::string::npos) s += ".0";
  return s;
}

std::string PrometheusText(const MetricsSnapshot& m) {
  TextWriter w;
  constexpr std::string_view kLatency = "iotrace_block_latency_seconds";
  if (!m.latency.empty()) {
    w.Family(kLatency, kLatencyHelp, "histogram");
    std::string bounds[kClassicBounds];
    for (int k = 0; k < kClassicBounds; ++k) bounds[k] = PrometheusBound(UpperBound(k));
    for (const LatencySeries& s : m.latency) {
      const Labels labels = {{"device", s.device}, {"operation", s.operation}, {"phase", s.phase}};
      uint64_t cumulative = 0;
      for (int k = 0; k < kClassicBounds; ++k) {
        cumulative += s.classic[k];
        w.Sample(kLatency, "_bucket", labels, std::to_string(cumulative), {"le", bounds[k]});
      }
      w.Sample(kLatency, "_bucket", labels, std::to_string(s.count), {"le", "+Inf"});
      w.Sample(kLatency, "_sum", labels, ExactSeconds(s.sum_ns));
      w.Sample(kLatency, "_count", labels, std::to_string(s.count));
    }
  }
  if (!m.requests.empty()) {
    w.Family("iotrace_block_requests_total", kRequestsHelp, "counter");
    for (const RequestSeries& r : m.requests) {
      w.Sample("iotrace_block_requests_total", "",
               {{"device", r.device}, {"operation", r.operation}}, std::to_string(r.requests));
    }
    w.Family("iotrace_block_bytes_total", kBytesHelp, "counter");
    for (const RequestSeries& r : m.requests) {
      w.Sample("iotrace_block_bytes_total", "", {{"device", r.device}, {"operation", r.operation}},
               std::to_string(r.bytes));
    }
  }
  if (!m.inflight.empty()) {
    w.Family("iotrace_block_inflight_requests", kInflightHelp, "gauge");
    for (const DeviceGauge& g : m.inflight) {
      w.Sample("iotrace_block_inflight_requests", "", {{"device", g.device}},
               std::to_string(g.value));
    }
  }
  if (!m.unpaired.empty()) {
    w.Family("iotrace_block_unpaired_total", kUnpairedHelp, "counter");
    for (const ReasonCount& c : m.unpaired) {
      w.Sample("iotrace_block_unpaired_total", "", {{"device", c.device}, {"reason", c.reason}},
               std::to_string(c.count));
    }
  }
  if (!m.lost.empty()) {
    w.Family("iotrace_events_lost_total", kLostHelp, "counter");
    for (const ReasonCount& c : m.lost) {
      w.Sample("iotrace_events_lost_total", "", {{"reason", c.reason}}, std::to_string(c.count));
    }
  }
  w.Family("iotrace_series_dropped_total", kDroppedHelp, "counter");
  w.Sample("iotrace_series_dropped_total", "", {}, std::to_string(m.series_dropped));
  w.Family("iotrace_build_info", kBuildHelp, "gauge");
  w.Sample("iotrace_build_info", "", {{"version", m.version}, {"backend", m.backend}}, "1");
  w.Family("process_cpu_seconds_total", kCpuHelp, "counter");
  w.Sample("process_cpu_seconds_total", "", {}, GoFloat(m.process_cpu_seconds));
  w.Family("process_resident_memory_bytes", kRssHelp, "gauge");
  w.Sample("process_resident_memory_bytes", "", {}, std::to_string(m.process_resident_bytes));
  return w.Take();
}

std::string PrometheusProtobuf(const MetricsSnapshot& m) {
  std::string out;
  FamilyWriter f(&out);
  if (!m.latency.empty()) {
    f.Begin("iotrace_block_latency_seconds", kLatencyHelp, kHistogram);
    for (const LatencySeries& s : m.latency) f.Metric(HistogramMetric(s));
    f.End();
  }
  if (!m.requests.empty()) {
    f.Begin("iotrace_block_requests_total", kRequestsHelp, kCounter);
    for (const RequestSeries& r : m.requests) {
      f.Metric(ValueMetric({{"device", r.device}, {"operation", r.operation}}, kCounter,
                           static_cast<double>(r.requests)));
    }
    f.End();
    f.Begin("iotrace_block_bytes_total", kBytesHelp, kCounter);
    for (const RequestSeries& r : m.requests) {
      f.Metric(ValueMetric({{"device", r.device}, {"operation", r.operation}}, kCounter,
                           static_cast<double>(r.bytes)));
    }
    f.End();
  }
  if (!m.inflight.empty()) {
    f.Begin("iotrace_block_inflight_requests", kInflightHelp, kGauge);
    for (const DeviceGauge& g : m.inflight) {
      f.Metric(ValueMetric({{"device", g.device}}, kGauge, static_cast<double>(g.value)));
    }
    f.End();
  }
  if (!m.unpaired.empty()) {
    f.Begin("iotrace_block_unpaired_total", kUnpairedHelp, kCounter);
    for (const ReasonCount& c : m.unpaired) {
      f.Metric(ValueMetric({{"device", c.device}, {"reason", c.reason}}, kCounter,
                           static_cast<double>(c.count)));
    }
    f.End();
  }
  if (!m.lost.empty()) {
    f.Begin("iotrace_events_lost_total", kLostHelp, kCounter);
    for (const ReasonCount& c : m.lost) {
      f.Metric(ValueMetric({{"reason", c.reason}}, kCounter, static_cast<double>(c.count)));
    }
    f.End();
  }
  f.Begin("iotrace_series_dropped_total", kDroppedHelp, kCounter);
  f.Metric(ValueMetric({}, kCounter, static_cast<double>(m.series_dropped)));
  f.End();
  f.Begin("iotrace_build_info", kBuildHelp, kGauge);
  f.Metric(ValueMetric({{"version", m.version}, {"backend", m.backend}}, kGauge, 1));
  f.End();
  f.Begin("process_cpu_seconds_total", kCpuHelp, kCounter);
  f.Metric(ValueMetric({}, kCounter, m.process_cpu_seconds));
  f.End();
  f.Begin("process_resident_memory_bytes", kRssHelp, kGauge);
  f.Metric(ValueMetric({}, kGauge, static_cast<double>(m.process_resident_bytes)));
  f.End();
  return out;
}

}  // namespace iotrace
