#include "iotrace/analysis/pairing_placement.h"

#include <vector>

#include "gtest/gtest.h"

namespace iotrace {
namespace {

// Runs the policy against fixed per-event costs and returns the placement of each stretch.
std::vector<bool> Drive(PairingPlacement& p, double apart_ns, double here_ns, int stretches) {
  std::vector<bool> seen;
  for (int i = 0; i < stretches; ++i) {
    seen.push_back(p.apart());
    const uint64_t n = p.stretch_events();
    p.Finished(n, static_cast<uint64_t>(n * (p.apart() ? apart_ns : here_ns)));
  }
  return seen;
}

TEST(PairingPlacementTest, ProbesBothThenHoldsTheFasterAndProbesTheOtherBetweenHolds) {
  PairingPlacement::Options o;
  o.warmup_events = 0;  // the sequence after the warm-up (WarmsUpApartWithoutMeasuring)
  o.probe_events = 100;
  o.hold_events = 1000;
  PairingPlacement p(o);
  // Apart costs 20 ns per event, here 30: probe apart, probe here, hold apart, probe here, ...
  const std::vector<bool> seen = Drive(p, 20, 30, 8);
  EXPECT_EQ(seen, (std::vector<bool>{true, false, true, false, true, false, true, false}));
  EXPECT_DOUBLE_EQ(p.ns_per_event(true), 20);
  EXPECT_DOUBLE_EQ(p.ns_per_event(false), 30);
  EXPECT_EQ(p.stretches(), 8u);
}

TEST(PairingPlacementTest, HoldsHereWhenTheHandOffCostsMore) {
  PairingPlacement::Options o;
  o.warmup_events = 0;  // the sequence after the warm-up (WarmsUpApartWithoutMeasuring)
  o.probe_events = 100;
  o.hold_events = 1000;
  PairingPlacement p(o);
  std::vector<uint64_t> lengths;
  std::vector<bool> seen;
  for (int i = 0; i < 6; ++i) {
    seen.push_back(p.apart());
    lengths.push_back(p.stretch_events());
    p.Finished(p.stretch_events(), p.stretch_events() * (p.apart() ? 50 : 30));
  }
  // probe apart, probe here, hold here, probe apart, hold here (won again: twice as long), ...
  EXPECT_EQ(seen, (std::vector<bool>{true, false, false, true, false, true}));
  EXPECT_EQ(lengths, (std::vector<uint64_t>{100, 100, 1000, 100, 2000, 100}));
}

TEST(PairingPlacementTest, HoldsThatKeepWinningGrowToTheCapAndShrinkWhenTheOtherWins) {
  PairingPlacement::Options o;
  o.warmup_events = 0;  // the sequence after the warm-up (WarmsUpApartWithoutMeasuring)
  o.probe_events = 10;
  o.hold_events = 100;
  o.max_hold_events = 500;
  PairingPlacement p(o);
  std::vector<uint64_t> holds;
  for (int i = 0; i < 12; ++i) {
    if (i % 2 == 0 && i >= 2) holds.push_back(p.stretch_events());  // holds: stretches 2, 4, ...
    const uint64_t n = p.stretch_events();
    p.Finished(n, n * (p.apart() ? 20 : 30));
  }
  EXPECT_EQ(holds, (std::vector<uint64_t>{100, 200, 400, 500, 500}));
  ASSERT_TRUE(p.apart());  // holding apart (stretch 12)
  EXPECT_EQ(p.stretch_events(), 500u);
  // The machine changes: this hold measures 60 per event, the here probe after it 30 and wins;
  // its hold starts at the shortest again.
  p.Finished(500, 500 * 60);
  ASSERT_FALSE(p.apart());
  p.Finished(10, 10 * 30);
  EXPECT_FALSE(p.apart());
  EXPECT_EQ(p.stretch_events(), 100u);
}

TEST(PairingPlacementTest, FollowsTheMachineWhenItChanges) {
  PairingPlacement::Options o;
  o.warmup_events = 0;  // the sequence after the warm-up (WarmsUpApartWithoutMeasuring)
  o.probe_events = 10;
  o.hold_events = 100;
  PairingPlacement p(o);
  Drive(p, 20, 30, 3);  // probes, then a hold apart
  ASSERT_FALSE(p.apart());  // probing here
  // The hand-off gets dearer: the here probe still loses to the last apart hold (20), but the
  // next apart hold measures 60, and the here probe after it wins.
  Drive(p, 60, 30, 1);
  EXPECT_TRUE(p.apart());
  Drive(p, 60, 30, 2);  // the apart hold at 60, the here probe at 30
  EXPECT_FALSE(p.apart());
  EXPECT_EQ(p.stretch_events(), 100u);  // holding here
}

// The first stretch runs apart and its time is not a measure: a slow start (here 10x the
// steady cost) does not make apart lose its first probe.
TEST(PairingPlacementTest, WarmsUpApartWithoutMeasuring) {
  PairingPlacement::Options o;
  o.warmup_events = 50;
  o.probe_events = 100;
  o.hold_events = 1000;
  PairingPlacement p(o);
  ASSERT_TRUE(p.apart());
  EXPECT_EQ(p.stretch_events(), 50u);
  p.Finished(50, 50 * 200);
  EXPECT_DOUBLE_EQ(p.ns_per_event(true), 0);  // not measured
  // Then the probes, here first, and the faster is held.
  const std::vector<bool> seen = Drive(p, 20, 30, 4);
  EXPECT_EQ(seen, (std::vector<bool>{false, true, true, false}));
  EXPECT_DOUBLE_EQ(p.ns_per_event(true), 20);
  EXPECT_EQ(p.stretches(), 5u);
  // With the default options too.
  PairingPlacement d;
  EXPECT_TRUE(d.apart());
  EXPECT_EQ(d.stretch_events(), PairingPlacement::Options().warmup_events);
  d.Finished(d.stretch_events(), 1);
  EXPECT_FALSE(d.apart());
  EXPECT_EQ(d.stretch_events(), PairingPlacement::Options().probe_events);
}

TEST(PairingPlacementTest, CountsSwitchesAndNeverStretchesZeroEvents) {
  PairingPlacement::Options o;
  o.warmup_events = 0;  // the sequence after the warm-up (WarmsUpApartWithoutMeasuring)
  o.probe_events = 0;
  o.hold_events = 0;
  PairingPlacement p(o);
  EXPECT_EQ(p.stretch_events(), 1u);
  // apart (probe), here (probe), apart (hold), here (probe), then back to an apart hold
  Drive(p, 20, 30, 4);
  EXPECT_TRUE(p.apart());
  EXPECT_EQ(p.switches(), 4u);
}

}  // namespace
}  // namespace iotrace
