#!/usr/bin/env python3
"""`iotrace live --listen` against a real Prometheus (Debian's 2.42, native histograms on).

usage: prometheus_live.py IOTRACE WORKDIR LOOPDEV...

For each loop device one `iotrace live --listen` (as if on its own host: its own port, its own
--textfile, its own -o recording), Prometheus scraping all of them every second (protobuf:
native histograms with their classic buckets) and node_exporter's textfile collector (text:
classic only). fio runs a known number of reads on every device; then the figures Prometheus
holds are checked against `iotrace report` on the recordings:

- histogram_count / histogram_sum of every device's native read D2C series equal the report's
  count and sum, and the textfile's _count / _sum (Prometheus 2.42 keeps only the native
  series of a protobuf scrape);
- histogram_quantile(0.99) over the native series lies within the native bucket width of the
  report's p99, and over the classic buckets (the textfile's) within the report's classic bucket;
- across the hosts: the native sum and `sum by (le)` of the classic buckets give the quantile of
  the union, checked against the reports' buckets added up (the same bounds in every report);
- a window: fio runs twice with idle seconds between; `increase(..._count[W])` (textfile, classic)
  and `histogram_count(increase(...[W]))` (native), with W running from a scrape in the first
  idle stretch to one in the last (so Prometheus does not extrapolate: the window starts and ends
  on samples), equal the report's count of that window: the requests of the second run, taken
  from the report's --interval blocks after the idle gap.

Prints one line per check; exits 1 when one fails, 77 when something it needs is missing.
"""
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_http(url, seconds=20):
    end = time.time() + seconds
    while time.time() < end:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                return r.read()
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {seconds} s")


class Prom:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}/api/v1/query?query="

    def query(self, q, at=None):
        url = self.base + urllib.parse.quote(q) + ("" if at is None else f"&time={at:.3f}")
        with urllib.request.urlopen(url, timeout=5) as r:
            d = json.load(r)
        if d.get("status") != "success":
            raise RuntimeError(f"{q}: {d}")
        return d["data"]["result"]

    def scalar(self, q, at=None):
        res = self.query(q, at)
        if len(res) != 1:
            raise RuntimeError(f"{q}: {len(res)} series: {res}")
        return float(res[0]["value"][1])


def report(iotrace, files, out, extra=()):
    args = [iotrace, "report", "--format", "json", *extra]
    for f in files:
        args += ["-i", f]
    with open(out, "w") as o:
        subprocess.run(args, stdout=o, check=True)
    return json.load(open(out))


def last_sample_time(prom, selector):
    """The time of the newest sample of a series (a float or a native histogram one)."""
    res = prom.query(f"{selector}[30s]")
    if len(res) != 1:
        raise RuntimeError(f"{selector}: {len(res)} series")
    samples = res[0].get("values") or res[0].get("histograms")
    return float(samples[-1][0])


def second_run_count(rep, device, op, phase):
    """The count of the report's --interval blocks after the last idle gap (> 2 s with none)."""
    blocks = []
    for iv in rep["intervals"]:
        n = sum(g["count"] for g in iv["groups"]
                if g["device"] == device and g["op"] == op and g["phase"] == phase)
        if n:
            blocks.append((iv["interval_start_s"], n))
    last_gap = 0
    for i in range(1, len(blocks)):
        if blocks[i][0] - blocks[i - 1][0] > 2:
            last_gap = i
    return sum(n for _, n in blocks[last_gap:]) if last_gap else None


def fio_reads(hosts, base):
    fios = [subprocess.Popen(
        ["fio", f"--name=h{n}", f"--filename={h['loop']}", "--rw=randread", "--bs=4k",
         "--direct=1", "--iodepth=8", "--ioengine=libaio", f"--number_ios={base + 5000 * n}",
         "--output=/dev/null"]) for n, h in enumerate(hosts)]
    for f in fios:
        f.wait()


def group(rep, device, op, phase):
    for g in rep["groups"]:
        if g["device"] == device and g["op"] == op and g["phase"] == phase:
            return g
    return None


