#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole test suite: unit tests, live tests (root +
# tracefs + loop devices; each skip prints its reason) and the benchmarks in smoke mode.
set -euo pipefail
cd "$(dirname "$0")/.."
# prometheus and node_exporter: the live test of live --listen against a real server;
# librsvg2-bin (rsvg-convert): the test that renders report --format svg's pictures.
bash scripts/install-deps.sh prometheus prometheus-node-exporter librsvg2-bin
bash scripts/ensure-tracefs.sh
bash scripts/build.sh
cd build
# The SIGKILL test kills a recording 20 times per backend when run alone (about 3 min each);
# here 5, so that the whole suite (with its build) stays under 15 minutes (with 6, a fresh clone
# took 904 s in a slow phase of this VM, the kill test 59 + 79 s of it).
# IOTRACE_KILL_RUNS=20 for the full run.
export IOTRACE_KILL_RUNS="${IOTRACE_KILL_RUNS:-5}"
# Every test's scratch files go into directories of this run, removed at the end whatever
# happened: a test that crashed (an abort, a sanitizer's report, a timeout) never ran its own
# cleanup. A loop device or mount a crashed live test left there goes first. With
# IOTRACE_KEEP_FAILED set, a failed run keeps them (the live tests keep a failed test's files).
IOTRACE_TEST_SHMDIR=""
remove_test_dirs() {
  local rc=$? dir dev file target
  set +e
  for dir in "$IOTRACE_TEST_TMPDIR" "$IOTRACE_TEST_SHMDIR"; do
    [ -n "$dir" ] || continue
    dir="$(realpath -e "$dir" 2>/dev/null)" || continue
    while read -r dev file; do
      case "$file" in "$dir"/*) losetup -d "$dev" ;; esac
    done < <(losetup -n -l -O NAME,BACK-FILE 2>/dev/null)
    if [ "$rc" -ne 0 ] && [ -n "${IOTRACE_KEEP_FAILED:-}" ]; then
      echo "test.sh: kept the run's scratch files in $dir" >&2
      continue
    fi
    while read -r target; do
      case "$target" in "$dir"/*) umount -l "$target" ;; esac
    done < <(findmnt -rn -o TARGET 2>/dev/null | sort -r)
    rm -rf --one-file-system "$dir"
  done
  exit "$rc"
}
IOTRACE_TEST_TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/iotrace-tests.XXXXXX")"
trap remove_test_dirs EXIT
IOTRACE_TEST_SHMDIR="$IOTRACE_TEST_TMPDIR"
if [ -w /dev/shm ]; then IOTRACE_TEST_SHMDIR="$(mktemp -d /dev/shm/iotrace-tests.XXXXXX)"; fi
export IOTRACE_TEST_TMPDIR IOTRACE_TEST_SHMDIR
# The scripts' and benchmarks' temp files too, and GoogleTest's testing::TempDir().
export TMPDIR="$IOTRACE_TEST_TMPDIR" TEST_TMPDIR="$IOTRACE_TEST_TMPDIR"
# Side by side where they may be: the live tests and the HTTP server's run alone (RUN_SERIAL).
ctest --output-on-failure --timeout 600 -j"$(nproc)" "$@"
