// docs/report-json.md against what `iotrace report --format json` writes: every key the report
// writes is documented, and every documented key is written by one of a few reports that
// together have every optional part (intervals, filters, warnings, losses, gaps in the data,
// formats taken from another file), so that the document cannot drift from the output again.
//
// What counts as documented: the keys of the ```json blocks (the first one is the whole report;
// a block after a line "NAME:" or "NAME (...):" is the shape of the placeholder NAME, as in
// `"groups": [ GROUP, ... ]`), and the keys of the table after "`completeness`:", with the
// shape its meaning column spells out in backquotes (`[{"kind", "cpu", ...}]`). A value written
// `{name: count}` is a map by name, and a key whose value the document does not spell out (a
// table row without a shape, `{...}`) is checked itself but not inside.
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "block_trace_dat.h"
#include "gtest/gtest.h"
#include "iotrace/cli/report_runner.h"
#include "test_json.h"

namespace iotrace {
namespace {

using test::Json;
using test::JsonParser;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string JoinPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// True when `path` lies strictly inside `outer` ("a.b" or "a[].b" inside "a").
bool Inside(const std::string& path, const std::string& outer) {
  return path.size() > outer.size() && path.compare(0, outer.size(), outer) == 0 &&
         (path[outer.size()] == '.' || path[outer.size()] == '[');
}

struct DocSchema {
  std::set<std::string> keys;    // "input.path", "groups[].buckets[].lo_ns", ...
  std::set<std::string> opaque;  // keys whose value is not spelled out: not looked inside
  std::map<std::string, std::string> placeholders;  // "groups[]" -> "GROUP"
  std::set<std::string> unspelled;                  // "{ ... }" objects, opaque unless described
};

// A tolerant walk over the JSON-like text of the document: strings, punctuation, `...` and
// bare words (numbers, placeholders, `name`); records the key paths under `root`.
class DocWalker {
 public:
  explicit DocWalker(DocSchema* schema) : schema_(schema) {}

  void Walk(std::string_view text, const std::string& root) {
    Tokenize(text);
    std::vector<Frame> stack;
    for (size_t i = 0; i < tokens_.size(); ++i) {
      const Token& t = tokens_[i];
      const bool colon_next = i + 1 < tokens_.size() && tokens_[i + 1].text == ":";
      if (stack.empty()) {
        if (t.text == "{") stack.push_back({root, true});
        if (t.text == "[") stack.push_back({root + "[]", false});
        if (IsPlaceholder(t)) schema_->placeholders[root] = t.text;
        continue;
      }
      Frame& f = stack.back();
      if (t.text == "}" || t.text == "]") {
        if (f.object && !f.ignore && !f.any_key && !f.map) schema_->unspelled.insert(f.path);
        if (f.object && !f.ignore && f.map) schema_->opaque.insert(f.path);
        stack.pop_back();
        continue;
      }
      if (t.text == ",") {
        f.expect_key = true;
        continue;
      }
      if (f.object && f.expect_key) {
        if (t.quoted) {
          const std::string key = JoinPath(f.path, t.text);
          if (!f.ignore) schema_->keys.insert(key);
          f.any_key = true;
          if (colon_next) {
            ++i;
            f.expect_key = false;
            f.value_path = key;
          }
        } else if (colon_next && t.text != "...") {
          f.map = true;  // {name: count}
          ++i;
          f.expect_key = false;
          f.value_path.clear();
        }
        continue;
      }
      // A value: of the key just read (object), or an element (array).
      const bool ignore = f.ignore || (f.object && f.value_path.empty());
      const std::string path = f.object ? f.value_path : f.path;
      if (t.text == "{") {
        stack.push_back({path, true, ignore});
      } else if (t.text == "[") {
        stack.push_back({path + "[]", false, ignore});
      } else if (IsPlaceholder(t) && !ignore) {
        schema_->placeholders[path] = t.text;
      }
    }
  }

 private:
  struct Token {
    std::string text;
    bool quoted = false;
  };
  struct Frame {
    std::string path;
    bool object = false;
    bool ignore = false;  // inside a map's value: its keys are names, not documented keys
    bool expect_key = true;
    bool any_key = false;
    bool map = false;
    std::string value_path;
  };

  static bool IsPlaceholder(const Token& t) {
    if (t.quoted || t.text.size() < 2) return false;
    for (char c : t.text) {
      if (!(c >= 'A' && c <= 'Z') && c != '_') return false;
    }
    return true;
  }

  void Tokenize(std::string_view s) {
    tokens_.clear();
    size_t i = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (c == '"') {
        size_t end = i + 1;
        while (end < s.size() && s[end] != '"') end += s[end] == '\\' ? 2 : 1;
        tokens_.push_back({std::string(s.substr(i + 1, end - i - 1)), true});
        i = end + 1;
      } else if (std::strchr("{}[]:,", c) != nullptr) {
        tokens_.push_back({std::string(1, c), false});
        ++i;
      } else {
        size_t end = i;
        while (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end])) &&
               std::strchr("{}[]:,\"", s[end]) == nullptr) {
          ++end;
        }
        tokens_.push_back({std::string(s.substr(i, end - i)), false});
        i = end;
      }
    }
  }

  DocSchema* schema_;
  std::vector<Token> tokens_;
};

