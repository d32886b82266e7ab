#!/usr/bin/env bash
# Make sure the disk-cap tests (tests/sandbox/test_disk_quota.py) can give their second Docker
# engine a btrfs data-root with quotas (docs/engines.md, "A disk cap the file system enforces"):
# Debian's btrfs-progs (mkfs.btrfs, btrfs). Idempotent.
set -euo pipefail

if command -v mkfs.btrfs >/dev/null 2>&1 && command -v btrfs >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
  echo "btrfs-progs missing and this user cannot install it: apt-get install btrfs-progs" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing btrfs-progs (Debian's package)..."
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends btrfs-progs >/dev/null
echo "btrfs-progs $(btrfs --version | awk '{print $NF}') is installed"
