#!/usr/bin/env python3
"""iotrace live --listen under scrapers, while fio runs at full speed on a scratch loop device.

Two measurements:

  load (default): N scrapers at R scrapes/s each for S seconds, against the same run without
      scrapers. Each scraper is a process of its own (no interpreter lock between them) that
      opens a connection, sends GET /metrics and reads the whole answer; half ask for text,
      half for protobuf. Reports /metrics latency (median, p99, p99.9, max) per format, scrape
      errors, the samples in a text scrape (what Prometheus counts as series), live's lost and
      late events, its own CPU per event, and its RSS sampled every 10 s (a row per minute).

  --cost: live with one scraper at 1 scrape/s against live with none, runs alternated REPS
      times: live's own CPU per event (from its summary line) of each, and their ratio.

Needs root, fio and a built build/iotrace (or IOTRACE=path).

usage: bench-live-scrape.py [--seconds S] [--scrapers N] [--rate R] [--baseline-seconds S]
       bench-live-scrape.py --cost [--seconds S] [--reps REPS]
"""
import argparse
import multiprocessing
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOTRACE = os.environ.get("IOTRACE", os.path.join(REPO, "build", "iotrace"))
PROTO = ("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
         "encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_kb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def get(port, accept):
    """One scrape: (milliseconds from connect to the last byte, status line, body)."""
    t = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    if accept:
        req += f"Accept: {accept}\r\n"
    s.sendall((req + "\r\n").encode())
    chunks = []
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        chunks.append(b)
    s.close()
    ms = (time.perf_counter() - t) * 1e3
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    return ms, head.split(b"\r\n", 1)[0].decode(errors="replace"), body


def scraper(i, port, rate, stop_at, out):
    fmt = "protobuf" if i % 2 else "text"
    lat, errors, samples = [], 0, 0
    nxt = time.time()
    while time.time() < stop_at:
        try:
            ms, status, body = get(port, PROTO if fmt == "protobuf" else None)
            if " 200 " not in status + " ":
                errors += 1
            else:
                lat.append(ms)
                if fmt == "text" and not samples:  # once: the scrapers' own CPU stays small
                    samples = sum(1 for l in body.decode().splitlines() if l and l[0] != "#")
        except OSError:
            errors += 1
        nxt += 1.0 / rate
        time.sleep(max(0.0, nxt - time.time()))
    out.put((fmt, lat, errors, samples))


def run(loop, seconds, scrapers, rate, work, tag):
    port = free_port()
    err = os.path.join(work, re.sub(r"[^A-Za-z0-9.-]", "_", tag) + ".err")
    live = subprocess.Popen([IOTRACE, "live", "-b", "ftrace", "--listen", f"127.0.0.1:{port}",
                             "--dev", loop, "-d", str(seconds + 2), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    for _ in range(200):
        try:
            get(port, None)
            break
        except OSError:
            time.sleep(0.05)
    fio = subprocess.Popen(["fio", "--name=s", f"--filename={loop}", "--rw=randread", "--bs=4k",
                            "--direct=1", "--iodepth=16", "--ioengine=libaio", "--time_based=1",
                            f"--runtime={seconds}", "--output=/dev/null"])
    stop_at = time.time() + seconds
    out = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=scraper, args=(i, port, rate, stop_at, out))
             for i in range(scrapers)]
    for p in procs:
        p.start()
    time.sleep(2)  # tracing set up
    start = time.time()
    rss = [(0, rss_kb(live.pid))]
    while time.time() < stop_at:
        time.sleep(min(10, max(0, stop_at - time.time())))
        rss.append((round(time.time() - start), rss_kb(live.pid)))
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    fio.wait()
    live.wait()
    text = open(err).read()
    m = re.search(r"([0-9]+) events paired, ([0-9]+) lost, ([0-9]+) late;.*own CPU ([0-9.]+) s",
                  text)
    ev, lost, late, cpu = (int(m[1]), int(m[2]), int(m[3]), float(m[4])) if m else (0, -1, -1, 0)
    r = {"tag": tag, "events": ev, "lost": lost, "late": late,
         "cpu_ns_per_event": cpu * 1e9 / ev if ev else 0, "rss": rss,
         "errors": sum(x[2] for x in results), "samples": max([x[3] for x in results] + [0])}
    for fmt in ("text", "protobuf"):
        v = sorted(ms for f, lat, _, _ in results if f == fmt for ms in lat)
        if v:
            q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
            r[fmt] = (len(v), statistics.median(v), q(0.99), q(0.999), v[-1])
    return r


def with_loop(fn):
    work = tempfile.mkdtemp(prefix="iotrace_scrape_")
    img = os.path.join(work, "disk.img")
    subprocess.run(["truncate", "-s", "256M", img], check=True)
    loop = subprocess.run(["losetup", "-f", "--show", img], check=True, capture_output=True,
                          text=True).stdout.strip()
    # mq-deadline: requests are inserted, so each op has I2D, D2C and I2C (about 100 samples in
    # a text scrape with reads alone).
    with open(f"/sys/block/{os.path.basename(loop)}/queue/scheduler", "w") as f:
        f.write("mq-deadline")
    try:
        return fn(loop, work)
    finally:
        subprocess.run(["losetup", "-d", loop])
        subprocess.run(["rm", "-rf", work])


def load(a):
    base, scraped = with_loop(lambda loop, work: (
        run(loop, a.baseline_seconds or a.seconds, 0, a.rate, work, "no scrapers"),
        run(loop, a.seconds, a.scrapers, a.rate, work, f"{a.scrapers} x {a.rate:g}/s")))
    print(f"fio randread 4k iodepth 16 on a loop device (mq-deadline), {a.seconds} s with "
          f"scrapers, {a.baseline_seconds or a.seconds} s without\n")
    print("| run | events | lost | late | own CPU/event | scrape errors | samples per scrape | "
          "text: n, median, p99, p99.9, max ms | protobuf: same |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in (base, scraped):
        cell = lambda k: ("%d, %.2f, %.2f, %.2f, %.2f" % r[k]) if k in r else "-"
        print(f"| {r['tag']} | {r['events']} | {r['lost']} | {r['late']} | "
              f"{r['cpu_ns_per_event']:.0f} ns | {r['errors']} | {r['samples'] or '-'} | "
              f"{cell('text')} | {cell('protobuf')} |")
    print("\nRSS of live (kB), sampled every 10 s:\n")
    print("| s | " + " | ".join(r["tag"] for r in (base, scraped)) + " |")
    print("|---|---|---|")
    for i, (t, b_kb) in enumerate(scraped["rss"]):
        if t % 60 < 10 or i == len(scraped["rss"]) - 1:
            a_kb = base["rss"][i][1] if i < len(base["rss"]) else "-"
            print(f"| {t} | {a_kb} | {b_kb} |")


def cost(a):
    def runs(loop, work):
        out = {"none": [], "one": []}
        for i in range(a.reps):
            for kind in (("none", "one") if i % 2 == 0 else ("one", "none")):
                r = run(loop, a.seconds, 0 if kind == "none" else 1, 1.0, work, f"{kind}{i}")
                out[kind].append(r["cpu_ns_per_event"])
                print(f"  run {i} {kind}: {r['events']} events, {r['lost']} lost, "
                      f"{r['cpu_ns_per_event']:.1f} ns/event", file=sys.stderr)
        return out
    out = with_loop(runs)
    none, one = statistics.median(out["none"]), statistics.median(out["one"])
    print(f"live's own CPU per event, fio randread 4k iodepth 16, {a.seconds} s runs, "
          f"{a.reps} of each, alternated\n")
    print("| scrapers | runs (ns/event) | median | ratio to none |")
    print("|---|---|---|---|")
    print(f"| none | {', '.join('%.1f' % v for v in out['none'])} | {none:.1f} | 1.000 |")
    print(f"| one at 1/s | {', '.join('%.1f' % v for v in out['one'])} | {one:.1f} | "
          f"{one / none:.3f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--scrapers", type=int, default=20)
    ap.add_argument("--rate", type=float, default=10)
    ap.add_argument("--baseline-seconds", type=int, default=0,
                    help="length of the run without scrapers (default: --seconds)")
    ap.add_argument("--cost", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench-live-scrape: run it as root", file=sys.stderr)
        return 1
    cost(a) if a.cost else load(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
