#!/usr/bin/env bash
# ThreadSanitizer over the code that runs on several threads: the report's hand-over between
# its reading and pairing threads (SpscQueue, auto placement switching every few events),
# FileRing's read-ahead threads (perf.data's one, trace.dat's one per CPU stream), the two
# time ranges of a large file read at once from one reader (Split*), and the readers and
# report pipeline that use them. Builds the unit tests with -fsanitize=thread into
# build-tsan/ (a few minutes the first time) and runs those tests; any report of a data race
# fails the run.
#   bash scripts/tsan.sh            # the threaded tests
#   bash scripts/tsan.sh '*'        # every unit test
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-'SpscQueue*:StreamStore*:*Pipeline*:*FileRing*:*PairingPlacement*:*ReaderShrink*:*HotPath*:SortedRunMerger*:TraceDatReader*:Split*'}
bash scripts/install-deps.sh
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIOTRACE_TSAN=ON \
  -DIOTRACE_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$(nproc)" --target iotrace_unit_tests
# halt_on_error: the first race fails the run; second_deadlock_stack for lock reports.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  build-tsan/iotrace_unit_tests --gtest_filter="$filter"
