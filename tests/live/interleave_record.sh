#!/bin/bash
# Two recordings of a workload taken in alternating windows, so that whatever else the machine
# does (a compile, a benchmark) falls on both alike: the windows come in pairs, one for A and
# one for B, in an order drawn at random for each pair. Each window runs fio with A's or B's
# arguments while only that recorder's events are on (--delay -1, enable/disable on --control,
# each answered before going on). Before the first pair, one window that neither recorder sees.
#
# Why the random order and the first window: diff's test relabels intervals between A and B,
# which is valid when they could have been swapped. With A always first they could not: whatever
# the machine does at the rhythm of the pairs (about a second here: a recorder's periodic work,
# a neighbour's timer) can fall on A's windows more than on B's for a whole run, and the first
# I/O on fresh devices (the loop worker starting, the backing file's first pages) fell on A's
# first window alone.
#
# usage: interleave_record.sh IOTRACE WINDOWS OUT_A BACKEND_A DEVS_A FIO_A OUT_B BACKEND_B DEVS_B
#                             FIO_B
# WINDOWS: even, half of them A's; DEVS_*: comma-separated devices for --dev; FIO_*: fio's
# arguments for one window (split on blanks). Exits non-zero when a recorder or a window's fio
# fails.
set -eu
bin=$1 windows=$2
dir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

# start NAME OUT BACKEND DEVS CTL_FD ACK_FD
start() {
  mkfifo "$dir/$1.ctl" "$dir/$1.ack"
  local devs=()
  IFS=, read -ra list <<< "$4"
  for d in "${list[@]}"; do devs+=(--dev "$d"); done
  "$bin" record -b "$3" "${devs[@]}" -o "$2" -D -1 \
    --control "fifo:$dir/$1.ctl,$dir/$1.ack" >"$dir/$1.log" 2>&1 &
  pids+=($!)
}

# say FD_CTL FD_ACK COMMAND: one command, waiting for its ack.
say() {
  echo "$3" >&"$1"
  local answer
  read -r -t 10 -u "$2" answer
  [ "$answer" = ack ]
}

start a "$3" "$4" "$5"
start b "$7" "$8" "$9"
exec 7>"$dir/a.ctl" 8<"$dir/a.ack" 5>"$dir/b.ctl" 6<"$dir/b.ack"
say 7 8 ping
say 5 6 ping
read -ra fio_a <<< "$6"
read -ra fio_b <<< "${10}"
fio "${fio_a[@]}" >/dev/null
for ((w = 0; w < windows; w += 2)); do
  if ((RANDOM % 2 == 0)); then order="a b"; else order="b a"; fi
  for side in $order; do
    if [ "$side" = a ]; then
      say 7 8 enable; fio "${fio_a[@]}" >/dev/null; say 7 8 disable
    else
      say 5 6 enable; fio "${fio_b[@]}" >/dev/null; say 5 6 disable
    fi
  done
done
say 7 8 stop
say 5 6 stop
for pid in "${pids[@]}"; do
  if ! wait "$pid"; then
    cat "$dir"/*.log >&2
    exit 1
  fi
done
pids=()
