#!/usr/bin/env bash
# Make sure Debian's headless-capable chromium (and a font) is installed for the browser tests of
# the dashboard (tests/ui/). Idempotent; no browser download outside apt (Playwright's own
# `playwright install` is never run: the tests point Playwright at /usr/bin/chromium).
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
  echo "chromium is missing and this user cannot install it: apt-get install chromium fonts-dejavu-core" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing chromium and fonts-dejavu-core (Debian's packages)..."
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "$(chromium --version) is installed"
