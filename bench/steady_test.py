#!/usr/bin/env python3
"""Checks of bench/steady.py's table on made-up raw files: every tracer window is measured
against the no-tracer windows right before and after it (a drifting host cancels out), per
event and per I/O are not mixed up, repetitions pair the two tracers of one repetition, pooled
files keep their repetitions apart, and the verdict needs the sign test. Run by ctest
(bench_smoke.steady_table)."""
import csv
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steady  # noqa: E402

TEMP_FILES = []


def raw_file(reps, peer="perf-B", mine="iotrace-perf", drift_ns=0.0):
    """reps: [(peer added ns/event, iotrace added ns/event)], tracers A/B alternating order.
    The no-tracer windows cost 15000 ns per I/O plus `drift_ns` more at every window."""
    rows, seq = [], 0
    ios = 200000

    def base(k):
        return 15000 + drift_ns * k

    def add(rep, tool, per_io_ns, own_ns=0, ios=ios):
        nonlocal seq
        rows.append({"rep": rep, "seq": seq, "tool": tool, "window_s": 2.0, "ios": ios,
                     "busy_ns": per_io_ns * ios, "own_ns": own_ns})
        seq += 1

    add(0, "none", base(0))
    for rep, (p, m) in enumerate(reps):
        order = [(peer, p), (mine, m)] if rep % 2 == 0 else [(mine, m), (peer, p)]
        for tool, added_event in order:
            k = seq
            # Exactly its neighbours' mean (windows k-1 and k+1) plus the added CPU per I/O.
            add(rep, tool, base(k) + added_event * steady.EVENTS_PER_IO,
                own_ns=100 * steady.EVENTS_PER_IO * 150000, ios=150000)
            add(rep, "none", base(seq))
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, newline="")
    TEMP_FILES.append(f.name)
    w = csv.DictWriter(f, fieldnames=steady.RAW_FIELDS)
    w.writeheader()
    w.writerows(rows)
    f.close()
    return f.name


class SteadyTableTest(unittest.TestCase):
    @classmethod
    def tearDownClass(cls):
        for name in TEMP_FILES:
            os.unlink(name)

    def test_drift_cancels_against_the_neighbours(self):
        path = raw_file([(1000, 800), (1200, 900)], drift_ns=500)
        ws = steady.windows([path])
        self.assertEqual(len(ws), 4)
        added = {(w["rep"], w["tool"]): w["added_ns"] for w in ws}
        self.assertAlmostEqual(added[(0, "perf-B")], 1000, places=6)
        self.assertAlmostEqual(added[(0, "iotrace-perf")], 800, places=6)
        self.assertAlmostEqual(added[(1, "perf-B")], 1200, places=6)
        self.assertAlmostEqual(added[(1, "iotrace-perf")], 900, places=6)
        for w in ws:
            self.assertAlmostEqual(w["own_ns"], 100, places=6)  # per event, not per I/O
            # 150000 I/Os in a window whose neighbours did 200000: 25% slower.
            self.assertAlmostEqual(w["slowdown"], 0.25, places=6)

    def test_verdict_needs_the_sign_test(self):
        met = steady.make_table([raw_file([(1000, 900)] * 6)])
        self.assertIn("added less in 6 of 6 repetitions", met)
        self.assertIn("Verdict: **met**", met)
        self.assertIn("-100 [-100..-100] ns per event", met)
        # Both tools' own CPU is 100 ns per event here: the whole difference is the rest.
        self.assertIn("of that, its own CPU: 0 [0..0] ns per event, less in 0 of 6", met)
        self.assertIn("the rest (kernel: tracepoint, ring, page cache, wake-ups): -100 [-100..-100] "
                      "ns per event, less in 6 of 6", met)
        unresolved = steady.make_table([raw_file([(1000, 900)] * 5 + [(900, 1000)])])
        self.assertIn("added less in 5 of 6", unresolved)
        self.assertIn("not resolved (noise)", unresolved)
        missed = steady.make_table([raw_file([(900, 1000)] * 6)])
        self.assertIn("added less in 0 of 6", missed)
        self.assertIn("**NOT met**", missed)

    def test_pooled_files_keep_their_repetitions_apart(self):
        a = raw_file([(1000, 900)] * 3)
        b = raw_file([(1000, 900)] * 2 + [(900, 1000)])
        table = steady.make_table([a, b])
        self.assertIn("added less in 5 of 6 repetitions", table)
        self.assertIn("| iotrace record --backend perf | 6 |", table)

    def test_ftrace_pair(self):
        table = steady.make_table([raw_file([(600, 300)] * 6, peer="trace-cmd",
                                            mine="iotrace-ftrace")])
        self.assertIn("**iotrace record --backend ftrace against trace-cmd record**", table)
        self.assertIn("median ratio 0.50x", table)
        self.assertIn("Verdict: **met**", table)


if __name__ == "__main__":
    unittest.main()
