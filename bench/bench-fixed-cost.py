#!/usr/bin/env python3
"""Whole-run own CPU of a recording, iotrace against trace-cmd (issue 26, "fixed costs").

Each tracer records the same fio job (bench-e2e's: 4k random reads, iodepth 16, libaio,
O_DIRECT, on a scratch loop device with mq-deadline, fio pinned to CPU 0) for 1, 5 and 60 s,
side by side: in every repetition each tracer runs once per length, in an order that rotates.
The tracer starts a gate as its command (bench-e2e.sh's: it says when tracing is on, then
sleeps); fio runs outside the tracer; when fio is done the gate is killed and the tracer ends.
Its own CPU is the user + system time of the tracer and every child it waited for (trace-cmd's
per-CPU recorders), from wait4(): the whole run, start-up and end included.

  iotrace        iotrace record, default settings (--backend auto with its kept verdict)
  iotrace-check  the same with the kept verdict removed before each run: the check at every
                 start, as before the verdict was kept
  trace-cmd      trace-cmd record -e on iotrace's default events (-d --no-filter -B, as
                 bench-e2e.sh runs it)

Usage (root): python3 bench/bench-fixed-cost.py [--seconds 1,5,60] [--reps 5] [--out DIR]
Writes DIR/<sha>-fixed-cost.csv and .md (DIR: bench/results by default).
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVENTS = ["block:block_rq_insert", "block:block_rq_issue", "block:block_rq_complete",
          "block:block_rq_requeue", "block:block_rq_merge"]
TC_INSTANCE = "iotrace_bench_fixed"
TRACEFS = "/sys/kernel/tracing"
VERDICT = "/run/iotrace/backend-verdict"
TOOLS = ["iotrace", "iotrace-check", "trace-cmd"]

GATE = """#!/bin/sh
echo $$ >"$1.tmp" && mv "$1.tmp" "$1"
exec sleep 1000000
"""


def log(msg):
    print(f"bench-fixed-cost: {msg}", file=sys.stderr, flush=True)


class Run:
    """One tracer run around one fio job."""

    def __init__(self, work, iotrace, loop):
        self.work, self.iotrace, self.loop = work, iotrace, loop
        self.tracer = None
        self.fio = None

    def command(self, tool, out, ready):
        gate = [os.path.join(self.work, "gate.sh"), ready]
        if tool.startswith("iotrace"):
            return [self.iotrace, "record", "--no-progress", "-o", out, "--"] + gate
        ev = [a for e in EVENTS for a in ("-e", e)]
        return ["trace-cmd", "record", "-d", "--no-filter", "-B", TC_INSTANCE] + ev + \
            ["-o", out] + gate

    def go(self, tool, seconds):
        """Returns (own CPU s, fio I/Os, events recorded or None, wall s, the tracer's stderr)."""
        out = os.path.join(self.work, "out.dat")
        ready = os.path.join(self.work, "ready")
        err_path = os.path.join(self.work, "tracer.err")
        for p in (out, ready):
            if os.path.exists(p):
                os.unlink(p)
        if tool == "iotrace-check" and os.path.exists(VERDICT):
            os.unlink(VERDICT)
        t0 = time.monotonic()
        with open(err_path, "w") as err:
            self.tracer = subprocess.Popen(self.command(tool, out, ready),
                                           stdout=subprocess.DEVNULL, stderr=err)
        while not os.path.exists(ready):
            if self.tracer.poll() is not None:
                raise RuntimeError(f"{tool} ended before it was ready: "
                                   f"{open(err_path).read()[-400:]}")
            if time.monotonic() - t0 > 60:
                raise RuntimeError(f"{tool} not ready after 60 s")
            time.sleep(0.01)
        gate = int(open(ready).read())
        fio_json = os.path.join(self.work, "fio.json")
        self.fio = subprocess.Popen(
            ["taskset", "-c", "0", "fio", "--name=bench", "--filename=" + self.loop,
             "--rw=randread", "--bs=4k", "--iodepth=16", "--ioengine=libaio", "--direct=1",
             "--time_based", f"--runtime={seconds}", "--output-format=json",
             "--output=" + fio_json], stdout=subprocess.DEVNULL)
        self.fio.wait()
        self.fio = None
        os.kill(gate, signal.SIGTERM)
        _, status, ru = os.wait4(self.tracer.pid, 0)
        self.tracer.returncode = status
        self.tracer = None
        wall = time.monotonic() - t0
        ios = json.load(open(fio_json))["jobs"][0]["read"]["total_ios"]
        err_text = open(err_path).read()
        events = None
        for line in err_text.splitlines():
            parts = line.split()
            if len(parts) == 5 and parts[0] == "total":
                events = int(parts[1])
        return ru.ru_utime + ru.ru_stime, ios, events, wall, err_text

    def stop(self):
        if self.fio is not None:
            self.fio.terminate()
            self.fio.wait()
        ready = os.path.join(self.work, "ready")
        if self.tracer is not None:
            if os.path.exists(ready):
                try:
                    os.kill(int(open(ready).read()), signal.SIGTERM)
                except (ValueError, ProcessLookupError):
                    pass
            try:
                self.tracer.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.tracer.send_signal(signal.SIGINT)
                self.tracer.wait()


def table(rows, seconds_list):
    lines = ["| run | tool | runs | own CPU (median) | own CPU per I/O (median) | "
             "/ trace-cmd's per I/O (median of the runs' ratios) | I/Os (median) |",
             "|---|---|---|---|---|---|---|"]
    for s in seconds_list:
        by_rep = {}
        for r in rows:
            if r["seconds"] == s:
                by_rep.setdefault(r["rep"], {})[r["tool"]] = r
        for tool in TOOLS:
            mine = [r for r in rows if r["seconds"] == s and r["tool"] == tool]
            if not mine:
                continue
            ratios = [reps[tool]["ns_per_io"] / reps["trace-cmd"]["ns_per_io"]
                      for reps in by_rep.values() if tool in reps and "trace-cmd" in reps]
            lines.append(
                f"| {s} s | {tool} | {len(mine)} | "
                f"{statistics.median(r['own_s'] for r in mine):.3f} s | "
                f"{statistics.median(r['ns_per_io'] for r in mine):.0f} ns | "
                f"{statistics.median(ratios):.2f}x "
                f"[{min(ratios):.2f}..{max(ratios):.2f}] | "
                f"{statistics.median(r['ios'] for r in mine):,.0f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", default="1,5,60")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    seconds_list = [int(s) for s in args.seconds.split(",")]
    if os.geteuid() != 0:
        sys.exit("bench-fixed-cost: error: records kernel tracepoints and creates a loop "
                 "device: run it as root")
    iotrace = os.path.join(REPO, "build", "iotrace")
    for tool in ("fio", "trace-cmd", "taskset"):
        if shutil.which(tool) is None:
            sys.exit(f"bench-fixed-cost: error: {tool} is not installed")
    sha = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    out_dir = args.out or os.path.join(REPO, "bench", "results")
    os.makedirs(out_dir, exist_ok=True)

    work = tempfile.mkdtemp(prefix="iotrace_bench_fixed_")
    loop = None
    run = None
    # SIGTERM ends the run through the cleanup below, as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        with open(os.path.join(work, "gate.sh"), "w") as f:
            f.write(GATE)
        os.chmod(os.path.join(work, "gate.sh"), 0o755)
        img = os.path.join(work, "disk.img")
        with open(img, "wb") as f:
            f.truncate(1 << 30)
        loop = subprocess.run(["losetup", "--find", "--show", img], check=True,
                              capture_output=True, text=True).stdout.strip()
        with open(f"/sys/block/{os.path.basename(loop)}/queue/scheduler", "w") as f:
            f.write("mq-deadline")
        run = Run(work, iotrace, loop)
        log(f"{loop} (mq-deadline); {args.reps} repetitions of {seconds_list} s; a warm-up run "
            "keeps a verdict")
        run.go("iotrace", 1)
        rows = []
        csv_path = os.path.join(out_dir, f"{sha}-fixed-cost.csv")
        with open(csv_path, "w") as csv:
            csv.write("rep,seconds,order,tool,own_s,ios,events,wall_s,ns_per_io\n")
            for rep in range(args.reps):
                for s in seconds_list:
                    k = (rep + s) % len(TOOLS)
                    order = TOOLS[k:] + TOOLS[:k]
                    for i, tool in enumerate(order):
                        own, ios, events, wall, _ = run.go(tool, s)
                        r = {"rep": rep, "seconds": s, "tool": tool, "own_s": own, "ios": ios,
                             "events": events, "wall_s": wall, "ns_per_io": own * 1e9 / ios}
                        rows.append(r)
                        csv.write(f"{rep},{s},{i},{tool},{own:.4f},{ios},"
                                  f"{'' if events is None else events},{wall:.3f},"
                                  f"{r['ns_per_io']:.1f}\n")
                        csv.flush()
                        log(f"rep {rep} {s} s {tool}: own CPU {own:.3f} s, {ios} I/Os, "
                            f"{r['ns_per_io']:.0f} ns per I/O")
        header = (f"Whole-run own CPU, {args.reps} repetitions alternated, at {sha}; "
                  f"{os.cpu_count()} CPUs, kernel {os.uname().release}; fio randread 4k "
                  f"iodepth 16 libaio direct on a loop device (mq-deadline), pinned to CPU 0. "
                  f"Own CPU: wait4() of the tracer (its waited-for children included), from "
                  f"its start to its exit.")
        text = header + "\n\n" + table(rows, seconds_list) + "\n"
        with open(os.path.join(out_dir, f"{sha}-fixed-cost.md"), "w") as f:
            f.write(text)
        print(text)
        return 0
    finally:
        if run is not None:
            run.stop()
        if os.path.isdir(f"{TRACEFS}/instances/{TC_INSTANCE}"):
            subprocess.run(["rmdir", f"{TRACEFS}/instances/{TC_INSTANCE}"])
        if loop:
            subprocess.run(["losetup", "-d", loop])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
