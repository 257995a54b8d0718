#!/usr/bin/env bash
# Records the real perf.data fixtures under tests/fixtures/perf/ on this machine's kernel:
#   block-mq-deadline.data    perf record -e block:block_rq_* -a around dd on a scratch loop
#                             device (mq-deadline): direct writes, direct reads, buffered+fsync
#   block-callchain-mixed.data  the same with -g, plus sched:sched_process_exec and a cpu-clock
#                             software event (non-tracepoint samples the reader must skip)
#   block-pipe.data           the first one in pipe mode (perf record -o - > FILE)
# ONLY_PIPE=1 records block-pipe.data alone.
# Next to each: FILE.script.txt, `perf script` text the unit tests compare the reader with.
# Needs root (perf record -a, losetup). Cleans up its loop device and image in every path.
# Usage: scripts/capture-perf-fixtures.sh [output-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
out_dir=${1:-tests/fixtures/perf}

if [ "$(id -u)" -ne 0 ]; then
  echo "capture-perf-fixtures: error: needs root (perf record -a, losetup)" >&2
  exit 1
fi
for tool in perf losetup dd; do
  command -v "$tool" >/dev/null || { echo "capture-perf-fixtures: error: $tool not found" >&2; exit 1; }
done

work=$(mktemp -d /tmp/perfdata-fixtures.XXXXXX)
dev=""
cleanup() {
  if [ -n "$dev" ]; then losetup -d "$dev" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

truncate -s 64M "$work/perfdata-scratch.img"
dev=$(losetup -f --show "$work/perfdata-scratch.img")
echo mq-deadline > "/sys/block/$(basename "$dev")/queue/scheduler"
echo "capture-perf-fixtures: scratch device $dev ($(cat "/sys/block/$(basename "$dev")/queue/scheduler"))" >&2

workload="dd if=/dev/zero of=$dev bs=4k count=32 oflag=direct status=none;
          dd if=$dev of=/dev/null bs=4k count=32 iflag=direct status=none;
          dd if=/dev/zero of=$dev bs=4k count=64 conv=fsync status=none"
block_events=block:block_rq_insert,block:block_rq_issue,block:block_rq_complete,block:block_rq_requeue,block:block_rq_merge

record() {
  local name=$1; shift
  # --synth=task: COMM/FORK records for running tasks, no MMAP records (keeps the file small).
  perf record "$@" -a --synth=task -o "$work/$name.data" -- sh -c "$workload" 2>"$work/$name.log"
  mkdir -p "$out_dir"
  cp "$work/$name.data" "$out_dir/$name.data"
  chmod 0644 "$out_dir/$name.data"
  perf script -i "$out_dir/$name.data" -F comm,pid,tid,cpu,time,event,trace --ns \
    >"$out_dir/$name.script.txt" 2>/dev/null
  local size
  size=$(stat -c %s "$out_dir/$name.data")
  echo "capture-perf-fixtures: $out_dir/$name.data: $size bytes," \
       "$(wc -l <"$out_dir/$name.script.txt") samples" >&2
  if [ "$size" -gt 300000 ]; then
    echo "capture-perf-fixtures: error: $name.data is over 300 KB" >&2
    exit 1
  fi
}

# record_pipe NAME ARGS...: like record, with perf writing its pipe-mode stream to stdout.
record_pipe() {
  local name=$1; shift
  perf record "$@" -a --synth=task -o - -- sh -c "$workload" >"$work/$name.data" 2>"$work/$name.log"
  mkdir -p "$out_dir"
  cp "$work/$name.data" "$out_dir/$name.data"
  chmod 0644 "$out_dir/$name.data"
  perf script -i "$out_dir/$name.data" -F comm,pid,tid,cpu,time,event,trace --ns \
    >"$out_dir/$name.script.txt" 2>/dev/null
  echo "capture-perf-fixtures: $out_dir/$name.data: $(stat -c %s "$out_dir/$name.data") bytes," \
       "$(wc -l <"$out_dir/$name.script.txt") samples" >&2
}

if [ "${ONLY_PIPE:-0}" = 1 ]; then
  record_pipe block-pipe -e "$block_events"
  exit 0
fi
record block-mq-deadline -e "$block_events"
record block-callchain-mixed -g -e "$block_events,sched:sched_process_exec,cpu-clock/period=10000000/"
record_pipe block-pipe -e "$block_events"
