#!/usr/bin/env bash
# Unpack Debian's spirv-tools (spirv-val, spirv-dis, spirv-as...) into .bootstrap/spirv-tools/
# without installing anything system-wide: `apt-get download` + `dpkg -x`.
#
# Binaries: .bootstrap/spirv-tools/usr/bin/spirv-val (and spirv-dis, spirv-as...). Debian 12's
# build links SPIRV-Tools statically, so no LD_LIBRARY_PATH is needed (tests/support/spirv.py
# still prepends the unpacked lib dir, harmless, in case a later package links it shared).
# Idempotent: skips when spirv-val is already unpacked.
# Runs `apt-get update` only when the package cannot be downloaded from the current lists.
# Exit 3 (./pants records the tool as unavailable; the tests skip) where apt cannot get it.
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEST="$ROOT_DIR/.bootstrap/spirv-tools"
VAL="$DEST/usr/bin/spirv-val"

if [[ -x "$VAL" ]]; then
  echo "spirv-tools: already unpacked at $DEST"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"   # apt's _apt user must be able to write the download there
cd "$work"
if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
  echo "spirv-tools: no apt-get/dpkg here; put spirv-val on PATH instead" >&2
  exit 3
fi
if ! apt-get download spirv-tools >/dev/null 2>&1; then
  # Refreshing the package lists needs root; without it the package cannot be had here.
  if [[ "$(id -u)" != 0 ]]; then
    echo "spirv-tools: apt-get cannot download spirv-tools and updating its lists needs" \
         "root; put spirv-val on PATH instead" >&2
    exit 3
  fi
  apt-get update >/dev/null
  apt-get download spirv-tools >/dev/null
fi
rm -rf "$DEST"
mkdir -p "$DEST"
dpkg -x spirv-tools_*.deb "$DEST"
export LD_LIBRARY_PATH="$DEST/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "spirv-tools: unpacked $("$VAL" --version | head -n 1) at $DEST"
