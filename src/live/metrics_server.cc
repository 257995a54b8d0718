#include "iotrace/live/metrics_server.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "httplib.h"
#include "iotrace/base/status.h"

namespace iotrace {
namespace {

constexpr char kListenHint[] =
    "--listen takes PORT, :PORT (both 127.0.0.1), ADDR:PORT (an IPv4 address; 0.0.0.0 for "
    "every interface) or [IPV6]:PORT";

absl::Status BadListen(absl::string_view spec, absl::string_view why) {
  return UsageError(absl::StrFormat("--listen '%s': %s", spec, why), kListenHint);
}

constexpr int kBacklog = 128;

constexpr char kIndexPage[] =
    "<!DOCTYPE html>\n<html><head><title>iotrace</title></head>\n"
    "<body><h1>iotrace live</h1><p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

// One media range of an Accept header: "type/subtype; key=value; q=0.5".
struct MediaRange {
  std::string type;
  std::vector<std::pair<std::string, std::string>> params;  // keys lowercased, q left out
  double q = 1;
};

MediaRange ParseMediaRange(absl::string_view text) {
  MediaRange range;
  bool first = true;
  for (absl::string_view part : absl::StrSplit(text, ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (first) {
      range.type = absl::AsciiStrToLower(part);
      first = false;
      continue;
    }
    const size_t eq = part.find('=');
    if (eq == absl::string_view::npos) continue;
    std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part.substr(0, eq)));
    absl::string_view value = absl::StripAsciiWhitespace(part.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    if (key == "q") {
      double q;
      range.q = absl::SimpleAtod(value, &q) && q >= 0 && q <= 1 ? q : 0;
    } else {
      range.params.emplace_back(std::move(key), std::string(value));
    }
  }
  return range;
}

std::string_view Param(const MediaRange& range, std::string_view key) {
  for (const auto& [k, v] : range.params) {
    if (k == key) return v;
  }
  return {};
}

}  // namespace

std::string ListenAddress::ToString() const {
  return host.find(':') != std::string::npos ? absl::StrCat("[", host, "]:", port)
                                             : absl::StrCat(host, ":", port);
}

absl::StatusOr<ListenAddress> ParseListen(std::string_view spec_text) {
  // Abseil's string_view here is its own type, not std's.
  const absl::string_view spec(spec_text.data(), spec_text.size());
  absl::string_view host;
  absl::string_view port_text = spec;
  if (absl::ConsumePrefix(&port_text, "[")) {
    const size_t close = port_text.find(']');
    if (close == absl::string_view::npos) return BadListen(spec, "no ']' after the IPv6 address");
    host = port_text.substr(0, close);
    port_text.remove_prefix(close + 1);
    if (!absl::ConsumePrefix(&port_text, ":")) return BadListen(spec, "no :PORT after ']'");
    in6_addr v6;
    if (::inet_pton(AF_INET6, std::string(host).c_str(), &v6) != 1) {
      return BadListen(spec, absl::StrCat("'", host, "' is not an IPv6 address"));
    }
  } else if (const size_t colon = spec.rfind(':'); colon != absl::string_view::npos) {
    host = spec.substr(0, colon);
    port_text = spec.substr(colon + 1);
    in_addr v4;
    if (!host.empty() && ::inet_pton(AF_INET, std::string(host).c_str(), &v4) != 1) {
      return BadListen(spec, host.find(':') != absl::string_view::npos
                                 ? "an IPv6 address goes in brackets, [ADDR]:PORT"
                                 : absl::StrCat("'", host, "' is not an IPv4 address"));
    }
  }
  if (port_text.empty()) return BadListen(spec, "no port");
  int port = 0;
  if (port_text.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(port_text, &port) || port < 1 || port > 65535) {
    return BadListen(
        spec, absl::StrCat("the port must be a number from 1 to 65535, not '", port_text, "'"));
  }
  return ListenAddress{host.empty() ? "127.0.0.1" : std::string(host), port};
}

ExpositionChoice ChooseExposition(std::string_view accept_text) {
  const absl::string_view accept(accept_text.data(), accept_text.size());
  double protobuf_q = 0;
  double text_q = 0;
  for (absl::string_view text : absl::StrSplit(accept, ',', absl::SkipWhitespace())) {
    const MediaRange range = ParseMediaRange(text);
    if (range.type == "application/vnd.google.protobuf") {
      if (Param(range, "proto") == "io.prometheus.client.MetricFamily" &&
          Param(range, "encoding") == "delimited") {
        protobuf_q = std::max(protobuf_q, range.q);
      }
    } else if (range.type == "text/plain") {
      text_q = std::max(text_q, range.q);
    }
  }
  if (protobuf_q > 0 && protobuf_q >= text_q) {
    return {Exposition::kProtobuf, kProtobufContentType};
  }
  return {Exposition::kText, kTextContentType};
}

// A fixed pool of threads, each serving one connection at a time, with a bounded queue of
// accepted connections waiting. cpp-httplib's own pool (0.11) queues without bound; here, when
// the queue is full, the accepting thread waits, and further clients wait in the kernel's
// backlog. A connection is a job that closes its socket when it ends, so every job is run,
// even when stopping (a stopped server's jobs end at once: the connection sees the listener
// closed).
class MetricsServer::ConnectionPool {
 public:
  ConnectionPool(int threads, int max_waiting) : max_waiting_(static_cast<size_t>(max_waiting)) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~ConnectionPool() { Shutdown(); }

