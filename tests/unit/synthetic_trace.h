// Test support: raw block tracepoint records laid out exactly as a given event format says
// (this kernel's fixture formats, or hand-built older layouts), served in order by a fake
// TraceReader. Payloads sit 4 bytes past an 8-byte boundary, as in a perf sample.
#ifndef IOTRACE_TESTS_UNIT_SYNTHETIC_TRACE_H_
#define IOTRACE_TESTS_UNIT_SYNTHETIC_TRACE_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fixtures.h"
#include "gtest/gtest.h"
#include "iotrace/event/block_event.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace::synthetic {

inline std::string ReadFixtureFile(const std::string& relative) {
  return ::iotrace::test::ReadFixture(relative);
}

// Parses the format of block:<name> for every name given, as kernel `kernel` lays it out
// (tests/fixtures/formats/<kernel>).
inline std::vector<EventFormat> LoadFormats(const std::string& kernel,
                                            const std::vector<std::string>& names) {
  std::vector<EventFormat> out;
  for (const std::string& name : names) {
    std::string text = ::iotrace::test::ReadBlockFormat(name, kernel);
    auto f = ParseEventFormat("block", text);
    EXPECT_TRUE(f.ok()) << kernel << " " << name << ": " << f.status();
    if (f.ok()) out.push_back(*std::move(f));
  }
  return out;
}

// This kernel's (6.18) layouts, captured into tests/fixtures/formats/6.18.
inline std::vector<EventFormat> ThisKernelFormats(bool with_bio_queue = false) {
  std::vector<std::string> names = {"block_rq_insert", "block_rq_issue", "block_rq_complete",
                                    "block_rq_requeue", "block_rq_merge"};
  if (with_bio_queue) names.push_back("block_bio_queue");
  return LoadFormats("6.18", names);
}

// The fields a synthetic record carries; those its format lacks are left out.
struct RecordFields {
  uint32_t dev = 0;
  uint64_t sector = 0;
  uint32_t nr_sector = 0;
  uint32_t bytes = 0;
  std::string rwbs;
  std::string comm;
  int32_t error = 0;
  int32_t common_pid = 0;
  uint16_t ioprio = 0;
};

// Lays out a record for `format`: common header, then every named field at its offset.
inline std::vector<uint8_t> EncodeRecord(const EventFormat& format, const RecordFields& f) {
  size_t size = 8;
  for (const FieldInfo& fi : format.fields) size = std::max<size_t>(size, fi.offset + fi.size);
  const size_t dynamic_at = size;
  size += 1;  // one NUL byte for every __data_loc string
  std::vector<uint8_t> out(size, 0);
  auto put = [&out](const FieldInfo& fi, uint64_t v) {
    std::memcpy(out.data() + fi.offset, &v, std::min<size_t>(fi.size, sizeof(v)));
  };
  auto put_str = [&out](const FieldInfo& fi, const std::string& s) {
    std::memcpy(out.data() + fi.offset, s.data(), std::min<size_t>(fi.size, s.size()));
  };
  for (const FieldInfo& fi : format.fields) {
    if (fi.name == "common_type") put(fi, format.id);
    else if (fi.name == "common_pid") put(fi, static_cast<uint32_t>(f.common_pid));
    else if (fi.name == "dev") put(fi, f.dev);
    else if (fi.name == "sector") put(fi, f.sector);
    else if (fi.name == "nr_sector") put(fi, f.nr_sector);
    else if (fi.name == "bytes") put(fi, f.bytes);
    else if (fi.name == "error") put(fi, static_cast<uint32_t>(f.error));
    else if (fi.name == "ioprio") put(fi, f.ioprio);
    else if (fi.name == "rwbs") put_str(fi, f.rwbs);
    else if (fi.name == "comm") put_str(fi, f.comm);
    else if (fi.is_dynamic) put(fi, uint64_t{dynamic_at} | (uint64_t{1} << 16));
  }
  return out;
}

// A fake reader: formats plus a list of records and losses, delivered in the order added.
class FakeTraceReader : public TraceReader {
 public:
  struct Item {
    bool is_loss = false;
    RawEvent raw;  // payload fixed up at delivery
    std::vector<uint8_t> bytes;
    LossRecord loss;
  };

  FakeTraceReader(std::vector<EventFormat> formats, std::vector<Item> items, ReadStats stats)
      : formats_(std::move(formats)), items_(std::move(items)), stats_(std::move(stats)) {}

  std::string_view FileFormat() const override { return "synthetic"; }
  const std::vector<EventFormat>& formats() const override { return formats_; }
  const TracingMetadata& metadata() const override { return meta_; }
  int nr_cpus() const override { return 2; }
  std::vector<std::pair<std::string, std::string>> Info() const override { return {}; }
  std::string CommOf(int32_t pid) const override { return ""; }
  const ReadStats& stats() const override { return stats_; }

  absl::Status ReadAll(EventSink* sink) override {
    // One buffer, every payload at 4 mod 8 like raw data in a perf sample.
    for (Item& item : items_) {
      if (item.is_loss) {
        sink->OnLoss(item.loss);
        continue;
      }
      buffer_.assign(item.bytes.size() + 16, 0);
      uint8_t* base = buffer_.data();
      uint8_t* at = base + ((8 - reinterpret_cast<uintptr_t>(base) % 8) % 8) + 4;
      // (An empty payload's bytes may be a null pointer, which memcpy must not be given.)
      if (!item.bytes.empty()) std::memcpy(at, item.bytes.data(), item.bytes.size());
      item.raw.payload = ByteView(at, item.bytes.size());
      sink->OnEvent(item.raw);
    }
    return absl::OkStatus();
  }

