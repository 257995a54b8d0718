#include "iotrace/analysis/live_window.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>

#include "report_steps.h"

namespace iotrace {
namespace {

constexpr unsigned kRequestEnd =
    PhaseBit(Phase::kD2C) | PhaseBit(Phase::kI2C) | PhaseBit(Phase::kQ2C);

}  // namespace

size_t LiveWindow::SmallHistogram::Index(uint64_t v) {
  v = std::min(v, (uint64_t{1} << (kMaxExponent + 1)) - 1);
  const int e = 63 - __builtin_clzll(v | (uint64_t{1} << kSubBits));
  const int shift = e - kSubBits;
  return (static_cast<size_t>(shift) << kSubBits) + static_cast<size_t>(v >> shift);
}

uint64_t LiveWindow::SmallHistogram::Width(size_t index) {
  const int e_minus_bits = static_cast<int>(index >> kSubBits);
  return uint64_t{1} << (e_minus_bits == 0 ? 0 : e_minus_bits - 1);
}

uint64_t LiveWindow::SmallHistogram::Low(size_t index) {
  const int e_minus_bits = static_cast<int>(index >> kSubBits);
  const int shift = e_minus_bits == 0 ? 0 : e_minus_bits - 1;
  return static_cast<uint64_t>(index - (static_cast<size_t>(shift) << kSubBits)) << shift;
}

void LiveWindow::SmallHistogram::Record(uint64_t ns) {
  ++counts_[Index(ns)];
  ++count_;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
}

uint64_t LiveWindow::SmallHistogram::ValueAtPercentile(double p) const {
  if (count_ == 0) return 0;
  if (p <= 0) return min_;
  if (p >= 100) return max_;
  uint64_t rank = static_cast<uint64_t>(p / 100.0 * static_cast<double>(count_) + 0.999999999);
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = Index(min_), last = Index(max_); i <= last; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const uint64_t mid = Low(i) + Width(i) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

void LiveWindow::SmallHistogram::Reset() {
  if (count_ == 0) return;
  std::fill(counts_.begin() + Index(min_), counts_.begin() + Index(max_) + 1, 0u);
  count_ = 0;
  min_ = ~uint64_t{0};
  max_ = 0;
}

LiveWindow::LiveWindow(const LiveWindowOptions& options, DeviceNames* names)
    : options_(options),
      names_(names),
      breakdown_(options.by),
      others_(std::make_unique<Process>()) {
  breakdown_.set_ioprio_absent(options.ioprio_absent);
}

LiveWindow::~LiveWindow() = default;

LiveWindow::Slot& LiveWindow::SlotFor(uint64_t key) {
  if (last_slot_ != nullptr && last_slot_->key == key) return *last_slot_;
  auto it = slot_index_.find(key);
  if (it == slot_index_.end()) {
    auto slot = std::make_unique<Slot>();
    slot->key = key;
    slot->dev = static_cast<uint32_t>(key);
    slot->klass = static_cast<uint32_t>(key >> 32);
    it = slot_index_.emplace(key, slot.get()).first;
    slots_.push_back(std::move(slot));
  }
  last_slot_ = it->second;
  return *last_slot_;
}

LiveWindow::Process& LiveWindow::ProcessFor(const RequestSample& s) {
  const bool inserted = s.insert_pid >= 0;
  const int32_t pid = inserted ? s.insert_pid : s.issue_pid;
  const uint64_t key = uint64_t{static_cast<uint32_t>(pid)} << 32 | s.dev;
  auto it = process_index_.find(key);
  if (it != process_index_.end()) return *processes_[it->second];
  if (used_ >= options_.max_processes) return *others_;
  if (used_ == processes_.size()) processes_.push_back(std::make_unique<Process>());
  Process& p = *processes_[used_];
  process_index_.emplace(key, static_cast<uint32_t>(used_));
  ++used_;
  p.pid = pid;
  p.dev = s.dev;
  std::strncpy(p.comm, inserted ? s.insert_comm : s.issue_comm, kCommSize - 1);
  p.comm[kCommSize - 1] = '\0';
  return p;
}

void LiveWindow::OnSample(const RequestSample& s, unsigned phases) {
  Slot& slot = SlotFor(breakdown_.active() ? s.dev | uint64_t{breakdown_.ClassOf(s)} << 32
                                           : uint64_t{s.dev});
  const int op = static_cast<int>(s.op);
  for (unsigned bits = phases & options_.phases; bits != 0; bits &= bits - 1) {
    const int p = std::countr_zero(bits);
    std::unique_ptr<Histogram>& h = slot.groups[op][p];
    if (h == nullptr) h = std::make_unique<Histogram>();
    h->Record(s.Latency(static_cast<Phase>(p)));
  }
  if ((phases & kRequestEnd) == 0) return;
  ++slot.requests[op];
  slot.bytes[op] += s.bytes;
  Process& proc = ProcessFor(s);
  ++proc.requests;
  proc.bytes += s.bytes;
  if (s.Has(Phase::kI2C)) proc.i2c.Record(s.Latency(Phase::kI2C));
  if (s.Has(Phase::kD2C)) proc.d2c.Record(s.Latency(Phase::kD2C));
}

LiveInterval LiveWindow::Take(uint64_t index, double start_s, double length_s,
                              const LiveIntervalCounts& counts) {
  LiveInterval iv;
  iv.index = index;
  iv.start_s = start_s;
  iv.length_s = length_s;
  iv.counts = counts;
  iv.by = std::string(BreakdownName(options_.by));
  struct Row {
    Slot* slot;
    std::string by;
    uint64_t order;
  };
  std::vector<Row> rows;
  for (const auto& s : slots_) {
    rows.push_back({s.get(), breakdown_.Label(s->klass), breakdown_.Order(s->klass)});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(a.slot->dev, a.order, a.by) < std::tie(b.slot->dev, b.order, b.by);
  });
  for (const Row& row : rows) {
    Slot* slot = row.slot;
    const std::string device = names_->Label(slot->dev);
    for (int op = 0; op < kBlockOpCount; ++op) {
      for (int p = 0; p < kPhaseCount; ++p) {
        Histogram* h = slot->groups[op][p].get();
        if (h == nullptr || h->empty()) continue;
        iv.groups.push_back(
            MakeGroup(*h, slot->dev, device, static_cast<BlockOp>(op), static_cast<Phase>(p)));
        iv.groups.back().by = row.by;
        iv.groups.back().by_order = row.order;
        h->Reset();
      }
      if (slot->requests[op] != 0) {
        iv.throughput.push_back({slot->dev, device, row.by, static_cast<BlockOp>(op),
                                 slot->requests[op], slot->bytes[op]});
      }
      slot->requests[op] = 0;
      slot->bytes[op] = 0;
    }
  }

  std::vector<Process*> procs;
  for (size_t i = 0; i < used_; ++i) procs.push_back(processes_[i].get());
  if (others_->requests != 0) procs.push_back(others_.get());
  std::sort(procs.begin(), procs.end(), [](const Process* a, const Process* b) {
    if (a->requests != b->requests) return a->requests > b->requests;
    if (a->bytes != b->bytes) return a->bytes > b->bytes;
    return std::tie(a->pid, a->dev) < std::tie(b->pid, b->dev);
  });
  for (size_t i = 0; i < procs.size() && i < options_.top_processes; ++i) {
    const Process& p = *procs[i];
    LiveProcess row;
    row.pid = p.pid;
    row.comm = p.pid < 0 ? "(others)" : p.comm;
    row.dev = p.dev;
    row.device = p.pid < 0 ? "-" : names_->Label(p.dev);
    row.requests = p.requests;
    row.bytes = p.bytes;
    row.i2c_p50_ns = p.i2c.ValueAtPercentile(50);
    row.i2c_p99_ns = p.i2c.ValueAtPercentile(99);
    row.d2c_p50_ns = p.d2c.ValueAtPercentile(50);
    row.d2c_p99_ns = p.d2c.ValueAtPercentile(99);
    iv.processes.push_back(std::move(row));
  }
  for (size_t i = 0; i < used_; ++i) {
    Process& p = *processes_[i];
    p.requests = p.bytes = 0;
    p.i2c.Reset();
    p.d2c.Reset();
  }
  others_->requests = others_->bytes = 0;
  others_->i2c.Reset();
  others_->d2c.Reset();
  used_ = 0;
  process_index_.clear();
  return iv;
}

}  // namespace iotrace
