#!/usr/bin/env python3
"""Turns block_rq_* events printed by `perf script` or `trace-cmd report` into the binary
stream btt reads (what `blkparse -d` writes: struct blk_io_trace records, no PDU).

blktrace itself cannot record on this machine (its relay files refuse to open), so this lets
btt analyse the same events the other tools saw, for the end-to-end comparison only.

  perf script -i perf.data --ns -F cpu,tid,time,event,trace | blktrace_from_text.py OUT
  trace-cmd report -i trace.dat | blktrace_from_text.py OUT

Record layout and action codes: include/uapi/linux/blktrace_api.h (struct blk_io_trace,
enum blktrace_act / blktrace_cat) and kernel/trace/blktrace.c (__blk_add_trace: direction
category bits, BLK_TC_FS for file system requests). dev is the kernel dev_t (MAJOR << 20 |
MINOR), the same encoding blktrace uses.
"""
import re
import struct
import sys

MAGIC = 0x65617400 | 0x07  # BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION
TC_SHIFT = 16
TC_READ, TC_WRITE, TC_FLUSH, TC_SYNC = 1 << 0, 1 << 1, 1 << 2, 1 << 3
TC_QUEUE, TC_REQUEUE, TC_ISSUE, TC_COMPLETE = 1 << 4, 1 << 5, 1 << 6, 1 << 7
TC_FS, TC_AHEAD, TC_META, TC_DISCARD, TC_FUA = 1 << 8, 1 << 11, 1 << 12, 1 << 13, 1 << 15
ACTIONS = {  # tracepoint -> (__BLK_TA_*, category)
    # btt follows a request from its Q (queue) event only; the insert is the closest thing these
    # tracepoints have to one, so btt's Q2D / Q2C here mean I2D / I2C.
    "block_rq_insert": (1, TC_QUEUE),
    "block_rq_issue": (7, TC_ISSUE),
    "block_rq_complete": (8, TC_COMPLETE),
    "block_rq_requeue": (6, TC_REQUEUE),
    "block_rq_merge": (2, TC_QUEUE),  # a request merged into another: btt's back merge "M"
}
# perf script: "  tid [cpu]  secs.nsecs:  block:block_rq_issue: 7,0 R 4096 () 123 + 8 ..."
# trace-cmd:   "  comm-tid  [cpu]  secs.usecs: block_rq_issue:  7,0 R 4096 () 123 + 8 ..."
LINE = re.compile(
    r"(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?(?P<ts>\d+\.\d+):\s+(?:block:)?"
    r"(?P<ev>block_rq_\w+):\s+(?P<maj>\d+),(?P<min>\d+)\s+(?P<rwbs>\S+)\s+(?P<rest>.*)")
RECORD = struct.Struct("<IIQQIIIIIHH")


def categories(rwbs):
    cat = TC_FS
    if "W" in rwbs:
        cat |= TC_WRITE
    elif "R" in rwbs:
        cat |= TC_READ
    if "D" in rwbs:
        cat |= TC_DISCARD
    if rwbs.startswith("F"):
        cat |= TC_FLUSH
    if len(rwbs) > 1 and rwbs.endswith("F"):
        cat |= TC_FUA
    if "S" in rwbs:
        cat |= TC_SYNC
    if "M" in rwbs:
        cat |= TC_META
    if "A" in rwbs:
        cat |= TC_AHEAD
    return cat


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: blktrace_from_text.py OUT < perf-script-or-trace-cmd-report.txt")
    out = open(sys.argv[1], "wb", buffering=1 << 20)
    first_ns = None
    seq = 0
    skipped = 0
    pack = RECORD.pack
    for line in sys.stdin:
        m = LINE.search(line)
        if not m:
            skipped += 1
            continue
        act = ACTIONS.get(m["ev"])
        if act is None:
            skipped += 1
            continue
        rest = m["rest"].split()
        try:
            plus = rest.index("+")
            sector = int(rest[plus - 1])
            nr = int(rest[plus + 1])
        except (ValueError, IndexError):
            skipped += 1
            continue
        secs, frac = m["ts"].split(".")
        ns = int(secs) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
        if first_ns is None:
            first_ns = ns
        seq += 1
        what, cat = act
        action = what | ((cat | categories(m["rwbs"])) << TC_SHIFT)
        dev = (int(m["maj"]) << 20) | int(m["min"])
        out.write(pack(MAGIC, seq, ns - first_ns, sector & 0xFFFFFFFFFFFFFFFF, nr * 512,
                       action, int(m["tid"]), dev, int(m["cpu"]), 0, 0))
    out.close()
    print(f"blktrace_from_text: {seq} events written, {skipped} lines skipped", file=sys.stderr)


if __name__ == "__main__":
    main()
