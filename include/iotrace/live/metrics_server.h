// `live --listen`'s HTTP side: the address parsed, the socket bound before anything else is set
// up, GET /metrics answered through a handler on a small pool of threads, and the exposition
// format chosen from the scraper's Accept header. It knows nothing of metrics: the handler
// makes the body.
#ifndef IOTRACE_LIVE_METRICS_SERVER_H_
#define IOTRACE_LIVE_METRICS_SERVER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "iotrace/analysis/metrics_model.h"

namespace iotrace {

struct ListenAddress {
  std::string host;  // an IPv4 or IPv6 literal, without brackets
  int port = 0;      // 0: any free port (tests; ParseListen never gives it)

  // "127.0.0.1:9100", "[::1]:9100".
  std::string ToString() const;
};

// "ADDR:PORT", ":PORT" or "PORT"; without an address, 127.0.0.1, since the metrics name devices
// and processes. ADDR is an IPv4 literal or a bracketed IPv6 one ("[::1]:9100"). A bad spec is a
// usage error of one line with a hint.
absl::StatusOr<ListenAddress> ParseListen(std::string_view spec);

enum class Exposition { kText, kProtobuf };

struct ExpositionChoice {
  Exposition exposition = Exposition::kText;
  std::string_view content_type = kTextContentType;  // to send back as Content-Type
};

// Protobuf when the Accept header offers application/vnd.google.protobuf with
// proto=io.prometheus.client.MetricFamily and encoding=delimited at a quality no lower than that
// of any text/plain it offers (Prometheus with --enable-feature=native-histograms sends it
// first, unweighted); text otherwise, for a missing, empty or unparsable header too.
ExpositionChoice ChooseExposition(std::string_view accept);

class MetricsServer {
 public:
  struct Request {
    std::string path;    // without the query string
    std::string accept;  // the Accept header, empty when absent
  };
  struct Response {
    int status = 200;
    std::string content_type;
    std::string body;
  };
  // Called on the server's threads, several at once: it must be safe to call concurrently, and
  // should read a snapshot rather than wait on the data's producer.
  using Handler = std::function<Response(const Request&)>;

  struct Options {
    // A request (its line and headers) must arrive with no gap longer than this between reads;
    // a client that stalls is cut off.
    std::chrono::milliseconds read_timeout{5000};
    // The most a new connection waits for its request to begin (cpp-httplib counts it in whole
    // seconds). Short, as a scraper sends at once: a silent connection holds a thread, and
    // Stop() waits for it.
    std::chrono::seconds idle_timeout{1};
    // A client that does not take the response (a full socket buffer) for this long is cut off.
    std::chrono::milliseconds write_timeout{5000};
    // Connections served at once. A scrape is answered from a snapshot in well under a
    // millisecond, so a few threads serve many scrapers; a stalled client holds one thread for
    // at most read_timeout per read.
    int threads = 4;
    // Accepted connections waiting for a thread; past that the server stops accepting and
    // further clients wait in the kernel's listen backlog (128) or are refused.
    int max_waiting_connections = 64;
    // The request line and headers together; larger gets 431.
    size_t max_header_bytes = 8192;
  };

  // Binds and listens at once, so that a port in use is a one-line error ("127.0.0.1:9100 is in
  // use (another exporter?)", with a hint) before anything else is set up. Serves nothing until
  // Start().
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Bind(const ListenAddress& address,
                                                             Handler handler);
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Bind(const ListenAddress& address,
                                                             Handler handler,
                                                             const Options& options);
  ~MetricsServer();  // Stop()
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The address bound: with port 0, the port the kernel chose.
  const ListenAddress& address() const { return address_; }

  // Serves on a thread of its own (accepting) and the pool's. Once only.
  void Start();
  // Closes the listening socket at once, waits for the connections under way (a silent one
  // for idle_timeout, a stalled one for read_timeout a read) and joins the threads.
  // Idempotent.
  void Stop();

 private:
  class HttpServer;
  class ConnectionPool;
  MetricsServer(ListenAddress address, std::unique_ptr<ConnectionPool> pool,
                std::unique_ptr<HttpServer> server);

  ListenAddress address_;
  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<HttpServer> server_;
  std::thread listener_;
  std::atomic<bool> listen_returned_{false};
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace iotrace

#endif  // IOTRACE_LIVE_METRICS_SERVER_H_
