// Where the report pairs events while it runs: on the thread that reads and decodes them
// ("here"), or on a thread of its own that gets them in batches ("apart"). Which is faster
// depends on the machine at the time: on a 2-vCPU VM the hand-off of each decoded event from one
// CPU to the other has cost anywhere from much less than the pairing it moves to more
// (bench/README.md), with no change to the program. So the report measures both as it goes and
// keeps the faster: it runs stretches of events in one placement, times each (an apart stretch
// until its last event is paired), and after a short probe of each placement holds the faster
// for a long stretch, then probes the other again, and so on; a hold that wins again is held
// twice as long the next time. A first stretch warms up and is not measured.
//
// This class is only the decision; LatencyReportBuilder moves the events. Times are whatever
// the caller measures (nanoseconds of wall time); only their ratios matter.
#ifndef IOTRACE_ANALYSIS_PAIRING_PLACEMENT_H_
#define IOTRACE_ANALYSIS_PAIRING_PLACEMENT_H_

#include <cstdint>

namespace iotrace {

class PairingPlacement {
 public:
  struct Options {
    // A probe of one placement (~5 ms). An apart probe pays for filling and draining the queue
    // (about one batch of 16384 events that does not overlap): 8 batches.
    uint64_t probe_events = uint64_t{1} << 17;
    uint64_t hold_events = uint64_t{1} << 20;  // a stretch in the faster one (~40 ms)
    uint64_t max_hold_events = uint64_t{1} << 24;  // after holds that kept winning
    // A first stretch apart that is not measured (0: none). It pays what the report's start
    // costs whichever placement comes first (the reading thread's start, first touches of the
    // matcher's tables, the histograms and the batches' pages): on this VM its events took 3-8
    // times as long as the same placement later, enough to lose every first probe.
    uint64_t warmup_events = uint64_t{1} << 17;
  };

  PairingPlacement() : PairingPlacement(Options{}) {}
  explicit PairingPlacement(const Options& options);

  // The placement of the current stretch, and its length in events.
  bool apart() const { return apart_; }
  uint64_t stretch_events() const {
    return warming_ ? options_.warmup_events : probing_ ? options_.probe_events : hold_;
  }

  // The current stretch ran `events` events in `ns`: record its cost, move to the next one.
  void Finished(uint64_t events, uint64_t ns);

  // What was measured last, per event (0 until measured), and how the stretches went.
  double ns_per_event(bool apart) const { return cost_[apart ? 1 : 0]; }
  uint64_t stretches() const { return stretches_; }
  uint64_t switches() const { return switches_; }

 private:
  Options options_;
  // The sequence: probe apart, probe here, hold the faster; then probe the other, hold the
  // faster of its probe and the last hold (twice as long when that is the hold's placement
  // again, up to max_hold_events; hold_events when it changes); and so on.
  bool apart_ = true;
  bool warming_ = false;  // the first stretch, apart, when warmup_events is not 0
  bool probing_ = true;
  bool first_probe_ = true;
  uint64_t hold_ = 0;   // the next hold's length
  bool held_ = false;  // a hold came before the current probe
  double cost_[2] = {0, 0};
  uint64_t stretches_ = 0;
  uint64_t switches_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_PAIRING_PLACEMENT_H_
