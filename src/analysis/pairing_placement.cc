#include "iotrace/analysis/pairing_placement.h"

#include <algorithm>

namespace iotrace {

PairingPlacement::PairingPlacement(const Options& options) : options_(options) {
  options_.probe_events = std::max<uint64_t>(options_.probe_events, 1);
  options_.hold_events = std::max<uint64_t>(options_.hold_events, 1);
  options_.max_hold_events = std::max(options_.max_hold_events, options_.hold_events);
  hold_ = options_.hold_events;
  warming_ = options_.warmup_events != 0;
}

void PairingPlacement::Finished(uint64_t events, uint64_t ns) {
  ++stretches_;
  if (warming_) {
    // Its time says how the start went, not what a placement costs: probe here, then apart.
    warming_ = false;
    apart_ = false;
    ++switches_;
    return;
  }
  cost_[apart_ ? 1 : 0] = static_cast<double>(ns) / static_cast<double>(std::max<uint64_t>(events, 1));
  bool next_apart;
  if (probing_ && first_probe_) {
    // Both placements need a measure before either can win: the other one is probed next.
    first_probe_ = false;
    next_apart = !apart_;
  } else if (probing_) {
    // A probe ends: hold the faster of it and the last measure of the other placement (ties
    // stay apart, which leaves the reading thread free).
    probing_ = false;
    next_apart = cost_[1] <= cost_[0];
    // The hold before it won again: hold it twice as long (the probes of the slower placement
    // are what auto pays for measuring); else back to the shortest hold.
    hold_ = held_ && next_apart != apart_ ? std::min(hold_ * 2, options_.max_hold_events)
                                          : options_.hold_events;
    held_ = true;
  } else {
    // A hold ends (its measure refreshed above): probe the other placement.
    probing_ = true;
    next_apart = !apart_;
  }
  if (next_apart != apart_) ++switches_;
  apart_ = next_apart;
}

}  // namespace iotrace
