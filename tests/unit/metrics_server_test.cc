// live --listen's HTTP side (metrics_server.h) on 127.0.0.1 with ports the kernel picks, bad
// clients included, and atomic_file.h, what --textfile writes through.
#include "iotrace/live/metrics_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/atomic_file.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "test_files.h"

namespace iotrace {
namespace {

using Clock = std::chrono::steady_clock;

// Prometheus 2.42's scrape Accept headers (scrape/scrape.go): by default, and with
// --enable-feature=native-histograms.
constexpr char kPrometheusAccept[] =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
constexpr char kPrometheusProtobufAccept[] =
    "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,"
    "application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

UniqueFd Connect(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return {};
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Everything the server sends until it closes the connection, or until `limit` passes.
std::string ReadUntilClosed(int fd, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  std::string out;
  const auto deadline = Clock::now() + limit;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Sends `request` on a new connection and returns the whole response ("" if refused).
std::string Exchange(int port, std::string_view request) {
  UniqueFd fd = Connect(port);
  if (!fd.valid() || !SendAll(fd.get(), request)) return "";
  return ReadUntilClosed(fd.get());
}

std::string Get(int port, std::string_view path, std::string_view accept = "") {
  std::string request = "GET " + std::string(path) + " HTTP/1.1\r\nHost: localhost\r\n";
  if (!accept.empty()) request += "Accept: " + std::string(accept) + "\r\n";
  return Exchange(port, request + "\r\n");
}

int StatusOf(const std::string& response) {
  // "HTTP/1.1 200 OK"
  if (response.compare(0, 9, "HTTP/1.1 ") != 0 || response.size() < 12) return 0;
  return std::atoi(response.substr(9, 3).c_str());
}

std::string HeaderOf(const std::string& response, const std::string& name) {
  const size_t end = response.find("\r\n\r\n");
  size_t at = response.find("\r\n" + name + ": ");
  if (at == std::string::npos || at > end) return "";
  at += name.size() + 4;
  return response.substr(at, response.find("\r\n", at) - at);
}

std::string BodyOf(const std::string& response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

// A handler that answers in the negotiated format, with a body that says which.
MetricsServer::Response FakeMetrics(const MetricsServer::Request& request) {
  const ExpositionChoice choice = ChooseExposition(request.accept);
  return {200, std::string(choice.content_type),
          choice.exposition == Exposition::kProtobuf ? "protobuf body" : "text body\n"};
}

std::unique_ptr<MetricsServer> StartServer(MetricsServer::Handler handler = FakeMetrics,
                                           const MetricsServer::Options& options = {}) {
  auto server = MetricsServer::Bind({"127.0.0.1", 0}, std::move(handler), options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  EXPECT_GT((*server)->address().port, 0);
  (*server)->Start();
  return std::move(*server);
}

TEST(ParseListenTest, PortAloneOrWithoutAddressIsLoopback) {
  for (const char* spec : {"9100", ":9100"}) {
    auto a = ParseListen(spec);
    ASSERT_TRUE(a.ok()) << spec << ": " << a.status();
    EXPECT_EQ(a->host, "127.0.0.1") << spec;
    EXPECT_EQ(a->port, 9100) << spec;
    EXPECT_EQ(a->ToString(), "127.0.0.1:9100") << spec;
  }
}

TEST(ParseListenTest, TakesIpv4AndBracketedIpv6Addresses) {
  auto any = ParseListen("0.0.0.0:65535");
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_EQ(any->host, "0.0.0.0");
  EXPECT_EQ(any->port, 65535);
  auto v6 = ParseListen("[::1]:9100");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->ToString(), "[::1]:9100");
}

TEST(ParseListenTest, BadSpecsAreOneLineUsageErrorsWithAHint) {
  struct Case {
    const char* spec;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {"", "no port"},
           {":", "no port"},
           {"localhost:9100", "'localhost' is not an IPv4 address"},
           {"1.2.3:9100", "'1.2.3' is not an IPv4 address"},
           {"::1:9100", "an IPv6 address goes in brackets"},
           {"[::1", "no ']'"},
           {"[::1]9100", "no :PORT"},
           {"[1.2.3.4]:9100", "not an IPv6 address"},
           {"http", "not 'http'"},
           {":0", "from 1 to 65535, not '0'"},
           {":65536", "not '65536'"},
           {":+80", "not '+80'"},
           {":99999999999999999999", "from 1 to 65535"},
       }) {
    auto a = ParseListen(c.spec);
    ASSERT_FALSE(a.ok()) << c.spec;
    EXPECT_TRUE(IsUsageError(a.status())) << c.spec << ": " << a.status();
    EXPECT_NE(a.status().message().find(c.says), std::string::npos)
        << c.spec << ": " << a.status().message();
    EXPECT_NE(a.status().message().find(std::string("--listen '") + c.spec + "'"),
              std::string::npos)
        << a.status().message();
    EXPECT_EQ(a.status().message().find('\n'), std::string::npos) << a.status().message();
    EXPECT_NE(HintOf(a.status()).find(":PORT"), std::string::npos) << c.spec;
  }
}

TEST(ChooseExpositionTest, PrometheusGetsProtobufOnlyWhenItAsksForIt) {
  const ExpositionChoice proto = ChooseExposition(kPrometheusProtobufAccept);
  EXPECT_EQ(proto.exposition, Exposition::kProtobuf);
  EXPECT_EQ(proto.content_type,
            "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
            "encoding=delimited");
  const ExpositionChoice text = ChooseExposition(kPrometheusAccept);
  EXPECT_EQ(text.exposition, Exposition::kText);
  EXPECT_EQ(text.content_type, "text/plain; version=0.0.4; charset=utf-8");
}

TEST(ChooseExpositionTest, TextUnlessTheWholeProtobufTypeIsPreferred) {
  for (const char* accept : {
           "",
           "*/*",
           "text/plain",
           ",,;;==",
           "application/vnd.google.protobuf",  // no proto, no encoding
           "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily",
           "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
           "encoding=text",
           "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
           "encoding=delimited;q=0",
           "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
           "encoding=delimited;q=0.3,text/plain;version=0.0.4;q=0.5",
           "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
           "encoding=delimited;q=bad",
       }) {
    EXPECT_EQ(ChooseExposition(accept).exposition, Exposition::kText) << accept;
    EXPECT_EQ(ChooseExposition(accept).content_type, kTextContentType) << accept;
  }
  for (const char* accept : {
           "APPLICATION/vnd.google.protobuf ; proto=io.prometheus.client.MetricFamily ; "
           "encoding=delimited",
           "text/plain;q=0.5, application/vnd.google.protobuf;encoding=delimited;"
           "proto=\"io.prometheus.client.MetricFamily\";q=0.5",
       }) {
    EXPECT_EQ(ChooseExposition(accept).exposition, Exposition::kProtobuf) << accept;
  }
}

TEST(MetricsServerTest, ServesMetricsThroughTheHandler) {
  std::mutex mu;
  std::vector<MetricsServer::Request> seen;
  auto server = StartServer([&](const MetricsServer::Request& r) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(r);
    return FakeMetrics(r);
  });
  ASSERT_NE(server, nullptr);
  const std::string response = Get(server->address().port, "/metrics?x=1", kPrometheusAccept);
  EXPECT_EQ(StatusOf(response), 200) << response;
  EXPECT_EQ(HeaderOf(response, "Content-Type"), kTextContentType) << response;
  EXPECT_EQ(HeaderOf(response, "Connection"), "close") << response;
  EXPECT_EQ(BodyOf(response), "text body\n");
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/metrics");
  EXPECT_EQ(seen[0].accept, kPrometheusAccept);
}

TEST(MetricsServerTest, NegotiatesTheExpositionBothWays) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::string proto = Get(server->address().port, "/metrics", kPrometheusProtobufAccept);
  EXPECT_EQ(StatusOf(proto), 200) << proto;
  EXPECT_EQ(HeaderOf(proto, "Content-Type"), kProtobufContentType) << proto;
  EXPECT_EQ(BodyOf(proto), "protobuf body");
  const std::string text = Get(server->address().port, "/metrics");
  EXPECT_EQ(HeaderOf(text, "Content-Type"), kTextContentType) << text;
  EXPECT_EQ(BodyOf(text), "text body\n");
}

TEST(MetricsServerTest, HandlerStatusIsPassedOn) {
  auto server = StartServer([](const MetricsServer::Request&) {
    return MetricsServer::Response{503, "text/plain; charset=utf-8", "no interval yet\n"};
  });
  ASSERT_NE(server, nullptr);
  const std::string response = Get(server->address().port, "/metrics");
  EXPECT_EQ(StatusOf(response), 503) << response;
  EXPECT_EQ(BodyOf(response), "no interval yet\n");
}

TEST(MetricsServerTest, IndexLinksMetricsOtherPathsAre404AndOtherMethods405) {
  std::atomic<int> calls{0};
  auto server = StartServer([&](const MetricsServer::Request& r) {
    ++calls;
    return FakeMetrics(r);
  });
  ASSERT_NE(server, nullptr);
  const int port = server->address().port;
  const std::string index = Get(port, "/");
  EXPECT_EQ(StatusOf(index), 200) << index;
  EXPECT_EQ(HeaderOf(index, "Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(BodyOf(index).find("<a href=\"/metrics\">"), std::string::npos) << index;
  for (const char* path : {"/metrics/", "/metricsx", "/favicon.ico", "/../metrics"}) {
    EXPECT_EQ(StatusOf(Get(port, path)), 404) << path;
  }
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS"}) {
    const std::string response =
        Exchange(port, std::string(method) + " /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(StatusOf(response), 405) << method << ": " << response;
    EXPECT_EQ(HeaderOf(response, "Allow"), "GET, HEAD") << method;
  }
  EXPECT_EQ(calls.load(), 0);
}

TEST(MetricsServerTest, HeadAnswersHeadersWithoutTheBody) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::string response = Exchange(server->address().port, "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusOf(response), 200) << response;
  EXPECT_EQ(HeaderOf(response, "Content-Type"), kTextContentType) << response;
  EXPECT_EQ(HeaderOf(response, "Content-Length"), "10") << response;  // "text body\n"
  EXPECT_EQ(BodyOf(response), "");
}

TEST(MetricsServerTest, PortInUseIsAOneLineErrorWithAHint) {
  auto first = MetricsServer::Bind({"127.0.0.1", 0}, FakeMetrics);
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = (*first)->address().port;
  // Bound but not yet started: the port is taken as soon as Bind returns.
  auto second = MetricsServer::Bind({"127.0.0.1", port}, FakeMetrics);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(),
            "127.0.0.1:" + std::to_string(port) + " is in use (another exporter?)");
  EXPECT_NE(HintOf(second.status()).find("pick another port"), std::string::npos);
  EXPECT_FALSE(IsUsageError(second.status()));
  (*first)->Start();
  EXPECT_FALSE(MetricsServer::Bind({"127.0.0.1", port}, FakeMetrics).ok());
}

TEST(MetricsServerTest, AnAddressNotOfThisMachineIsAnError) {
  // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never a local address.
  auto server = MetricsServer::Bind({"192.0.2.1", 0}, FakeMetrics);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("192.0.2.1 is not an address of this machine"),
            std::string::npos)
      << server.status();
}

