#!/usr/bin/env python3
"""Turns the raw CSV written by bench/bench-e2e.sh into one markdown table (medians and
min-max over the repetitions), the ratios of iotrace against each peer, and the issue's targets.

  e2e_table.py RAW.csv [RAW2.csv ...] [--header TEXT]

Several raw files (runs of bench/bench-e2e.sh) are pooled: their repetitions are kept apart
(each tracer run still measured against its own neighbours) and summarised together.

Slowdown and added CPU of a tracer run are taken against the no-tracer runs right before and
after it (its neighbours by `seq`, in the same repetition; raw files from before `seq` existed
fall back to the median of all no-tracer runs). Every ratio between tools is computed inside
one repetition (tools measured back to back on the same machine state), then summarised as
median [min-max] over the repetitions.
"""
import argparse
import csv
import math
import statistics
import sys

RECORD_TOOLS = [
    ("none", "no tracer"),
    ("perf", "perf record"),
    ("perf-B", "perf record -B"),
    ("trace-cmd", "trace-cmd record"),
    ("bpftrace", "bpftrace (in-kernel D2C histogram)"),
    ("iotrace-perf", "iotrace record --backend perf"),
    ("iotrace-ftrace", "iotrace record --backend ftrace"),
    ("iotrace", "iotrace record (default settings: --backend auto)"),
    ("bpftrace-biolatency", "bpftrace biolatency (in-kernel D2C histogram, printed every 1 s)"),
    ("iotrace-live", "iotrace live --backend ftrace (mmap ingest, -I 1, text)"),
    ("iotrace-live-read", "iotrace live --backend ftrace --ingest read (-I 1, text)"),
    ("iotrace-live-d2c", "iotrace live --backend ftrace --phases d2c (issue, complete, requeue only)"),
]
REPORT_TOOLS = [
    ("cat-perfdata", "cat perf.data >/dev/null (floor)"),
    ("perf-script", "perf script"),
    ("iotrace-report-perfdata", "iotrace report (perf.data)"),
    ("iotrace-report-perfdata-t1", "iotrace report --threads 1 (perf.data)"),
    ("cat-tracedat", "cat trace.dat >/dev/null (floor)"),
    ("trace-cmd-report", "trace-cmd report"),
    ("iotrace-report-tracedat", "iotrace report (trace.dat)"),
    ("iotrace-report-tracedat-t1", "iotrace report --threads 1 (trace.dat)"),
    ("btt", "btt (same events, blktrace format)"),
]


def num(row, key):
    v = row.get(key, "")
    return float(v) if v not in ("", None) else None


class Runs:
    """Rows of one phase, by tool then run key: the repetition, or for the no-tracer runs
    (several per repetition) the run's `seq` where the file has it."""

    def __init__(self, rows, phase):
        self.by_tool = {}
        self.by_seq = {}
        for r in rows:
            if r["phase"] != phase:
                continue
            seq = r.get("seq") or ""
            key = int(seq) if r["tool"] == "none" and seq else int(r["rep"])
            self.by_tool.setdefault(r["tool"], {})[key] = r
            if seq:
                self.by_seq[int(seq)] = r

    def ok(self, tool):
        return {k: r for k, r in self.by_tool.get(tool, {}).items() if r["status"] == "ok"}

    def neighbours(self, row, tool):
        """The ok runs of `tool` right before and after `row`, in its repetition."""
        seq = row.get("seq") or ""
        if not seq:
            return []
        out = []
        for s in (int(seq) - 1, int(seq) + 1):
            r = self.by_seq.get(s)
            if r and r["tool"] == tool and r["status"] == "ok" and r["rep"] == row["rep"]:
                out.append(r)
        return out

    def reason(self, tool):
        runs = self.by_tool.get(tool)
        if not runs:
            return "not run"
        bad = [r for r in runs.values() if r["status"] != "ok"]
        return bad[0]["reason"] if bad else ""


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def fmt_si(v):
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.3g}G"
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


def fmt_ns(v):
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g} ms"
    if a >= 1e3:
        return f"{v / 1e3:.3g} us"
    return f"{v:.3g} ns"


def fmt_pct(v):
    return f"{100 * v:.0f}%"


def fmt_x(v):
    return f"{v:.3g}x"


def cell(s, f):
    if s is None:
        return "-"
    med, lo, hi = s
    if f(lo) == f(hi):
        return f(med)
    return f"{f(med)} [{f(lo)}..{f(hi)}]"


def machine_cpu(r):
    """The run's busy CPU of the whole machine less what others used meanwhile, in seconds."""
    return num(r, "busy_s") - num(r, "foreign_s")


