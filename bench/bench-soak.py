#!/usr/bin/env python3
"""Soak run of a rotating recording (issue 25: "30 minutes at full fio load with rotation: RSS
and CPU per event flat over time, zero lost events, disk use within the bound").

`iotrace record --switch-output SIZE --switch-max-files N` records fio at full speed (the job of
bench/bench-e2e.sh: 4k random reads, iodepth 16, O_DIRECT, on a scratch loop device with
mq-deadline) as its command, for --minutes. Every --period seconds a row: the recorder's RSS
(the peak VmRSS of the period, sampled every 2 s), its CPU time (user + system, every thread:
the drain loop and the thread that finishes a file) per event the kernel counted in that period, and the disk use of the run's files (the
peak of samples taken every 2 s). The kernel's count is the script's own: counting perf events on
block_rq_insert/issue/complete with the device's filter, opened before the recording starts,
independent of iotrace. At the end: lost events = the kernel's count minus what the recording's
summary says its files held (the files removed on the way included), and iotrace's own loss
columns; the peak disk use against the bound, N files of SIZE plus the file being finished
(ftrace assembles it from its spools: for a while both are on disk).

Needs root, fio, a built build/iotrace. The loop device and its backing file are removed, and
the recording stopped, on every exit path.

  sudo python3 bench/bench-soak.py                       # 30 minutes, a row per 5 minutes
  sudo python3 bench/bench-soak.py --minutes 5 --period 60
"""
import argparse
import ctypes
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVENTS = ("block_rq_insert", "block_rq_issue", "block_rq_complete")

# struct perf_event_attr up to config (type, size, config); the rest zero (counting, enabled).
PERF_TYPE_TRACEPOINT = 2
PERF_EVENT_IOC_SET_FILTER = 0x40082406
SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}


class KernelCounter:
    """The tracepoints counted on every CPU for one device, as the kernel counts them."""

    def __init__(self, dev_t):
        libc = ctypes.CDLL(None, use_errno=True)
        nr = SYS_PERF_EVENT_OPEN[os.uname().machine]
        self.fds = []
        filt = ctypes.create_string_buffer(b"dev == %d" % dev_t)
        for name in EVENTS:
            with open(f"/sys/kernel/tracing/events/block/{name}/id") as f:
                config = int(f.read())
            for cpu in range(os.cpu_count()):
                attr = (ctypes.c_uint8 * 136)()
                ctypes.c_uint32.from_buffer(attr, 0).value = PERF_TYPE_TRACEPOINT
                ctypes.c_uint32.from_buffer(attr, 4).value = 136
                ctypes.c_uint64.from_buffer(attr, 8).value = config
                fd = libc.syscall(nr, attr, -1, cpu, -1, 0)
                if fd < 0:
                    continue  # an offline CPU
                if libc.ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filt) != 0:
                    os.close(fd)
                    sys.exit("bench-soak: error: cannot set the device filter on a perf event")
                self.fds.append(fd)
        if not self.fds:
            sys.exit("bench-soak: error: perf_event_open of the block tracepoints failed")

    def read(self):
        return sum(int.from_bytes(os.read(fd, 8), "little") for fd in self.fds)

    def close(self):
        for fd in self.fds:
            os.close(fd)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def disk_bytes(output):
    total = 0
    for path in glob.glob(glob.escape(output) + ".*"):
        try:
            total += os.stat(path).st_size
        except FileNotFoundError:
            pass  # removed meanwhile
    return total


def files_of(output):
    return len([p for p in glob.glob(glob.escape(output) + ".*") if re.search(r"\.\d{16}$", p)])


