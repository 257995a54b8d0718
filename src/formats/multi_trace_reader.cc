#include "iotrace/formats/multi_trace_reader.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/base/loser_tree.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/trace_reader_open.h"

namespace iotrace {
namespace {

constexpr size_t kIdSpace = size_t{1} << 16;  // RawEvent::type is a u16

// Why two formats of one event cannot be read as one, or "" when their layouts agree.
std::string LayoutDifference(const EventFormat& a, const EventFormat& b) {
  if (a.fields.size() != b.fields.size()) {
    return absl::StrFormat("%u fields against %u", a.fields.size(), b.fields.size());
  }
  for (size_t i = 0; i < a.fields.size(); ++i) {
    const FieldInfo& f = a.fields[i];
    const FieldInfo& g = b.fields[i];
    if (f.name != g.name || f.offset != g.offset || f.size != g.size ||
        f.is_signed != g.is_signed || f.is_dynamic != g.is_dynamic ||
        f.is_relative != g.is_relative) {
      return absl::StrFormat("field %s at %u, %u bytes, against field %s at %u, %u bytes", f.name,
                             f.offset, f.size, g.name, g.offset, g.size);
    }
  }
  return "";
}

}  // namespace

Coverage CombineCoverage(const std::vector<Coverage>& parts) {
  Coverage out;
  for (const Coverage& p : parts) {
    for (const CpuSpan& s : p.cpus) out.AddSpan(s);
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    for (const DataGap& g : parts[k].gaps) {
      DataGap h = g;
      for (size_t j = 0; j < parts.size(); ++j) {
        const CpuSpan* s = j == k ? nullptr : parts[j].Span(g.cpu);
        if (s == nullptr) continue;
        // Data that ends early ends at the next file's first record of the CPU ...
        if (g.open_end() && s->first_ts > g.after_ts && s->first_ts < h.before_ts) {
          h.before_ts = s->first_ts;
        }
        // ... and data missing before a file's first record of it starts after the last record
        // of the file before.
        if (g.after_ts == 0 && s->last_ts < g.before_ts && s->last_ts > h.after_ts) {
          h.after_ts = s->last_ts;
        }
      }
      out.gaps.push_back(h);
    }
  }
  return out;
}

// One file's records as its reader delivers them (on a thread of its own), copied into chunks
// that the merge takes in order: at most kMaxChunks wait, so memory stays bounded.
struct MultiTraceReader::Stream : public EventSink {
  struct Item {
    uint64_t key = 0;  // the event's time; a loss's is the time of the event before it
    RawEvent event;    // payload.data unset until taken: an offset into the chunk's bytes
    size_t offset = 0;
    bool is_loss = false;
    LossRecord loss;
  };
  struct Chunk {
    std::vector<Item> items;
    std::vector<uint8_t> bytes;
  };
  static constexpr size_t kChunkItems = 4096;
  static constexpr size_t kMaxChunks = 4;

  Stream(const std::vector<uint16_t>* map, size_t index) : index(index), map_(map) {
    filling_ = std::make_unique<Chunk>();
  }

  // The reader's side.
  void OnEvent(const RawEvent& e) override {
    Item& it = filling_->items.emplace_back();
    it.key = e.ts;
    it.event = e;
    it.event.type = (*map_)[e.type];
    // At 4 past a multiple of 8, as perf lays a sample's raw data, for decoders that load
    // fields in place.
    it.offset = (filling_->bytes.size() + 3) / 8 * 8 + 4;
    filling_->bytes.resize(it.offset);
    filling_->bytes.insert(filling_->bytes.end(), e.payload.data, e.payload.data + e.payload.size);
    // The payload's common_type too, for whoever decodes the type from it.
    if (e.payload.size >= sizeof(uint16_t)) {
      std::memcpy(filling_->bytes.data() + it.offset, &it.event.type, sizeof(uint16_t));
    }
    last_ts_ = e.ts;
    if (filling_->items.size() >= kChunkItems) Push();
  }
  void OnLoss(const LossRecord& loss) override {
    Item& it = filling_->items.emplace_back();
    it.key = last_ts_;
    it.is_loss = true;
    it.loss = loss;
    if (loss.event_id >= 0 && static_cast<size_t>(loss.event_id) < kIdSpace) {
      it.loss.event_id = (*map_)[loss.event_id];
    }
    if (filling_->items.size() >= kChunkItems) Push();
  }
  void Finish(absl::Status s) {
    if (!filling_->items.empty()) Push();
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    status = std::move(s);
    cv_.notify_all();
  }

