#!/usr/bin/env bash
# End-to-end comparison of iotrace with what users would run instead (perf record, perf record
# -B, trace-cmd record, bpftrace; bpftrace's biolatency against iotrace live; perf script,
# trace-cmd report, btt), on the same fio workload
# on a scratch loop device, interleaved, several repetitions. Prints one table (medians and
# min..max) with the ratios against each peer and the targets of issues 6 and 22, and writes the raw
# numbers next to it. See bench/README.md for what every column means.
#
# Environment:
#   BENCH_SECONDS=5           fio runtime of each recording run
#   BENCH_REPS=6              repetitions of the recording runs (all tools, interleaved, a
#                             no-tracer run before and after every tracer run)
#   BENCH_REPORT_EVENTS=3000000  at least this many events in the recording that is reported on
#   BENCH_REPORT_REPS=3       repetitions of each report timing (0: no report phase at all)
#   BENCH_OUT=build/bench-e2e where table.md and raw.csv go
#   BENCH_TOOLS="..."         record-phase tools to run (default: all of them)
#   BENCH_NICE=-10            nice value of this script and all it starts (fio, tracers,
#                             readers), so that other work on the machine disturbs less
# Needs root. Everything it creates (loop device, backing file, recordings, tracefs
# instance) is removed on every exit path; no tracer is left running.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

seconds=${BENCH_SECONDS:-5}
reps=${BENCH_REPS:-6}
report_events=${BENCH_REPORT_EVENTS:-3000000}
report_reps=${BENCH_REPORT_REPS:-3}
out_dir=${BENCH_OUT:-$repo/build/bench-e2e}
all_tools="none perf perf-B trace-cmd bpftrace iotrace-perf iotrace-ftrace iotrace
           bpftrace-biolatency iotrace-live iotrace-live-read iotrace-live-d2c"
tools=${BENCH_TOOLS:-$all_tools}
events=(block:block_rq_insert block:block_rq_issue block:block_rq_complete
        block:block_rq_requeue block:block_rq_merge)
tc_instance=iotrace_bench_e2e  # trace-cmd's own instance (-B), named after this module