// The backquoted spans of a line of the document.
std::vector<std::string> Backquoted(const std::string& line) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t a = line.find('`', pos);
    if (a == std::string::npos) break;
    const size_t b = line.find('`', a + 1);
    if (b == std::string::npos) break;
    out.push_back(line.substr(a + 1, b - a - 1));
    pos = b + 1;
  }
  return out;
}

DocSchema ParseDoc(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  DocSchema doc;
  std::map<std::string, DocSchema> named;  // placeholder name -> its block's shape
  std::string table_root;
  std::string previous;  // the last non-blank line outside a block
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.rfind("```json", 0) == 0) {
      std::string block;
      for (++i; i < lines.size() && lines[i].rfind("```", 0) != 0; ++i) block += lines[i] + "\n";
      // "GROUP:" or "COVERAGE (see report.md, ...):" names the block that follows.
      std::string name;
      for (char c : previous) {
        if (!((c >= 'A' && c <= 'Z') || c == '_')) break;
        name += c;
      }
      const bool names_it = name.size() >= 2 && !previous.empty() && previous.back() == ':';
      DocWalker walker(names_it ? &named[name] : &doc);
      walker.Walk(block, "");
      previous.clear();
      continue;
    }
    if (line.empty()) continue;
    // "`completeness`:" starts a table of that key's members.
    const std::vector<std::string> quoted = Backquoted(line);
    if (quoted.size() == 1 && line == "`" + quoted[0] + "`:") table_root = quoted[0];
    if (!table_root.empty() && line.rfind("| `", 0) == 0) {
      const size_t bar = line.find(" | ", 2);
      if (bar == std::string::npos) {
        ADD_FAILURE() << "a table row without a meaning: " << line;
        continue;
      }
      const std::vector<std::string> keys = Backquoted(line.substr(0, bar));
      std::string shape;
      for (const std::string& q : Backquoted(line.substr(bar))) {
        if (!q.empty() && (q[0] == '{' || q[0] == '[')) {
          shape = q;
          break;
        }
      }
      for (const std::string& key : keys) {
        const std::string path = JoinPath(table_root, key);
        doc.keys.insert(path);
        if (keys.size() == 1 && !shape.empty()) {
          DocWalker(&doc).Walk(shape, path);
        } else {
          doc.opaque.insert(path);
        }
      }
    }
    previous = line;
  }
  // Placeholders take their block's shape where they stand (one level: blocks use none).
  for (const auto& [path, name] : doc.placeholders) {
    auto it = named.find(name);
    if (it == named.end()) {
      ADD_FAILURE() << "placeholder " << name << " at " << path << " has no block";
      continue;
    }
    for (const std::string& k : it->second.keys) doc.keys.insert(path + "." + k);
    for (const std::string& k : it->second.opaque) doc.opaque.insert(path + "." + k);
    for (const std::string& k : it->second.unspelled) doc.unspelled.insert(path + "." + k);
  }
  // "{ ... }" stands for members described elsewhere (a table); where nothing describes them
  // ({"I2D": {...}, "D2C": {...}}: like the one spelled out), the value is not looked inside.
  for (const std::string& u : doc.unspelled) {
    bool described = false;
    for (const std::string& k : doc.keys) described = described || Inside(k, u);
    if (!described) doc.opaque.insert(u);
  }
  return doc;
}

// The key paths of a report's JSON, not looking inside opaque keys.
void CollectKeys(const Json& v, const std::string& path, const DocSchema& doc,
                 std::set<std::string>* out) {
  if (v.type == Json::kObject) {
    for (const auto& [key, value] : v.fields) {
      const std::string p = JoinPath(path, key);
      out->insert(p);
      if (doc.opaque.count(p) == 0) CollectKeys(value, p, doc, out);
    }
  } else if (v.type == Json::kArray) {
    for (const Json& item : v.items) CollectKeys(item, path + "[]", doc, out);
  }
}

