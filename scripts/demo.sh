#!/usr/bin/env bash
# The built-in demo: installs what is needed, builds iotrace, creates a scratch loop device
# (mq-deadline), records a short fio workload on it, and prints the latency report.
# Everything it creates (loop device, backing file, recording) is removed at exit unless
# IOTRACE_DEMO_KEEP=1 is set (then the recording is kept and its path printed).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "demo: error: the demo records kernel tracepoints and creates a loop device: run it as root" >&2
  echo "hint: sudo bash scripts/demo.sh" >&2
  exit 1
fi

bash scripts/install-deps.sh
bash scripts/ensure-tracefs.sh
bash scripts/build.sh --binary-only  # the tests and benchmarks are not needed here

work=$(mktemp -d /tmp/iotrace_demo_XXXXXX)
loop=""
cleanup() {
  [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null || true
  rm -f "$work/disk.img"
  if [ "${IOTRACE_DEMO_KEEP:-0}" = 1 ]; then
    echo "demo: recording kept in $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT INT TERM

truncate -s 512M "$work/disk.img"
loop=$(losetup --find --show "$work/disk.img")
echo mq-deadline > "/sys/block/$(basename "$loop")/queue/scheduler"
echo "demo: scratch device $loop ($(cat /sys/block/$(basename "$loop")/dev)), scheduler mq-deadline" >&2

engine=libaio
fio --enghelp 2>/dev/null | grep -qw libaio || engine=psync
seconds=${IOTRACE_DEMO_SECONDS:-5}

echo "demo: recording fio (4k random read/write, iodepth 16, ${seconds}s) on $loop" >&2
# In the work directory with the default file name, as a user would: iotrace.data (perf backend)
# or iotrace.dat (ftrace), whichever --backend auto picks; report reads the newest of the two.
bin="$PWD/build/iotrace"
(cd "$work" && "$bin" record --dev "$loop" -- \
  fio --name=demo --filename="$loop" --rw=randrw --rwmixread=70 --bs=4k --iodepth=16 \
      --ioengine=$engine --direct=1 --runtime="$seconds" --time_based --size=256M \
      --output="$work/fio.txt")
echo >&2
(cd "$work" && "$bin" report)

echo >&2
echo "demo: the same fio watched live, 3 intervals of 1 s (on a terminal 'iotrace live' redraws" \
     "one screen in place; piped, it appends each interval)" >&2
"$bin" live --dev "$loop" -c 3 --report "$work/live-report.txt" -- \
  fio --name=demo --filename="$loop" --rw=randrw --rwmixread=70 --bs=4k --iodepth=16 \
      --ioengine=$engine --direct=1 --runtime=10 --time_based --size=256M \
      --output="$work/fio-live.txt" | cat
