#!/usr/bin/env python3
"""Compares the requests two recordings of the same run captured (the perf and ftrace backends
recording at the same time): reads two `reference_pairing.py --requests` listings, matches each
request by (dev, sector, op) and the nearest issue time, and prints for the matched ones the
nearest-rank percentiles of I2D and D2C from each recording, and the largest relative difference:

  matched N only_a A only_b B split S
  I2D p50 <a> <b> ...
  max_rel_diff <x>

The two backends stamp the same event in two probes, one after the other, ~0.5 us apart. When
the vCPU stalls between them (the host runs something else, or an interrupt runs long), the two
stamps of that one event lie as far apart as the stall: in a failing run of the live test, 2.7 ms
with no event on that CPU in either file, between ftrace's issue probe and perf's. So a request
whose issue stamps are further apart than WINDOW_NS still matches when its insert stamps and its
completion stamps both lie within WINDOW_NS: "split" counts those, and each is listed.
"""
import bisect
import collections
import math
import sys

WINDOW_NS = 1_000_000  # the same event's two stamps differ by ~0.5 us, rarely by tens of us


def load(path):
    out = collections.defaultdict(list)
    for line in open(path):
        dev, sector, op, ins, iss, done = line.strip().split(",")
        out[(dev, int(sector), op)].append((int(iss), int(ins) if ins else None, int(done)))
    for v in out.values():
        v.sort()
    return out


def pct(values, p):
    v = sorted(values)
    return v[max(1, math.ceil(p / 100.0 * len(v))) - 1]


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    pairs = []
    only_a = 0
    used = set()
    unmatched_a = []
    split = []
    for key, reqs in a.items():
        cand = b.get(key, [])
        times = [r[0] for r in cand]
        for iss, ins, done in reqs:
            i = bisect.bisect_left(times, iss)
            best = None
            for j in (i - 1, i):
                if 0 <= j < len(cand) and (key, j) not in used and abs(times[j] - iss) < WINDOW_NS:
                    if best is None or abs(times[j] - iss) < abs(times[best] - iss):
                        best = j
            if best is None and ins is not None:
                # The two stamps split by a stall: the insert's and the completion's agree.
                for j, (_, ins_b, done_b) in enumerate(cand):
                    if ((key, j) not in used and ins_b is not None
                            and abs(ins_b - ins) < WINDOW_NS and abs(done_b - done) < WINDOW_NS):
                        best = j
                        split.append((key, (iss, ins, done), cand[j]))
                        break
            if best is None:
                only_a += 1
                unmatched_a.append((key, (iss, ins, done)))
                continue
            used.add((key, best))
            pairs.append(((iss, ins, done), cand[best]))
    only_b = sum(len(v) for v in b.values()) - len(used)
    print("matched %d only_a %d only_b %d split %d" % (len(pairs), only_a, only_b, len(split)))
    for key, ra, rb in split:
        print("split %s a %s b %s" % (key, ra, rb))
    # What did not match, with its key's requests on the other side: so that a failure shows
    # whether a request is missing, or its two stamps lie further apart than WINDOW_NS.
    unmatched_b = [(key, r) for key, v in b.items() for j, r in enumerate(v)
                   if (key, j) not in used]
    for side, other, lst in (("a", b, unmatched_a), ("b", a, unmatched_b)):
        for key, r in lst[:5]:
            print("unmatched %s %s %s; the other has %s" % (side, key, r, other.get(key, [])))
    worst = 0.0
    for phase in ("I2D", "D2C"):
        def lat(r):
            iss, ins, done = r
            return (iss - ins) if phase == "I2D" else (done - iss)
        la = [lat(x) for x, y in pairs if phase == "D2C" or (x[1] is not None and y[1] is not None)]
        lb = [lat(y) for x, y in pairs if phase == "D2C" or (x[1] is not None and y[1] is not None)]
        if not la:
            continue
        for p in (50, 90, 99):
            va, vb = pct(la, p), pct(lb, p)
            rel = abs(va - vb) / max(va, vb, 1)
            worst = max(worst, rel)
            print("%s p%d %d %d" % (phase, p, va, vb))
    print("max_rel_diff %.5f" % worst)


if __name__ == "__main__":
    main()
