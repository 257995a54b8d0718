#!/usr/bin/env bash
# Rewrites the golden pictures of `iotrace report --format svg` and `iotrace diff --format svg`
# (tests/cli/report_svg_test.cc) from the fixtures, after a change to the pictures that is
# meant: look at them before committing (rsvg-convert FILE.svg -o FILE.png, or a browser).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target iotrace_unit_tests >/dev/null
IOTRACE_UPDATE_GOLDEN=1 build/iotrace_unit_tests --gtest_filter='ReportSvgTest.*Golden*' >/dev/null
git status --short -- tests/fixtures