def record_metrics(runs):
    """tool -> metric -> per-rep values (rep -> value)."""
    base = runs.ok("none")
    per_io = lambda r: machine_cpu(r) / num(r, "ios")  # noqa: E731
    median_per_io = statistics.median(per_io(r) for r in base.values()) if base else None
    median_iops = statistics.median(num(r, "iops") for r in base.values()) if base else None
    out = {}
    for tool, _ in RECORD_TOOLS:
        m = {k: {} for k in ("iops", "slowdown", "cpu_per_io", "added", "added_io", "own",
                             "wakeups", "bytes", "events", "lost", "late", "others")}
        for key, r in runs.ok(tool).items():
            ios, iops = num(r, "ios"), num(r, "iops")
            events = num(r, "events") or 0
            cpu = machine_cpu(r)
            m["iops"][key] = iops
            m["cpu_per_io"][key] = cpu / ios * 1e9 if ios else None
            m["others"][key] = num(r, "foreign_s") / num(r, "window_s")
            if tool == "none":
                continue
            # The baseline: the no-tracer runs right before and after this one. The host's
            # speed drifts over minutes, so a baseline taken seconds away is the one that
            # shares this run's machine state (raw files without `seq`: the median of all).
            near = runs.neighbours(r, "none")
            if near:
                b_iops = statistics.mean(num(b, "iops") for b in near)
                b_per_io = statistics.mean(per_io(b) for b in near)
            else:
                b_iops, b_per_io = median_iops, median_per_io
            if b_iops:
                m["slowdown"][key] = 1 - iops / b_iops
            # Per I/O: the same unit for tools that hook different events (bpftrace's
            # biolatency sees issue and complete, the recorders every block event).
            if b_per_io is not None and ios:
                m["added_io"][key] = (cpu - ios * b_per_io) / ios * 1e9
            if not events:
                continue
            m["events"][key] = events
            if b_per_io is not None:
                m["added"][key] = (cpu - ios * b_per_io) / events * 1e9
            m["own"][key] = num(r, "own_cpu_s") / events * 1e9
            if num(r, "vcsw") is not None:
                m["wakeups"][key] = num(r, "vcsw") / num(r, "window_s")
            if num(r, "file_bytes"):
                m["bytes"][key] = num(r, "file_bytes") / events
            if r.get("lost", "") != "":
                m["lost"][key] = num(r, "lost")
            if r.get("late", "") not in ("", None):
                m["late"][key] = num(r, "late")
        out[tool] = m
    return out


def report_metrics(runs):
    out = {}
    for tool, _ in REPORT_TOOLS:
        m = {k: {} for k in ("events", "wall", "evps", "cpu_evps", "rss")}
        for rep, r in runs.ok(tool).items():
            ev, wall = num(r, "events"), num(r, "wall_s")
            cpu = (num(r, "user_s") or 0) + (num(r, "sys_s") or 0)
            m["events"][rep] = ev
            m["wall"][rep] = wall
            m["evps"][rep] = ev / max(wall, 0.005)  # /usr/bin/time has 10 ms resolution
            m["cpu_evps"][rep] = ev / max(cpu, 0.005)
            m["rss"][rep] = num(r, "rss_kb") / 1024
        out[tool] = m
    return out


def sign_p(k, n):
    """One-sided sign test: the chance of k or more of n repetitions going one way when either
    way is as likely."""
    return sum(math.comb(n, j) for j in range(k, n + 1)) / 2 ** n