TEST(MetricsServerTest, StoppingFreesThePortAndANeverStartedServerToo) {
  auto never_started = MetricsServer::Bind({"127.0.0.1", 0}, FakeMetrics);
  ASSERT_TRUE(never_started.ok()) << never_started.status();
  const int port = (*never_started)->address().port;
  never_started->reset();
  auto started = MetricsServer::Bind({"127.0.0.1", port}, FakeMetrics);
  ASSERT_TRUE(started.ok()) << started.status();
  (*started)->Start();
  EXPECT_EQ(StatusOf(Get(port, "/metrics")), 200);
  (*started)->Stop();
  EXPECT_FALSE(Connect(port).valid());
  EXPECT_TRUE(MetricsServer::Bind({"127.0.0.1", port}, FakeMetrics).ok());
}

TEST(MetricsServerTest, BindsIpv6Loopback) {
  auto server = MetricsServer::Bind({"::1", 0}, FakeMetrics);
  if (!server.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << server.status();
  EXPECT_GT((*server)->address().port, 0);
  EXPECT_EQ((*server)->address().ToString(), "[::1]:" + std::to_string((*server)->address().port));
}

TEST(MetricsServerTest, MalformedRequestLineGetsAnErrorAndTheServerGoesOn) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const int port = server->address().port;
  for (const char* bad : {"GARBAGE\r\n\r\n", "GET\r\n\r\n", "GET /metrics\r\n\r\n",
                          "GET /metrics HTTP/9.9 extra\r\n\r\n", "\x01\x02\x03\xff\r\n\r\n"}) {
    const std::string response = Exchange(port, bad);
    EXPECT_TRUE(response.empty() || StatusOf(response) == 400) << bad << ": " << response;
  }
  EXPECT_EQ(StatusOf(Get(port, "/metrics")), 200);
}

