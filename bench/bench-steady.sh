#!/usr/bin/env bash
# Steady-state recording cost of iotrace against its peers, tracers toggled inside one fio run
# (bench/steady.py; bench/README.md, "Steady state"). One run per pair:
#   perf:   iotrace record --backend perf   against perf record -B
#   ftrace: iotrace record --backend ftrace against trace-cmd record
# Environment:
#   BENCH_PAIRS="perf ftrace"   pairs to run, in this order
#   BENCH_REPS=60               repetitions per pair (one window of each tracer each)
#   BENCH_WINDOW=2              seconds measured per window
#   BENCH_SETTLE=0.3            seconds after each toggle before the window starts
#   BENCH_OUT=build/bench-steady  where PAIR/raw.csv and PAIR/table.md go
# Needs root, perf, trace-cmd and fio. The loop device, its backing file, the recordings and
# trace-cmd's instance are removed on every exit path.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "bench-steady: error: this records kernel tracepoints and creates a loop device: run it as root
hint: sudo bash bench/bench-steady.sh" >&2
  exit 1
fi
for tool in perf trace-cmd fio python3; do
  command -v "$tool" >/dev/null || {
    echo "bench-steady: error: $tool is not installed
hint: bash scripts/install-deps.sh" >&2
    exit 1
  }
done
[ -x build/iotrace ] || bash scripts/build.sh
out=${BENCH_OUT:-build/bench-steady}
for pair in ${BENCH_PAIRS:-perf ftrace}; do
  python3 bench/steady.py run --pair "$pair" --iotrace build/iotrace \
    --reps "${BENCH_REPS:-60}" --window "${BENCH_WINDOW:-2}" --settle "${BENCH_SETTLE:-0.3}" \
    --out "$out/$pair"
done
