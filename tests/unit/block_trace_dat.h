// Test helper: synthetic 2-CPU trace.dat files of block requests (insert, issue, requeue,
// complete) over two devices, with what real recordings hold (queue depth, requeues, partial
// completions, flushes, lost completions, requests meeting at one sector), and with damage
// placed where a test wants it (an overrun before a page, a page that goes back in time, the
// events of a stretch of time missing).
#ifndef IOTRACE_TESTS_UNIT_BLOCK_TRACE_DAT_H_
#define IOTRACE_TESTS_UNIT_BLOCK_TRACE_DAT_H_

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ftrace_page_builder.h"
#include "gtest/gtest.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/tracing_data.h"
#include "test_files.h"

namespace iotrace::testing {

constexpr uint32_t kDev = 7u << 20 | 1;
constexpr uint32_t kDev2 = 254u << 20;
constexpr uint64_t kMs = 1'000'000;

enum Kind { kInsert, kIssue, kComplete, kRequeue };

struct RqEvent {
  uint64_t ts;
  int cpu;
  Kind kind;
  uint32_t dev;
  uint64_t sector;
  uint32_t nr;
  std::string rwbs;
  int32_t pid = 100;
  std::string comm;
};

// Events lost from one CPU's data in [from, to): see BlockTraceDat::Write.
struct Loss {
  int cpu = 0;
  uint64_t from = 0;
  uint64_t to = 0;
  uint64_t count = 0;
};

// A 2-CPU trace.dat of block_rq_insert/issue/complete/requeue events, each CPU's in time order.
class BlockTraceDat {
 public:
  BlockTraceDat() {
    dir_ = test::MakeTempDir("iotrace_split_test.");
    if (dir_.empty()) ADD_FAILURE() << "mkdtemp in " << test::TestTmpDir();
    meta_.header_page = HeaderPageText(4096);
    meta_.header_event = ReadFixtureFile("formats/6.18/events/header_event");
    for (const char* name :
         {"block_rq_insert", "block_rq_issue", "block_rq_complete", "block_rq_requeue"}) {
      std::string text = test::ReadBlockFormat(name);
      meta_.event_formats.push_back({"block", text});
      formats_.push_back(*ParseEventFormat("block", text));
    }
  }
  ~BlockTraceDat() { test::RemoveTree(dir_); }

  // Writes `events` (any order); `missed_page`: the CPU 0 page starting at that index says the
  // kernel overwrote events before it (-1: none); `backwards_page`: that CPU 1 page starts
  // before the one before it ended.
  //
  // `loss`: the events of loss->cpu in [from, to) are left out, and the page that starts with
  // that CPU's next event says the kernel missed loss->count events before it (an ftrace
  // overrun in the middle of the data).
  //
  // `idle_cpus`: that many more CPUs with no data (empty streams, after the others in the file).
  // `future_page`: the CPU 0 page of that index has a header time 1000 s late (a damaged page).
  int idle_cpus = 0;
  int future_page = -1;
  std::string Write(std::vector<RqEvent> events, int missed_page = -1, int backwards_page = -1,
                    const std::optional<Loss>& loss = std::nullopt) {
    std::stable_sort(events.begin(), events.end(),
                     [](const RqEvent& a, const RqEvent& b) { return a.ts < b.ts; });
    std::string pages[2];
    for (int cpu = 0; cpu < 2; ++cpu) {
      int page_no = 0;
      std::optional<FtracePageBuilder> page;
      bool missed_next = false;
      auto flush = [&] {
        if (!page.has_value()) return;
        if (cpu == 0 && page_no == missed_page) page->SetMissedEvents(3, true);
        std::string built = page->Build();
        if (cpu == 0 && page_no == future_page) {
          uint64_t ts;
          std::memcpy(&ts, built.data(), sizeof(ts));
          ts += 1000 * 1000 * kMs;
          std::memcpy(built.data(), &ts, sizeof(ts));
        }
        pages[cpu] += built;
        page.reset();
        ++page_no;
      };
      for (const RqEvent& e : events) {
        if (e.cpu != cpu) continue;
        if (loss.has_value() && loss->cpu == cpu && e.ts >= loss->from) {
          if (e.ts < loss->to) {
            missed_next = true;
            continue;
          }
          if (missed_next) {  // the first event after the loss starts a page that says so
            flush();
            page.emplace(e.ts);
            page->SetMissedEvents(loss->count, true);
            missed_next = false;
          }
        }
        const std::string payload = BlockPayload(
            formats_[e.kind], {e.pid, e.dev, e.sector, e.nr, e.rwbs, e.comm});
        if (page.has_value() && page->AddEvent(e.ts, payload)) continue;
        flush();
        uint64_t page_ts = e.ts;
        if (cpu == 1 && page_no == backwards_page) {
          EXPECT_GT(e.ts, 50 * kMs);
          page_ts = e.ts - 50 * kMs;
        }
        page.emplace(page_ts);
        if (page_ts != e.ts) EXPECT_TRUE(page->AddEvent(page_ts, payload));  // an early event
        EXPECT_TRUE(page->AddEvent(e.ts, payload));
      }
      flush();
    }
    const std::string path = dir_ + "/t" + std::to_string(files_++) + ".dat";
    std::vector<std::string> streams = {pages[0], pages[1]};
    streams.resize(2 + idle_cpus);
    WriteTraceDat(path, meta_, streams);
    return path;
  }

