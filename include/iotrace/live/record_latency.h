// The latency figures of `iotrace record`'s progress line, from the live engine: the pages the
// ftrace backend stored (RecordTap) walked in place, merged across CPUs up to a watermark,
// paired by the report builder, and the device time (D2C) of the last stretch per disk.
#ifndef IOTRACE_LIVE_RECORD_LATENCY_H_
#define IOTRACE_LIVE_RECORD_LATENCY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "iotrace/capture/record.h"

namespace iotrace {

class RecordLatency : public RecordTap {
 public:
  // Pages reach the output only whole, so a CPU that writes little shows its events late: the
  // merge waits this long behind the clock (records later still are left out of the figures).
  static constexpr uint64_t kSlackNs = 2'000'000'000;
  // Disks shown, the busiest first.
  static constexpr size_t kMaxDisks = 3;

  explicit RecordLatency(std::string sysfs_root = "/sys");
  ~RecordLatency() override;

  absl::Status Begin(const std::vector<TraceEventInfo>& events, const FtracePageLayout& layout,
                     const std::vector<int>& cpus) override;
  void OnPages(size_t index, ByteView pages) override;
  // "D2C p50/p99 loop0 21us/1.5ms, vda 240us/1.4ms": the requests completed since the last call
  // (up to kSlackNs ago).
  std::string Progress(uint64_t now_ns) override;

 private:
  struct State;
  std::string sysfs_root_;
  std::unique_ptr<State> state_;
};

}  // namespace iotrace

#endif  // IOTRACE_LIVE_RECORD_LATENCY_H_
