#include "iotrace/capture/record_rotation.h"

#include <ctime>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"

namespace iotrace {
namespace {

struct Unit {
  char tag;
  uint64_t mult;
};
constexpr Unit kSizeUnits[] = {{'B', 1}, {'K', 1ull << 10}, {'M', 1ull << 20}, {'G', 1ull << 30}};
constexpr Unit kTimeUnits[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};

// "<whole number><tag>" with one of `units`; 0 when the value is not so spelled (or overflows).
template <size_t N>
uint64_t ParseTagged(std::string_view value, const Unit (&units)[N]) {
  if (value.size() < 2) return 0;
  const std::string digits(value.substr(0, value.size() - 1));
  // Digits only: no sign, no space, no fraction.
  if (digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  uint64_t n = 0;
  if (!absl::SimpleAtoi(digits, &n)) return 0;
  for (const Unit& u : units) {
    if (u.tag != value.back()) continue;
    if (n > std::numeric_limits<uint64_t>::max() / u.mult) return 0;
    return n * u.mult;
  }
  return 0;
}

}  // namespace

absl::StatusOr<SwitchOutputMode> ParseSwitchOutput(std::string_view value) {
  SwitchOutputMode m;
  if (value.empty() || value == "signal") {
    m.kind = SwitchOutputMode::Kind::kSignal;
    return m;
  }
  if (uint64_t bytes = ParseTagged(value, kSizeUnits); bytes != 0) {
    m.kind = SwitchOutputMode::Kind::kSize;
    m.bytes = bytes;
    return m;
  }
  if (uint64_t s = ParseTagged(value, kTimeUnits); s != 0) {
    if (s > std::numeric_limits<uint64_t>::max() / 1000000000ull) s = 0;
    if (s != 0) {
      m.kind = SwitchOutputMode::Kind::kTime;
      m.ns = s * 1000000000ull;
      return m;
    }
  }
  return UsageError(absl::StrFormat("--switch-output '%s': expected signal, a size (B, K, M, G) "
                                    "or a time (s, m, h, d) of more than 0",
                                    value),
                    "e.g. --switch-output=2s, --switch-output=100M, --switch-output=signal");
}

absl::StatusOr<uint64_t> ParseByteSize(std::string_view option, std::string_view value) {
  const uint64_t bytes = ParseTagged(value, kSizeUnits);
  if (bytes == 0) {
    return UsageError(absl::StrFormat("%s '%s': expected a size of more than 0 with its unit, "
                                      "B, K, M or G",
                                      option, value),
                      absl::StrFormat("e.g. %s 2G", option));
  }
  return bytes;
}

std::string SwitchedOutputName(const std::string& output, int64_t unix_ns) {
  const int64_t cs = unix_ns / 10000000;
  const time_t secs = static_cast<time_t>(cs / 100);
  struct tm tm {};
  localtime_r(&secs, &tm);
  char stamp[32];
  strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
  return absl::StrFormat("%s.%s%02d", output, stamp, static_cast<int>(cs % 100));
}

OutputRotation::OutputRotation(std::string output, SwitchOutputMode mode, int max_files,
                               uint64_t max_size)
    : output_(std::move(output)), mode_(mode), max_files_(max_files), max_size_(max_size) {}

std::string OutputRotation::Open(int64_t unix_ns, uint64_t mono_ns) {
  int64_t cs = unix_ns / 10000000;
  // Two switches within a hundredth of a second (SIGUSR2 twice), or the clock set back.
  if (files_made_ != 0 && cs <= last_stamp_cs_) cs = last_stamp_cs_ + 1;
  last_stamp_cs_ = cs;
  opened_mono_ns_ = mono_ns;
  ++open_;
  ++files_made_;
  last_name_ = SwitchedOutputName(output_, cs * 10000000);
  if (files_made_ == 1) first_name_ = last_name_;
  return last_name_;
}

bool OutputRotation::Due(uint64_t mono_ns, uint64_t current_bytes, bool signalled) const {
  switch (mode_.kind) {
    case SwitchOutputMode::Kind::kOff:
      return false;
    case SwitchOutputMode::Kind::kSignal:
      return signalled;
    case SwitchOutputMode::Kind::kSize:
      return current_bytes >= mode_.bytes;
    case SwitchOutputMode::Kind::kTime:
      return mono_ns - opened_mono_ns_ >= mode_.ns;
  }
  return false;
}

std::vector<std::string> OutputRotation::Finished(const std::string& path, uint64_t bytes) {
  if (open_ > 0) --open_;
  bytes_written_ += bytes;
  kept_bytes_ += bytes;
  std::vector<std::string> remove;
  if (max_files_ <= 0) return remove;
  kept_.emplace_back(path, bytes);
  while (!kept_.empty() && kept_.size() + open_ > static_cast<uint64_t>(max_files_)) {
    remove.push_back(std::move(kept_.front().first));
    kept_bytes_ -= kept_.front().second;
    kept_.pop_front();
    ++files_removed_;
  }
  return remove;
}

}  // namespace iotrace
