#include "metrics_export.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <utility>

#include "absl/strings/str_format.h"
#include "iotrace/base/atomic_file.h"
#include "iotrace/base/clock.h"
#include "iotrace/base/status.h"
#include "iotrace/output/prometheus_format.h"

namespace iotrace {
namespace {

uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// The run reads Ctrl-C, SIGTERM, SIGHUP and SIGCHLD from a signalfd, which works only when no
// thread takes them: the server's threads (made at Bind and at Start) are born with them
// blocked, while this is in scope.
class RunSignalsBlocked {
 public:
  RunSignalsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~RunSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsExport>> MetricsExport::Create(
    const MetricsExportOptions& options) {
  std::unique_ptr<MetricsExport> e(new MetricsExport(options));
  if (options.listen.has_value()) {
    MetricsExport* self = e.get();
    RunSignalsBlocked blocked;
    IOTRACE_ASSIGN_OR_RETURN(
        e->server_, MetricsServer::Bind(*options.listen, [self](const MetricsServer::Request& r) {
          return self->Serve(r);
        }));
  }
  return e;
}

MetricsExport::MetricsExport(const MetricsExportOptions& options)
    : options_(options),
      names_(options.sysfs_root),
      tap_(MetricsTapOptions{options.native_schema, options.max_series}, &names_) {}

MetricsExport::~MetricsExport() {
  if (server_ != nullptr) server_->Stop();
}

void MetricsExport::Start() {
  if (server_ == nullptr) return;
  RunSignalsBlocked blocked;
  server_->Start();
}

std::string MetricsExport::address() const {
  return server_ == nullptr ? "" : server_->address().ToString();
}

const std::string& MetricsExport::Published::Text() {
  std::call_once(text_once, [this] { text = PrometheusText(snapshot); });
  return text;
}

const std::string& MetricsExport::Published::Protobuf() {
  std::call_once(protobuf_once, [this] { protobuf = PrometheusProtobuf(snapshot); });
  return protobuf;
}

MetricsServer::Response MetricsExport::Serve(const MetricsServer::Request& request) {
  MetricsServer::Response r;
  std::shared_ptr<Published> published = std::atomic_load(&current_);
  if (published == nullptr) {
    // Bound before tracing starts (a port in use fails first); until the first snapshot after
    // the events are on, an answer of zeros would read as a disk with no I/O.
    r.status = 503;
    r.content_type = "text/plain; charset=utf-8";
    r.body = "iotrace live: tracing is starting; the metrics follow in a moment\n";
    return r;
  }
  const ExpositionChoice choice = ChooseExposition(request.accept);
  r.content_type = std::string(choice.content_type);
  r.body = choice.exposition == Exposition::kProtobuf ? published->Protobuf() : published->Text();
  return r;
}

void MetricsExport::OnPoll(const LivePoll& poll) {
  const uint64_t now = MonotonicNs();
  // A snapshot at most every 100 ms (scrapes come every second or so), and the last one.
  if (!poll.final && now - last_publish_ns_ < kPublishEveryNs) return;
  last_publish_ns_ = now;
  auto published = std::make_shared<Published>();
  MetricsSnapshot* snap = &published->snapshot;
  tap_.Snapshot(snap);
  snap->version = IOTRACE_VERSION;
  snap->backend = poll.backend;
  for (const DeviceMatchStats& d : poll.devices) {
    const std::string device = names_.Label(d.dev);
    for (const auto& [reason, count] :
         {std::pair<const char*, uint64_t>{"issue_without_insert", d.issues_without_insert},
          {"complete_without_issue", d.completes_without_issue},
          {"requeue_unmatched", d.requeues_unmatched},
          {"expired", d.expired},
          {"evicted", d.evicted},
          {"collided", d.collided}}) {
      snap->unpaired.push_back({device, reason, count});
    }
    snap->inflight.push_back({device, d.tracked});
  }
  snap->lost.push_back({"", "kernel", poll.lost});
  snap->lost.push_back({"", "late", poll.late});
  snap->process_cpu_seconds = ProcessCpuSeconds();
  snap->process_resident_bytes = ResidentBytes();
  std::atomic_store(&current_, published);
  // The textfile once a second, and at the end.
  if (!options_.textfile.empty() &&
      (poll.final || now - last_textfile_ns_ >= 1'000'000'000)) {
    last_textfile_ns_ = now;
    absl::Status s = WriteFileAtomically(options_.textfile, published->Text());
    if (!s.ok() && textfile_error_.ok()) textfile_error_ = s;
  }
}

}  // namespace iotrace
