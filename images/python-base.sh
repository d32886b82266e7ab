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
# The image is built as arena/python-base:3.11-bookworm, or TAG: a name of the project's own.
# An official image's name (python:..., library/..., docker.io/...) is refused: on a shared
# engine a local build under that name would shadow the real image for everyone.
# scripts/demo.sh passes it to the build as PYTHON_IMAGE (deploy/docker-compose.yml).
#
# usage: images/python-base.sh [TAG]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tag=${1:-arena/python-base:3.11-bookworm}

case "$tag" in
  library/* | docker.io/*) official=1 ;;
  */*) official=0 ;;
  *) official=1 ;;
esac
if [ "$official" = 1 ]; then
  echo "python-base.sh: $tag is an official image's name; give one of the project's own" \
       "(e.g. arena/python-base:3.11-bookworm)" >&2
  exit 2
fi

bash "$here/build-base-image.sh" "$tag" \
  "python3,python3-venv,python3-pip,python-is-python3,ca-certificates" --ca \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
