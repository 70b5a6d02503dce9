#!/usr/bin/env bash
# setup-when: test
# Headless Chromium for the docs site test (tests/docs/test_site.py opens the built site,
# checks the quickstart, the Mettle highlighting and the search, and keeps screenshots):
# Debian's `chromium` package, installed system-wide with apt-get (needs root), with a font.
# Idempotent: exits at once when chromium is on PATH. Exit 3 (./pants records the step as
# unavailable; the test skips with the reason) without root or apt.
set -euo pipefail

PACKAGES=(chromium fonts-dejavu-core)

if command -v chromium >/dev/null; then
  echo "chromium: present"
  exit 0
fi
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "chromium: needs root and apt-get to install ${PACKAGES[*]}" >&2
  exit 3
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends "${PACKAGES[@]}" >/dev/null 2>&1; then
  apt-get update >/dev/null
  apt-get install -y --no-install-recommends "${PACKAGES[@]}" >/dev/null || exit 3
fi
command -v chromium >/dev/null || { echo "chromium: installed, but not on PATH" >&2; exit 3; }
echo "chromium: installed ${PACKAGES[*]}"
