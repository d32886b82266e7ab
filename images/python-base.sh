#!/usr/bin/env bash
# A local stand-in for the stock Python base image of deploy/Dockerfile.
#
# A machine that reaches a registry pulls python:3.11-slim-bookworm and never needs this. On
# ours no image can be pulled, so this builds the closest Debian equivalent with
# images/build-base-image.sh (debootstrap + docker import, cached by recipe): bookworm minbase
# with python3 (3.11), venv, pip (the Dockerfile installs uv with it), the `python` command
# and this machine's CA bundle (HTTPS to PyPI goes through an intercepting proxy here).
# Debian's interpreter is /usr/bin/python3 where the official image has /usr/local/bin/python;
# the Dockerfile only relies on `python3` being on PATH, so it works on both.
#
# The image is built as arena/python-base:bookworm and also tagged TAG (default
# python:3.11-slim-bookworm, the Dockerfile's default base) unless TAG already names a real
# image: a pulled python image is never shadowed.
#
# usage: images/python-base.sh [TAG]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tag=${1:-${PYTHON_IMAGE:-python:3.11-slim-bookworm}}
own=arena/python-base:bookworm

bash "$here/build-base-image.sh" "$own" \
  "python3,python3-venv,python3-pip,python-is-python3,ca-certificates" --ca \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

[ "$tag" = "$own" ] && exit 0
if docker image inspect "$tag" >/dev/null 2>&1; then
  # Ours (an earlier stand-in) carries arena.recipe; a pulled image does not.
  if [ -z "$(docker image inspect -f '{{index .Config.Labels "arena.recipe"}}' "$tag" 2>/dev/null)" ]; then
    echo "$tag is a real image; the stand-in stays $own"
    exit 0
  fi
fi
docker tag "$own" "$tag"
echo "tagged $own as $tag"
