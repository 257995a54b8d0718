#!/usr/bin/env python3
"""Independent reference for iotrace report's numbers.

Reads the text that `perf script --ns -F cpu,time,event,trace` or `trace-cmd report -t` prints
for block_rq_* events, pairs insert -> issue -> complete with the rules of
docs/kernel-notes.md (written here from those rules, not from iotrace's code), and prints
exact per (dev, op, phase) statistics as CSV with the header of `iotrace report --summary-csv`,
followed by the pairing counters as `# name=value` lines.

Percentiles are exact nearest-rank values (the smallest value with at least p% of the samples at
or below it); iotrace's histogram percentiles must lie within its bucket bound of these.
"""
import collections
import math
import re
import sys

FLUSH_DONE_SECTOR = 2**64 - 1
PHASES = ("Q2D", "I2D", "D2C", "Q2C", "I2C")

# "<cpu> <time>: <event>: <trace text>" from perf script; trace-cmd report lines look like
# "<comm>-<pid> [<cpu>] <time>: <event>: <trace text>".
PERF_RE = re.compile(r"\[(\d+)\]\s+(\d+\.\d+):\s+(?:block:)?block_((?:rq|bio)_\w+):\s+(.*)$")
# "7,1 WS 4096 () 230944 + 8 ..." (insert/issue), "7,1 WS () 230944 + 8 ..." (complete),
# "7,1 W 230944 + 8 [fio]" (bio events): dev, rwbs, then the first "sector + nr".
DEV_RE = re.compile(r"^(\d+),(\d+)\s+(\S+)\s")
RANGE_RE = re.compile(r"\s(\d+) \+ (\d+)\b")


def op_of(rwbs):
    """Operation from the kernel's rwbs text (blk_fill_rwbs): F = preflush prefix, then op."""
    s = rwbs
    if len(s) >= 2 and s[0] == "F" and s[1] in "WRDFN":
        s = s[1:]
    c = s[:1]
    return {"R": "read", "W": "write", "F": "flush", "D": "discard"}.get(c, "other")


def parse(lines, counters=None):
    """Block events in time order. A line equal to another in CPU, time, event and text is one
    record printed twice (perf record writes some samples again in its next drain of the same
    CPU's ring): kept once, and counted in counters["duplicates"] when given."""
    events = []
    for line in lines:
        m = PERF_RE.search(line)
        if not m:
            continue
        cpu, ts, name, trace = m.groups()
        trace = trace.strip()
        d = DEV_RE.match(trace)
        r = RANGE_RE.search(trace, d.end() - 1) if d else None
        if not d or not r:
            continue
        major, minor, rwbs = d.groups()
        sector, nr = r.groups()
        sec, frac = ts.split(".")
        ns = int(sec) * 10**9 + int(frac.ljust(9, "0")[:9])
        kind = name[3:] if name.startswith("rq_") else name  # insert, issue, ..., bio_queue
        events.append((ns, kind, (int(major), int(minor)), rwbs, int(sector), int(nr),
                       (int(cpu), name, trace)))
    events.sort(key=lambda e: e[0])  # stable: equal times keep file order
    unique = []
    same_time = set()  # the lines at unique[-1]'s time
    for e in events:
        if not unique or e[0] != unique[-1][0]:
            same_time = set()
        if e[6] in same_time:
            if counters is not None:
                counters["duplicates"] += 1
            continue
        same_time.add(e[6])
        unique.append(e)
    return [e[:6] for e in unique]


class Entry:
    __slots__ = ("ins", "iss", "nr", "op", "q", "rq")

    def __init__(self, ins, iss, nr, op, q=None):
        self.ins, self.iss, self.nr, self.op, self.q = ins, iss, nr, op, q
        self.rq = False  # requeued: its next insert and issue are its own again