class ReportJsonDocTest : public ::testing::Test {
 protected:
  static ReportOptions Options(const std::string& input) {
    ReportOptions o;
    o.input = input;
    o.format = OutputFormat::kJson;
    o.sysfs_root = std::string(IOTRACE_FIXTURES) + "/devices/sys";
    o.procfs_root = std::string(IOTRACE_FIXTURES) + "/devices/proc";
    return o;
  }
  // The report's JSON, parsed.
  static Json Report(const ReportOptions& o) {
    std::ostringstream out, err;
    const absl::Status s = RunReport(o, out, err);
    EXPECT_TRUE(s.ok()) << o.input << ": " << s;
    Json j;
    EXPECT_TRUE(JsonParser(out.str()).Parse(&j)) << o.input << ":\n" << out.str();
    return j;
  }
  // Reports that together write every optional part of the JSON.
  static std::vector<Json> Reports() {
    std::vector<Json> reports;
    const std::string golden = std::string(IOTRACE_FIXTURES) + "/golden/";
    // Intervals, filters, warnings (stale requests), reader problems (duplicate_record).
    ReportOptions o = Options(golden + "perf_mq.data");
    o.interval_s = 0.05;
    o.devices = {"7:0", "254:0"};
    o.since_s = 0;
    reports.push_back(Report(o));
    // Requests issued without an insert (scheduler none).
    reports.push_back(Report(Options(golden + "iotrace_none.data")));
    // Events lost in the middle of a CPU's data: a gap of the coverage, losses, partial groups.
    testing::BlockTraceDat dat;
    const std::vector<testing::RqEvent> events = testing::Workload(2000, 21);
    reports.push_back(Report(Options(
        dat.Write(events, -1, -1, testing::Loss{0, 800 * testing::kMs, 805 * testing::kMs, 40}))));
    // Two files read as one recording (input.files).
    o = Options(golden + "iotrace_none.data");
    o.inputs = {golden + "iotrace_none.data", dat.Write(testing::Workload(200, 22))};
    reports.push_back(Report(o));
    // A perf.data cut before its event formats, read with those of the intact file.
    const std::string intact = ReadText(golden + "perf_mq.data");
    const std::string cut = ::testing::TempDir() + "/report_json_doc_" +
                            std::to_string(getpid()) + "_half.data";
    std::ofstream(cut, std::ios::binary) << intact.substr(0, intact.size() / 2);
    o = Options(cut);
    o.formats_from = golden + "perf_mq.data";
    reports.push_back(Report(o));
    std::filesystem::remove(cut);
    return reports;
  }
};

TEST_F(ReportJsonDocTest, TheDocumentsShapeIsReadAsExpected) {
  const DocSchema doc =
      ParseDoc(ReadText(std::string(IOTRACE_FIXTURES) + "/../../docs/report-json.md"));
  // A few keys of each kind of place the document holds them in.
  for (const char* key :
       {"schema_version", "input.path", "options.filters[].name", "groups[].buckets[].lo_ns",
        "intervals[].groups[].p99_ns", "intervals[].interval_start_s", "warnings[].message",
        "completeness.paired", "completeness.losses[].kind", "completeness.reader.problems",
        "completeness.devices[].no_insert_reason", "completeness.requeues_unmatched"}) {
    EXPECT_EQ(doc.keys.count(key), 1u) << key;
  }
  for (const char* key : {"completeness.reader.problems", "completeness.devices[].events",
                          "completeness.paired"}) {
    EXPECT_EQ(doc.opaque.count(key), 1u) << key;
  }
  EXPECT_EQ(doc.opaque.count("completeness"), 0u);  // "{ ... }", described by the table
  EXPECT_EQ(doc.keys.count("completeness.reader.problems.name"), 0u);
}

TEST_F(ReportJsonDocTest, EveryKeyTheReportWritesIsDocumentedAndEveryDocumentedKeyIsWritten) {
  const DocSchema doc =
      ParseDoc(ReadText(std::string(IOTRACE_FIXTURES) + "/../../docs/report-json.md"));
  ASSERT_GT(doc.keys.size(), 50u);
  std::set<std::string> written;
  for (const Json& j : Reports()) CollectKeys(j, "", doc, &written);
  for (const std::string& key : written) {
    EXPECT_EQ(doc.keys.count(key), 1u) << key << " is written but not in docs/report-json.md";
  }
  for (const std::string& key : doc.keys) {
    EXPECT_EQ(written.count(key), 1u)
        << key << " is in docs/report-json.md but no report of the test writes it";
  }
}

// no_insert_reason explains issues without an insert: null when a device has none.
TEST_F(ReportJsonDocTest, NoInsertReasonIsNullWhenNothingIsToExplain) {
  const std::string golden = std::string(IOTRACE_FIXTURES) + "/golden/";
  const Json mq = Report(Options(golden + "perf_mq.data"));
  const Json& devices = mq["completeness"]["devices"];
  ASSERT_EQ(devices.items.size(), 2u);
  for (const Json& d : devices.items) {
    EXPECT_EQ(d["issues_without_insert"].text, "0");
    EXPECT_EQ(d["no_insert_reason"].type, Json::kNull) << d["dev"].text;
  }
  const Json none = Report(Options(golden + "iotrace_none.data"));
  const Json& d = none["completeness"]["devices"][0];
  EXPECT_EQ(d["issues_without_insert"].text, "600");
  EXPECT_EQ(d["no_insert_reason"].type, Json::kString);
  EXPECT_EQ(d["no_insert_reason"].text, "no_insert_on_device");
}

}  // namespace
}  // namespace iotrace