log() { echo "bench-e2e: $*" >&2; }
die() { echo "bench-e2e: error: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  die "this records kernel tracepoints and creates a loop device: run it as root
hint: sudo bash bench/bench-e2e.sh"
fi

# ---------------------------------------------------------------- setup and cleanup
renice -n "${BENCH_NICE:--10}" -p $$ >/dev/null
bash scripts/install-deps.sh bpftrace blktrace time
bash scripts/ensure-tracefs.sh
log "building iotrace (scripts/build.sh)"
if [ "$report_reps" -eq 0 ]; then
  bash scripts/build.sh --binary-only >/dev/null  # handoff_benchmark is for the report phase
else
  bash scripts/build.sh >/dev/null
fi
iotrace=$repo/build/iotrace
tracefs=/sys/kernel/tracing

work=$(mktemp -d /tmp/iotrace_bench_e2e_XXXXXX)
loop=""
running=()  # pids of the tracers we started (or of the /usr/bin/time wrapping one)
rm_instance() {  # trace-cmd 3.1.6 leaves its -B instance behind when it fails at exit (it does here)
  if [ -d "$tracefs/instances/$tc_instance" ]; then
    rmdir "$tracefs/instances/$tc_instance" 2>/dev/null || true
  fi
}
children_of() { cat /proc/"$1"/task/*/children 2>/dev/null || true; }
stop_tracer() {  # stop_tracer PID: gates first (normal end), then SIGINT, then SIGKILL, by pid
  local pid=$1 sig
  for sig in "" INT KILL; do
    if [ -n "$sig" ]; then
      for c in $(children_of "$pid"); do kill -s "$sig" "$c" 2>/dev/null || true; done
      kill -s "$sig" "$pid" 2>/dev/null || true
    fi
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null || break
  done
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  if [ -n "${fio_pid:-}" ]; then kill -TERM "$fio_pid" 2>/dev/null || true; wait "$fio_pid" 2>/dev/null || true; fi
  for f in "$work"/ready*; do
    if [ -s "$f" ]; then kill -TERM "$(cat "$f")" 2>/dev/null || true; fi
  done
  for pid in "${running[@]}"; do stop_tracer "$pid"; done
  rm_instance
  if [ -n "$loop" ]; then losetup -d "$loop" 2>/dev/null || true; fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mkdir -p "$out_dir"
raw=$out_dir/raw.csv
table=$out_dir/table.md
echo "phase,rep,seq,tool,status,reason,ios,iops,events,lost,file_bytes,window_s,busy_s,foreign_s,own_cpu_s,vcsw,ivcsw,rss_kb,wall_s,user_s,sys_s,late" >"$raw"

# The scratch disk: sparse backing file under /tmp, mq-deadline.
truncate -s 1G "$work/disk.img"
loop=$(losetup --find --show "$work/disk.img")
echo mq-deadline >"/sys/block/$(basename "$loop")/queue/scheduler"
devnum=$(cat "/sys/block/$(basename "$loop")/dev")
log "scratch device $loop ($devnum), scheduler mq-deadline; work dir $work"

# The gate: started by each tracer as its command once the tracer is ready (perf, trace-cmd,
# bpftrace and iotrace all start their command only after their events are enabled). It
# writes its pid to the ready file and waits; killing it ends the recording.
cat >"$work/gate.sh" <<'EOF'
#!/bin/sh
echo $$ >"$1.tmp" && mv "$1.tmp" "$1"
exec sleep 1000000
EOF
chmod +x "$work/gate.sh"

# bpftrace: D2C histogram aggregated in the kernel, every disk (like the other tracers), plus
# an event count so that its cost can be put per event.
cat >"$work/d2c.bt" <<'EOF'
tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; @n = count(); }
tracepoint:block:block_rq_complete {
  $s = @start[args->dev, args->sector];
  if ($s) { @d2c = hist(nsecs - $s); delete(@start[args->dev, args->sector]); }
  @n = count();
}
END { clear(@start); }
EOF

# bpftrace's biolatency (what users run to watch disk latency, the peer of iotrace live): the
# issue time of each request in a map, the issue-to-complete time of each completion into a
# log2 histogram (us) that is printed and emptied every second. Plus the event count, as above.
cat >"$work/biolatency.bt" <<'EOF'
tracepoint:block:block_rq_issue { @issued[args->dev, args->sector] = nsecs; @n = count(); }
tracepoint:block:block_rq_complete {
  $t = @issued[args->dev, args->sector];
  if ($t) { @us = hist((nsecs - $t) / 1000); delete(@issued[args->dev, args->sector]); }
  @n = count();
}
interval:s:1 { time("%H:%M:%S\n"); print(@us); clear(@us); }
END { clear(@issued); clear(@us); }
EOF

fio_pid=""
fio_job() {  # fio_job OUTPUT.json [extra fio args...]
  local out=$1 rc=0; shift
  # In the background and waited for, so that a signal to this script is handled at once.
  taskset -c 0 fio --name=bench --filename="$loop" --rw=randread --bs=4k --iodepth=16 \
    --ioengine=libaio --direct=1 --output-format=json --output="$out" "$@" &
  fio_pid=$!
  wait "$fio_pid" || rc=$?
  fio_pid=""
  return "$rc"
}
fio_field() {  # fio_field FILE iops|total_ios
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['jobs'][0]['read'][sys.argv[2]])" "$1" "$2"
}
now_s() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.3f\", $* }"; }
csv_row() {  # csv_row phase rep seq tool status reason key=value...
  python3 - "$raw" "$@" <<'EOF'
import csv, sys
cols = ["phase","rep","seq","tool","status","reason","ios","iops","events","lost","file_bytes",
        "window_s","busy_s","foreign_s","own_cpu_s","vcsw","ivcsw","rss_kb","wall_s","user_s",
        "sys_s","late"]
path, phase, rep, seq, tool, status, reason, *kv = sys.argv[1:]
row = dict.fromkeys(cols, "")
row.update(phase=phase, rep=rep, seq=seq, tool=tool, status=status,
           reason=reason.replace("\n", " ")[:200])
for item in kv:
    k, v = item.split("=", 1)
    assert k in cols, k
    row[k] = v
with open(path, "a", newline="") as f:
    csv.writer(f).writerow([row[c] for c in cols])
EOF
}
na_record() { log "  $2: n/a: $3"; csv_row record "$1" "$run_seq" "$2" n/a "$3"; }

# ------------------------------------------------------------ which tools are present
declare -A reason
command -v perf >/dev/null || reason[perf]="perf is not installed"
[ -n "${reason[perf]:-}" ] && reason[perf-B]=${reason[perf]}
command -v trace-cmd >/dev/null || reason[trace-cmd]="trace-cmd is not installed"
if ! command -v bpftrace >/dev/null; then
  reason[bpftrace]="bpftrace is not installed"
elif ! bpftrace -e 'tracepoint:block:block_rq_issue { @n = count(); exit(); }' \
       -c /bin/true >"$work/bt_probe.txt" 2>&1; then
  reason[bpftrace]="bpftrace cannot attach here: $(grep -m1 -i error "$work/bt_probe.txt" || tail -1 "$work/bt_probe.txt")"
fi
# The ftrace backend of iotrace is optional: ask the binary itself.
if ! "$iotrace" record -b ftrace -d 0.2 --no-progress -o "$work/probe.dat" >/dev/null \
       2>"$work/ftrace_probe.txt"; then
  reason[iotrace-ftrace]="$(grep -m1 'error' "$work/ftrace_probe.txt" || tail -1 "$work/ftrace_probe.txt")"
fi
rm -f "$work/probe.dat"
[ -n "${reason[bpftrace]:-}" ] && reason[bpftrace-biolatency]=${reason[bpftrace]}
for ingest in mmap read; do
  tool=iotrace-live; [ "$ingest" = read ] && tool=iotrace-live-read
  if ! "$iotrace" live -b ftrace --ingest "$ingest" -d 0.2 >/dev/null \
         2>"$work/live_probe.txt"; then
    reason[$tool]="$(grep -m1 'error' "$work/live_probe.txt" || tail -1 "$work/live_probe.txt")"
  fi
done
[ -n "${reason[iotrace-live]:-}" ] && reason[iotrace-live-d2c]=${reason[iotrace-live]}

# ------------------------------------------------------------------- record phase
# tool_cmd TOOL OUT READY: the tracer's command line (tracer + gate), in the array `cmd`.
tool_cmd() {
  local tool=$1 out=$2 ready=$3 ev_args=()
  for e in "${events[@]}"; do ev_args+=(-e "$e"); done
  case $tool in
    none) cmd=("$work/gate.sh" "$ready") ;;
    perf) cmd=(perf record "${ev_args[@]}" -a -o "$out" -- "$work/gate.sh" "$ready") ;;
    perf-B) cmd=(perf record -B "${ev_args[@]}" -a -o "$out" -- "$work/gate.sh" "$ready") ;;
    # -d and --no-filter: this kernel refuses set_ftrace_filter/notrace/pid (docs/kernel-notes.md).
    trace-cmd) cmd=(trace-cmd record -d --no-filter -B "$tc_instance" "${ev_args[@]}" -o "$out"
                    "$work/gate.sh" "$ready") ;;
    # bpftrace 0.17 -c runs ELF files only (it refuses a script): hand the gate to /bin/sh.
    bpftrace) cmd=(bpftrace -c "/bin/sh $work/gate.sh $ready" "$work/d2c.bt") ;;
    iotrace-perf) cmd=("$iotrace" record -b perf --no-progress -o "$out" -- "$work/gate.sh" "$ready") ;;
    iotrace-ftrace) cmd=("$iotrace" record -b ftrace --no-progress -o "$out" -- "$work/gate.sh" "$ready") ;;
    # Default settings: --backend auto picks the backend after its own check.
    iotrace) cmd=("$iotrace" record --no-progress -o "$out" -- "$work/gate.sh" "$ready") ;;
    bpftrace-biolatency) cmd=(bpftrace -c "/bin/sh $work/gate.sh $ready" "$work/biolatency.bt") ;;
    # live's intervals and final report (text, as a user redirecting `iotrace live` gets
    # them) to /dev/null; its stderr, with the run's summary line, to the run's file. sh
    # execs into live, so /usr/bin/time measures live itself.
    iotrace-live|iotrace-live-read)
      local ingest=mmap; [ "$tool" = iotrace-live-read ] && ingest=read
      cmd=(sh -c 'exec "$@" >/dev/null' live "$iotrace" live -b ftrace --ingest "$ingest" -I 1
           -- "$work/gate.sh" "$ready") ;;
    # D2C alone, as biolatency shows it: live turns on only issue, complete and requeue.
    iotrace-live-d2c)
      cmd=(sh -c 'exec "$@" >/dev/null' live "$iotrace" live -b ftrace --phases d2c -I 1
           -- "$work/gate.sh" "$ready") ;;
    *) die "unknown tool $tool" ;;
  esac
}

# perf_counts FILE: "samples lost" of the block_rq_* events, from perf's own per-event stats.
# perf record stores the kernel's per-event lost counts (PERF_FORMAT_LOST) as LOST_SAMPLES
# records, which `perf report --stats` lists under each event.
perf_counts() {
  perf report --stats -i "$1" 2>/dev/null | awk '
    /^[^ ].* stats:$/ { in_ev = ($1 ~ /^block:block_rq_/); next }
    in_ev && $1 == "SAMPLE" { s += $3 }
    in_ev && $1 == "LOST_SAMPLES" { l += $3 }
    END { print s + 0, l + 0 }'
}

# After a run: the events the tool says it recorded and lost. Sets `ev` and `lost` ("" = the
# tool does not report it). Reads the tool's own output only.
tool_counts() {
  local tool=$1 out=$2 err=$3
  ev=0; lost=""; late=""
  case $tool in
    none) ev=0 ;;
    perf|perf-B) read -r ev lost < <(perf_counts "$out") ;;
    trace-cmd)
      ev=$(trace-cmd report -i "$out" 2>/dev/null | grep -c ' block_rq_' || true)
      lost=$(trace-cmd report --stat -i "$out" 2>/dev/null |
             awk -F: '/^(overrun|commit overrun|dropped events):/ {s += $2} END {print s + 0}')
      ;;
    bpftrace|bpftrace-biolatency)
      ev=$(sed -n 's/^@n: \([0-9]*\)$/\1/p' "$err" | tail -1) ;;
    iotrace-live|iotrace-live-read|iotrace-live-d2c)
      # "iotrace live: ftrace backend, mmap, 5.2 s, N events paired, L lost, T late; ..."
      read -r ev lost late < <(sed -n \
        's/^iotrace live: .*, \([0-9]*\) events paired, \([0-9]*\) lost, \([0-9]*\) late;.*/\1 \2 \3/p' \
        "$err" | tail -1) || true ;;
    iotrace-perf|iotrace-ftrace|iotrace)
      # summary table: "  total  recorded  kernel-count  ring-lost  dropped-silent"
      read -r ev lost < <(awk '$1 == "total" {print $2, $4 + $5}' "$err" | tail -1) || true ;;
  esac
  ev=${ev:-0}
}