TEST(MetricsServerTest, OversizedRequestsGetAnErrorAndTheServerGoesOn) {
  std::atomic<int> calls{0};
  auto server = StartServer([&](const MetricsServer::Request& r) {
    ++calls;
    return FakeMetrics(r);
  });
  ASSERT_NE(server, nullptr);
  const int port = server->address().port;
  const std::string big(100 << 10, 'a');
  // A 100 KiB header, a 100 KiB request line, 100 KiB of small headers.
  std::string many;
  for (int i = 0; i < 5000; ++i) many += "X-" + std::to_string(i) + ": aaaaaaaaaa\r\n";
  for (const std::string& request : {
           "GET /metrics HTTP/1.1\r\nX-Big: " + big + "\r\n\r\n",
           "GET /metrics?" + big + " HTTP/1.1\r\n\r\n",
           "GET /metrics HTTP/1.1\r\n" + many + "\r\n",
       }) {
    const std::string response = Exchange(port, request);
    const int status = StatusOf(response);
    EXPECT_TRUE(response.empty() || (status >= 400 && status < 500))
        << request.substr(0, 40) << ": " << response.substr(0, 200);
  }
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(StatusOf(Get(port, "/metrics")), 200);
}

TEST(MetricsServerTest, HeadersPastTheCapTogetherGet431) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::string line = "X-Pad: " + std::string(3000, 'a') + "\r\n";  // each under 8 KiB
  const std::string response =
      Exchange(server->address().port, "GET /metrics HTTP/1.1\r\n" + line + line + line + "\r\n");
  EXPECT_EQ(StatusOf(response), 431) << response;
  EXPECT_EQ(StatusOf(Exchange(server->address().port,
                              "GET /metrics HTTP/1.1\r\n" + line + line + "\r\n")),
            200);
}

