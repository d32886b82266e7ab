#!/usr/bin/env bash
# Build a Docker base image from a Debian root file system (debootstrap + docker import).
#
# No container registry is reachable on our CI machines, so every base image the project
# needs is made here from Debian packages. The build is cached: the image carries a label with
# the hash of its recipe (suite, packages, this script), and a second run with the same recipe
# returns at once.
#
# usage: images/build-base-image.sh TAG "PKG1,PKG2,..." [--ca] [--change 'DOCKERFILE INSTR']...
#   --ca      copy this machine's CA bundle into the image (HTTPS through an intercepting proxy)
#   --change  passed to `docker import` (WORKDIR, ENV, CMD, LABEL ...)
set -euo pipefail

tag=$1; packages=$2; shift 2
with_ca=0; changes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ca) with_ca=1 ;;
    --change) changes+=(--change "$2"); shift ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

suite=${DEBIAN_SUITE:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
recipe=$( { echo "$suite $packages $with_ca ${changes[*]:-}"; cat "$0"; } | sha256sum | cut -c1-16)

if [ "$(docker image inspect -f '{{index .Config.Labels "arena.recipe"}}' "$tag" 2>/dev/null)" = "$recipe" ]; then
  echo "base image $tag is up to date ($recipe)"
  exit 0
fi

command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
cache=${ARENA_DEB_CACHE:-/var/cache/arena-debootstrap}
mkdir -p "$cache"
root=$(mktemp -d /tmp/rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT

echo "debootstrap $suite into $root (packages: $packages)"
debootstrap --variant=minbase --cache-dir="$cache" --include="$packages" \
  "$suite" "$root" "$mirror" >"$root.log" 2>&1 || { tail -30 "$root.log"; exit 1; }
rm -f "$root.log"

if [ "$with_ca" = 1 ]; then
  mkdir -p "$root/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
fi
# Slim the image: package caches, docs and locales are not needed inside.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*

tar -C "$root" -c . | docker import "${changes[@]}" \
  --change "LABEL arena.recipe=$recipe" --change 'CMD ["/bin/bash"]' - "$tag" >/dev/null
echo "built base image $tag ($recipe)"
