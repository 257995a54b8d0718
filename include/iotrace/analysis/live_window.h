// The interval that `iotrace live` is filling: it sees every sample the report builder records
// (a SampleTap) and keeps, until Take, each device x op x phase's histogram, each device x op's
// requests and bytes, and each process's requests with their I2C and D2C latencies. Take hands
// the interval over as a LiveInterval (live_model.h) and starts the next one empty.
#ifndef IOTRACE_ANALYSIS_LIVE_WINDOW_H_
#define IOTRACE_ANALYSIS_LIVE_WINDOW_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "iotrace/analysis/breakdown.h"
#include "iotrace/analysis/histogram.h"
#include "iotrace/analysis/latency_report.h"
#include "iotrace/analysis/live_model.h"
#include "iotrace/sys/device_names.h"

namespace iotrace {

struct LiveWindowOptions {
  unsigned phases = (1u << kPhaseCount) - 1;  // PhaseBit()s to keep (--phases)
  size_t top_processes = 10;                 // rows of LiveInterval::processes
  // Processes (pid x device) told apart in one interval; the rest are added up in one row of
  // pid -1. Bounds the memory: about 5.5 KiB each.
  size_t max_processes = 1024;
  // --by: the latency rows broken down by one more dimension (the report's, breakdown.h);
  // ioprio_absent: the events lack the field (every class "-").
  BreakdownBy by = BreakdownBy::kNone;
  bool ioprio_absent = false;
};

class LiveWindow : public SampleTap {
 public:
  LiveWindow(const LiveWindowOptions& options, DeviceNames* names);
  ~LiveWindow() override;

  void OnSample(const RequestSample& sample, unsigned phases) override;

  // The interval so far, summarized; the window is empty again afterwards.
  LiveInterval Take(uint64_t index, double start_s, double length_s,
                    const LiveIntervalCounts& counts);

  // A histogram of few buckets (16 per power of two: a percentile within about 3% of the value),
  // for the per-process latencies, of which there may be a thousand.
  class SmallHistogram {
   public:
    static constexpr int kSubBits = 4;
    static constexpr int kMaxExponent = 44;
    static constexpr size_t kBuckets = size_t{kMaxExponent - kSubBits + 2} << kSubBits;
    void Record(uint64_t ns);
    uint64_t ValueAtPercentile(double p) const;
    uint64_t count() const { return count_; }
    void Reset();

   private:
    static size_t Index(uint64_t v);
    static uint64_t Low(size_t index);
    static uint64_t Width(size_t index);
    std::array<uint32_t, kBuckets> counts_{};
    uint64_t count_ = 0;
    uint64_t min_ = ~uint64_t{0};
    uint64_t max_ = 0;
  };

 private:
  // A device's (with --by: a device x class's) histograms.
  struct Slot {
    uint64_t key = 0;  // dev | class << 32
    uint32_t dev = 0;
    uint32_t klass = 0;
    std::array<std::array<std::unique_ptr<Histogram>, kPhaseCount>, kBlockOpCount> groups;
    std::array<uint64_t, kBlockOpCount> requests{};
    std::array<uint64_t, kBlockOpCount> bytes{};
  };
  struct Process {
    int32_t pid = -1;
    char comm[kCommSize] = {};
    uint32_t dev = 0;
    uint64_t requests = 0;
    uint64_t bytes = 0;
    SmallHistogram i2c;
    SmallHistogram d2c;
  };
  Slot& SlotFor(uint64_t key);
  Process& ProcessFor(const RequestSample& s);

  LiveWindowOptions options_;
  DeviceNames* names_;
  std::vector<std::unique_ptr<Slot>> slots_;
  absl::flat_hash_map<uint64_t, Slot*> slot_index_;
  Breakdown breakdown_;
  Slot* last_slot_ = nullptr;
  std::vector<std::unique_ptr<Process>> processes_;  // the first used_ are this interval's
  size_t used_ = 0;
  absl::flat_hash_map<uint64_t, uint32_t> process_index_;  // pid << 32 | dev -> index
  std::unique_ptr<Process> others_;  // past max_processes
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_LIVE_WINDOW_H_