def size_bytes(text):
    units = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30, help="length of the run (default 30)")
    ap.add_argument("--period", type=float, default=300, help="seconds per row (default 300)")
    ap.add_argument("--backend", default="ftrace", choices=("ftrace", "perf"))
    ap.add_argument("--switch-output", default="256M", help="a size, as record takes it")
    ap.add_argument("--switch-max-files", type=int, default=4)
    ap.add_argument("--out", default=os.path.join(REPO, "build", "bench-soak"),
                    help="where soak.csv and record.err go")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-soak: error: this records kernel tracepoints and creates a loop device: "
                 "run it as root")
    iotrace = os.path.join(REPO, "build", "iotrace")
    if not os.access(iotrace, os.X_OK):
        sys.exit("bench-soak: error: no build/iotrace\nhint: bash scripts/build.sh --binary-only")
    if subprocess.run(["sh", "-c", "command -v fio"], capture_output=True).returncode != 0:
        sys.exit("bench-soak: error: fio is not installed")
    os.makedirs(args.out, exist_ok=True)
    bound = (args.switch_max_files + 1) * size_bytes(args.switch_output)

    work = tempfile.mkdtemp(prefix="iotrace_bench_soak_")
    loop = None
    rec = None
    counter = None
    try:
        img = os.path.join(work, "disk.img")
        with open(img, "wb") as f:
            f.truncate(1 << 30)
        loop = subprocess.run(["losetup", "--find", "--show", img], check=True,
                              capture_output=True, text=True).stdout.strip()
        name = os.path.basename(loop)
        with open(f"/sys/block/{name}/queue/scheduler", "w") as f:
            f.write("mq-deadline")
        with open(f"/sys/block/{name}/dev") as f:
            major, minor = (int(x) for x in f.read().split(":"))
        counter = KernelCounter((major << 20) | minor)
        output = os.path.join(work, "soak" + (".dat" if args.backend == "ftrace" else ".data"))
        seconds = int(args.minutes * 60)
        cmd = [iotrace, "record", "-b", args.backend, "--no-progress", "--dev", loop, "-o",
               output, "--switch-output=" + args.switch_output, "--switch-max-files",
               str(args.switch_max_files), "--", "taskset", "-c", "0", "fio", "--name=soak",
               "--filename=" + loop, "--rw=randread", "--bs=4k", "--iodepth=16",
               "--ioengine=libaio", "--direct=1", "--time_based", f"--runtime={seconds}",
               "--output=" + os.path.join(work, "fio.txt")]
        err_path = os.path.join(args.out, "record.err")
        print(f"bench-soak: {args.backend}, {args.minutes:g} min of fio on {loop} "
              f"(mq-deadline), --switch-output={args.switch_output} --switch-max-files "
              f"{args.switch_max_files}; a row every {args.period:g} s", file=sys.stderr)
        k_start = counter.read()
        with open(err_path, "w") as err:
            rec = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        start = time.monotonic()
        rows = []
        last_t, last_cpu, last_k = 0.0, 0.0, k_start
        next_row = args.period
        peak_period = peak_run = 0
        rss_period = 0  # the period's peak RSS (a sample after the recorder exited reads 0)
        while rec.poll() is None:
            time.sleep(2)
            t = time.monotonic() - start
            try:
                r, c = rss_kb(rec.pid), cpu_s(rec.pid)
            except (FileNotFoundError, ProcessLookupError):
                break
            rss_period = max(rss_period, r)
            d = disk_bytes(output)
            peak_period = max(peak_period, d)
            peak_run = max(peak_run, d)
            if t >= next_row:
                k = counter.read()
                ev = k - last_k
                rows.append((t, rss_period, c - last_cpu, ev,
                             (c - last_cpu) * 1e9 / ev if ev else 0, peak_period,
                             files_of(output)))
                print(f"bench-soak: {t / 60:5.1f} min: RSS {rss_period / 1024:.1f} MiB, "
                      f"{rows[-1][4]:.0f} ns CPU per event, disk {peak_period / 2**20:.0f} MiB",
                      file=sys.stderr)
                last_t, last_cpu, last_k = t, c, k
                peak_period = rss_period = 0
                next_row += args.period
        rc = rec.wait()
        rec = None
        kernel = counter.read() - k_start
        err_text = open(err_path).read()
        if rc != 0:
            sys.exit(f"bench-soak: error: record exited with {rc}: {err_text[-500:]}")

        with open(os.path.join(args.out, "soak.csv"), "w") as csv:
            csv.write("t_s,rss_kb,cpu_s,kernel_events,cpu_ns_per_event,disk_peak_bytes,files\n")
            for row in rows:
                csv.write("%.1f,%d,%.2f,%d,%.1f,%d,%d\n" % row)
        print(f"\n{args.backend}, --switch-output={args.switch_output} --switch-max-files "
              f"{args.switch_max_files}, {args.minutes:g} min of fio at full speed\n")
        print("| time | RSS | CPU in the period | events (kernel) | CPU per event | disk (peak) "
              "| files |")
        print("|---|---|---|---|---|---|---|")
        for t, r, c, ev, per, d, n in rows:
            print(f"| {t / 60:.1f} min | {r / 1024:.1f} MiB | {c:.1f} s | {ev:,} | {per:.0f} ns "
                  f"| {d / 2**20:.0f} MiB | {n} |")
        total = re.search(r"^\s+total\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", err_text, re.M)
        head = re.search(r"^iotrace: recorded .*$", err_text, re.M)
        recorded = int(total.group(1)) if total else -1
        print(f"\n{head.group(0) if head else 'no summary line'}")
        books = int(total.group(3)) + int(total.group(4)) if total else -1
        print(f"kernel count (the script's perf counters) {kernel:,}; the files held "
              f"{recorded:,}: {kernel - recorded:,} lost; iotrace's books: ring lost "
              f"{total.group(3) if total else '?'}, dropped silent "
              f"{total.group(4) if total else '?'} "
              f"({'every loss stated' if recorded + books == kernel else 'losses unaccounted'})")
        print(f"disk: peak {peak_run / 2**20:.0f} MiB of the run's files, bound "
              f"{bound / 2**20:.0f} MiB ({args.switch_max_files} files of "
              f"{args.switch_output} and the one being finished)")
        print(f"files made: {err_text.count('switching output to') + 1}, removed: "
              f"{err_text.count('(--switch-max-files')}")
        return 0 if recorded == kernel and peak_run <= bound else 1
    finally:
        if rec is not None:
            rec.send_signal(signal.SIGINT)
            try:
                rec.wait(timeout=60)
            except subprocess.TimeoutExpired:
                rec.kill()
                rec.wait()
        if counter is not None:
            counter.close()
        if loop:
            subprocess.run(["losetup", "-d", loop])
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    sys.exit(main())
