#include "format_cells.h"

#include <cctype>
#include <cmath>
#include <vector>

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
                         CsvField(g.device),
                         with_by ? absl::StrCat(",", CsvField(g.by)) : std::string(),
                         BlockOpName(g.op), PhaseName(g.phase), s.count,
                         s.min_ns, JsonDouble(s.mean_ns), s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns,
                         s.max_ns);
}

std::string Wrapped(std::string_view lead, std::string_view text, size_t hang) {
  // Words that must share a line are joined into one view of `text` (with what lies between
  // them): a number and the word before it, and a number and the word after it unless the
  // number ends a clause ("2 CPUs", "0.024 s", "block_rq_issue 715," but not "715, block_...").
  std::vector<std::string_view> words;
  bool join_next = false;
  for (size_t at = 0; at < text.size();) {
    const size_t space = std::min(text.find(' ', at), text.size());
    std::string_view word = text.substr(at, space - at);
    at = space + 1;
    if (word.empty()) continue;
    const bool number = std::isdigit(static_cast<unsigned char>(word[0]));
    if (!words.empty() && (number || join_next)) {
      const std::string_view& before = words.back();
      words.back() = std::string_view(before.data(), word.data() + word.size() - before.data());
    } else {
      words.push_back(word);
    }
    join_next = number && std::string_view(",;:)").find(word.back()) == std::string_view::npos;
  }
  std::string out(lead);
  size_t column = out.size();
  bool line_has_word = false;
  for (std::string_view word : words) {
    if (line_has_word && column + 1 + word.size() > kTextWidth) {
      out += '\n';
      out.append(hang, ' ');
      column = hang;
      line_has_word = false;
    }
    if (line_has_word || (!out.empty() && out.back() != ' ' && out.back() != '\n')) {
      out += ' ';
      ++column;
    }
    out.append(word);
    column += word.size();
    line_has_word = true;
  }
  out += '\n';
  return out;
}

std::string Printable(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

std::string RecordedOnText(const RecordingHost& h) {
  const std::string host = Printable(h.host), kernel = Printable(h.kernel);
  const std::string arch = Printable(h.arch), recorder = Printable(h.recorder);
  std::string system;
  if (!kernel.empty()) system = "Linux " + kernel;
  if (!arch.empty()) system += (system.empty() ? "" : " ") + arch;
  const std::string where = host.empty()     ? system
                            : system.empty() ? host
                                             : host + " (" + system + ")";
  std::string out = where.empty() ? "" : "on " + where;
  if (!recorder.empty()) out += (out.empty() ? "by " : " by ") + recorder;
  return out;
}

std::string JsonRecordedOn(const RecordingHost& h) {
  auto value = [](const std::string& v) { return v.empty() ? std::string("null") : JsonString(v); };
  return "{\"host\": " + value(h.host) + ", \"kernel\": " + value(h.kernel) +
         ", \"arch\": " + value(h.arch) + ", \"recorder\": " + value(h.recorder) + "}";
}

}  // namespace iotrace
