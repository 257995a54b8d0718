// libFuzzer target for what iotrace itself parses of `live --listen`'s requests and options (the
// HTTP framing is cpp-httplib's): ParseListen on --listen's value and ChooseExposition on a
// scraper's Accept header. Input: the --listen value, a NUL, the Accept header. Checks, besides
// not crashing: a spec that parses gives a port 1..65535 and prints back to a spec that parses to
// the same address; the exposition is one of the two with its own content type.
//
// Run by hand: scripts/fuzz.sh listen_accept_fuzzer 120
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "iotrace/live/metrics_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view spec = in.substr(0, nul);
  const std::string_view accept = nul == std::string_view::npos ? "" : in.substr(nul + 1);

  auto address = iotrace::ParseListen(spec);
  if (address.ok()) {
    if (address->port < 1 || address->port > 65535) std::abort();
    auto again = iotrace::ParseListen(address->ToString());
    if (!again.ok() || again->host != address->host || again->port != address->port) std::abort();
  }
  const iotrace::ExpositionChoice c = iotrace::ChooseExposition(accept);
  if (c.exposition == iotrace::Exposition::kText) {
    if (c.content_type != iotrace::kTextContentType) std::abort();
  } else if (c.content_type != iotrace::kProtobufContentType) {
    std::abort();
  }
  return 0;
}
