// Test helper: builds ftrace ring-buffer sub-buffers ("pages") byte for byte the way
// kernel/trace/ring_buffer.c lays them out, and tracepoint payloads from a parsed format, so that
// the page walker, the trace.dat reader and writer can be tested without a kernel.
#ifndef IOTRACE_TESTS_UNIT_FTRACE_PAGE_BUILDER_H_
#define IOTRACE_TESTS_UNIT_FTRACE_PAGE_BUILDER_H_

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/ftrace_page.h"
#include "iotrace/formats/trace_dat_writer.h"

namespace iotrace::testing {

inline std::string ReadFixtureFile(const std::string& name) {
  return ::iotrace::test::ReadFixture(name);
}

// Writes a trace.dat of pages.size() CPUs at `path` through TraceDatWriter: pages[cpu] (whole
// pages, one after another) and, when given, cpu_stats[cpu] (per_cpu stats text). Returns the
// offset where the CPU data starts.
inline uint64_t WriteTraceDat(const std::string& path, const TracingMetadata& meta,
                              const std::vector<std::string>& pages,
                              const std::vector<std::string>& cpu_stats = {}) {
  TraceDatWriterOptions o;
  o.meta = meta;
  o.nr_cpus = static_cast<int>(pages.size());
  auto w = TraceDatWriter::Create(path, o);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return 0;
  for (size_t cpu = 0; cpu < pages.size(); ++cpu) {
    const int c = static_cast<int>(cpu);
    EXPECT_TRUE((*w)->AppendPages(c, ByteView(pages[cpu].data(), pages[cpu].size())).ok());
    if (cpu < cpu_stats.size()) (*w)->SetCpuStats(c, cpu_stats[cpu]);
  }
  auto result = (*w)->Finish();
  EXPECT_TRUE(result.ok()) << result.status();
  return (*w)->data_start();
}

// header_page text for a sub-buffer of `page_size` bytes (64-bit kernel).
inline std::string HeaderPageText(uint32_t page_size) {
  return "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
         "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
         "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
         "\tfield: char data;\toffset:16;\tsize:" +
         std::to_string(page_size - 16) + ";\tsigned:0;\n";
}

class FtracePageBuilder {
 public:
  explicit FtracePageBuilder(uint64_t page_ts, uint32_t page_size = 4096)
      : page_size_(page_size), page_ts_(page_ts), last_ts_(page_ts) {}

  size_t free_bytes() const { return page_size_ - 16 - data_.size(); }
  size_t data_size() const { return data_.size(); }
  uint64_t last_ts() const { return last_ts_; }

  // A data event at absolute time `ts` (>= the previous one); a time extend is inserted when the
  // delta does not fit 27 bits. `force_long` uses the type_len 0 form even for small payloads.
  // False (page unchanged) when it does not fit.
  bool AddEvent(uint64_t ts, std::string_view payload, bool force_long = false) {
    const uint32_t len = static_cast<uint32_t>((payload.size() + 3) & ~size_t{3});
    const bool long_form = force_long || len > 4 * kRbTypeDataMax || len == 0;
    uint64_t delta = ts - last_ts_;
    const bool extend = delta >= (uint64_t{1} << kRbTimeShift);
    const size_t need = (extend ? 8 : 0) + 4 + (long_form ? 4 : 0) + len;
    if (need > free_bytes()) return false;
    if (extend) {
      Put32(kRbTypeTimeExtend | static_cast<uint32_t>(delta & ((1u << 27) - 1)) << 5);
      Put32(static_cast<uint32_t>(delta >> kRbTimeShift));
      delta = 0;
    }
    if (long_form) {
      Put32(static_cast<uint32_t>(delta) << 5);
      Put32(len + 4);
    } else {
      Put32((len / 4) | static_cast<uint32_t>(delta) << 5);
    }
    data_.append(payload);
    data_.append(len - payload.size(), '\0');
    last_ts_ = ts;
    return true;
  }

  // A discarded event (padding with a non-zero delta) of `len` payload bytes at time `ts`.
  bool AddDiscarded(uint64_t ts, uint32_t len) {
    if (8 + len > free_bytes()) return false;
    Put32(kRbTypePadding | static_cast<uint32_t>(ts - last_ts_) << 5);
    Put32(len + 4);  // array[0] counts itself (ring_buffer.c: rb_event_length)
    data_.append(len, '\xee');
    last_ts_ = ts;
    return true;
  }

  // An absolute time stamp (type 31) that sets the clock to `ts`.
  bool AddAbsoluteTimestamp(uint64_t ts) {
    if (8 > free_bytes()) return false;
    Put32(kRbTypeTimeStamp | static_cast<uint32_t>(ts & ((1u << 27) - 1)) << 5);
    Put32(static_cast<uint32_t>((ts >> kRbTimeShift) & 0xffffffffu));
    last_ts_ = ts;
    return true;
  }

  // Raw bytes appended to the data area (to build corrupt pages).
  void AddRaw(std::string_view bytes) { data_.append(bytes); }
  void SetMissedEvents(uint64_t count, bool stored) {
    missed_ = true;
    missed_count_ = count;
    missed_stored_ = stored;
  }
  void OverrideCommit(uint64_t commit) {
    commit_override_ = true;
    commit_ = commit;
  }

  std::string Build() const {
    std::string page(page_size_, '\0');
    std::memcpy(&page[0], &page_ts_, 8);
    uint64_t commit = data_.size();
    std::memcpy(&page[16], data_.data(), std::min<size_t>(data_.size(), page_size_ - 16));
    if (missed_) {
      if (missed_stored_ && page_size_ - 16 - data_.size() >= 8) {
        std::memcpy(&page[16 + data_.size()], &missed_count_, 8);
        commit |= kRbMissedStored;
      }
      commit |= kRbMissedEvents;
    }
    if (commit_override_) commit = commit_;
    std::memcpy(&page[8], &commit, 8);
    return page;
  }

 private:
  void Put32(uint32_t v) { data_.append(reinterpret_cast<const char*>(&v), 4); }

  uint32_t page_size_;
  uint64_t page_ts_;
  uint64_t last_ts_;
  std::string data_;
  bool missed_ = false;
  bool missed_stored_ = false;
  uint64_t missed_count_ = 0;
  bool commit_override_ = false;
  uint64_t commit_ = 0;
};

// A block_rq_* payload for `fmt` (fields looked up by name), as the kernel would write it.
struct BlockFields {
  int32_t pid = 0;
  uint32_t dev = 0;
  uint64_t sector = 0;
  uint32_t nr_sector = 0;
  std::string rwbs;
  std::string comm;
};

inline std::string BlockPayload(const EventFormat& fmt, const BlockFields& f) {
  uint32_t size = 0;
  for (const FieldInfo& field : fmt.fields) size = std::max(size, field.offset + field.size);
  std::string p(size, '\0');
  auto put = [&](const char* name, const void* v, size_t n) {
    const FieldInfo* field = fmt.FindField(name);
    if (field != nullptr) std::memcpy(&p[field->offset], v, std::min<size_t>(n, field->size));
  };
  uint16_t type = static_cast<uint16_t>(fmt.id);
  put("common_type", &type, 2);
  put("common_pid", &f.pid, 4);
  put("dev", &f.dev, 4);
  put("sector", &f.sector, 8);
  put("nr_sector", &f.nr_sector, 4);
  put("rwbs", f.rwbs.data(), f.rwbs.size());
  put("comm", f.comm.data(), f.comm.size());
  return p;
}

}  // namespace iotrace::testing

#endif  // IOTRACE_TESTS_UNIT_FTRACE_PAGE_BUILDER_H_