record_run() {  # record_run REP TOOL
  local rep=$1 tool=$2
  if [ -n "${reason[$tool]:-}" ]; then na_record "$rep" "$tool" "${reason[$tool]}"; return; fi
  local out=$work/rec.$tool ready=$work/ready err=$work/rec.$tool.err tim=$work/rec.$tool.time
  rm -f "$out" "$ready" "$err" "$tim" "$work/fio.json"
  local cmd; tool_cmd "$tool" "$out" "$ready"
  local cpu0 cpu1 t0 t1 pid
  cpu0=$(python3 "$repo/bench/e2e_cpu.py" $$)
  t0=$(now_s)
  /usr/bin/time -f "%U %S %M %w %c" -o "$tim" "${cmd[@]}" >"$err" 2>&1 &
  pid=$!
  running=("$pid")
  local waited=0
  while [ ! -s "$ready" ]; do
    if ! kill -0 "$pid" 2>/dev/null || [ "$waited" -ge 600 ]; then
      stop_tracer "$pid"; running=(); rm_instance
      na_record "$rep" "$tool" "did not start: $(grep -v '^Command exited' "$err" | tail -2 | tr '\n' ' ')"
      return
    fi
    sleep 0.1; waited=$((waited + 1))
  done
  fio_job "$work/fio.json" --runtime="$seconds" --time_based || true
  kill -TERM "$(cat "$ready")" 2>/dev/null || true
  rm -f "$ready"
  stop_tracer "$pid"  # returns once the tracer has written its file and exited
  running=()
  t1=$(now_s)
  cpu1=$(python3 "$repo/bench/e2e_cpu.py" $$)
  rm_instance
  if [ ! -s "$work/fio.json" ]; then na_record "$rep" "$tool" "fio failed"; return; fi
  local ios iops ev lost late size=""
  ios=$(fio_field "$work/fio.json" total_ios)
  iops=$(fio_field "$work/fio.json" iops)
  tool_counts "$tool" "$out" "$err"
  if [ -f "$out" ]; then size=$(stat -c %s "$out"); fi
  if [ "$tool" != none ] && [ "$ev" -eq 0 ]; then
    na_record "$rep" "$tool" "recorded no events: $(tail -2 "$err" | tr '\n' ' ')"
    rm -f "$out"; return
  fi
  # /usr/bin/time writes "Command exited with non-zero status N" first when the tracer passes
  # on the gate's status: the numbers are on the last line.
  local u s m w c b0 f0 b1 f1
  read -r u s m w c < <(tail -1 "$tim")
  read -r b0 f0 <<<"$cpu0"
  read -r b1 f1 <<<"$cpu1"
  local busy foreign own window
  busy=$(calc "$b1 - $b0"); foreign=$(calc "$f1 - $f0"); own=$(calc "$u + $s")
  window=$(calc "$t1 - $t0")
  csv_row record "$rep" "$run_seq" "$tool" ok "" ios="$ios" iops="$iops" events="$ev" lost="$lost" \
    file_bytes="$size" window_s="$window" busy_s="$busy" foreign_s="$foreign" \
    own_cpu_s="$own" vcsw="$w" ivcsw="$c" rss_kb="$m" late="$late"
  log "  $tool: $(printf '%.0f' "$iops") IOPS, $ev events, lost ${lost:-n/a}${late:+, late $late}, ${window}s, machine busy ${busy}s (others ${foreign}s), own CPU ${own}s"
  if [ "$tool" = iotrace ]; then log "    $(grep -o 'recording with the [a-z]* backend ([^)]*)' "$err" | head -1)"; fi
  rm -f "$out"
}

