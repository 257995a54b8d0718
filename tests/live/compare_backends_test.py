#!/usr/bin/env python3
"""Checks of compare_backends.py, the referee of the live test in which both backends record the
same run, on made-up request listings: a request matches on its nearest issue stamp; one whose
issue stamps a stall split still matches when its insert and completion stamps agree, and is
counted as split; anything else stays unmatched on its side. Run by ctest (compare_backends)."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare_backends.py")
MS = 1_000_000


def listing(requests):
    """requests: [(sector, insert or None, issue, complete)] on 7:0, reads."""
    f = tempfile.NamedTemporaryFile("w", suffix=".req", delete=False)
    for sector, ins, iss, done in requests:
        f.write("7:0,%d,read,%s,%d,%d\n" % (sector, "" if ins is None else ins, iss, done))
    f.close()
    return f.name


def compare(a, b):
    pa, pb = listing(a), listing(b)
    try:
        out = subprocess.run([sys.executable, SCRIPT, pa, pb], capture_output=True, text=True,
                             check=True).stdout
    finally:
        os.unlink(pa)
        os.unlink(pb)
    first = out.splitlines()[0].split()
    counts = dict(zip(first[0::2], (int(x) for x in first[1::2])))
    return counts, out


# Three requests both backends saw, their stamps ~0.5 us apart.
BASE = 10_000 * MS
A = [(8, BASE, BASE + 1000, BASE + 20000),
     (16, BASE + 30000, BASE + 31000, BASE + 50000),
     (8, BASE + 5 * MS, BASE + 5 * MS + 900, BASE + 5 * MS + 15000)]
B = [(s, None if i is None else i + 500, iss + 500, done + 500) for s, i, iss, done in A]


class CompareBackendsTest(unittest.TestCase):
    def test_stamps_half_a_microsecond_apart_all_match(self):
        counts, _ = compare(A, B)
        self.assertEqual(counts, {"matched": 3, "only_a": 0, "only_b": 0, "split": 0})

    def test_issue_stamps_split_by_a_stall_match_as_split(self):
        # The failing run's shape: a's issue stamped 2.65 ms after b's, nothing else apart.
        a = list(A)
        s, ins, iss, done = a[1]
        a[1] = (s, ins, iss + 2650000, done)
        counts, out = compare(a, B)
        self.assertEqual(counts, {"matched": 3, "only_a": 0, "only_b": 0, "split": 1})
        self.assertIn("split ('7:0', 16, 'read')", out)

    def test_a_request_one_side_lacks_is_unmatched(self):
        counts, out = compare(A, B[:2])
        self.assertEqual(counts, {"matched": 2, "only_a": 1, "only_b": 0, "split": 0})
        self.assertIn("unmatched a ('7:0', 8, 'read')", out)

    def test_only_one_stamp_agreeing_is_not_the_same_request(self):
        # Issue and completion both far apart: not one event split by a stall.
        a = list(A)
        s, ins, iss, done = a[1]
        a[1] = (s, ins, iss + 2 * MS, done + 2 * MS)
        counts, _ = compare(a, B)
        self.assertEqual(counts, {"matched": 2, "only_a": 1, "only_b": 1, "split": 0})

    def test_without_an_insert_the_issue_must_agree(self):
        a = [(s, None, iss, done) for s, _, iss, done in A]
        b = [(s, None, iss, done) for s, _, iss, done in B]
        s, _, iss, done = a[0]
        a[0] = (s, None, iss + 2 * MS, done)
        counts, _ = compare(a, b)
        self.assertEqual(counts["matched"], 2)
        self.assertEqual(counts["split"], 0)


if __name__ == "__main__":
    unittest.main()
