#!/usr/bin/env python3
"""Checks of bench/e2e_table.py on small made-up raw files: each tracer run is measured against
its own no-tracer neighbours, pooled files keep their repetitions apart, and a recording
target gets a verdict only when the repetitions agree. Run by ctest (bench_smoke.e2e_table)."""
import csv
import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_table  # noqa: E402

COLS = ["phase", "rep", "seq", "tool", "status", "reason", "ios", "iops", "events", "lost",
        "file_bytes", "window_s", "busy_s", "foreign_s", "own_cpu_s", "vcsw", "ivcsw", "rss_kb",
        "wall_s", "user_s", "sys_s"]


def run(rep, seq, tool, per_io_us, ios=100000, events=0, own=0.0):
    """A record-phase row whose machine CPU is `per_io_us` per I/O."""
    return {"phase": "record", "rep": rep, "seq": seq, "tool": tool, "status": "ok",
            "ios": ios, "iops": ios / 5, "events": events, "lost": 0 if events else "",
            "window_s": 5, "busy_s": ios * per_io_us / 1e6, "foreign_s": 0,
            "own_cpu_s": own, "vcsw": 50, "ivcsw": 1}


TEMP_FILES = []


def write_csv(rows, drop=()):
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, newline="")
    TEMP_FILES.append(f.name)
    cols = [c for c in COLS if c not in drop]
    w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c, "") for c in cols})
    f.close()
    return f.name


