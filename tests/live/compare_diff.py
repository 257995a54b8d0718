#!/usr/bin/env python3
"""Checks `iotrace diff --format json` against its own inputs, recomputed here from
`iotrace report --format json --interval BLOCK` of each file, without iotrace's statistics code.

usage: compare_diff.py DIFF.json REPORT_A.json REPORT_B.json [A_DEV=B_DEV ...]

Per row both sides have: the counts, the percentiles and their changes (from the reports'
summaries), the bucket bounds around each percentile, the Kolmogorov-Smirnov distance and its
direction (from the buckets), the iid p-value (Kolmogorov's series), the interval-relabelling
p-value (its own relabellings, Python's random: within sampling error of iotrace's), Holm's
correction of the p-values the diff gives, and the verdict rederived from all that. Prints each
difference; exits 1 if there is one.
"""
import json
import math
import random
import sys

PCTS = {"p50": 50, "p90": 90, "p99": 99, "p99.9": 99.9}
SUMMARY = {"p50": "p50_ns", "p90": "p90_ns", "p99": "p99_ns", "p99.9": "p999_ns", "max": "max_ns"}
RESAMPLES = 1000


def groups(doc):
    return {(g["dev"], g["op"], g["phase"]): g for g in doc["groups"]}


def blocks(doc):
    out = {}
    for iv in doc["intervals"]:
        for g in iv["groups"]:
            if g["count"]:
                out.setdefault((g["dev"], g["op"], g["phase"]), []).append(
                    {b["lo_ns"]: b["count"] for b in g["buckets"]})
    return out


def ks(a, b):
    """a, b: {bucket lo: count}. D and +1 when B's values are the larger where it is largest."""
    na, nb = sum(a.values()), sum(b.values())
    ca = cb = 0
    best, sign = 0.0, 0
    for lo in sorted(set(a) | set(b)):
        ca += a.get(lo, 0)
        cb += b.get(lo, 0)
        gap = abs(ca / na - cb / nb)
        if gap > best + 1e-15:
            best, sign = gap, (1 if ca / na > cb / nb else -1)
    return best, sign


def p_iid(d, na, nb):
    if d <= 0:
        return 1.0
    ne = na * nb / (na + nb)
    lam = (math.sqrt(ne) + 0.12 + 0.11 / math.sqrt(ne)) * d
    if lam < 0.3:
        return 1.0
    q = 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    return min(1.0, max(0.0, q))


def merge(bs):
    out = {}
    for b in bs:
        for lo, c in b.items():
            out[lo] = out.get(lo, 0) + c
    return out


def p_blocks(ba, bb, rng):
    d_obs, _ = ks(merge(ba), merge(bb))
    if d_obs <= 0:
        return 1.0
    pool = ba + bb
    at = 0
    for _ in range(RESAMPLES):
        rng.shuffle(pool)
        d, _ = ks(merge(pool[:len(ba)]), merge(pool[len(ba):]))
        at += d >= d_obs * (1 - 1e-12)
    return (1 + at) / (1 + RESAMPLES)


def rank_bucket(g, p):
    n = g["count"]
    rank = min(max(math.ceil(p / 100 * n), 1), n)
    seen = 0
    for b in g["buckets"]:
        seen += b["count"]
        if seen >= rank:
            clamp = lambda v: min(max(v, g["min_ns"]), g["max_ns"])
            return clamp(b["lo_ns"]), clamp(b["hi_ns"] - 1)
    return g["min_ns"], g["max_ns"]


