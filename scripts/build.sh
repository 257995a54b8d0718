#!/usr/bin/env bash
# Release build into build/; the binary is build/iotrace.
#   bash scripts/build.sh [--binary-only] [cmake options...]
# --binary-only builds the iotrace binary alone (what the demo needs), not the tests and
# benchmarks; the same build directory later builds the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
target=()
if [ "${1:-}" = "--binary-only" ]; then
  target=(--target iotrace)
  shift
fi
# Ninja for a new build folder: it compiles a stage's files while the stages below it are
# still building, where make waits for each stage's library in turn (a clean build on 2 cores:
# 4.9 instead of ~6 min). A folder made before keeps the generator it was made with.
generator=()
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)" "${target[@]}"