 private:
  std::string dir_;
  TracingMetadata meta_;
  std::vector<EventFormat> formats_;
  int files_ = 0;
};

// Requests over `span_ms` on two devices (up to 2.3 ms each, far less than the priming): queue
// depth of a few, each sector coming back every thousand requests (`overlap`: drawn from 512,
// so that requests in flight meet at one sector and some are left behind), some requeued,
// some completed in two parts, flushes; `lost` completions left out (their requests stay issued
// to the end).
inline std::vector<RqEvent> Workload(uint64_t span_ms, uint32_t seed, int lost = 0, bool overlap = false,
                         bool requeues = true) {
  std::mt19937_64 rng(seed);
  std::vector<RqEvent> ev;
  const uint64_t end = span_ms * kMs;
  int lost_left = lost;
  uint64_t n = 0;
  for (uint64_t t = 1000; t < end - 5 * kMs; t += 20000 + rng() % 160000) {
    const int cpu = static_cast<int>(rng() % 2);
    const uint32_t dev = rng() % 8 == 0 ? kDev2 : kDev;
    const uint64_t sector = (overlap ? rng() % 512 : n++ % 1000) * 8;
    const bool write = rng() % 3 == 0;
    const std::string rwbs = write ? "WS" : "R";
    const uint64_t issue = t + 500 + rng() % 300000;
    uint64_t done = issue + 2000 + rng() % 2000000;
    const int other = 1 - cpu;
    if (rng() % 50 == 0) {  // a flush: issue FF at sector 0, complete at sector -1
      ev.push_back({t, cpu, kInsert, dev, 0, 0, "FF"});
      ev.push_back({issue, cpu, kIssue, dev, 0, 0, "FF"});
      ev.push_back({done, other, kComplete, dev, ~uint64_t{0}, 0, "FF"});
      continue;
    }
    ev.push_back({t, cpu, kInsert, dev, sector, 8, rwbs});
    ev.push_back({issue, cpu, kIssue, dev, sector, 8, rwbs});
    if (rng() % 40 == 0 && requeues) {  // requeued, inserted and issued again
      ev.push_back({issue + 700, cpu, kRequeue, dev, sector, 8, rwbs});
      ev.push_back({issue + 900, cpu, kInsert, dev, sector, 8, rwbs});
      ev.push_back({issue + 1500, cpu, kIssue, dev, sector, 8, rwbs});
      done += 1500;
    }
    if (lost_left > 0 && rng() % 97 == 0) {
      --lost_left;
      continue;
    }
    if (rng() % 30 == 0) {  // completed in two parts
      ev.push_back({done - 1000, other, kComplete, dev, sector, 4, rwbs});
      ev.push_back({done, other, kComplete, dev, sector + 4, 4, rwbs});
    } else {
      ev.push_back({done, other, kComplete, dev, sector, 8, rwbs});
    }
  }
  return ev;
}

}  // namespace iotrace::testing

#endif  // IOTRACE_TESTS_UNIT_BLOCK_TRACE_DAT_H_