# Every tracer run sits between two no-tracer runs of the same repetition (none, A, none, B,
# none, ...): its added CPU is taken against those two, seconds away, because the host's speed
# drifts by 10-30% over minutes (bench/README.md, "Measuring added CPU"). `run_seq` numbers the
# runs in the order they ran, so that the table can find each run's neighbours.
read -r -a tool_list <<<"$tools"
tracers=()
with_none=0
for t in "${tool_list[@]}"; do
  if [ "$t" = none ]; then with_none=1; else tracers+=("$t"); fi
done
log "record phase: ${#tracers[@]} tracers x $reps repetitions x ${seconds}s of fio$(
  [ "$with_none" = 1 ] && echo ', a no-tracer run before and after each')"
# warm the loop device's page cache so the first run is not special
fio_job "$work/fio.json" --runtime=2 --time_based >/dev/null || die "fio cannot run on $loop"
run_seq=0
for rep in $(seq 1 "$reps"); do
  n=${#tracers[@]}
  log "repetition $rep/$reps"
  if [ "$with_none" = 1 ]; then run_seq=$((run_seq + 1)); record_run "$rep" none; fi
  for i in $(seq 0 $((n - 1))); do  # rotate the order so no tool always runs first
    run_seq=$((run_seq + 1)); record_run "$rep" "${tracers[$(( (i + rep - 1) % n ))]}"
    if [ "$with_none" = 1 ]; then run_seq=$((run_seq + 1)); record_run "$rep" none; fi
  done
done

# ------------------------------------------------------------------- report phase
# (BENCH_REPORT_REPS=0: none, for runs of the recording phase alone.)
pd_events=0; td_events=0; round_trips=(); pd_plan=""; td_plan=""
if [ "$report_reps" -gt 0 ]; then
  # One recording of >= BENCH_REPORT_EVENTS events taken by perf record -B and trace-cmd at the
  # same time (the same I/Os in both files), then every reader on them from page cache.
  log "report phase: recording >= $report_events events with perf record -B and trace-cmd"
  pd=$work/report.perf.data
  td=$work/report.trace.dat
  ios_wanted=$(( report_events / 3 + report_events / 50 + 1000 ))
  ev_args=(); for e in "${events[@]}"; do ev_args+=(-e "$e"); done
  big_ok=1
  perf record -B "${ev_args[@]}" -a -o "$pd" -- "$work/gate.sh" "$work/ready.p" \
    >"$work/big.perf.err" 2>&1 &
  running=($!)
  # --file-version 6: every reader walks the same uncompressed bytes (trace-cmd 3.1.6 writes
  # zstd-compressed v7 by default, which iotrace first inflates into a temporary file).
  trace-cmd record -d --no-filter -B "$tc_instance" --file-version 6 "${ev_args[@]}" -o "$td" \
    "$work/gate.sh" "$work/ready.t" >"$work/big.tc.err" 2>&1 &
  running+=($!)
  for _ in $(seq 600); do
    if [ -s "$work/ready.p" ] && [ -s "$work/ready.t" ]; then break; fi
    sleep 0.1
  done
  if [ -s "$work/ready.p" ] && [ -s "$work/ready.t" ]; then
    fio_job "$work/fio.big.json" --io_size=$(( ios_wanted * 4096 )) || big_ok=0
  else
    big_ok=0
  fi
  for f in "$work/ready.p" "$work/ready.t"; do
    if [ -s "$f" ]; then kill -TERM "$(cat "$f")" 2>/dev/null || true; fi
    rm -f "$f"
  done
  for pid in "${running[@]}"; do stop_tracer "$pid"; done
  running=()
  rm_instance
  if [ "$big_ok" != 1 ]; then
    die "the report-phase recording failed: $(tail -3 "$work/big.perf.err" "$work/big.tc.err")"
  fi

  # Events in each file, by the tools that wrote them; the btt input is made from trace.dat.
  read -r pd_events _ < <(perf_counts "$pd")
  log "converting trace.dat to blktrace format for btt (not timed)"
  td_events=0
  if command -v btt >/dev/null; then
    trace-cmd report -t -i "$td" 2>/dev/null |
      python3 "$repo/bench/blktrace_from_text.py" "$work/report.blktrace" 2>"$work/convert.err" || true
    td_events=$(sed -n 's/^blktrace_from_text: \([0-9]*\) events.*/\1/p' "$work/convert.err")
  else
    td_events=$(trace-cmd report -i "$td" 2>/dev/null | grep -c ' block_rq_' || true)
  fi
  log "perf.data: $pd_events events, $(stat -c %s "$pd") bytes; trace.dat: $td_events events, $(stat -c %s "$td") bytes"

  report_run() {  # report_run REP TOOL EVENTS FILE command...
    local rep=$1 tool=$2 ev=$3 file=$4; shift 4
    local tim=$work/report.time err=$work/report.err t0 t1 rc=0
    cat "$file" >/dev/null  # from page cache, always
    t0=$(now_s)
    /usr/bin/time -f "%U %S %M" -o "$tim" "$@" >/dev/null 2>"$err" || rc=$?
    t1=$(now_s)
    if [ "$rc" -ne 0 ]; then
      local why
      why=$(grep -m1 -i 'error' "$err" || tail -1 "$err")
      log "  $tool: n/a: exit $rc: $why"
      csv_row report "$rep" "" "$tool" n/a "exit $rc: $why"
      return
    fi
    local u s m
    read -r u s m < <(tail -1 "$tim")
    local wall; wall=$(calc "$t1 - $t0")
    csv_row report "$rep" "" "$tool" ok "" events="$ev" file_bytes="$(stat -c %s "$file")" \
      wall_s="$wall" user_s="$u" sys_s="$s" rss_kb="$m"
    log "  $tool: ${wall}s wall, ${m} KiB peak RSS"
  }

  # The cross-CPU round trip of one cache line (bench/handoff_benchmark.cc), in ns: on a VM it
  # moves with where the hypervisor runs the vCPUs, and with it whether pairing on a thread of its
  # own pays (`iotrace report --threads auto` decides that as it runs; --threads 1 never does).
  cross_cpu_rt() {
    "$repo/build/handoff_benchmark" --benchmark_filter=RoundTrip --benchmark_min_time=0.2 \
      --benchmark_format=csv 2>/dev/null | awk -F, '/BM_CrossCpuRoundTrip/ {printf "%.0f", $3}'
  }
  # How iotrace reads each file by default (two time ranges, or one pass and why): not timed.
  read_plan() {
    IOTRACE_REPORT_PLAN=1 "$iotrace" report -i "$1" 2>&1 >/dev/null |
      sed -n 's/^iotrace: read plan: //p' | head -1
  }
  pd_plan=$(read_plan "$pd")
  td_plan=$(read_plan "$td")
  log "iotrace report read plan: perf.data: ${pd_plan:-n/a}; trace.dat: ${td_plan:-n/a}"
  round_trips=()
  for rep in $(seq 1 "$report_reps"); do
    log "report repetition $rep/$report_reps"
    rt=$(cross_cpu_rt || true)
    round_trips+=("${rt:-n/a}")
    log "  cross-CPU round trip: ${rt:-n/a} ns"
    report_run "$rep" cat-perfdata "$pd_events" "$pd" cat "$pd"
    report_run "$rep" perf-script "$pd_events" "$pd" perf script -i "$pd"
    report_run "$rep" iotrace-report-perfdata "$pd_events" "$pd" "$iotrace" report -i "$pd"
    report_run "$rep" iotrace-report-perfdata-t1 "$pd_events" "$pd" "$iotrace" report -i "$pd" \
      --threads 1
    report_run "$rep" cat-tracedat "$td_events" "$td" cat "$td"
    report_run "$rep" trace-cmd-report "$td_events" "$td" trace-cmd report -i "$td"
    report_run "$rep" iotrace-report-tracedat "$td_events" "$td" "$iotrace" report -i "$td"
    report_run "$rep" iotrace-report-tracedat-t1 "$td_events" "$td" "$iotrace" report -i "$td" \
      --threads 1
    if command -v btt >/dev/null && [ -s "$work/report.blktrace" ]; then
      mkdir -p "$work/btt"
      # From inside the work dir: btt writes its *_iops_fp.dat / *_mbps_fp.dat to the current one.
      report_run "$rep" btt "$td_events" "$work/report.blktrace" \
        env -C "$work/btt" btt -i "$work/report.blktrace" -o "$work/btt/out"
    else
      csv_row report "$rep" "" btt n/a "btt is not installed or its input could not be made"
    fi
  done
fi

# ------------------------------------------------------------------------- table
if [ "$report_reps" -gt 0 ]; then
  report_desc="report phase on $pd_events events (perf.data) / $td_events events (trace.dat), \
$report_reps repetitions; cross-CPU round trip before each report repetition: ${round_trips[*]} \
ns; iotrace report read plan: perf.data ${pd_plan:-n/a}, trace.dat ${td_plan:-n/a}."
else
  report_desc="no report phase (BENCH_REPORT_REPS=0)."
fi
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
header="Machine: $(nproc) CPUs ($cpu_model), kernel $(uname -r); $(fio --version), \
$(perf --version 2>/dev/null), trace-cmd $(trace-cmd --version 2>/dev/null | awk 'NF {print $3; exit}'), \
$(bpftrace --version 2>/dev/null || echo 'no bpftrace'), iotrace $(git -C "$repo" rev-parse --short HEAD). \
fio 4k randread iodepth 16 libaio direct on a loop device (mq-deadline), pinned to CPU 0, \
${seconds}s per run, $reps repetitions interleaved, a no-tracer run before and after each tracer run; $report_desc \
$(date -u '+%Y-%m-%d %H:%M UTC')."
python3 "$repo/bench/e2e_table.py" "$raw" --header "$header" >"$table"
cat "$table"
log "table: $table; raw numbers: $raw"
