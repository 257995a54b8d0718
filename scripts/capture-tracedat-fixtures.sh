#!/usr/bin/env bash
# Records the trace.dat fixtures of tests/fixtures/tracedat/ on this machine with trace-cmd, and
# stores next to each file the text `trace-cmd report` prints for it (the reference the unit tests
# compare iotrace's reader against). Needs root, tracefs and trace-cmd; run it again only to
# refresh the fixtures on purpose (then commit the new files together with their .txt).
#
# Everything it creates is named after this module and removed on every exit path: a scratch
# loop device over a file under /tmp and the tracefs instance iotrace_tracedat_fx. It changes no
# global tracing state: trace-cmd runs with -B (its own instance) and -d --no-filter (see
# docs/kernel-notes.md: without -d trace-cmd dies here, without --no-filter it segfaults).
#
# /proc/kallsyms is hidden (bind-mounted to an empty file in a private mount namespace) so that
# the files stay small: trace-cmd would otherwise store 5 MB of symbols that iotrace never reads.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../tests/fixtures/tracedat}"
instance=iotrace_tracedat_fx
tracefs=/sys/kernel/tracing

if [ "$(id -u)" -ne 0 ]; then echo "capture-tracedat-fixtures: needs root" >&2; exit 1; fi
if ! command -v trace-cmd >/dev/null; then echo "capture-tracedat-fixtures: needs trace-cmd" >&2; exit 1; fi
if [ ! -e "$tracefs/events/block" ]; then echo "capture-tracedat-fixtures: no block events under $tracefs" >&2; exit 1; fi

scratch="$(mktemp -d /tmp/iotrace-tracedat-fx.XXXXXX)"
loop=""
cleanup() {
  [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null || true
  # trace-cmd leaves its instance behind on this kernel (its reset fails on set_ftrace_filter).
  [ -d "$tracefs/instances/$instance" ] && rmdir "$tracefs/instances/$instance" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT INT TERM

mkdir -p "$out"
truncate -s 64M "$scratch/disk.img"
loop="$(losetup -f --show "$scratch/disk.img")"
dev="$(basename "$loop")"
# mq-deadline so that requests go through block_rq_insert (with `none` most are issued directly).
echo mq-deadline > "/sys/block/$dev/queue/scheduler"
: > "$scratch/kallsyms"

# record NAME "TRACE-CMD OPTIONS" "COMMAND": one trace-cmd record run in a private mount namespace.
record() {
  local name="$1" opts="$2" cmd="$3"
  rm -f "$out/$name.dat"
  unshare -m sh -c "mount --bind '$scratch/kallsyms' /proc/kallsyms &&
    timeout -s INT 120 trace-cmd record -q -d --no-filter -C mono -B $instance $opts -o '$out/$name.dat' -- $cmd" \
    >"$scratch/$name.log" 2>&1 || true  # trace-cmd exits 1 here after writing a good file
  [ -d "$tracefs/instances/$instance" ] && rmdir "$tracefs/instances/$instance" || true
  if ! trace-cmd report -i "$out/$name.dat" >/dev/null 2>&1; then
    echo "capture-tracedat-fixtures: trace-cmd could not read back $name.dat:" >&2
    cat "$scratch/$name.log" >&2
    exit 1
  fi
  # The references: every event with nanosecond timestamps and raw field values, and the stats.
  trace-cmd report -i "$out/$name.dat" -t -R > "$out/$name.report.txt" 2>/dev/null
  trace-cmd report -i "$out/$name.dat" --stat > "$out/$name.stat.txt" 2>/dev/null
  echo "$name.dat: $(grep -c ': block_' "$out/$name.report.txt") events"
}

block_events="-e block:block_rq_insert -e block:block_rq_issue -e block:block_rq_complete"
block_events+=" -e block:block_rq_requeue -e block:block_rq_merge"

# v6: the layout iotrace reads and writes; direct writes, so every request is seen.
record dd_v6 "$block_events --file-version 6" \
  "dd if=/dev/zero of=$loop bs=4k count=400 oflag=direct status=none"
# v6 with buffered writes and a read-back: merges, larger requests, several pages per CPU.
record dd_buffered_v6 "$block_events --file-version 6" \
  "sh -c 'dd if=/dev/urandom of=$loop bs=64k count=64 status=none conv=fsync &&
  dd if=$loop of=/dev/null bs=64k count=64 iflag=direct status=none'"
# v7, trace-cmd 3.1.6's default (zstd-compressed sections), and v7 uncompressed.
record dd_v7_zstd "-e block:block_rq_issue -e block:block_rq_complete" \
  "dd if=/dev/zero of=$loop bs=64k count=20 oflag=direct status=none"
record dd_v7_none "-e block:block_rq_issue -e block:block_rq_complete --compression none" \
  "dd if=/dev/zero of=$loop bs=64k count=20 oflag=direct status=none"

{
  echo "Recorded by scripts/capture-tracedat-fixtures.sh on $(date -u +%Y-%m-%d)"
  echo "kernel: $(uname -r)  trace-cmd: $(trace-cmd --version 2>&1 | grep -o 'version [^ ]*')"
  echo "loop device: $loop ($(cat "/sys/block/$dev/dev")), scheduler mq-deadline"
} > "$out/README"
ls -l "$out"
