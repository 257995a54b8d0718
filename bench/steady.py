#!/usr/bin/env python3
"""Steady-state recording cost of iotrace against one peer, tracers toggled inside one fio run.

  steady.py run --pair perf|ftrace --iotrace BIN [--reps N] [--window S] [--settle S] --out DIR
  steady.py table RAW.csv [RAW2.csv ...]

`run` (root) starts fio once, on a scratch loop device, and both tracers of the pair once, with
their events off:
  perf:   perf record -B -D -1 --control fifo:..   against  iotrace record -b perf -D -1 --control
  ftrace: trace-cmd record -B INSTANCE (its instance's tracing_on toggled)  against
          iotrace record -b ftrace -D -1 --control
It then measures windows of --window seconds in the order none, A, none, B, none, B, none, A, ...
(each repetition has one window of each tracer, the order alternating), turning one tracer's
events on for its window only. Each window's machine CPU per I/O (/proc/stat busy time over the
loop device's completed I/Os) is compared with the no-tracer windows right before and after
it, seconds away, so that the host's drift over minutes (the noise of whole-run comparisons,
bench/README.md) cancels out. Start-up and exit are not in the windows: the tracers' own CPU
outside the windows is given apart.

`table` turns the raw CSV into the markdown table: per tracer the added machine CPU per event,
its own CPU per event, IOPS slowdown; per repetition iotrace's added CPU minus the peer's, and
the verdict of a one-sided sign test (met / NOT met at p <= 0.05, else not resolved).
"""
import argparse
import csv
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_table import sign_p  # noqa: E402  (one sign test for both tables)

EVENTS = ["block:block_rq_insert", "block:block_rq_issue", "block:block_rq_complete",
          "block:block_rq_requeue", "block:block_rq_merge"]
EVENTS_PER_IO = 3  # a 4k random read through mq-deadline: insert, issue, complete
TC_INSTANCE = "iotrace_bench_steady"
PAIRS = {
    "perf": ("perf-B", "iotrace-perf"),
    "ftrace": ("trace-cmd", "iotrace-ftrace"),
}
NAMES = {
    "perf-B": "perf record -B",
    "iotrace-perf": "iotrace record --backend perf",
    "trace-cmd": "trace-cmd record",
    "iotrace-ftrace": "iotrace record --backend ftrace",
}
RAW_FIELDS = ["rep", "seq", "tool", "window_s", "ios", "busy_ns", "own_ns"]


