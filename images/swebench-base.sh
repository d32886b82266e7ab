#!/usr/bin/env bash
# The one place that says what the base image of the local SWE-bench-shaped fixtures holds.
#
# Used by `python -m fixtures.swebench.build`. Official SWE-bench images (Ubuntu + miniconda,
# a `testbed` conda env) cannot be pulled here, so the fixtures run on Debian bookworm with the
# system Python: python3 + pytest for the tests, git and patch for the repository and for
# applying predictions, coreutils/grep/sed/gawk/findutils for the agent's tools. No conda: the
# runner's activation prefix detection finds none and runs commands as they are.
#
# usage: images/swebench-base.sh [TAG]      (default arena/swebench-base:bookworm)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tag=${1:-${SWEBENCH_BASE_IMAGE:-arena/swebench-base:bookworm}}
exec bash "$here/build-base-image.sh" "$tag" \
  "bash,coreutils,procps,git,patch,python3,python3-pytest,python-is-python3,findutils,grep,sed,gawk,less" \
  --change 'ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'WORKDIR /testbed'
