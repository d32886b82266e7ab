#!/usr/bin/env bash
# The one place that says what the ARVO-shaped base image holds.
#
# Used by CI and by `python -m fixtures.build`. The image mimics the parts of an OSS-Fuzz
# builder image that ARVO tasks need: clang-14 with ASan + libFuzzer (libclang-rt-14-dev),
# llvm-symbolizer (package llvm-14; without it sanitizer reports have no function names or
# file:line:column), make/patch/git/python3 for `arvo compile` and fix verification.
#
# usage: images/arvo-base.sh [TAG]      (default arena/arvo-base:bookworm)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tag=${1:-${ARVO_BASE_IMAGE:-arena/arvo-base:bookworm}}
exec bash "$here/build-base-image.sh" "$tag" \
  "bash,coreutils,procps,clang-14,libclang-rt-14-dev,llvm-14,make,patch,git,file,python3,less,findutils,grep,sed,gawk" \
  --change 'ENV PATH=/usr/lib/llvm-14/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
