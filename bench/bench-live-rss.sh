#!/usr/bin/env bash
# Steady memory of `iotrace live` at full load (issue 22: "RSS under 64 MiB, and flat over a
# 10-minute run at full load"). Runs `iotrace live` with fio as its command (the same fio job
# as bench/bench-e2e.sh, for BENCH_LIVE_SECONDS) on a scratch loop device, reads VmRSS of the
# live process from /proc/PID/status every BENCH_LIVE_SAMPLE seconds, and prints the samples,
# their min and max, live's own summary line (events paired, lost, late, own CPU) and the
# intervals that lost events.
# Exit 1 if RSS ever exceeds 64 MiB, or if the last sample is more than 10% above the sample
# at the end of the first minute (growth after the start-up, when every table has its size).
#
# Environment:
#   BENCH_LIVE_SECONDS=600   fio runtime, i.e. the length of the live run
#   BENCH_LIVE_SAMPLE=10     seconds between two RSS samples
#   BENCH_LIVE_ARGS="-b ftrace -I 1"  live's options (text output: the intervals go to live.out)
#   BENCH_OUT=build/bench-live-rss    where rss.csv (t_s,rss_kb), live.out and live.err go
# Needs root. The loop device, its backing file, live and fio are removed or stopped on every
# exit path (live cleans its own tracefs instance when it is stopped by a signal).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

seconds=${BENCH_LIVE_SECONDS:-600}
period=${BENCH_LIVE_SAMPLE:-10}
read -r -a live_args <<<"${BENCH_LIVE_ARGS:--b ftrace -I 1}"
out_dir=${BENCH_OUT:-$repo/build/bench-live-rss}
limit_kb=$((64 * 1024))
growth_limit_pct=10

log() { echo "bench-live-rss: $*" >&2; }
die() { echo "bench-live-rss: error: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  die "this records kernel tracepoints and creates a loop device: run it as root
hint: sudo bash bench/bench-live-rss.sh"
fi
command -v fio >/dev/null || die "fio is not installed
hint: bash scripts/install-deps.sh"
bash scripts/ensure-tracefs.sh
[ -x build/iotrace ] || bash scripts/build.sh --binary-only >/dev/null
iotrace=$repo/build/iotrace

work=$(mktemp -d /tmp/iotrace_bench_live_rss_XXXXXX)
loop=""
live_pid=""
children_of() { cat /proc/"$1"/task/*/children 2>/dev/null || true; }
stop_live() {  # SIGTERM (live stops, cleans tracefs and ends its command), then SIGKILL, by pid
  local sig
  for sig in TERM KILL; do
    kill -0 "$live_pid" 2>/dev/null || break
    if [ "$sig" = KILL ]; then
      for c in $(children_of "$live_pid"); do kill -KILL "$c" 2>/dev/null || true; done
    fi
    kill -s "$sig" "$live_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$live_pid" 2>/dev/null || break; sleep 0.1; done
  done
  wait "$live_pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  if [ -n "$live_pid" ]; then stop_live; fi
  if [ -n "$loop" ]; then losetup -d "$loop" 2>/dev/null || true; fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir -p "$out_dir"
csv=$out_dir/rss.csv
err=$out_dir/live.err
live_out=$out_dir/live.out

truncate -s 1G "$work/disk.img"
loop=$(losetup --find --show "$work/disk.img")
echo mq-deadline >"/sys/block/$(basename "$loop")/queue/scheduler"
log "scratch device $loop, scheduler mq-deadline; live ${live_args[*]}; ${seconds}s of fio, RSS every ${period}s"

# fio is live's command: live enables its events before it starts fio and stops when fio exits.
"$iotrace" live "${live_args[@]}" -- taskset -c 0 fio --name=bench --filename="$loop" \
  --rw=randread --bs=4k --iodepth=16 --ioengine=libaio --direct=1 --time_based \
  --runtime="$seconds" --output="$work/fio.txt" >"$live_out" 2>"$err" &
live_pid=$!

echo "t_s,rss_kb" >"$csv"
start=$(date +%s.%N)
samples=()
times=()
next=$period
while kill -0 "$live_pid" 2>/dev/null; do
  now=$(date +%s.%N)
  elapsed=$(awk "BEGIN { printf \"%.1f\", $now - $start }")
  if awk "BEGIN { exit !($elapsed >= $next) }"; then
    rss=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$live_pid/status" 2>/dev/null || true)
    if [ -n "$rss" ]; then
      samples+=("$rss"); times+=("$elapsed")
      echo "$elapsed,$rss" >>"$csv"
      log "  ${elapsed}s: VmRSS ${rss} kB"
    fi
    next=$((next + period))
  fi
  sleep 0.5
done
rc=0
wait "$live_pid" || rc=$?
live_pid=""
summary=$(grep '^iotrace live:' "$err" | tail -1 || true)
log "live exited with status $rc: ${summary:-no summary line}"
[ "$rc" -eq 0 ] || die "live failed: $(tail -3 "$err" | tr '\n' ' ')"
[ "${#samples[@]}" -ge 2 ] || die "fewer than two RSS samples"

# The baseline is the last sample of the first minute (the first one if the run is shorter).
base_i=0
for i in "${!times[@]}"; do
  if awk "BEGIN { exit !(${times[$i]} <= 60.5) }"; then base_i=$i; fi
done
base=${samples[$base_i]}
last=${samples[-1]}
min=$(printf '%s\n' "${samples[@]}" | sort -n | head -1)
max=$(printf '%s\n' "${samples[@]}" | sort -n | tail -1)
growth=$(awk "BEGIN { printf \"%.1f\", 100 * ($last - $base) / $base }")
echo "samples (s: kB): $(paste -d: <(printf '%s\n' "${times[@]}") <(printf '%s\n' "${samples[@]}") | tr '\n' ' ')"
echo "VmRSS: min $min kB, max $max kB (limit $limit_kb kB); at ${times[$base_i]}s $base kB, at ${times[-1]}s $last kB: ${growth}% (limit ${growth_limit_pct}%)"
echo "live: ${summary:-no summary line}"
# Text intervals start "interval N: lost L, ...": where the losses were.
lossy=$(awk '$1 == "interval" && $3 == "lost" && $4 + 0 > 0 {
  printf "%s%s %d", sep, $2, $4; sep = ", " }' "$live_out")
echo "intervals that lost events (interval: lost): ${lossy:-none}"
fail=0
if [ "$max" -gt "$limit_kb" ]; then log "FAIL: RSS reached $max kB > $limit_kb kB"; fail=1; fi
if awk "BEGIN { exit !($growth > $growth_limit_pct) }"; then
  log "FAIL: RSS grew by ${growth}% after the first minute"; fail=1
fi
[ "$fail" -eq 0 ] && log "ok: RSS under 64 MiB and flat"
exit "$fail"