def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def main():
    diff = json.load(open(sys.argv[1]))
    rep_a, rep_b = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
    dev_map = dict(arg.split("=") for arg in sys.argv[4:])
    ga, gb = groups(rep_a), groups(rep_b)
    bla, blb = blocks(rep_a), blocks(rep_b)
    rng = random.Random(1)
    problems = []
    alpha, min_change = diff["test"]["alpha"], diff["test"]["min_change_pct"]

    def close(what, got, want, tol):
        if not (abs(got - want) <= tol):
            problems.append(f"{what}: diff says {got}, recomputed {want}")

    compared = [r for r in diff["rows"] if r["a"] and r["b"]]
    for row in diff["rows"]:
        if not (row["a"] and row["b"]):
            side = "a" if row["a"] else "b"
            g = (ga if side == "a" else gb).get((row[side]["dev"], row["op"], row["phase"]))
            if g is None or g["count"] != row[side]["count"]:
                problems.append(f"{row[side]['dev']} {row['op']} {row['phase']}: one-sided row "
                                f"does not match the report")
            continue
        key_a = (row["a"]["dev"], row["op"], row["phase"])
        key_b = (row["b"]["dev"], row["op"], row["phase"])
        name = f"{key_a[0]}={key_b[0]} {row['op']} {row['phase']}"
        if dev_map.get(key_a[0], key_a[0]) != key_b[0]:
            problems.append(f"{name}: paired devices not as mapped")
        x, y = ga[key_a], gb[key_b]
        close(name + " count A", row["a"]["count"], x["count"], 0)
        close(name + " count B", row["b"]["count"], y["count"], 0)
        for side, g, rep in (("a", x, rep_a), ("b", y, rep_b)):
            seconds = (rep["input"]["last_ts_ns"] - rep["input"]["first_ts_ns"]) / 1e9
            close(f"{name} rate {side}", row[side]["rate"], g["count"] / seconds, 0.001)
        for stat, field in SUMMARY.items():
            s = row["stats"][stat]
            close(f"{name} {stat} A", s["a_ns"], x[field], 0)
            close(f"{name} {stat} B", s["b_ns"], y[field], 0)
            if x[field]:
                close(f"{name} {stat} change %", s["change_pct"],
                      100 * (y[field] - x[field]) / x[field], 0.001)
            if stat in PCTS:
                ra, rb = rank_bucket(x, PCTS[stat]), rank_bucket(y, PCTS[stat])
                if s["a_range_ns"] != list(ra) or s["b_range_ns"] != list(rb):
                    problems.append(f"{name} {stat}: bucket ranges {s['a_range_ns']} "
                                    f"{s['b_range_ns']}, recomputed {ra} {rb}")
                if s["beyond_buckets"] != (rb[0] > ra[1] or ra[0] > rb[1]):
                    problems.append(f"{name} {stat}: beyond_buckets wrong")
        d, sign = ks({b["lo_ns"]: b["count"] for b in x["buckets"]},
                     {b["lo_ns"]: b["count"] for b in y["buckets"]})
        close(name + " D", row["ks_d"], d, 1e-3)
        if d > 0 and row["direction"] != sign:
            problems.append(f"{name}: direction {row['direction']}, recomputed {sign}")
        want = p_iid(d, x["count"], y["count"])
        close(name + " p_iid", row["p_iid"], want, 1e-3 * want + 1e-300)
        pb = p_blocks(bla.get(key_a, []), blb.get(key_b, []), rng)
        close(name + " p_blocks", row["p_blocks"], pb,
              4 * math.sqrt(max(pb * (1 - pb), 1e-3) / RESAMPLES) + 0.005)
    adjusted = holm([r["p_blocks"] for r in compared])
    for row, adj in zip(compared, adjusted):
        name = f"{row['a']['dev']} {row['op']} {row['phase']}"
        close(name + " p_adjusted", row["p_adjusted"], adj, 1e-3 * adj + 1e-6)
        verdict = "same"
        if adj <= alpha and row["direction"] != 0:
            for stat in PCTS:
                s = row["stats"][stat]
                if (s["beyond_buckets"] and (s["change_ns"] > 0) == (row["direction"] > 0)
                        and abs(s["change_pct"]) >= min_change):
                    verdict = "slower" if row["direction"] > 0 else "faster"
                    break
        if verdict != row["verdict"]:
            problems.append(f"{name}: verdict {row['verdict']}, rederived {verdict}")
    for p in problems:
        print(p)
    print(f"compare_diff: {len(compared)} rows compared, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
