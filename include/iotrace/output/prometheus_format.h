// The writers of what `iotrace live --listen` serves at /metrics (issue 23): a MetricsSnapshot
// (analysis/metrics_model.h) in Prometheus's text exposition format 0.0.4 (classic histograms,
// also what node_exporter's textfile collector reads) or in its delimited protobuf format
// (io.prometheus.client.MetricFamily, native histograms with the same classic buckets).
#ifndef IOTRACE_OUTPUT_PROMETHEUS_FORMAT_H_
#define IOTRACE_OUTPUT_PROMETHEUS_FORMAT_H_

#include <string>
#include <string_view>

#include "iotrace/analysis/metrics_model.h"

namespace iotrace {

// Text format 0.0.4, no timestamps. Families with no series are left out, but for
// iotrace_series_dropped_total, build info and the process's own two.
std::string PrometheusText(const MetricsSnapshot& snapshot);

// The same families, each a varint length and a MetricFamily message. Written by hand (the
// message is small and fixed): no protobuf library at run time.
std::string PrometheusProtobuf(const MetricsSnapshot& snapshot);

// A bound as Prometheus writes the `le` of a bucket it scraped in protobuf (Go's shortest %g,
// ".0" added to an integer: "1.0", "0.5", "9.5367431640625e-07"), so that text and protobuf
// scrapes of the same bucket carry the same label value.
std::string PrometheusBound(double bound);

}  // namespace iotrace

#endif  // IOTRACE_OUTPUT_PROMETHEUS_FORMAT_H_