// A body is never read: the answer does not wait for the gigabyte announced.
TEST(MetricsServerTest, RequestBodiesAreNotRead) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const auto start = Clock::now();
  const std::string response = Exchange(
      server->address().port, "GET /metrics HTTP/1.1\r\nContent-Length: 1000000000\r\n\r\nabc");
  EXPECT_EQ(StatusOf(response), 200) << response;
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
}

TEST(MetricsServerTest, SlowClientIsCutOffWhileOthersAreServed) {
  MetricsServer::Options options;
  options.read_timeout = std::chrono::milliseconds(1000);
  options.threads = 2;
  auto server = StartServer(FakeMetrics, options);
  ASSERT_NE(server, nullptr);
  const int port = server->address().port;
  UniqueFd slow = Connect(port);
  ASSERT_TRUE(slow.valid());
  const auto start = Clock::now();
  ASSERT_TRUE(SendAll(slow.get(), "GET /metr"));
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    EXPECT_EQ(StatusOf(Get(port, "/metrics")), 200);
    EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(500)) << i;
  }
  // The slow one is answered with an error or closed once it has stalled for read_timeout.
  const std::string response = ReadUntilClosed(slow.get());
  const auto waited = Clock::now() - start;
  EXPECT_TRUE(response.empty() || StatusOf(response) == 400) << response;
  EXPECT_GE(waited, std::chrono::milliseconds(900));
  EXPECT_LT(waited, std::chrono::milliseconds(5000));
}

TEST(MetricsServerTest, ClientsThatConnectAndSayNothingAreClosedAndDoNotBlockOthers) {
  MetricsServer::Options options;
  options.threads = 2;
  auto server = StartServer(FakeMetrics, options);
  ASSERT_NE(server, nullptr);
  const int port = server->address().port;
  // Twice as many silent clients as threads: the rest wait for a thread, then are served.
  std::vector<UniqueFd> silent;
  for (int i = 0; i < 4; ++i) silent.push_back(Connect(port));
  const auto start = Clock::now();
  EXPECT_EQ(StatusOf(Get(port, "/metrics")), 200);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(4000));
  for (UniqueFd& fd : silent) EXPECT_EQ(ReadUntilClosed(fd.get()), "");
}

TEST(MetricsServerTest, ClientThatDoesNotReadTheResponseIsCutOff) {
  MetricsServer::Options options;
  options.write_timeout = std::chrono::milliseconds(1000);
  options.threads = 2;
  const std::string big(32 << 20, 'm');
  auto server = StartServer(
      [&](const MetricsServer::Request&) {
        return MetricsServer::Response{200, std::string(kTextContentType), big};
      },
      options);
  ASSERT_NE(server, nullptr);
  const int port = server->address().port;
  UniqueFd stuck = Connect(port);
  ASSERT_TRUE(stuck.valid());
  ASSERT_TRUE(SendAll(stuck.get(), "GET /metrics HTTP/1.1\r\n\r\n"));
  // The response fills the socket buffers; the server waits write_timeout, then gives up.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const std::string got = ReadUntilClosed(stuck.get(), std::chrono::seconds(5));
  EXPECT_EQ(StatusOf(got), 200);
  EXPECT_LT(got.size(), big.size());
  EXPECT_EQ(Exchange(port, "GET / HTTP/1.1\r\n\r\n").substr(0, 12), "HTTP/1.1 200");
}

