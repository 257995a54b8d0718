#!/usr/bin/env python3
"""iotrace live on many disks at once (issue 26: "live inputs ... up to 64 loop devices").

For each count N (1, 8, 32, 64 by default): N loop devices over sparse files in /dev/shm
(mq-deadline), one fio job per device (4k random reads, iodepth 4, libaio, O_DIRECT; all jobs
in one fio), for --seconds, as the command of `iotrace live --quiet` (default settings:
--backend auto, every disk). From live's summary line: events paired, lost, late, own CPU
(the whole process, set-up included) and per event; events/s over the run; the devices live's
report has rows for. Every loop device is detached and every file removed on every way out
(an error, Ctrl-C, SIGTERM).

Usage (root): python3 bench/bench-live-devices.py [--devices 1,8,32,64] [--seconds 10]
Writes DIR/<sha>-live-devices.md (DIR: bench/results by default).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(msg):
    print(f"bench-live-devices: {msg}", file=sys.stderr, flush=True)


def attach(img):
    dev = subprocess.run(["losetup", "--find", "--show", img], check=True, capture_output=True,
                         text=True).stdout.strip()
    with open(f"/sys/block/{os.path.basename(dev)}/queue/scheduler", "w") as f:
        f.write("mq-deadline")
    return dev


def one_run(iotrace, work, devices, seconds):
    fio = ["fio", "--rw=randread", "--bs=4k", "--iodepth=4", "--ioengine=libaio", "--direct=1",
           "--time_based", f"--runtime={seconds}", "--output-format=json",
           "--output=" + os.path.join(work, "fio.json")]
    for i, d in enumerate(devices):
        fio += [f"--name=d{i}", "--filename=" + d]
    report = os.path.join(work, "report.json")
    cmd = [iotrace, "live", "--quiet", "--format", "json", "--report", report, "--"] + fio
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=seconds + 120)
    if r.returncode != 0:
        raise RuntimeError(f"live exited {r.returncode}: {r.stderr[-600:]}")
    m = re.search(r"([0-9.]+) s, ([0-9]+) events paired, ([0-9]+) lost, ([0-9]+) late;.*"
                  r"own CPU ([0-9.]+) s, ([0-9]+) ns per event", r.stderr)
    if not m:
        raise RuntimeError(f"no summary line in: {r.stderr[-600:]}")
    secs, events, lost, late = float(m[1]), int(m[2]), int(m[3]), int(m[4])
    own = float(m[5])
    jobs = json.load(open(os.path.join(work, "fio.json")))["jobs"]
    ios = sum(j["read"]["total_ios"] for j in jobs)
    rows = set()
    try:
        for g in json.load(open(report)).get("groups", []):
            rows.add(g.get("dev", ""))
    except (OSError, ValueError):
        pass
    return {"devices": len(devices), "seconds": secs, "events": events, "lost": lost,
            "late": late, "own_s": own, "ios": ios, "report_devices": len(rows),
            "events_per_s": events / secs if secs else 0,
            "ns_per_event": own * 1e9 / events if events else 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="1,8,32,64")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    counts = [int(n) for n in args.devices.split(",")]
    if os.geteuid() != 0:
        sys.exit("bench-live-devices: error: traces and creates loop devices: run it as root")
    if shutil.which("fio") is None:
        sys.exit("bench-live-devices: error: fio is not installed")
    iotrace = os.path.join(REPO, "build", "iotrace")
    sha = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    out_dir = args.out or os.path.join(REPO, "bench", "results")
    os.makedirs(out_dir, exist_ok=True)

    work = tempfile.mkdtemp(prefix="iotrace_bench_devices_", dir="/dev/shm")
    loops = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        results = []
        for n in counts:
            while len(loops) < n:
                img = os.path.join(work, f"disk{len(loops)}.img")
                with open(img, "wb") as f:
                    f.truncate(64 << 20)
                loops.append(attach(img))
            log(f"{n} devices ({loops[0]} .. {loops[n - 1]}), {args.seconds} s")
            r = one_run(iotrace, work, loops[:n], args.seconds)
            log(f"  {r['events']} events ({r['events_per_s']:,.0f}/s), lost {r['lost']}, late "
                f"{r['late']}, own CPU {r['own_s']:.2f} s = {r['ns_per_event']:.0f} ns/event")
            results.append(r)
        lines = [f"iotrace live (default settings) on N loop devices at once, one fio job each "
                 f"(4k randread, iodepth 4, libaio, direct), {args.seconds} s, at {sha}; "
                 f"{os.cpu_count()} CPUs, kernel {os.uname().release}; backing files in "
                 f"/dev/shm, mq-deadline.", "",
                 "| devices | events | events/s | lost | late | own CPU | own CPU / event | "
                 "fio I/Os | devices in the report |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for r in results:
            lines.append(f"| {r['devices']} | {r['events']:,} | {r['events_per_s']:,.0f} | "
                         f"{r['lost']} | {r['late']} | {r['own_s']:.2f} s | "
                         f"{r['ns_per_event']:.0f} ns | {r['ios']:,} | "
                         f"{r['report_devices']} |")
        text = "\n".join(lines) + "\n"
        with open(os.path.join(out_dir, f"{sha}-live-devices.md"), "w") as f:
            f.write(text)
        print(text)
        return 0
    finally:
        for d in loops:
            subprocess.run(["losetup", "-d", d])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
