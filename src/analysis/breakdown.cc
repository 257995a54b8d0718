#include "iotrace/analysis/breakdown.h"

#include <string>

#include "absl/strings/str_format.h"

namespace iotrace {

uint32_t Breakdown::CommClass(const char* comm) {
  // Requests of one process come in runs: the last name is the likely one.
  if (!comm_names_.empty()) {
    const std::string& last = comm_names_[last_comm_];
    if (last.compare(comm) == 0) return last_comm_;
  }
  std::string name(comm);
  auto [it, inserted] = comm_class_.try_emplace(name, static_cast<uint32_t>(comm_names_.size()));
  if (inserted) comm_names_.push_back(std::move(name));
  last_comm_ = it->second;
  return it->second;
}

std::string Breakdown::Label(uint32_t klass) const {
  switch (by_) {
    case BreakdownBy::kNone:
      return "";
    case BreakdownBy::kSize: {
      if (klass == 0) return "0";
      const uint64_t lo = uint64_t{1} << (klass - 1);
      if (lo >= (uint64_t{1} << 30)) return absl::StrFormat("%uG", lo >> 30);
      if (lo >= (uint64_t{1} << 20)) return absl::StrFormat("%uM", lo >> 20);
      if (lo >= (uint64_t{1} << 10)) return absl::StrFormat("%uK", lo >> 10);
      return absl::StrFormat("%u", lo);
    }
    case BreakdownBy::kComm: {
      const std::string& name = klass < comm_names_.size() ? comm_names_[klass] : "";
      return name.empty() ? "-" : name;
    }
    case BreakdownBy::kIoprio: {
      if (ioprio_absent_) return "-";
      // include/uapi/linux/ioprio.h: IOPRIO_CLASS_NONE, RT, BE, IDLE.
      const uint32_t cls = klass >> 3, level = klass & 7;
      switch (cls) {
        case 0:
          return "none";
        case 1:
          return absl::StrFormat("rt/%u", level);
        case 2:
          return absl::StrFormat("be/%u", level);
        case 3:
          return "idle";
        default:
          return absl::StrFormat("class%u/%u", cls, level);
      }
    }
    case BreakdownBy::kCpu:
      return absl::StrFormat("%u", klass);
  }
  return "";
}

uint64_t Breakdown::Order(uint32_t klass) const {
  switch (by_) {
    case BreakdownBy::kComm:
      return 0;
    case BreakdownBy::kIoprio: {
      // rt before be before idle, none (the default: be at the task's nice) with be; level 0
      // first within a class.
      static constexpr uint64_t kRank[8] = {2, 1, 2, 3, 4, 5, 6, 7};
      return kRank[(klass >> 3) & 7] << 8 | (klass >> 3) << 4 | (klass & 7);
    }
    default:
      return klass;
  }
}

uint32_t Breakdown::Translate(const Breakdown& other, uint32_t klass) {
  if (by_ != BreakdownBy::kComm || klass >= other.comm_names_.size()) return klass;
  return CommClass(other.comm_names_[klass].c_str());
}

}  // namespace iotrace
