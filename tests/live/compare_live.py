#!/usr/bin/env python3
"""Checks `iotrace live` against `iotrace report` on the same events.

usage: compare_live.py LIVE_REPORT.json OFFLINE_REPORT.json [LIVE_INTERVALS.jsonl]

LIVE_REPORT.json is the cumulative report live wrote (--report FILE --format json), and
OFFLINE_REPORT.json what `iotrace report -i FILE --format json` says of the recording live wrote
beside (-o FILE). Every device x op x phase (x class, with --by) must be equal in both: count, min, max, sum and every
bucket. With LIVE_INTERVALS.jsonl (live's JSON lines), the intervals' counts of each device x op
x phase must add up to the cumulative count. Prints each difference; exits 1 if there is one.
"""
import json
import sys


def group_key(g, by):
    """device, --by's class ("" without it), op, phase"""
    return (g["device"], g.get(by, "") if by else "", g["op"], g["phase"])


def groups(doc):
    by = doc["options"].get("by", "")
    return {group_key(g, by): g for g in doc["groups"]}, by


def main():
    live = json.load(open(sys.argv[1]))
    offline = json.load(open(sys.argv[2]))
    (a, by), (b, by_offline) = groups(live), groups(offline)
    problems = []
    if by != by_offline:
        problems.append(f"--by: live {by!r}, offline {by_offline!r}")
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if x is None or y is None:
            problems.append(f"{key}: only in {'offline' if x is None else 'live'}")
            continue
        for field in ("count", "min_ns", "max_ns", "sum_ns", "buckets"):
            if x.get(field) != y.get(field):
                problems.append(f"{key} {field}: live {x.get(field)!r:.200} offline {y.get(field)!r:.200}")
    if len(sys.argv) > 3:
        sums = {}
        for line in open(sys.argv[3]):
            line = line.strip()
            if not line.startswith("{"):
                continue
            iv = json.loads(line)
            if iv.get("type") != "interval":
                continue
            for g in iv["groups"]:
                k = group_key(g, by)
                sums[k] = sums.get(k, 0) + g["count"]
        for key in sorted(set(sums) | set(a)):
            total = a[key]["count"] if key in a else 0
            if sums.get(key, 0) != total:
                problems.append(f"{key}: intervals add up to {sums.get(key, 0)}, the run to {total}")
    for p in problems:
        print(p)
    print(f"{len(a)} groups live, {len(b)} offline, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
