#include "record_progress.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"
#include "iotrace/capture/record.h"

namespace iotrace {

void ProgressLine::Update(double seconds, const CaptureProgress& p) {
  if (!enabled_) return;
  double dt = seconds - last_s_;
  if (dt < 1.0) return;
  std::string rate = p.events_known
                         ? absl::StrFormat("%9.0f events/s", (p.events - last_events_) / dt)
                         : absl::StrFormat("%9s/s", HumanBytes((p.bytes - last_bytes_) / dt));
  last_s_ = seconds;
  last_events_ = p.events;
  last_bytes_ = p.bytes;
  std::fprintf(stderr, "\r\033[K[%6.1fs] %s  %9s written  lost %llu (ring %llu, silent %llu)",
               seconds, rate.c_str(), HumanBytes(p.bytes).c_str(),
               static_cast<unsigned long long>(p.ring_lost + p.silent),
               static_cast<unsigned long long>(p.ring_lost),
               static_cast<unsigned long long>(p.silent));
  shown_ = true;
}

void ProgressLine::Clear() {
  if (shown_) std::fprintf(stderr, "\r\033[K");
  shown_ = false;
}

}  // namespace iotrace