def pair(events, requests=None):
    """Returns (samples, counters); appends (dev, sector, op, ins, iss, done) per finished
    request to `requests` when given."""
    samples = collections.defaultdict(list)
    c = collections.Counter()
    table = {}
    flushq = collections.defaultdict(collections.deque)
    devs_with_insert = set()
    queued = {}  # (dev, sector) -> time a bio was queued there (block_bio_queue)
    # Issued requests moved aside when another request came to their sector while they were
    # in flight (a read and a write of one block, two reads of it), at most 256: a completion
    # of their size and op that the request now at the sector cannot take goes to the one of
    # them issued last (one whose completion was lost then stays behind).
    apart = collections.defaultdict(list)

    def completed(e, dev, sector, ts):
        """The samples of issued request e, completed at ts."""
        samples[(dev, e.op, "D2C")].append(ts - e.iss)
        if requests is not None:
            requests.append((dev, sector, e.op, e.ins, e.iss, ts))
        if e.q is not None:
            samples[(dev, e.op, "Q2C")].append(ts - e.q)
        if e.ins is not None:
            samples[(dev, e.op, "I2C")].append(ts - e.ins)

    def move_apart(key):
        """Moves the issued request at key aside, if there is room."""
        old = table.get(key)
        if old is None or old.iss is None or sum(len(a) for a in apart.values()) >= 256:
            return False
        apart[key].append(table.pop(key))
        c["overlapping"] += 1
        return True

    for ts, kind, dev, rwbs, sector, nr in events:
        c["events_" + kind] += 1
        op = op_of(rwbs)
        key = (dev, sector)
        if kind == "bio_queue":
            queued[key] = ts
        elif kind == "bio_backmerge":
            # The bio joined the back of a request that already exists: it starts no request.
            queued.pop(key, None)
            c["bio_merges"] += 1
        elif kind == "bio_frontmerge":
            # The bio joined the front of the request that started right after it: that request
            # now starts here (and keeps its own, earlier, queue time).
            queued.pop(key, None)
            c["bio_merges"] += 1
            old = (dev, sector + nr)
            if old in queued:
                queued[key] = queued.pop(old)
            elif old in table and table[old].iss is None:
                e = table.pop(old)
                e.nr += nr
                table[key] = e
        elif kind.startswith("bio_"):
            continue
        elif kind == "insert":
            devs_with_insert.add(dev)
            if key in table and table[key].rq:
                continue  # the kernel inserts a requeued request again: the same request
            if key in table and not move_apart(key):
                c["collisions"] += 1
            table[key] = Entry(ts, None, nr, op, queued.pop(key, None))
        elif kind == "issue":
            if op == "flush" and nr == 0:
                flushq[dev].append(ts)
                c["flushes"] += 1
                continue
            e = table.get(key)
            if e is not None and e.iss is not None and not e.rq:
                if not move_apart(key):  # no room: the older one is given up
                    c["collisions"] += 1
                    del table[key]
                e = None
            if e is None:
                e = table[key] = Entry(None, ts, nr, op, queued.pop(key, None))
                if e.q is not None:
                    samples[(dev, op, "Q2D")].append(ts - e.q)
                if dev in devs_with_insert:
                    c["issue_without_insert_insert_missing"] += 1
                else:
                    c["issue_without_insert_no_insert_events"] += 1
            elif e.iss is None:
                samples[(dev, e.op, "I2D")].append(ts - e.ins)
                if e.q is not None:
                    samples[(dev, op, "Q2D")].append(ts - e.q)
                e.iss = ts
                e.op = op
                e.nr = nr  # merges since insert grew it: the size at issue is what completes
            else:
                c["reissues"] += 1  # after a requeue: D2C runs from this issue
                e.rq = False
                e.iss = ts
                e.nr = nr
        elif kind == "requeue":
            c["requeues"] += 1
            e = table.get(key)
            if e is not None and e.iss is not None:
                e.rq = True
        elif kind == "merge":
            if table.pop(key, None) is not None:
                c["merges"] += 1
            else:
                # mq-deadline merges a new request into a queued one before its insert event
                # (dd_insert_request: blk_mq_sched_try_insert_merge, then trace_block_rq_insert).
                c["merged_before_insert"] += 1
        elif kind == "complete":
            if sector == FLUSH_DONE_SECTOR:
                if flushq[dev]:
                    samples[(dev, "flush", "D2C")].append(ts - flushq[dev].popleft())
                else:
                    c["flush_complete_without_issue"] += 1
                continue
            if nr == 0:
                # Zero-length completion: the flush machinery ending an empty preflush request
                # (never inserted or issued itself) or a request after its post-flush.
                c["preflush_completions"] += 1
                continue
            e = table.get(key)
            mine = e is not None and e.iss is not None and (e.nr, e.op) == (nr, op)
            others = [a for a in apart.get(key, ()) if (a.nr, a.op) == (nr, op)]
            if others and not mine:
                a = max(reversed(others), key=lambda a: a.iss)  # ties: the last moved
                apart[key].remove(a)
                completed(a, dev, sector, ts)
                continue
            if e is None:
                c["complete_without_issue"] += 1
                continue
            if e.iss is None:
                # Inserted, completed, its issue not seen (lost): insert -> complete still holds.
                c["complete_without_issue"] += 1
                del table[key]
                if e.q is not None:
                    samples[(dev, e.op, "Q2C")].append(ts - e.q)
                samples[(dev, e.op, "I2C")].append(ts - e.ins)
                continue
            del table[key]
            if nr < e.nr:
                c["partial_completions"] += 1
                e.nr -= nr
                table[(dev, sector + nr)] = e
                continue
            completed(e, dev, sector, ts)
    c["in_flight_at_end"] = (len(table) + sum(len(q) for q in flushq.values()) +
                             sum(len(a) for a in apart.values()))
    return samples, c


def percentile(sorted_values, p):
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


def main():
    dups = collections.Counter()
    events = parse(sys.stdin, dups)
    if "--requests" in sys.argv[1:]:
        # One line per request that completed: dev,sector,op,insert_ns,issue_ns,complete_ns.
        requests = []
        pair(events, requests)
        for dev, sector, op, ins, iss, done in requests:
            print("%d:%d,%d,%s,%s,%d,%d" % (dev[0], dev[1], sector, op,
                                          "" if ins is None else ins, iss, done))
        return
    samples, counters = pair(events)
    counters.update(dups)
    print("dev,device,op,phase,count,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns")
    order = {p: i for i, p in enumerate(PHASES)}
    for (dev, op, phase) in sorted(samples, key=lambda k: (k[0], k[1], order[k[2]])):
        v = sorted(samples[(dev, op, phase)])
        mean = sum(v) / len(v)
        print("%d:%d,,%s,%s,%d,%d,%.1f,%d,%d,%d,%d,%d" % (
            dev[0], dev[1], op, phase, len(v), v[0], mean, percentile(v, 50),
            percentile(v, 90), percentile(v, 99), percentile(v, 99.9), v[-1]))
    for name in sorted(counters):
        print("# %s=%d" % (name, counters[name]))


if __name__ == "__main__":
    main()
