#!/usr/bin/env bash
# Mounts tracefs at /sys/kernel/tracing when it is in the kernel but not mounted (root only).
set -euo pipefail
t=/sys/kernel/tracing
if [ -e "$t/events" ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-tracefs: tracefs is not mounted and this is not root; live tests will skip" >&2
  exit 0
fi
if grep -qw tracefs /proc/filesystems; then
  mount -t tracefs nodev "$t"
else
  echo "ensure-tracefs: this kernel has no tracefs; live tests will skip" >&2
fi