TEST(MetricsServerTest, ManyConcurrentClients) {
  std::atomic<int> calls{0};
  auto server = StartServer([&](const MetricsServer::Request& r) {
    ++calls;
    return FakeMetrics(r);
  });
  ASSERT_NE(server, nullptr);
  const int port = server->address().port;
  constexpr int kClients = 40;
  constexpr int kEach = 10;
  std::atomic<int> ok{0};
  std::atomic<int64_t> slowest_us{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kEach; ++i) {
        const auto t0 = Clock::now();
        const std::string response =
            Get(port, "/metrics", c % 2 ? kPrometheusProtobufAccept : kPrometheusAccept);
        const int64_t us =
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
        for (int64_t prev = slowest_us; us > prev && !slowest_us.compare_exchange_weak(prev, us);) {
        }
        if (StatusOf(response) == 200 &&
            BodyOf(response) == (c % 2 ? "protobuf body" : "text body\n")) {
          ++ok;
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ok.load(), kClients * kEach);
  // A dropped handshake is retried after a second (the listen backlog was too small).
  EXPECT_LT(slowest_us.load(), 900'000) << "slowest request, us";
  EXPECT_EQ(calls.load(), kClients * kEach);
}

TEST(MetricsServerTest, StopIsPromptWithAnIdleConnectionOpen) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  UniqueFd idle = Connect(server->address().port);
  ASSERT_TRUE(idle.valid());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // taken by a thread
  const auto start = Clock::now();
  server->Stop();
  // idle_timeout (1 s) at most: cpp-httplib 0.11 does not wake a connection waiting for its
  // request when the server stops.
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1500));
  EXPECT_EQ(ReadUntilClosed(idle.get(), std::chrono::milliseconds(1000)), "");
}

TEST(MetricsServerTest, StopRightAfterStart) {
  for (int i = 0; i < 20; ++i) {
    auto server = StartServer();
    ASSERT_NE(server, nullptr);
    server->Stop();
    server->Stop();
  }
}

TEST(MetricsServerTest, CurlScrapes) {
  if (::access("/usr/bin/curl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/curl";
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::string command = "/usr/bin/curl -sS --compressed -m 5 http://" +
                              server->address().ToString() + "/metrics 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  EXPECT_EQ(::pclose(pipe), 0) << out;
  EXPECT_EQ(out, "text body\n");
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::MakeTempDir("iotrace_atomic_file_test.");
    ASSERT_FALSE(dir_.empty()) << "mkdtemp in " << test::TestTmpDir();
  }
  void TearDown() override { test::RemoveTree(dir_); }

  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir_.c_str());
    while (dirent* e = d ? ::readdir(d) : nullptr) {
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") {
        names.push_back(e->d_name);
      }
    }
    if (d) ::closedir(d);
    return names;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::string dir_;
};

TEST_F(AtomicFileTest, WritesAndReplacesLeavingNoTemporaryFile) {
  const std::string path = dir_ + "/iotrace.prom";
  ASSERT_TRUE(WriteFileAtomically(path, "first\n").ok());
  EXPECT_EQ(Read(path), "first\n");
  const std::string big(1 << 20, 'x');
  ASSERT_TRUE(WriteFileAtomically(path, big).ok());
  EXPECT_EQ(Read(path), big);
  ASSERT_TRUE(WriteFileAtomically(path, "").ok());
  EXPECT_EQ(Read(path), "");
  EXPECT_EQ(Entries(), std::vector<std::string>{"iotrace.prom"});
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);  // the collector runs as another user
}

TEST_F(AtomicFileTest, MissingDirectoryIsAnErrorNamingThePath) {
  const std::string path = dir_ + "/no/such/iotrace.prom";
  const absl::Status s = WriteFileAtomically(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find(path), std::string::npos) << s;
  EXPECT_TRUE(Entries().empty());
}

TEST_F(AtomicFileTest, RenameOntoADirectoryFailsAndRemovesTheTemporaryFile) {
  const std::string path = dir_ + "/taken";
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  ::close(::open((path + "/inside").c_str(), O_CREAT | O_WRONLY, 0644));
  const absl::Status s = WriteFileAtomically(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s;
  EXPECT_EQ(Entries(), std::vector<std::string>{"taken"});
}

}  // namespace
}  // namespace iotrace
