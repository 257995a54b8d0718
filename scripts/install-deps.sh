#!/usr/bin/env bash
# Installs every Debian package that iotrace's build, tests and demo need. Idempotent: runs
# `apt-get update` once, and only when a package is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  libtracefs-dev libtraceevent-dev libabsl-dev libzstd-dev zlib1g-dev liburing-dev libcpp-httplib-dev
  libgtest-dev googletest libbenchmark-dev protobuf-compiler
  linux-perf trace-cmd fio util-linux e2fsprogs
)
extra=("$@")  # callers may ask for more (bench: bpftrace; fuzz: clang)

missing=()
for p in "${packages[@]}" "${extra[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "install-deps: error: missing packages (${missing[*]}) and not root" >&2
    echo "hint: run this script as root, or install them: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
