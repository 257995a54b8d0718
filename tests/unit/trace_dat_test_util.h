// Test helpers for trace.dat: parse `trace-cmd report -t -R` text into events, and collect what
// a TraceReader delivers in the same shape, so the two can be compared event by event.
#ifndef IOTRACE_TESTS_UNIT_TRACE_DAT_TEST_UTIL_H_
#define IOTRACE_TESTS_UNIT_TRACE_DAT_TEST_UTIL_H_

#include <unistd.h>

#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "iotrace/base/bytes.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace::testing {

// One event as trace-cmd report -t -R prints it, or as decoded from our reader.
struct Ev {
  std::string name;
  int cpu = -1;
  uint64_t ts = 0;
  int pid = -1;
  uint64_t dev = 0, sector = 0, nr_sector = 0;
  std::string rwbs;

  bool operator==(const Ev&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Ev& e) {
  return os << e.name << " cpu=" << e.cpu << " ts=" << e.ts << " pid=" << e.pid << " dev=" << e.dev
            << " sector=" << e.sector << " nr=" << e.nr_sector << " rwbs=" << e.rwbs;
}

// Parses lines like
// "buf:   dd-14181 [000]  1522.455649102: block_rq_insert:   dev=7340032 sector=0 ... rwbs=WS ..."
inline std::vector<Ev> ParseReport(const std::string& text) {
  std::vector<Ev> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    size_t open = line.find(" [");
    size_t close = line.find("] ", open == absl::string_view::npos ? 0 : open);
    if (open == absl::string_view::npos || close == absl::string_view::npos) continue;
    Ev e;
    absl::string_view task = line.substr(0, open);
    size_t dash = task.rfind('-');
    EXPECT_TRUE(dash != absl::string_view::npos && absl::SimpleAtoi(task.substr(dash + 1), &e.pid))
        << line;
    EXPECT_TRUE(absl::SimpleAtoi(line.substr(open + 2, close - open - 2), &e.cpu)) << line;
    absl::string_view rest = absl::StripLeadingAsciiWhitespace(line.substr(close + 1));
    size_t colon = rest.find(": ");
    absl::string_view ts = rest.substr(0, colon);
    size_t dot = ts.find('.');
    uint64_t sec = 0, nsec = 0;
    EXPECT_TRUE(dot != absl::string_view::npos && ts.size() - dot - 1 == 9 &&
                absl::SimpleAtoi(ts.substr(0, dot), &sec) &&
                absl::SimpleAtoi(ts.substr(dot + 1), &nsec))
        << "report must come from trace-cmd report -t: " << line;
    e.ts = sec * 1000000000ull + nsec;
    rest = rest.substr(colon + 2);
    colon = rest.find(':');
    e.name = std::string(absl::StripAsciiWhitespace(rest.substr(0, colon)));
    for (absl::string_view kv : absl::StrSplit(rest.substr(colon + 1), ' ', absl::SkipEmpty())) {
      size_t eq = kv.find('=');
      if (eq == absl::string_view::npos) continue;
      absl::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "dev") EXPECT_TRUE(absl::SimpleAtoi(v, &e.dev));
      if (k == "sector") EXPECT_TRUE(absl::SimpleAtoi(v, &e.sector));
      if (k == "nr_sector") EXPECT_TRUE(absl::SimpleAtoi(v, &e.nr_sector));
      if (k == "rwbs") e.rwbs = std::string(v);
    }
    out.push_back(e);
  }
  return out;
}

inline uint64_t Field(const EventFormat& fmt, const RawEvent& ev, const char* name) {
  const FieldInfo* f = fmt.FindField(name);
  uint64_t v = 0;
  if (f != nullptr) LoadUnsigned(ev.payload, f->offset, f->size, &v);
  return v;
}

class CollectingSink : public EventSink {
 public:
  explicit CollectingSink(const std::vector<EventFormat>& formats) {
    for (const EventFormat& f : formats) by_id_[f.id] = &f;
  }
  void OnEvent(const RawEvent& ev) override {
    Ev e;
    e.cpu = static_cast<int>(ev.cpu);
    e.ts = ev.ts;
    e.pid = ev.pid;
    auto it = by_id_.find(ev.type);
    if (it == by_id_.end()) {
      e.name = "unknown";
    } else {
      const EventFormat& fmt = *it->second;
      e.name = fmt.name;
      e.dev = Field(fmt, ev, "dev");
      e.sector = Field(fmt, ev, "sector");
      e.nr_sector = Field(fmt, ev, "nr_sector");
      const FieldInfo* rwbs = fmt.FindField("rwbs");
      if (rwbs != nullptr) {
        ByteView s = ev.payload.Sub(rwbs->offset, rwbs->size);
        e.rwbs = std::string(s.AsString().substr(0, s.AsString().find('\0')));
      }
    }
    events.push_back(e);
  }
  void OnLoss(const LossRecord& loss) override { losses.push_back(loss); }

  std::vector<Ev> events;
  std::vector<LossRecord> losses;

 private:
  std::map<uint32_t, const EventFormat*> by_id_;
};

// Runs `trace-cmd report -t -R -i path`; false when trace-cmd is not installed.
inline bool RunTraceCmdReport(const std::string& path, std::string* out, int* exit_code) {
  if (access("/usr/bin/trace-cmd", X_OK) != 0 && access("/usr/local/bin/trace-cmd", X_OK) != 0) {
    return false;
  }
  std::string cmd = "trace-cmd report -t -R -i '" + path + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  char buf[65536];
  size_t n;
  out->clear();
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  *exit_code = pclose(p);
  return true;
}

}  // namespace iotrace::testing

#endif  // IOTRACE_TESTS_UNIT_TRACE_DAT_TEST_UTIL_H_