  void Enqueue(std::function<void()> job) {
    std::unique_lock<std::mutex> lock(mutex_);
    space_.wait(lock, [this] { return jobs_.size() < max_waiting_ || stopping_; });
    jobs_.push_back(std::move(job));
    ready_.notify_one();
  }

  // Wakes the accepting thread if it waits for room: the listener is closing.
  void BeginStop() {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    space_.notify_all();
  }

  // Runs the jobs left, then joins the threads.
  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (shut_down_) return;
      shut_down_ = stopping_ = true;
      ready_.notify_all();
      space_.notify_all();
    }
    for (std::thread& t : threads_) t.join();
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return !jobs_.empty() || shut_down_; });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
        space_.notify_one();
      }
      job();
    }
  }

  const size_t max_waiting_;
  std::mutex mutex_;
  std::condition_variable ready_;  // a job queued, or shut down
  std::condition_variable space_;  // room in the queue, or stopping
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  bool shut_down_ = false;
  std::vector<std::thread> threads_;
};

namespace {

// What cpp-httplib's listening loop takes as its task queue: a handle on the server's pool,
// which outlives it (the loop deletes its queue when it returns).
class PoolHandle : public httplib::TaskQueue {
 public:
  explicit PoolHandle(std::function<void(std::function<void()>)> enqueue)
      : enqueue_(std::move(enqueue)) {}
  void enqueue(std::function<void()> fn) override { enqueue_(std::move(fn)); }
  // The pool is shut down by MetricsServer::Stop, after the loop has returned.
  void shutdown() override {}

 private:
  std::function<void(std::function<void()>)> enqueue_;
};

}  // namespace

class MetricsServer::HttpServer : public httplib::Server {
 public:
  // A server bound but never started still holds its listening socket, which
  // httplib::Server's destructor leaves open.
  void CloseListener() {
    const socket_t sock = svr_sock_.exchange(INVALID_SOCKET);
    if (sock != INVALID_SOCKET) ::close(sock);
  }