 private:
  std::vector<EventFormat> formats_;
  std::vector<Item> items_;
  ReadStats stats_;
  TracingMetadata meta_;
  std::vector<uint8_t> buffer_;
};

// Builds a stream of block events; add them in time order (the reader's job in real files).
class SyntheticTrace {
 public:
  explicit SyntheticTrace(std::vector<EventFormat> formats = ThisKernelFormats())
      : formats_(std::move(formats)) {}

  const std::vector<EventFormat>& formats() const { return formats_; }
  const EventFormat* Format(std::string_view name) const {
    for (const EventFormat& f : formats_) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }

  struct Ev {
    uint64_t ts = 0;
    uint32_t dev = KernelDev(7, 0);
    uint64_t sector = 0;
    uint32_t nr_sector = 8;
    std::string rwbs = "W";
    int32_t pid = 100;
    std::string comm = "fio";
    uint32_t cpu = 0;
    int32_t error = 0;
    uint16_t ioprio = 0;
  };

  SyntheticTrace& Add(std::string_view event, const Ev& e) {
    const EventFormat* format = Format(event);
    EXPECT_NE(format, nullptr) << "no format for " << event;
    if (format == nullptr) return *this;
    RecordFields f;
    f.dev = e.dev;
    f.sector = e.sector;
    f.nr_sector = e.nr_sector;
    f.bytes = e.nr_sector * 512;
    f.rwbs = e.rwbs;
    f.comm = e.comm;
    f.error = e.error;
    f.common_pid = e.pid;
    f.ioprio = e.ioprio;
    return AddRaw(format->id, e.ts, e.cpu, e.pid, EncodeRecord(*format, f));
  }
  SyntheticTrace& AddRaw(uint32_t type, uint64_t ts, uint32_t cpu, int32_t pid,
                         std::vector<uint8_t> bytes) {
    FakeTraceReader::Item item;
    item.raw.ts = ts;
    item.raw.cpu = cpu;
    item.raw.pid = pid;
    item.raw.tid = pid;
    item.raw.type = static_cast<uint16_t>(type);
    item.bytes = std::move(bytes);
    items_.push_back(std::move(item));
    return *this;
  }

  // Shorthands: one request event at `ts` on (dev, sector).
  SyntheticTrace& Insert(uint64_t ts, uint64_t sector, uint32_t nr = 8, std::string rwbs = "W",
                         uint32_t dev = KernelDev(7, 0), uint32_t cpu = 0) {
    return Add("block_rq_insert", {ts, dev, sector, nr, rwbs, 100, "fio", cpu});
  }
  SyntheticTrace& Issue(uint64_t ts, uint64_t sector, uint32_t nr = 8, std::string rwbs = "W",
                        uint32_t dev = KernelDev(7, 0), uint32_t cpu = 0) {
    return Add("block_rq_issue", {ts, dev, sector, nr, rwbs, 100, "fio", cpu});
  }
  SyntheticTrace& Complete(uint64_t ts, uint64_t sector, uint32_t nr = 8, std::string rwbs = "W",
                           uint32_t dev = KernelDev(7, 0), uint32_t cpu = 1) {
    return Add("block_rq_complete", {ts, dev, sector, nr, rwbs, 0, "", cpu});
  }

  SyntheticTrace& Loss(LossRecord::Kind kind, int32_t cpu, int32_t event_id, uint64_t count) {
    FakeTraceReader::Item item;
    item.is_loss = true;
    item.loss.kind = kind;
    item.loss.cpu = cpu;
    item.loss.event_id = event_id;
    item.loss.count = count;
    items_.push_back(std::move(item));
    return *this;
  }
  ReadStats& stats() { return stats_; }

  // The records as RawEvents whose payloads point into `storage` (for driving a sink directly,
  // without a reader in between). Losses are left out.
  std::vector<RawEvent> Materialize(std::vector<std::vector<uint8_t>>* storage) const {
    storage->clear();
    storage->reserve(items_.size());
    std::vector<RawEvent> out;
    for (const auto& item : items_) {
      if (item.is_loss) continue;
      storage->push_back(item.bytes);
      RawEvent raw = item.raw;
      raw.payload = ByteView(storage->back().data(), storage->back().size());
      out.push_back(raw);
    }
    return out;
  }

  std::unique_ptr<FakeTraceReader> Reader() const {
    ReadStats stats = stats_;
    for (const auto& item : items_) {
      if (!item.is_loss) ++stats.events, ++stats.records;
    }
    return std::make_unique<FakeTraceReader>(formats_, items_, stats);
  }
  size_t size() const { return items_.size(); }

 private:
  std::vector<EventFormat> formats_;
  std::vector<FakeTraceReader::Item> items_;
  ReadStats stats_;
};

}  // namespace iotrace::synthetic

#endif  // IOTRACE_TESTS_UNIT_SYNTHETIC_TRACE_H_