def record_metrics(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return e2e_table.record_metrics(e2e_table.Runs(rows, "record"))


def table(*paths):
    out = io.StringIO()
    argv = sys.argv
    sys.argv = ["e2e_table.py", *paths]
    try:
        with redirect_stdout(out):
            e2e_table.main()
    finally:
        sys.argv = argv
    return out.getvalue()


def verdict_row(text, label):
    for line in text.splitlines():
        if line.startswith(f"| iotrace record {label}: added CPU/event / "):
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError(f"no target row for {label}")


def repetitions(n, ftrace_added_ns, tc_added_ns, drift_us=0.0):
    """n repetitions of none, trace-cmd, none, iotrace-ftrace, none with 3 events per I/O.
    Repetition r runs on a host `r * drift_us` slower per I/O: only neighbours cancel that."""
    rows, seq = [], 0
    for rep in range(1, n + 1):
        base = 18.0 + rep * drift_us
        for tool, added in (("none", None), ("trace-cmd", tc_added_ns), ("none", None),
                            ("iotrace-ftrace", ftrace_added_ns), ("none", None)):
            seq += 1
            if tool == "none":
                rows.append(run(rep, seq, tool, base))
            else:
                a = added[rep - 1] if isinstance(added, list) else added
                rows.append(run(rep, seq, tool, base + 3 * a / 1000, events=300000,
                                own=0.01))
    return rows


class SignTest(unittest.TestCase):
    def test_values(self):
        self.assertAlmostEqual(e2e_table.sign_p(6, 6), 1 / 64)
        self.assertAlmostEqual(e2e_table.sign_p(5, 6), 7 / 64)
        self.assertAlmostEqual(e2e_table.sign_p(0, 6), 1.0)
        self.assertAlmostEqual(e2e_table.sign_p(16, 24), 0.0758, places=4)


class Bracketing(unittest.TestCase):
    def test_added_cpu_is_taken_against_the_neighbours(self):
        # Each repetition 2 us per I/O slower than the one before: a median baseline would
        # charge the drift; the neighbours give back exactly 300 and 600 ns per event.
        path = write_csv(repetitions(6, 300, 600, drift_us=2.0))
        rec = record_metrics(path)
        for v in rec["iotrace-ftrace"]["added"].values():
            self.assertAlmostEqual(v, 300, delta=0.5)
        for v in rec["trace-cmd"]["added"].values():
            self.assertAlmostEqual(v, 600, delta=0.5)
        for v in rec["trace-cmd"]["slowdown"].values():
            self.assertAlmostEqual(v, 0, delta=1e-9)

    def test_files_without_seq_fall_back_to_the_median(self):
        path = write_csv(repetitions(3, 300, 600, drift_us=2.0), drop=("seq", "vcsw", "ivcsw"))
        rec = record_metrics(path)
        # The median no-tracer run is repetition 2's: repetition 1 is credited 2 us per I/O.
        added = rec["iotrace-ftrace"]["added"]
        self.assertAlmostEqual(added[2], 300, delta=0.5)
        self.assertAlmostEqual(added[1], 300 - 2000 / 3, delta=0.5)


class Verdicts(unittest.TestCase):
    def test_met_when_every_repetition_agrees(self):
        row = verdict_row(table(write_csv(repetitions(6, 300, 600))), "ftrace")
        self.assertEqual(row[1], "0.5x")
        self.assertEqual(row[3], "met")

    def test_not_resolved_when_one_repetition_in_six_disagrees(self):
        path = write_csv(repetitions(6, [300, 300, 300, 300, 300, 900], 600))
        row = verdict_row(table(path), "ftrace")
        self.assertEqual(row[3], "not resolved (noise)")

    def test_not_met_when_every_repetition_says_more(self):
        row = verdict_row(table(write_csv(repetitions(6, 900, 600))), "ftrace")
        self.assertEqual(row[3], "NOT met")

    def test_pooled_files_add_their_repetitions(self):
        split = [300, 300, 300, 300, 300, 900]
        a = write_csv(repetitions(6, split, 600))
        b = write_csv(repetitions(6, 300, 600, drift_us=1.0))
        text = table(a, b)
        self.assertIn("less in 11 of 12 repetitions", text)
        self.assertEqual(verdict_row(text, "ftrace")[3], "met")


def live_repetitions(n, live_ns, record_ns, biolatency_ns):
    """n repetitions of none, X, none for iotrace live, iotrace record ftrace (3 events per I/O)
    and bpftrace's biolatency (it counts 2 events per I/O: issue and complete), each adding
    the given ns per event of its own count."""
    rows, seq = [], 0
    for rep in range(1, n + 1):
        seq += 1
        rows.append(run(rep, seq, "none", 18.0))
        for tool, added, per_io in (("iotrace-live", live_ns, 3),
                                    ("iotrace-ftrace", record_ns, 3),
                                    ("bpftrace-biolatency", biolatency_ns, 2)):
            seq += 1
            rows.append(run(rep, seq, tool, 18.0 + per_io * added / 1000,
                            events=per_io * 100000, own=0.01))
            seq += 1
            rows.append(run(rep, seq, "none", 18.0))
    return rows


def live_row(text, peer):
    for line in text.splitlines():
        if line.startswith("| iotrace live (mmap): added CPU/") and f"/ {peer}'s" in line:
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError(f"no live target row against {peer}")


class LiveTargets(unittest.TestCase):
    def test_against_record_the_target_is_1_2x(self):
        text = table(write_csv(live_repetitions(6, 330, 300, 1000)))
        row = live_row(text, "iotrace record ftrace")
        self.assertEqual(row[1], "1.1x")
        self.assertEqual(row[3], "met")
        self.assertIn("added CPU/event - 1.2 x iotrace record ftrace's", text)
        row = live_row(table(write_csv(live_repetitions(6, 390, 300, 1000))),
                       "iotrace record ftrace")
        self.assertEqual(row[1], "1.3x")
        self.assertEqual(row[3], "NOT met")

    def test_against_biolatency_per_io(self):
        # 300 ns x 3 events against 1000 ns x 2 events per I/O: 0.45x per I/O (0.3x per event
        # of each tool's own count), so not met at 0.4x.
        row = live_row(table(write_csv(live_repetitions(6, 300, 300, 1000))),
                       "bpftrace biolatency")
        self.assertEqual(row[0], "iotrace live (mmap): added CPU/I/O / bpftrace biolatency's")
        self.assertEqual(row[1], "0.45x")
        self.assertEqual(row[3], "NOT met")
        row = live_row(table(write_csv(live_repetitions(6, 200, 300, 1000))),
                       "bpftrace biolatency")
        self.assertEqual(row[3], "met")


def tearDownModule():
    for path in TEMP_FILES:
        os.unlink(path)


if __name__ == "__main__":
    unittest.main()
