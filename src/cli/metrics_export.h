// `iotrace live --listen` and `--textfile` (issue 23): a LiveObserver that keeps the run's
// Prometheus figures (MetricsTap on the report builder), publishes a snapshot of them at most
// every 100 ms from the engine's thread (one atomic pointer swap: ingest never waits on a
// scrape), answers scrapes from the latest snapshot in the format the scraper asks for, and
// rewrites the textfile once a second. Private to the cli stage, which may see the live engine,
// the metrics writers (output) and the server (live) at once.
#ifndef IOTRACE_CLI_METRICS_EXPORT_H_
#define IOTRACE_CLI_METRICS_EXPORT_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/analysis/metrics_model.h"
#include "iotrace/analysis/metrics_tap.h"
#include "iotrace/live/live_engine.h"
#include "iotrace/live/metrics_server.h"
#include "iotrace/sys/device_names.h"

namespace iotrace {

struct MetricsExportOptions {
  std::optional<ListenAddress> listen;  // --listen
  std::string textfile;                 // --textfile
  int native_schema = 3;                // --native-schema
  size_t max_series = 1000;             // --max-series
  std::string sysfs_root = "/sys";
};

class MetricsExport : public LiveObserver {
 public:
  // Binds --listen's address first: a port in use fails here, before any tracing is set up.
  static absl::StatusOr<std::unique_ptr<MetricsExport>> Create(const MetricsExportOptions& options);
  ~MetricsExport() override;

  void Start();                 // serves scrapes from now on
  std::string address() const;  // "127.0.0.1:9100", "" without --listen
  // The first failure to write the textfile (the run goes on without it).
  const absl::Status& textfile_error() const { return textfile_error_; }

  std::vector<SampleTap*> Taps() override { return {&tap_}; }
  void OnPoll(const LivePoll& poll) override;

 private:
  static constexpr uint64_t kPublishEveryNs = 100'000'000;
  explicit MetricsExport(const MetricsExportOptions& options);
  // A published snapshot and its expositions, each written by the first scrape that asks for
  // it and then served as is: scrapers between two snapshots (100 ms) share one rendering.
  struct Published {
    MetricsSnapshot snapshot;
    std::once_flag text_once, protobuf_once;
    std::string text, protobuf;
    const std::string& Text();
    const std::string& Protobuf();
  };
  MetricsServer::Response Serve(const MetricsServer::Request& request);

  MetricsExportOptions options_;
  DeviceNames names_;
  MetricsTap tap_;
  std::unique_ptr<MetricsServer> server_;
  // std::atomic_load / atomic_store; null until the first snapshot, taken once tracing is on.
  std::shared_ptr<Published> current_;
  uint64_t last_publish_ns_ = 0;
  uint64_t last_textfile_ns_ = 0;
  absl::Status textfile_error_;
};

}  // namespace iotrace

#endif  // IOTRACE_CLI_METRICS_EXPORT_H_