  // The merge's side: makes current() the next item; false when the stream has ended.
  bool Load() {
    while (taken_ == nullptr || pos_ >= taken_->items.size()) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !ready_.empty() || done_; });
      if (ready_.empty()) return false;
      taken_ = std::move(ready_.front());
      ready_.pop_front();
      pos_ = 0;
      cv_.notify_all();
    }
    return true;
  }
  const Item& current() const { return taken_->items[pos_]; }
  void Deliver(EventSink* sink) {
    const Item& it = current();
    if (it.is_loss) {
      sink->OnLoss(it.loss);
    } else {
      RawEvent e = it.event;
      e.payload = ByteView(taken_->bytes.data() + it.offset, it.event.payload.size);
      sink->OnEvent(e);
    }
    ++pos_;
  }
  // The time of the first event of the current chunk (after the first Load: of the file).
  uint64_t FirstEventTime() const {
    for (size_t i = pos_; taken_ != nullptr && i < taken_->items.size(); ++i) {
      if (!taken_->items[i].is_loss) return taken_->items[i].key;
    }
    return std::numeric_limits<uint64_t>::max();
  }

  const size_t index;  // the file's place as given
  size_t rank = 0;     // its place by first record, for ties
  absl::Status status;

 private:
  void Push() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return ready_.size() < kMaxChunks; });
    ready_.push_back(std::move(filling_));
    cv_.notify_all();
    lock.unlock();
    filling_ = std::make_unique<Chunk>();
    filling_->items.reserve(kChunkItems);
  }

  const std::vector<uint16_t>* map_;
  std::unique_ptr<Chunk> filling_;
  uint64_t last_ts_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Chunk>> ready_;
  bool done_ = false;
  std::unique_ptr<Chunk> taken_;
  size_t pos_ = 0;
};

MultiTraceReader::~MultiTraceReader() = default;

absl::StatusOr<std::unique_ptr<MultiTraceReader>> MultiTraceReader::Create(
    std::vector<std::string> paths, std::vector<std::unique_ptr<TraceReader>> readers) {
  if (readers.empty() || paths.size() != readers.size()) {
    return absl::InvalidArgumentError("read several files: no files");
  }
  std::unique_ptr<MultiTraceReader> m(new MultiTraceReader());
  m->ordered_paths_ = paths;
  m->paths_ = std::move(paths);
  m->readers_ = std::move(readers);
  m->formats_ = m->readers_[0]->formats();
  std::vector<size_t> owner(m->formats_.size(), 0);  // the file each format came from
  uint32_t next_id = 0;
  for (const EventFormat& f : m->formats_) next_id = std::max(next_id, f.id + 1);
  std::vector<std::string> kinds;
  for (size_t i = 0; i < m->readers_.size(); ++i) {
    const std::string kind(m->readers_[i]->FileFormat());
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    std::vector<uint16_t>& map = m->id_maps_.emplace_back(kIdSpace);
    for (size_t id = 0; id < kIdSpace; ++id) map[id] = static_cast<uint16_t>(id);
    if (i == 0) continue;
    for (const EventFormat& f : m->readers_[i]->formats()) {
      if (f.id >= kIdSpace) continue;
      size_t j = 0;
      while (j < m->formats_.size() &&
             (m->formats_[j].system != f.system || m->formats_[j].name != f.name)) {
        ++j;
      }
      if (j == m->formats_.size()) {
        if (next_id >= kIdSpace) {
          return absl::ResourceExhaustedError(
              absl::StrFormat("read %s with %s: too many events", m->paths_[0], m->paths_[i]));
        }
        EventFormat added = f;
        added.id = next_id++;
        m->formats_.push_back(std::move(added));
        owner.push_back(i);
      } else if (std::string why = LayoutDifference(m->formats_[j], f); !why.empty()) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s and %s cannot be read as one recording: they lay out %s differently (%s)",
            m->paths_[owner[j]], m->paths_[i], f.FullName(), why));
      }
      map[f.id] = static_cast<uint16_t>(m->formats_[j].id);
    }
  }
  // Ids a later file does not describe must not alias an event of the first: they go to one
  // no format has, and stay unknown.
  if (next_id < kIdSpace) {
    for (size_t i = 1; i < m->readers_.size(); ++i) {
      std::vector<bool> known(kIdSpace, false);
      for (const EventFormat& f : m->readers_[i]->formats()) {
        if (f.id < kIdSpace) known[f.id] = true;
      }
      for (size_t id = 0; id < kIdSpace; ++id) {
        if (!known[id]) m->id_maps_[i][id] = static_cast<uint16_t>(next_id);
      }
    }
  }
  m->file_format_ = absl::StrJoin(kinds, "+");
  return m;
}

