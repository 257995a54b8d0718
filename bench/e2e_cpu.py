#!/usr/bin/env python3
"""CPU snapshot for bench/bench-e2e.sh: `e2e_cpu.py OUR_PID` prints two numbers, in seconds:

  busy     the whole machine's busy CPU since boot (/proc/stat "cpu" line: user + nice +
           system + irq + softirq + steal; guest time is already inside user)
  foreign  CPU used so far by user-space processes that are NOT descendants of OUR_PID
           (utime + stime + cutime + cstime of each, from /proc/PID/stat)

The difference of two snapshots gives the busy CPU of a run and the part of it that other
users of the machine (compilers, fuzzers, other benchmarks) spent meanwhile. Summing
cutime/cstime counts a foreign process that exits during the run once, in its parent, once
the parent has reaped it; a process that was there at the start and is gone at the end moves
its whole time into its parent, so the difference keeps only what it used during the run.
Kernel threads are never foreign: the loop device's workers and interrupts are the work
being measured.
"""
import os
import sys

PF_KTHREAD = 0x00200000


def busy_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    assert fields[0] == "cpu"
    v = [int(x) for x in fields[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = v[:7]
    steal = v[7] if len(v) > 7 else 0
    return user + nice + system + irq + softirq + steal


def processes():
    """pid -> (ppid, flags, ticks) for every process readable now."""
    procs = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                data = f.read()
        except OSError:
            continue  # exited meanwhile
        # comm may contain spaces and parentheses: fields start after the last ')'.
        rest = data[data.rfind(")") + 2:].split()
        ppid, flags = int(rest[1]), int(rest[6])
        ticks = sum(int(x) for x in rest[11:15])  # utime stime cutime cstime
        procs[int(name)] = (ppid, flags, ticks)
    return procs


def foreign_ticks(our_pid):
    procs = processes()
    ours = {}

    def is_ours(pid):
        seen = []
        while pid > 1 and pid not in ours:
            if pid == our_pid:
                ours[pid] = True
                break
            seen.append(pid)
            entry = procs.get(pid)
            if entry is None:
                break
            pid = entry[0]
        answer = ours.get(pid, False)
        for p in seen:
            ours[p] = answer
        return answer

    total = 0
    for pid, (_ppid, flags, ticks) in procs.items():
        if flags & PF_KTHREAD or pid == 2:
            continue
        if is_ours(pid):
            continue
        total += ticks
    return total


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: e2e_cpu.py OUR_PID")
    hz = os.sysconf("SC_CLK_TCK")
    our = int(sys.argv[1])
    foreign = foreign_ticks(our)
    busy = busy_ticks()
    print(f"{busy / hz:.2f} {foreign / hz:.2f}")


if __name__ == "__main__":
    main()
