#!/usr/bin/env python3
"""iotrace live --listen under scrapers: N scrapers at R scrapes/s each while fio runs at full
speed on a scratch loop device. Reports /metrics latency (median, p99, max) per format, live's
lost and late events, its RSS at the start and the end, and its own CPU per event, against the
same run without scrapers. Needs root, fio and a built build/iotrace.

usage: bench-live-scrape.py [--seconds S] [--scrapers N] [--rate R]
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOTRACE = os.path.join(REPO, "build", "iotrace")
PROTO = ("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
         "encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def run(loop, seconds, scrapers, rate, work, tag):
    port = free_port()
    err = os.path.join(work, tag.replace("/", "_") + ".err")
    live = subprocess.Popen([IOTRACE, "live", "-b", "ftrace", "--listen", f"127.0.0.1:{port}",
                             "--dev", loop, "-d", str(seconds + 2), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    url = f"http://127.0.0.1:{port}/metrics"
    for _ in range(100):
        try:
            urllib.request.urlopen(url, timeout=1).read()
            break
        except Exception:
            time.sleep(0.05)
    fio = subprocess.Popen(["fio", "--name=s", f"--filename={loop}", "--rw=randread", "--bs=4k",
                            "--direct=1", "--iodepth=16", "--ioengine=libaio", "--time_based=1",
                            f"--runtime={seconds}", "--output=/dev/null"])
    rss_start = rss_kb(live.pid)
    lat = {"text": [], "protobuf": []}
    errors = [0]
    stop = time.time() + seconds
    series = [0]

    def scraper(i):
        fmt = "protobuf" if i % 2 else "text"
        headers = {"Accept": PROTO} if fmt == "protobuf" else {}
        nxt = time.time()
        while time.time() < stop:
            t = time.perf_counter()
            try:
                body = urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                              timeout=5).read()
                lat[fmt].append((time.perf_counter() - t) * 1e3)
                if fmt == "text" and i == 0:
                    series[0] = sum(1 for l in body.decode().splitlines() if l and l[0] != "#")
            except Exception:
                errors[0] += 1
            nxt += 1.0 / rate
            time.sleep(max(0.0, nxt - time.time()))

    threads = [threading.Thread(target=scraper, args=(i,)) for i in range(scrapers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rss_end = rss_kb(live.pid)
    fio.wait()
    live.wait()
    text = open(err).read()
    m = re.search(r"([0-9]+) events paired, ([0-9]+) lost, ([0-9]+) late;.*own CPU ([0-9.]+) s",
                  text)
    ev, lost, late, cpu = (int(m[1]), int(m[2]), int(m[3]), float(m[4])) if m else (0, -1, -1, 0)
    out = {"tag": tag, "events": ev, "lost": lost, "late": late,
           "cpu_ns_per_event": cpu * 1e9 / ev if ev else 0, "rss_start_kb": rss_start,
           "rss_end_kb": rss_end, "errors": errors[0], "series": series[0]}
    for fmt, v in lat.items():
        if v:
            v.sort()
            out[fmt] = (len(v), statistics.median(v), v[int(0.99 * (len(v) - 1))], v[-1])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--scrapers", type=int, default=20)
    ap.add_argument("--rate", type=float, default=10)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench-live-scrape: run it as root", file=sys.stderr)
        return 1
    work = tempfile.mkdtemp(prefix="iotrace_scrape_")
    img = os.path.join(work, "disk.img")
    subprocess.run(["truncate", "-s", "256M", img], check=True)
    loop = subprocess.run(["losetup", "-f", "--show", img], check=True, capture_output=True,
                          text=True).stdout.strip()
    try:
        base = run(loop, a.seconds, 0, a.rate, work, "no-scrapers")
        load = run(loop, a.seconds, a.scrapers, a.rate, work, f"{a.scrapers}x{a.rate:g}/s")
    finally:
        subprocess.run(["losetup", "-d", loop])
        subprocess.run(["rm", "-rf", work])
    print(f"| run | events | lost | late | own CPU/event | RSS start -> end | scrape errors | "
          f"series | text: n, median, p99, max ms | protobuf: n, median, p99, max ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in (base, load):
        cell = lambda k: ("%d, %.2f, %.2f, %.2f" % r[k]) if k in r else "-"
        print(f"| {r['tag']} | {r['events']} | {r['lost']} | {r['late']} | "
              f"{r['cpu_ns_per_event']:.0f} ns | {r['rss_start_kb']} -> {r['rss_end_kb']} kB | "
              f"{r['errors']} | {r['series']} | {cell('text')} | {cell('protobuf')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