std::string MultiTraceReader::FormatsWarning() const {
  std::vector<std::string> warnings;
  for (size_t i = 0; i < readers_.size(); ++i) {
    const std::string w = readers_[i]->FormatsWarning();
    if (!w.empty()) warnings.push_back(paths_[i] + ": " + w);
  }
  return absl::StrJoin(warnings, "; ");
}

int MultiTraceReader::nr_cpus() const {
  int n = 0;
  for (const auto& r : readers_) n = std::max(n, r->nr_cpus());
  return n;
}

std::vector<std::pair<std::string, std::string>> MultiTraceReader::Info() const {
  return readers_[0]->Info();
}

std::string MultiTraceReader::CommOf(int32_t pid) const {
  for (const auto& r : readers_) {
    std::string comm = r->CommOf(pid);
    if (!comm.empty()) return comm;
  }
  return "";
}

void MultiTraceReader::set_read_ahead(bool on) {
  for (auto& r : readers_) r->set_read_ahead(on);
}

absl::Status MultiTraceReader::ReadAll(EventSink* sink) {
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::thread> threads;
  for (size_t i = 0; i < readers_.size(); ++i) {
    streams.push_back(std::make_unique<Stream>(&id_maps_[i], i));
  }
  for (size_t i = 0; i < readers_.size(); ++i) {
    threads.emplace_back([this, i, s = streams[i].get()] { s->Finish(readers_[i]->ReadAll(s)); });
  }
  // Ranked by first record (then as given): the order of the files in time, for ties.
  std::vector<Stream*> live;
  std::vector<std::pair<uint64_t, size_t>> firsts;
  for (auto& s : streams) {
    const bool any = s->Load();
    if (any) live.push_back(s.get());
    firsts.emplace_back(any ? s->FirstEventTime() : ~uint64_t{0}, s->index);
  }
  std::stable_sort(firsts.begin(), firsts.end());
  for (size_t r = 0; r < firsts.size(); ++r) streams[firsts[r].second]->rank = r;
  // Merged by (key, rank): a tree's leaf is a stream's rank.
  std::vector<Stream*> by_rank(streams.size());
  for (auto& s : streams) by_rank[s->rank] = s.get();
  LoserTree tree;
  tree.Reset(by_rank.size());
  for (Stream* s : live) tree.Set(static_cast<uint32_t>(s->rank), s->current().key);
  tree.Build();
  while (!tree.empty()) {
    Stream* s = by_rank[tree.top()];
    s->Deliver(sink);
    if (s->Load()) {
      tree.ReplaceTop(s->current().key);
    } else {
      tree.PopTop();
    }
  }
  for (std::thread& t : threads) t.join();

  std::vector<std::string> ordered(paths_.size());
  for (size_t r = 0; r < firsts.size(); ++r) ordered[r] = paths_[firsts[r].second];
  ordered_paths_ = std::move(ordered);
  stats_ = ReadStats();
  std::vector<Coverage> parts;
  absl::Status status;
  for (size_t i = 0; i < readers_.size(); ++i) {
    const ReadStats& st = readers_[i]->stats();
    stats_.records += st.records;
    stats_.events += st.events;
    stats_.batched_reads += st.batched_reads;
    for (const auto& [name, count] : st.problems) stats_.AddProblem(name, count);
    parts.push_back(st.coverage);
    if (status.ok() && !streams[i]->status.ok()) status = Annotate(streams[i]->status, paths_[i]);
  }
  stats_.coverage = CombineCoverage(parts);
  return status;
}

absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceReaders(
    const std::vector<std::string>& paths, const FormatsFallback* formats_fallback) {
  if (paths.size() == 1) return OpenTraceReader(paths[0], formats_fallback);
  std::vector<std::unique_ptr<TraceReader>> readers;
  for (const std::string& p : paths) {
    if (p == "-") {
      return absl::InvalidArgumentError(
          "- (standard input) cannot be read together with other files");
    }
    absl::StatusOr<std::unique_ptr<TraceReader>> r = OpenTraceReader(p, formats_fallback);
    if (!r.ok()) return r.status();
    readers.push_back(std::move(*r));
  }
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<MultiTraceReader> m,
                           MultiTraceReader::Create(paths, std::move(readers)));
  return std::unique_ptr<TraceReader>(std::move(m));
}

}  // namespace iotrace
