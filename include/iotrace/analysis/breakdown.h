// --by: the class of a request sample along one more dimension than device x op x phase (its
// size, process, I/O priority or issuing CPU), as a number per sample and a label per class.
// The report's builder and live's window both break their rows down by it.
#ifndef IOTRACE_ANALYSIS_BREAKDOWN_H_
#define IOTRACE_ANALYSIS_BREAKDOWN_H_

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "iotrace/analysis/report.h"
#include "iotrace/analysis/request_matcher.h"

namespace iotrace {

class Breakdown {
 public:
  explicit Breakdown(BreakdownBy by = BreakdownBy::kNone) : by_(by) {}

  bool active() const { return by_ != BreakdownBy::kNone; }
  // Whether the samples need the names of processes decoded.
  bool needs_comm() const { return by_ == BreakdownBy::kComm; }

  // The class of `s`: size, the bit width of its bytes (0 for none, 13 for 4 KiB up to under
  // 8 KiB); comm, an id per name (the inserting process's, else the issuing one's), in the order
  // first seen; ioprio, IoprioClassLevel; cpu, the CPU of its issue. 0 without --by.
  uint32_t ClassOf(const RequestSample& s) {
    switch (by_) {
      case BreakdownBy::kNone:
        return 0;
      case BreakdownBy::kSize:
        return static_cast<uint32_t>(std::bit_width(s.bytes));
      case BreakdownBy::kComm:
        return CommClass(s.insert_comm[0] != '\0' ? s.insert_comm : s.issue_comm);
      case BreakdownBy::kIoprio:
        return s.ioprio;
      case BreakdownBy::kCpu:
        return s.issue_cpu;
    }
    return 0;
  }

  // "4K" (size: the lower bound of the class), "fio" (comm; "-" for none), "be/4", "rt/0",
  // "idle", "none" (ioprio: class/level; "-" when the file's events lack the field), "3" (cpu).
  std::string Label(uint32_t klass) const;
  // Where the class goes among the rows: by size, priority or CPU number; comm by name (the
  // caller breaks ties by label, so 0 for every name).
  uint64_t Order(uint32_t klass) const;

  // The file's insert and issue events lack ioprio (before Linux 6.11): every class is then "-".
  void set_ioprio_absent(bool absent) { ioprio_absent_ = absent; }
  bool ioprio_absent() const { return ioprio_absent_; }

  // The class in this breakdown of `klass` of `other`'s (comm ids differ between two builders
  // of one file; the other dimensions' classes are the same numbers).
  uint32_t Translate(const Breakdown& other, uint32_t klass);

 private:
  uint32_t CommClass(const char* comm);

  BreakdownBy by_;
  bool ioprio_absent_ = false;
  absl::flat_hash_map<std::string, uint32_t> comm_class_;
  std::vector<std::string> comm_names_;
  uint32_t last_comm_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_BREAKDOWN_H_