def native_width(value, schema):
    """The width of the native bucket (base^(i-1), base^i] that holds `value` seconds."""
    base = 2 ** (2 ** -schema)
    i = math.ceil(math.log(value, base))
    return base ** i - base ** (i - 1)


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    iotrace, work, loops = sys.argv[1], sys.argv[2], sys.argv[3:]
    for tool in ("prometheus", "prometheus-node-exporter", "fio"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} is not installed")
            return 77
    procs = []
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    try:
        tf_dir = os.path.join(work, "textfile")
        os.makedirs(tf_dir, exist_ok=True)
        hosts = []
        for n, loop in enumerate(loops):
            port = free_port()
            rec = os.path.join(work, f"host{n}.dat")
            log = open(os.path.join(work, f"host{n}.err"), "w")
            p = subprocess.Popen(
                [iotrace, "live", "--backend", "ftrace", "--listen", f"127.0.0.1:{port}",
                 "--textfile", os.path.join(tf_dir, f"host{n}.prom"), "-o", rec, "--dev", loop,
                 "--format", "json", "--report", os.path.join(work, f"host{n}.live.json")],
                stdout=subprocess.DEVNULL, stderr=log)
            procs.append(p)
            hosts.append({"loop": loop, "name": os.path.basename(loop), "port": port, "rec": rec,
                          "proc": p})
        for h in hosts:
            wait_http(f"http://127.0.0.1:{h['port']}/metrics")
        node_port = free_port()
        procs.append(subprocess.Popen(
            ["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{node_port}",
             "--collector.disable-defaults", "--collector.textfile",
             f"--collector.textfile.directory={tf_dir}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        prom_port = free_port()
        targets = ", ".join(f"'127.0.0.1:{h['port']}'" for h in hosts)
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n"
                    f"  - job_name: iotrace\n    static_configs:\n      - targets: [{targets}]\n"
                    f"  - job_name: node\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{node_port}']\n")
        procs.append(subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={work}/tsdb",
             f"--web.listen-address=127.0.0.1:{prom_port}", "--enable-feature=native-histograms"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.err"), "w")))
        prom = Prom(prom_port)
        wait_http(f"http://127.0.0.1:{prom_port}/-/ready", 30)
        end = time.time() + 30
        while time.time() < end:
            up = prom.query('up')
            if len(up) == len(hosts) + 1 and all(r["value"][1] == "1" for r in up):
                break
            time.sleep(0.5)
        check(all(r["value"][1] == "1" for r in prom.query("up")), "every target is up")

        fio_reads(hosts, 20000)
        time.sleep(4)  # a few scrapes of the first run's counts
        window = {}
        for h in hosts:
            sel = f'{{job="iotrace",device="{h["name"]}",operation="read",phase="d2c"}}'
            tsel = f'{{job="node",device="{h["name"]}",operation="read",phase="d2c"}}'
            window[h["name"]] = {
                "native_from": last_sample_time(prom, f"iotrace_block_latency_seconds{sel}"),
                "text_from": last_sample_time(prom, f"iotrace_block_latency_seconds_count{tsel}")}
        fio_reads(hosts, 6000)
        time.sleep(4)  # a few scrapes of the final counts
        # Asked while the exporters still run: a target that went away has its series marked
        # stale, and an instant query then finds nothing.
        got = {}
        for h in hosts:
            sel = f'{{job="iotrace",device="{h["name"]}",operation="read",phase="d2c"}}'
            tsel = f'{{job="node",device="{h["name"]}",operation="read",phase="d2c"}}'
            got[h["name"]] = {
                "hc": prom.scalar(f"histogram_count(iotrace_block_latency_seconds{sel})"),
                "hs": prom.scalar(f"histogram_sum(iotrace_block_latency_seconds{sel})"),
                "q": prom.scalar(f"histogram_quantile(0.99, iotrace_block_latency_seconds{sel})"),
                "count": prom.scalar(f"iotrace_block_latency_seconds_count{tsel}"),
                "sum": prom.scalar(f"iotrace_block_latency_seconds_sum{tsel}"),
                "qc": prom.scalar("histogram_quantile(0.99, sum by (le) "
                                  f"(iotrace_block_latency_seconds_bucket{tsel}))"),
            }
            got[h["name"]]["unpaired"] = {
                r["metric"]["reason"]: float(r["value"][1]) for r in prom.query(
                    f'iotrace_block_unpaired_total{{job="iotrace",device="{h["name"]}"}}')}
            got[h["name"]]["inflight"] = prom.scalar(
                f'iotrace_block_inflight_requests{{job="iotrace",device="{h["name"]}"}}')
            w = window[h["name"]]
            for kind, series, wrap in (
                    ("native", f"iotrace_block_latency_seconds{sel}", "histogram_count({})"),
                    ("text", f"iotrace_block_latency_seconds_count{tsel}", "{}")):
                to = last_sample_time(prom, series)
                ms = round((to - w[kind + "_from"]) * 1000)
                w[kind] = prom.scalar(wrap.format(f"increase({series}[{ms}ms])"), at=to)
                w[kind + "_ms"] = ms
        if len(hosts) > 1:
            sel = '{job="iotrace",operation="read",phase="d2c"}'
            tsel = '{job="node",operation="read",phase="d2c"}'
            got["*"] = {
                "hc": prom.scalar(f"sum(histogram_count(iotrace_block_latency_seconds{sel}))"),
                "q": prom.scalar(f"histogram_quantile(0.99, sum(iotrace_block_latency_seconds{sel}))"),
                "qc": prom.scalar("histogram_quantile(0.99, sum by (le) "
                                  f"(iotrace_block_latency_seconds_bucket{tsel}))"),
            }
        for h in hosts:
            h["proc"].send_signal(signal.SIGINT)
        for h in hosts:
            h["proc"].wait(timeout=30)

        schema = 3
        reps = []
        for n, h in enumerate(hosts):
            rep = report(iotrace, [h["rec"]], os.path.join(work, f"host{n}.report.json"))
            reps.append(rep)
            ivs = report(iotrace, [h["rec"]], os.path.join(work, f"host{n}.intervals.json"),
                         ("--interval", "0.5"))
            second = second_run_count(ivs, h["name"], "read", "D2C")
            w = window[h["name"]]
            for kind in ("text", "native"):
                check(second is not None and w[kind] == second,
                      f"{h['name']}: increase over {w[kind + '_ms']} ms ({kind}) {w[kind]} = the "
                      f"report's count of that window {second}")
            g = group(rep, h["name"], "read", "D2C")
            check(g is not None, f"{h['name']}: the report has read D2C")
            if g is None:
                continue
            v = got[h["name"]]
            dev = [d for d in rep["completeness"]["devices"] if d["device"] == h["name"]]
            check(len(dev) == 1 and v["unpaired"].get("issue_without_insert") ==
                  dev[0]["issues_without_insert"] and len(v["unpaired"]) == 6,
                  f"{h['name']}: unpaired by reason {v['unpaired']} (issue_without_insert = the "
                  f"report's {dev[0]['issues_without_insert'] if dev else None})")
            check(v["inflight"] == 0, f"{h['name']}: {v['inflight']:.0f} requests in flight at idle")
            check(v["hc"] == g["count"], f"{h['name']}: histogram_count {v['hc']:.0f} = report {g['count']}")
            check(abs(v["hs"] - g["sum_ns"] / 1e9) <= 1e-9 * max(1.0, v["hs"]),
                  f"{h['name']}: histogram_sum {v['hs']} = report {g['sum_ns'] / 1e9}")
            check(v["count"] == v["hc"], f"{h['name']}: textfile _count {v['count']:.0f} = histogram_count")
            check(abs(v["sum"] - v["hs"]) <= 1e-9 * max(1.0, v["sum"]),
                  f"{h['name']}: textfile _sum {v['sum']} = histogram_sum")
            p99 = g["p99_ns"] / 1e9
            w = native_width(p99, schema)
            check(abs(v["q"] - p99) <= w, f"{h['name']}: native p99 {v['q']:.3e} s within {w:.2e} of "
                                          f"report {p99:.3e} s")
            lo, hi = 2.0 ** (math.ceil(math.log2(p99)) - 1), 2.0 ** math.ceil(math.log2(p99))
            check(lo <= v["qc"] <= hi, f"{h['name']}: classic p99 {v['qc']:.3e} s in the report's "
                                       f"classic bucket ({lo:.3e}, {hi:.3e}]")
        if len(hosts) > 1:
            # The union: the reports' read D2C buckets added up (the same bounds in every report).
            buckets, total = {}, 0
            for h, rep in zip(hosts, reps):
                g = group(rep, h["name"], "read", "D2C")
                if g is None:
                    continue
                total += g["count"]
                for b in g["buckets"]:
                    key = (b["lo_ns"], b["hi_ns"])
                    buckets[key] = buckets.get(key, 0) + b["count"]
            v = got["*"]
            check(v["hc"] == total, f"all hosts: sum of histogram_count {v['hc']:.0f} = reports {total}")
            rank, seen, p99 = math.ceil(0.99 * total), 0, None
            for (lo, hi), n in sorted(buckets.items()):
                seen += n
                if seen >= rank:
                    p99 = (lo + hi) / 2 / 1e9
                    break
            w = native_width(p99, schema)
            check(abs(v["q"] - p99) <= 2 * w, f"all hosts: native p99 of the sum {v['q']:.3e} s near "
                                              f"the union's {p99:.3e} s (2 native buckets: {2 * w:.2e})")
            lo, hi = 2.0 ** (math.ceil(math.log2(p99)) - 1), 2.0 ** math.ceil(math.log2(p99))
            check(lo <= v["qc"] <= hi, f"all hosts: classic p99 of sum by (le) {v['qc']:.3e} s in "
                                       f"({lo:.3e}, {hi:.3e}]")
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
    print(f"{len(failures)} checks failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
