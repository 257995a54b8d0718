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
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)" "${target[@]}"
