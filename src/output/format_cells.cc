#include "format_cells.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace iotrace {

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string JsonDouble(double v) {
  if (!std::isfinite(v)) return "null";
  std::string s = absl::StrFormat("%.3f", v);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string CsvHeaderWithBy(std::string_view header, const std::string& by) {
  if (by.empty()) return std::string(header);
  const size_t device_end = header.find(",op,");
  return std::string(header.substr(0, device_end)) + "," + by +
         std::string(header.substr(device_end));
}

std::string SummaryCsvCells(const LatencyGroup& g, bool with_by) {
  const LatencySummary& s = g.summary;
  return absl::StrFormat("%s,%s%s,%s,%s,%u,%u,%s,%u,%u,%u,%u,%u", DevString(g.dev),
                         CsvField(g.device), with_by ? "," + CsvField(g.by) : "",
                         BlockOpName(g.op), PhaseName(g.phase), s.count,
                         s.min_ns, JsonDouble(s.mean_ns), s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns,
                         s.max_ns);
}

}  // namespace iotrace