def ratio(a, b, invert=False):
    """Per-rep a/b (or b/a) for the reps both have."""
    vals = []
    for rep in a:
        if rep in b and a[rep] and b[rep]:
            vals.append(b[rep] / a[rep] if invert else a[rep] / b[rep])
    return summary(vals)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--header", default="")
    args = ap.parse_args()
    rows = []
    for i, path in enumerate(args.csv):
        with open(path) as f:
            for r in csv.DictReader(f):
                # Repetitions and run numbers of each file in a range of their own.
                r["rep"] = str(i * 1000 + int(r["rep"]))
                if r.get("seq"):
                    r["seq"] = str(i * 1000000 + int(r["seq"]))
                rows.append(r)
    rec_runs, rep_runs = Runs(rows, "record"), Runs(rows, "report")
    rec, rpt = record_metrics(rec_runs), report_metrics(rep_runs)
    s = lambda d: summary(list(d.values()))  # noqa: E731

    out = []
    if args.header:
        out.append(args.header)
        out.append("")
    out.append("| tool | IOPS | slowdown | machine CPU / I/O | added machine CPU / event | "
               "tracer's own CPU / event | tracer wake-ups / s | bytes / event | events | lost "
               "| others' CPU | report wall | report events/s | report events/CPU-s | peak RSS |")
    out.append("|" + " --- |" * 15)
    for tool, label in RECORD_TOOLS:
        m = rec[tool]
        if not rec_runs.ok(tool):
            out.append(f"| {label} | n/a: {rec_runs.reason(tool)} |" + " |" * 14)
            continue
        note = rec_runs.reason(tool)
        if note:
            label += f" (some runs failed: {note})"
        lost = cell(s(m["lost"]), lambda v: f"{v:.0f}") if m["lost"] else (
            "-" if tool == "none" else "n/a (not reported)")
        out.append(
            f"| {label} | {cell(s(m['iops']), fmt_si)} | {cell(s(m['slowdown']), fmt_pct)} "
            f"| {cell(s(m['cpu_per_io']), fmt_ns)} | {cell(s(m['added']), fmt_ns)} "
            f"| {cell(s(m['own']), fmt_ns)} | {cell(s(m['wakeups']), fmt_si)} "
            f"| {cell(s(m['bytes']), lambda v: f'{v:.3g}')} "
            f"| {cell(s(m['events']), fmt_si)} | {lost} "
            f"| {cell(s(m['others']), lambda v: f'{v:.2f}')} | | | | |")
    for tool, label in REPORT_TOOLS:
        m = rpt[tool]
        if not rep_runs.ok(tool):
            out.append(f"| {label} | n/a: {rep_runs.reason(tool)} |" + " |" * 14)
            continue
        out.append(
            f"| {label} | | | | | | | | {cell(s(m['events']), fmt_si)} | | "
            f"| {cell(s(m['wall']), lambda v: f'{v:.3g} s')} "
            f"| {cell(s(m['evps']), fmt_si)} | {cell(s(m['cpu_evps']), fmt_si)} "
            f"| {cell(s(m['rss']), lambda v: f'{v:.3g} MiB')} |")

    # Ratios and targets.
    out.append("")
    out.append("| ratio (per repetition, median [min..max]) | measured | target | verdict |")
    out.append("| --- | --- | --- | --- |")

    def line(what, summ, f, target=None, ok=None):
        verdict = "-"
        if summ is not None and ok is not None:
            verdict = "met" if ok(summ[0]) else "NOT met"
        elif summ is None and target:
            verdict = "n/a"
        out.append(f"| {what} | {cell(summ, f) if summ else 'n/a'} | {target or ''} | {verdict} |")

    def record_target(label, mine, peer, name, target, factor=1.0, metric="added",
                      command="iotrace record", unit="event"):
        """A recording target: iotrace's added CPU per event (or per I/O) at most `factor`
        times the peer's. One repetition's difference is mostly host noise (bench/README.md,
        "Measuring added CPU"), so the verdict needs the repetitions to agree: met (or NOT met)
        only when iotrace added less (or more) than `factor` times the peer in so many of them
        that chance alone would do it at most 5% of the time (a one-sided sign test);
        otherwise the run could not tell."""
        a, b = rec[mine][metric], rec[peer][metric]
        diffs = [a[k] - factor * b[k] for k in a if k in b]
        summ = ratio(a, b)
        what = f"{command} {label}: added CPU/{unit} / {name}'s"
        if not diffs or summ is None:
            line(what, None, fmt_x, target)
            return
        n, below = len(diffs), sum(d < 0 for d in diffs)
        p_less, p_more = sign_p(below, n), sign_p(n - below, n)
        if summ[0] <= factor and p_less <= 0.05:
            verdict = "met"
        elif summ[0] > factor and p_more <= 0.05:
            verdict = "NOT met"
        else:
            verdict = "not resolved (noise)"
        times = "" if factor == 1 else f"{factor:g} x "
        out.append(f"| {what} | {cell(summ, fmt_x)} | {target} | {verdict} |")
        out.append(f"| {command} {label}: added CPU/{unit} - {times}{name}'s (per repetition) "
                   f"| {cell(summary(diffs), fmt_ns)}; less in {below} of {n} repetitions "
                   f"(sign test: p = {p_less:.2g}) | | - |")

    ip, iff = rec["iotrace-perf"], rec["iotrace-ftrace"]
    record_target("perf", "iotrace-perf", "perf-B", "perf record -B", "<= 1x")
    for name, peer in (("perf record", "perf"), ("trace-cmd record", "trace-cmd"),
                       ("bpftrace", "bpftrace")):
        line(f"iotrace record perf: added CPU/event / {name}'s",
             ratio(ip["added"], rec[peer]["added"]), fmt_x)
    record_target("ftrace", "iotrace-ftrace", "trace-cmd", "trace-cmd record",
                  "<= 1x (aim 0.5x)")
    for name, peer in (("perf record -B", "perf-B"), ("bpftrace", "bpftrace")):
        line(f"iotrace record ftrace: added CPU/event / {name}'s",
             ratio(iff["added"], rec[peer]["added"]), fmt_x)
    for label, m in (("perf", ip), ("ftrace", iff), ("default (auto)", rec["iotrace"])):
        lost = s(m["lost"])
        out.append(f"| iotrace record {label}: events lost (every repetition) "
                   f"| {cell(lost, lambda v: f'{v:.0f}') if lost else 'n/a'} | 0 "
                   f"| {'n/a' if not lost else ('met' if lost[2] == 0 else 'NOT met')} |")
        line(f"iotrace record {label}: IOPS slowdown (context)", s(m["slowdown"]), fmt_pct)
    # iotrace live against bpftrace's biolatency (per I/O: biolatency hooks two of the three
    # events of an I/O, so its per-event figure is not the same unit) and against recording.
    lv, lr = rec["iotrace-live"], rec["iotrace-live-read"]
    record_target("(mmap)", "iotrace-live", "bpftrace-biolatency", "bpftrace biolatency",
                  "<= 0.4x", factor=0.4, metric="added_io", command="iotrace live", unit="I/O")
    record_target("(mmap)", "iotrace-live", "iotrace-ftrace", "iotrace record ftrace",
                  "<= 1.2x", factor=1.2, command="iotrace live")
    record_target("--phases d2c", "iotrace-live-d2c", "bpftrace-biolatency", "bpftrace biolatency",
                  "<= 0.4x", factor=0.4, metric="added_io", command="iotrace live", unit="I/O")
    # The two targets together: live within 1.2x of recording and within 0.4x of biolatency
    # can both hold only if recording itself adds at most 1/3 of what biolatency adds per I/O.
    line("iotrace record ftrace: added CPU/I/O / bpftrace biolatency's (context)",
         ratio(iff["added_io"], rec["bpftrace-biolatency"]["added_io"]), fmt_x)
    line("iotrace live (mmap): own CPU/event / iotrace record ftrace's (context)",
         ratio(lv["own"], iff["own"]), fmt_x)
    line("iotrace live --ingest read: added CPU/event / mmap's (what the mapping buys)",
         ratio(lr["added"], lv["added"]), fmt_x)
    line("iotrace live --ingest read: own CPU/event / mmap's (what the mapping buys)",
         ratio(lr["own"], lv["own"]), fmt_x)
    for label, m in (("(mmap)", lv), ("--ingest read", lr)):
        for what, key in (("events lost", "lost"), ("events late (not paired)", "late")):
            v = s(m[key])
            out.append(f"| iotrace live {label}: {what} (every repetition) "
                       f"| {cell(v, lambda x: f'{x:.0f}') if v else 'n/a'} | 0 "
                       f"| {'n/a' if not v else ('met' if v[2] == 0 else 'NOT met')} |")
        line(f"iotrace live {label}: IOPS slowdown (context)", s(m["slowdown"]), fmt_pct)
    for fmt_name, mine, peer, peer_name, floor in (
            ("perf.data", "iotrace-report-perfdata", "perf-script", "perf script",
             "cat-perfdata"),
            ("trace.dat", "iotrace-report-tracedat", "trace-cmd-report", "trace-cmd report",
             "cat-tracedat")):
        m = rpt[mine]
        line(f"iotrace report {fmt_name}: events/s", s(m["evps"]), fmt_si, ">= 20M",
             lambda v: v >= 20e6)
        line(f"iotrace report {fmt_name}: events/s / {peer_name}'s",
             ratio(m["evps"], rpt[peer]["evps"]), fmt_x,
             ">= 40x" if peer == "perf-script" else None,
             (lambda v: v >= 40) if peer == "perf-script" else None)
        line(f"iotrace report {fmt_name}: events/s / btt's",
             ratio(m["evps"], rpt["btt"]["evps"]), fmt_x, ">= 10x", lambda v: v >= 10)
        line(f"iotrace report {fmt_name}: wall / cat's wall",
             ratio(m["wall"], rpt[floor]["wall"]), fmt_x, "<= 4x", lambda v: v <= 4)
        line(f"iotrace report {fmt_name}: peak RSS", s(m["rss"]),
             lambda v: f"{v:.3g} MiB", "< 64 MiB", lambda v: v < 64)
        line(f"iotrace report {fmt_name}: --threads 1 wall / default's (context)",
             ratio(rpt[mine + "-t1"]["wall"], m["wall"]), fmt_x)
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
