#!/usr/bin/env bash
# Records the report's golden fixtures on this kernel and computes their expected numbers with
# the independent reference (scripts/reference_pairing.py over `perf script` text). Run by hand
# (root) when fixtures must change; tests only read what this wrote. Needs the built binary.
set -euo pipefail
cd "$(dirname "$0")/.."
out=tests/fixtures/golden
mkdir -p "$out"
bin=build/iotrace
[ -x "$bin" ] || { echo "capture: build first (scripts/build.sh)" >&2; exit 1; }

work=$(mktemp -d /tmp/iotrace_capture_XXXXXX)
loop=""
cleanup() { [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT INT TERM
truncate -s 256M "$work/disk.img"
loop=$(losetup --find --show "$work/disk.img")
name=$(basename "$loop")
sched() { echo "$1" > "/sys/block/$name/queue/scheduler"; }

# 1. iotrace record, mq-deadline: reads and writes with an fsync every 32 writes (flushes).
sched mq-deadline
$bin record --no-progress --dev "$loop" -o "$out/iotrace_mq.data" -- \
  fio --name=fx --filename="$loop" --rw=randrw --bs=4k --iodepth=8 --ioengine=libaio \
      --direct=1 --number_ios=700 --size=200M --fsync=32 --output=/dev/null

# 2. perf record, block events system-wide: other disks, bio events (Q2D/Q2C), sample ids,
#    callchains (on issue) and extra events mixed in. perf cannot see its own silent drops.
perf record -q -e 'block:block_rq_issue/call-graph=fp/' -e block:block_rq_insert \
  -e block:block_rq_complete -e block:block_rq_requeue -e block:block_rq_merge \
  -e 'block:block_bio_*' -e block:block_getrq -e block:block_plug -e block:block_unplug \
  -e 'block:block_io_*' -a -o "$out/perf_mq.data" -- \
  fio --name=fx --filename="$loop" --rw=randwrite --bs=4k --iodepth=8 --ioengine=libaio \
      --direct=1 --number_ios=400 --size=200M --output=/dev/null
chmod 0644 "$out/perf_mq.data"

# 3. scheduler none: no insert events at all, D2C only.
sched none
$bin record --no-progress --dev "$loop" -o "$out/iotrace_none.data" -- \
  fio --name=fx --filename="$loop" --rw=randread --bs=4k --iodepth=8 --ioengine=libaio \
      --direct=1 --number_ios=600 --size=200M --output=/dev/null

# 4. perf record -z (zstd-compressed records), mq-deadline.
sched mq-deadline
perf record -q -z -e block:block_rq_insert -e block:block_rq_issue -e block:block_rq_complete \
  -a -o "$out/perf_z.data" -- \
  fio --name=fx --filename="$loop" --rw=randread --bs=4k --iodepth=8 --ioengine=libaio \
      --direct=1 --number_ios=500 --size=200M --output=/dev/null
chmod 0644 "$out/perf_z.data"

for f in iotrace_mq perf_mq iotrace_none perf_z; do
  perf script -i "$out/$f.data" --ns -F cpu,time,event,trace 2>/dev/null \
    | python3 scripts/reference_pairing.py > "$out/$f.expected.csv"
  echo "capture: $out/$f.data ($(stat -c %s "$out/$f.data") bytes)" >&2
done
