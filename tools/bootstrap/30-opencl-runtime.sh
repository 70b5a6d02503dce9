#!/usr/bin/env bash
# Build a Debian 13 (trixie) root holding a SPIR-V-capable OpenCL runtime (PoCL 6) under
# .bootstrap/trixie/, without changing the host system.
#
# Why a separate root: bookworm's PoCL 3.1 and Mesa 22 rusticl report no IL (SPIR-V) support,
# and trixie's PoCL 6.0 / Mesa 25 need glibc >= 2.38, so they run inside a chroot
# (tests/support/opencl.py enters it with unshare + chroot). Needs root.
#
# Idempotent: a stamp file marks a finished root; a half-built root is removed and rebuilt.
# Set METTLE_OPENCL_RUSTICL=1 to also install Mesa's rusticl (mesa-opencl-icd, ~30 s more);
# it lists its llvmpipe device only with RUSTICL_ENABLE=llvmpipe, and the tests use it when
# METTLE_OPENCL_PLATFORM=rusticl (both variables pass through into the chroot).
# The Debian mirror URL is read from this machine's apt configuration, never hard-coded.
# Exit 3 (tool unavailable: ./pants records it and the tests skip) without root or mirror.
# setup-when: test
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TARGET="$ROOT_DIR/.bootstrap/trixie"
STAMP="$TARGET/.mettle-opencl-stamp"
PACKAGES="pocl-opencl-icd,ocl-icd-libopencl1,clinfo,python3,python3-numpy"
if [[ "${METTLE_OPENCL_RUSTICL:-0}" == "1" ]]; then
  PACKAGES="$PACKAGES,mesa-opencl-icd"
fi

if [[ -f "$STAMP" ]]; then
  echo "opencl-runtime: already bootstrapped ($(cat "$STAMP"))"
  exit 0
fi
if [[ "$(id -u)" != "0" ]]; then
  echo "opencl-runtime: not built, debootstrap/chroot need root" >&2
  exit 3
fi

# The first Debian archive URI in the apt sources (deb822 "URIs:" or one-line "deb URL").
debian_mirror() {
  local f
  local prog='/^URIs:/ {print $2}
    /^deb / {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}'
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list \
           /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    awk "$prog" "$f"
  done | grep -v -- '-security' | grep '/debian/\?$' | sed -n 1p
}

MIRROR="$(debian_mirror)"
if [[ -z "$MIRROR" ]]; then
  echo "opencl-runtime: no Debian mirror found in the apt configuration" >&2
  exit 3
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1 || {
    apt-get update >/dev/null && apt-get install -y --no-install-recommends debootstrap >/dev/null
  }
fi

start=$(date +%s)
rm -rf "$TARGET"
mkdir -p "$(dirname "$TARGET")"
debootstrap --variant=minbase --include="$PACKAGES" trixie "$TARGET" "$MIRROR"
# The chroot needs no apt caches; keeping them only costs disk.
rm -rf "$TARGET"/var/cache/apt/archives/*.deb "$TARGET"/var/lib/apt/lists/*
mkdir -p "$TARGET/mnt/repo"
elapsed=$(( $(date +%s) - start ))
echo "trixie PACKAGES=$PACKAGES setup_seconds=$elapsed" > "$STAMP"
echo "opencl-runtime: trixie root ready in ${elapsed}s at $TARGET"