def log(msg):
    print("bench-steady: " + msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ measuring

def machine_busy_ns():
    """Busy time of all CPUs (user, nice, system, irq, softirq), ns."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) * (1e9 / os.sysconf("SC_CLK_TCK"))


def children(pid):
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def tree_cpu_ns(pid):
    """utime + stime of a process and all its live descendants, ns."""
    tick = 1e9 / os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) * tick
            todo += children(p)
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
    return total


class Tracer:
    """One tracer of the pair, started with its events off; on()/off() toggle them."""

    def __init__(self, name, work, iotrace):
        self.name, self.out = name, f"{work}/{name}.out"
        self.err = open(f"{work}/{name}.err", "w")
        ev = [a for e in EVENTS for a in ("-e", e)]
        self.ctl = self.ack = None
        if name == "trace-cmd":
            # -d and --no-filter: this kernel refuses set_ftrace_filter/notrace/pid.
            cmd = ["trace-cmd", "record", "-d", "--no-filter", "-B", TC_INSTANCE] + ev + \
                  ["-o", self.out, "sleep", "1000000"]
            self.tracing_on = f"/sys/kernel/tracing/instances/{TC_INSTANCE}/tracing_on"
        else:
            ctl, ack = f"{work}/{name}.ctl", f"{work}/{name}.ack"
            os.mkfifo(ctl)
            os.mkfifo(ack)
            control = ["-D", "-1", "--control", f"fifo:{ctl},{ack}"]
            if name == "perf-B":
                cmd = ["perf", "record", "-B"] + ev + ["-a"] + control + ["-o", self.out]
            else:
                backend = name.split("-", 1)[1]
                cmd = [iotrace, "record", "-b", backend, "--no-progress"] + control + \
                      ["-o", self.out]
            cmd += ["--", "sleep", "1000000"]
        self.proc = subprocess.Popen(["nice", "-n", "-10"] + cmd, stdout=subprocess.DEVNULL,
                                     stderr=self.err)
        if name == "trace-cmd":
            self.wait_for_trace_cmd()
        else:
            # Opening blocks until the tracer opened its ends; "ping" is answered once it records
            # (with its events off).
            self.ctl = open(ctl, "w")
            self.ack = open(ack, "r")
            self.say("ping")

    def wait_for_trace_cmd(self):
        for _ in range(300):
            if self.proc.poll() is not None:
                raise RuntimeError("trace-cmd exited at start; see its .err file")
            try:
                with open(self.tracing_on) as f:
                    if f.read().strip() == "1":
                        time.sleep(0.5)  # its recorder processes are running by now
                        self.write_tracing_on("0")
                        return
            except FileNotFoundError:
                pass
            time.sleep(0.1)
        raise RuntimeError("trace-cmd did not turn tracing on within 30 s")

    def write_tracing_on(self, v):
        with open(self.tracing_on, "w") as f:
            f.write(v)

    def say(self, cmd):
        self.ctl.write(cmd + "\n")
        self.ctl.flush()
        # perf sends "ack\n" with its C string's NUL: "\0" starts the next line.
        if self.ack.readline().strip("\0 \n") != "ack":
            raise RuntimeError(f"{self.name} did not answer '{cmd}'")

    def on(self):
        self.write_tracing_on("1") if self.ctl is None else self.say("enable")

    def off(self):
        self.write_tracing_on("0") if self.ctl is None else self.say("disable")

    def cpu_ns(self):
        return tree_cpu_ns(self.proc.pid)

    def stop(self):
        """Ends the tracer; returns its whole own CPU (ns), children included."""
        if self.proc.poll() is None:
            if self.ctl is not None:
                try:
                    self.say("stop")
                except (OSError, RuntimeError):
                    self.proc.send_signal(signal.SIGINT)
            else:
                # trace-cmd ends its recording when its command (the sleep) ends.
                for child in children(self.proc.pid):
                    os.kill(child, signal.SIGTERM)
        try:
            _, status, ru = os.wait4(self.proc.pid, 0)
            self.proc.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            return None
        return (ru.ru_utime + ru.ru_stime) * 1e9


def run(args):
    if os.geteuid() != 0:
        sys.exit("bench-steady: error: this records kernel tracepoints and creates a loop "
                 "device: run it as root\nhint: sudo bash bench/bench-steady.sh")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="iotrace_bench_steady_")
    img, loop, fio, tracers = f"{work}/disk.img", None, None, []
    raw_path = f"{args.out}/raw.csv"
    try:
        subprocess.run(["truncate", "-s", "1G", img], check=True)
        loop = subprocess.run(["losetup", "--find", "--show", img], check=True,
                              capture_output=True, text=True).stdout.strip()
        name = os.path.basename(loop)
        with open(f"/sys/block/{name}/queue/scheduler", "w") as f:
            f.write("mq-deadline")

        def ios():
            with open(f"/sys/block/{name}/stat") as f:
                s = f.read().split()
            return int(s[0]) + int(s[4])

        tools = PAIRS[args.pair]
        log(f"scratch device {loop}; starting {', '.join(tools)} with their events off")
        tracers = {t: Tracer(t, work, args.iotrace) for t in tools}
        fio = subprocess.Popen(
            ["nice", "-n", "-10", "taskset", "-c", "0", "fio", "--name=bench",
             f"--filename={loop}", "--rw=randread", "--bs=4k", "--iodepth=16",
             "--ioengine=libaio", "--direct=1", "--time_based", "--runtime=1000000",
             "--output=/dev/null"], stdout=subprocess.DEVNULL)
        time.sleep(3)
        if fio.poll() is not None:
            raise RuntimeError(f"fio cannot run on {loop}")
        seq = ["none"]
        for rep in range(args.reps):
            for t in (tools if rep % 2 == 0 else tools[::-1]):
                seq += [(rep, t), "none"]
        log(f"{args.reps} repetitions x ({len(tools)} tracer windows + no-tracer windows) of "
            f"{args.window} s (+{args.settle} s settling): about "
            f"{len(seq) * (args.window + args.settle + 0.05) / 60:.0f} min")
        with open(raw_path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=RAW_FIELDS)
            w.writeheader()
            rep_of_none = 0
            for k, item in enumerate(seq):
                rep, tool = (rep_of_none, "none") if item == "none" else item
                tracer = tracers.get(tool)
                if tracer:
                    tracer.on()
                time.sleep(args.settle)
                b0, i0, t0 = machine_busy_ns(), ios(), time.monotonic()
                o0 = tracer.cpu_ns() if tracer else 0
                time.sleep(args.window)
                b1, i1, t1 = machine_busy_ns(), ios(), time.monotonic()
                o1 = tracer.cpu_ns() if tracer else 0
                if tracer:
                    tracer.off()
                    rep_of_none = rep
                w.writerow({"rep": rep, "seq": k, "tool": tool, "window_s": f"{t1 - t0:.4f}",
                            "ios": i1 - i0, "busy_ns": f"{b1 - b0:.0f}",
                            "own_ns": f"{o1 - o0:.0f}"})
                f.flush()
                if fio.poll() is not None:
                    raise RuntimeError("fio stopped during the run")
        for t, tracer in tracers.items():
            inside = 0.0
            with open(raw_path) as f:
                inside = sum(float(r["own_ns"]) for r in csv.DictReader(f) if r["tool"] == t)
            total = tracer.stop()
            # perf record ends itself with the signal that ended its command (SIGTERM).
            if tracer.proc.returncode not in (0, None, -signal.SIGTERM):
                log(f"warning: {t} exited with {tracer.proc.returncode} (see {work}/{t}.err)")
            if total is not None:
                log(f"{t}: own CPU {total / 1e9:.2f} s in all, {inside / 1e9:.2f} s of it inside "
                    f"the windows, {(total - inside) / 1e9:.2f} s outside (start-up, exit, idle, "
                    f"and the settling after each toggle)")
            with open(f"{work}/{t}.err") as e:
                err = e.read()
            with open(f"{args.out}/{t}.err", "w") as e:
                e.write(err)
    finally:
        if fio and fio.poll() is None:
            fio.terminate()
            fio.wait()
        for tracer in (tracers.values() if isinstance(tracers, dict) else []):
            if tracer.proc.poll() is None:
                tracer.proc.send_signal(signal.SIGINT)
                try:
                    tracer.proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    tracer.proc.kill()
        if os.path.isdir(f"/sys/kernel/tracing/instances/{TC_INSTANCE}"):
            subprocess.run(["trace-cmd", "reset", "-B", TC_INSTANCE], capture_output=True)
            try:
                os.rmdir(f"/sys/kernel/tracing/instances/{TC_INSTANCE}")
            except OSError:
                pass
        if loop:
            subprocess.run(["losetup", "-d", loop])
        subprocess.run(["rm", "-rf", work])
    table = make_table([raw_path])
    with open(f"{args.out}/table.md", "w") as f:
        f.write(table)
    print(table)


# ------------------------------------------------------------------------------ the table

def windows(paths):
    """Tracer windows measured against their no-tracer neighbours: a list of dicts."""
    out = []
    for n, path in enumerate(paths):
        with open(path) as f:
            rows = sorted(csv.DictReader(f), key=lambda r: int(r["seq"]))
        for k, r in enumerate(rows):
            if r["tool"] == "none" or int(r["ios"]) <= 0:
                continue
            around = [rows[j] for j in (k - 1, k + 1)
                      if 0 <= j < len(rows) and rows[j]["tool"] == "none" and int(rows[j]["ios"]) > 0]
            if not around:
                continue
            ios = int(r["ios"])
            base_ns = statistics.mean(float(x["busy_ns"]) / int(x["ios"]) for x in around)
            base_iops = statistics.mean(int(x["ios"]) / float(x["window_s"]) for x in around)
            out.append({
                "file": n, "rep": int(r["rep"]), "tool": r["tool"],
                "added_ns": (float(r["busy_ns"]) / ios - base_ns) / EVENTS_PER_IO,
                "own_ns": float(r["own_ns"]) / ios / EVENTS_PER_IO,
                "slowdown": 1 - (ios / float(r["window_s"])) / base_iops,
                "base_ns": base_ns / EVENTS_PER_IO,
            })
    return out


def med_range(values, fmt):
    if not values:
        return "-"
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}..{fmt(max(values))}]"


def verdict(less, n):
    """One-sided sign test both ways; 'met' means iotrace added less."""
    if n == 0:
        return "no data"
    if sign_p(less, n) <= 0.05:
        return "**met**"
    if sign_p(n - less, n) <= 0.05:
        return "**NOT met**"
    return "not resolved (noise)"


def make_table(paths):
    ws = windows(paths)
    tools = [t for p in PAIRS.values() for t in p if any(w["tool"] == t for w in ws)]
    ns = lambda v: f"{v:.0f}"  # noqa: E731
    pct = lambda v: f"{100 * v:.1f}%"  # noqa: E731
    lines = ["| tracer | windows | added machine CPU / event (ns) | own CPU / event (ns) | "
             "IOPS slowdown |", "|---|---|---|---|---|"]
    for t in tools:
        mine = [w for w in ws if w["tool"] == t]
        lines.append(f"| {NAMES.get(t, t)} | {len(mine)} | "
                     f"{med_range([w['added_ns'] for w in mine], ns)} | "
                     f"{med_range([w['own_ns'] for w in mine], ns)} | "
                     f"{med_range([w['slowdown'] for w in mine], pct)} |")
    base = [w["base_ns"] for w in ws]
    lines.append("")
    lines.append(f"No-tracer machine CPU per event (per I/O / {EVENTS_PER_IO}), neighbours of the "
                 f"tracer windows: {med_range(base, ns)} ns.")
    lines.append("")
    for peer, mine in PAIRS.values():
        by_rep = {}
        for w in ws:
            if w["tool"] in (peer, mine):
                by_rep.setdefault((w["file"], w["rep"]), {})[w["tool"]] = w
        both = [v for v in by_rep.values() if peer in v and mine in v]
        parts = {
            "own": [v[mine]["own_ns"] - v[peer]["own_ns"] for v in both],
            "rest": [(v[mine]["added_ns"] - v[mine]["own_ns"]) -
                     (v[peer]["added_ns"] - v[peer]["own_ns"]) for v in both],
        }
        by_rep = {k: {t: w["added_ns"] for t, w in v.items()} for k, v in by_rep.items()}
        diffs = [v[mine] - v[peer] for v in by_rep.values() if peer in v and mine in v]
        if not diffs:
            continue
        less = sum(d < 0 for d in diffs)
        # Ratios only where the peer's added CPU is positive (a window can come out below its
        # neighbours); the verdict rests on the sign test, not on them.
        ratios = [v[mine] / v[peer] for v in by_rep.values()
                  if peer in v and mine in v and v[peer] > 0]
        ratio = f"; median ratio {statistics.median(ratios):.2f}x" if ratios else ""
        lines.append(
            f"- **{NAMES[mine]} against {NAMES[peer]}** (target: at most the peer's added CPU "
            f"per event): iotrace minus peer per repetition {med_range(diffs, ns)} ns per event; "
            f"iotrace added less in {less} of {len(diffs)} repetitions (sign test: "
            f"p = {sign_p(less, len(diffs)):.3g}){ratio}. Verdict: {verdict(less, len(diffs))}.")
        for part, label in (("own", "its own CPU"),
                            ("rest", "the rest (kernel: tracepoint, ring, page cache, wake-ups)")):
            d = parts[part]
            lines.append(f"  - of that, {label}: {med_range(d, ns)} ns per event, less in "
                         f"{sum(x < 0 for x in d)} of {len(d)}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--pair", choices=sorted(PAIRS), required=True)
    r.add_argument("--iotrace", required=True)
    r.add_argument("--reps", type=int, default=60)
    r.add_argument("--window", type=float, default=2.0)
    r.add_argument("--settle", type=float, default=0.3)
    r.add_argument("--out", required=True)
    t = sub.add_parser("table")
    t.add_argument("raw", nargs="+")
    args = ap.parse_args()
    if args.cmd == "run":
        run(args)
    else:
        print(make_table(args.raw))


if __name__ == "__main__":
    main()
