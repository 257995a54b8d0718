#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzzer.cc) with clang, ASan and UBSan, iotrace_core
# instrumented for coverage too, into build-fuzz/, and runs one target for a while. By hand only
# (not CI): it takes minutes and a core (JOBS cores with JOBS > 1).
#
#   scripts/fuzz.sh TARGET [SECONDS] [extra libFuzzer flags...]
#   scripts/fuzz.sh trace_file_fuzzer 900
#   JOBS=2 scripts/fuzz.sh report_pipeline_fuzzer 300
#   scripts/fuzz.sh trace_file_fuzzer 0 build-fuzz/artifacts/trace_file_fuzzer/crash-...  # replay
#   scripts/fuzz.sh trace_file_fuzzer cov   # line coverage of the readers by seeds + corpus
#
# Seeds come from tests/fuzz/corpus/TARGET/ (read only); what the run finds goes to
# build-fuzz/corpus/TARGET/, crashes, leaks, timeouts and OOMs to build-fuzz/artifacts/TARGET/.
# Memory and time stay bounded: -rss_limit_mb=512 -timeout=10 (override with later flags).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ]; then
  echo "usage: scripts/fuzz.sh TARGET [SECONDS] [libFuzzer flags...]" >&2
  echo "targets: $(ls tests/fuzz/*_fuzzer.cc | xargs -n1 basename | sed 's/\.cc$//' | tr '\n' ' ')" >&2
  exit 2
fi
target=$1
seconds=${2:-300}
shift $(( $# >= 2 ? 2 : 1 ))
if [ ! -f "tests/fuzz/${target}.cc" ]; then
  echo "fuzz: error: no target tests/fuzz/${target}.cc" >&2
  exit 2
fi
jobs=${JOBS:-1}

# clang and its libFuzzer runtime (Debian 12: clang 14 + libclang-rt-14-dev).
if ! command -v clang++ >/dev/null ||
   ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
     clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  bash scripts/install-deps.sh clang libclang-rt-14-dev
fi

if [ "$seconds" = cov ]; then
  # Source-based coverage (no sanitizers) of everything the corpus reaches, in build-fuzz-cov/.
  if [ ! -f build-fuzz-cov/CMakeCache.txt ]; then
    CC=clang CXX=clang++ cmake -S . -B build-fuzz-cov -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DIOTRACE_FUZZ=ON -DIOTRACE_BUILD_TESTS=OFF -DIOTRACE_BUILD_BENCH=OFF \
      -DCMAKE_C_FLAGS="-fprofile-instr-generate -fcoverage-mapping" \
      -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link -fprofile-instr-generate -fcoverage-mapping" \
      -DCMAKE_EXE_LINKER_FLAGS="-fprofile-instr-generate" >/dev/null
  fi
  cmake --build build-fuzz-cov -j"$jobs" --target "$target"
  mkdir -p build-fuzz/corpus/$target
  LLVM_PROFILE_FILE=build-fuzz-cov/$target.profraw \
    LSAN_OPTIONS=detect_leaks=0 "build-fuzz-cov/$target" -runs=0 -rss_limit_mb=512 -timeout=10 \
    build-fuzz/corpus/$target tests/fuzz/corpus/$target 2>&1 | tail -2
  llvm-profdata merge -sparse build-fuzz-cov/$target.profraw -o build-fuzz-cov/$target.profdata
  llvm-cov report "build-fuzz-cov/$target" -instr-profile=build-fuzz-cov/$target.profdata \
    src/formats/perf_data_reader.cc src/formats/perf_record_parser.cc \
    include/iotrace/formats/perf_record_parser.h include/iotrace/formats/sorted_run_merger.h \
    src/formats/tracing_data.cc src/event/event_format.cc src/formats/trace_dat_reader.cc \
    src/formats/ftrace_page.cc include/iotrace/formats/ftrace_page.h \
    src/formats/trace_reader_open.cc src/output/event_dump.cc src/event/block_event.cc \
    src/analysis/latency_report.cc
  exit 0
fi

if [ ! -f build-fuzz/CMakeCache.txt ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DIOTRACE_FUZZ=ON -DIOTRACE_SANITIZE=ON -DIOTRACE_BUILD_TESTS=OFF -DIOTRACE_BUILD_BENCH=OFF \
    -DCMAKE_C_FLAGS="-fno-sanitize-recover=all" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" >/dev/null
fi
cmake --build build-fuzz -j"$jobs" --target "$target"

corpus=build-fuzz/corpus/$target
artifacts=build-fuzz/artifacts/$target
mkdir -p "$corpus" "$artifacts"
seeds=tests/fuzz/corpus/$target
[ -d "$seeds" ] || seeds=

flags=(-rss_limit_mb=512 -timeout=10 -print_final_stats=1 "-artifact_prefix=$artifacts/")
[ -f "tests/fuzz/${target}.dict" ] && flags+=("-dict=tests/fuzz/${target}.dict")
[ "$jobs" -gt 1 ] && flags+=("-fork=$jobs")

# UBSan stops at the first report, so libFuzzer keeps it as a crash input. Leaks inside
# libtraceevent's own error paths are suppressed (tests/fuzz/lsan.supp says why).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0}

if [ "$seconds" = 0 ]; then
  # Replay: the remaining arguments are inputs (crash files) to run once each.
  exec "build-fuzz/$target" "${flags[@]}" "$@"
fi
exec "build-fuzz/$target" "${flags[@]}" -max_total_time="$seconds" "$@" "$corpus" $seeds