  // cpp-httplib 0.11 listens with a backlog of 5, fixed when it was built: with more scrapers
  // connecting at once the kernel drops the rest's handshakes, and they retry a second later.
  // listen() again on a listening socket only changes its backlog.
  bool SetBacklog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Bind(const ListenAddress& address,
                                                                   Handler handler) {
  return Bind(address, std::move(handler), Options());
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Bind(const ListenAddress& address,
                                                                   Handler handler,
                                                                   const Options& options) {
  auto server = std::make_unique<HttpServer>();
  // cpp-httplib's default options add SO_REUSEPORT, with which a second exporter on the same
  // port binds too and the kernel splits the scrapes between them. SO_REUSEADDR alone lets a
  // restart bind while the last run's connections sit in TIME_WAIT.
  server->set_socket_options([](socket_t sock) {
    const int on = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  });
  const auto seconds = [](std::chrono::milliseconds d) { return d.count() / 1000; };
  const auto micros = [](std::chrono::milliseconds d) { return d.count() % 1000 * 1000; };
  server->set_read_timeout(seconds(options.read_timeout), micros(options.read_timeout));
  server->set_write_timeout(seconds(options.write_timeout), micros(options.write_timeout));
  // One request a connection: an idle keep-alive connection would hold one of the few threads
  // between scrapes.
  server->set_keep_alive_max_count(1);
  server->set_keep_alive_timeout(std::max<time_t>(1, options.idle_timeout.count()));
  // Every request is answered here, before cpp-httplib would read a body: none is ever read.
  server->set_pre_routing_handler(
      [handler = std::move(handler), max_header_bytes = options.max_header_bytes](
          const httplib::Request& req, httplib::Response& res) {
        // cpp-httplib 0.11 caps the request line and each header line at 8 KiB, not their
        // number: it reads every header a client sends (each read within read_timeout) before
        // this runs. Here such a request is at least refused.
        size_t header_bytes = req.method.size() + req.target.size() + req.version.size() + 4;
        for (const auto& [name, value] : req.headers)
          header_bytes += name.size() + value.size() + 4;
        if (header_bytes > max_header_bytes) {
          res.status = 431;
          res.set_content("request header fields too large\n", "text/plain; charset=utf-8");
        } else if (req.method != "GET" && req.method != "HEAD") {
          res.status = 405;
          res.set_header("Allow", "GET, HEAD");
          res.set_content("method not allowed: iotrace serves GET /metrics\n",
                          "text/plain; charset=utf-8");
        } else if (req.path == "/metrics") {
          Response out = handler(Request{req.path, req.get_header_value("Accept")});
          res.status = out.status;
          res.set_content(std::move(out.body), out.content_type);
        } else if (req.path == "/") {
          res.set_content(kIndexPage, "text/html; charset=utf-8");
        } else {
          res.status = 404;
          res.set_content("not found: iotrace serves /metrics\n", "text/plain; charset=utf-8");
        }
        return httplib::Server::HandlerResponse::Handled;
      });

  ListenAddress bound = address;
  errno = 0;
  bool ok;
  if (address.port == 0) {
    bound.port = server->bind_to_any_port(address.host);
    ok = bound.port > 0;
  } else {
    ok = server->bind_to_port(address.host, address.port);
  }
  if (!ok) {
    // cpp-httplib reports only failure; errno is still that of the failed bind() or listen().
    const int err = errno;
    const std::string where = address.ToString();
    switch (err) {
      case EADDRINUSE:
        return WithHint(
            absl::UnavailableError(absl::StrCat(where, " is in use (another exporter?)")),
            absl::StrCat("pick another port, or see what listens there: ss -ltnp "
                         "'sport = :",
                         address.port, "'"));
      case EADDRNOTAVAIL:
        return WithHint(absl::UnavailableError(absl::StrCat("listen on ", where, ": ", address.host,
                                                            " is not an address of this machine")),
                        "use one from `ip addr`, 127.0.0.1, or 0.0.0.0 for every interface");
      case EACCES:
        return WithHint(ErrnoError(err, "listen on", where),
                        "ports below 1024 need root or CAP_NET_BIND_SERVICE; pick a higher one");
      default:
        return err != 0 ? ErrnoError(err, "listen on", where)
                        : absl::UnavailableError(absl::StrCat("listen on ", where, ": failed"));
    }
  }
  if (!server->SetBacklog(kBacklog)) {
    const int err = errno;
    server->CloseListener();
    return ErrnoError(err, "listen on", bound.ToString());
  }
  auto pool = std::make_unique<ConnectionPool>(options.threads, options.max_waiting_connections);
  ConnectionPool* pool_ptr = pool.get();
  server->new_task_queue = [pool_ptr] {
    return new PoolHandle(
        [pool_ptr](std::function<void()> job) { pool_ptr->Enqueue(std::move(job)); });
  };
  return std::unique_ptr<MetricsServer>(
      new MetricsServer(std::move(bound), std::move(pool), std::move(server)));
}

MetricsServer::MetricsServer(ListenAddress address, std::unique_ptr<ConnectionPool> pool,
                             std::unique_ptr<HttpServer> server)
    : address_(std::move(address)), pool_(std::move(pool)), server_(std::move(server)) {}

MetricsServer::~MetricsServer() { Stop(); }

void MetricsServer::Start() {
  if (started_ || stopped_) return;
  started_ = true;
  listener_ = std::thread([this] {
    server_->listen_after_bind();
    listen_returned_ = true;
  });
}

void MetricsServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  pool_->BeginStop();
  if (started_) {
    // httplib::Server::stop() acts only once the loop runs (it checks is_running()), which the
    // thread may not have reached yet: ask until the loop has returned.
    while (!listen_returned_) {
      if (server_->is_running()) server_->stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    listener_.join();
  }
  server_->CloseListener();
  pool_->Shutdown();
}

}  // namespace iotrace
