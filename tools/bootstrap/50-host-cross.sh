#!/usr/bin/env bash
# setup-when: test
# Tools that run host programs built for the other host targets (tests/host/cross.py):
#   qemu-user              qemu-aarch64 runs AArch64 Linux executables;
#   libc6-arm64-cross      the arm64 loader and glibc under /usr/aarch64-linux-gnu (our linker
#                          links AArch64 programs against it; qemu-aarch64 -L uses it);
#   gcc-aarch64-linux-gnu  cross-compiles the fake CUDA driver for AArch64 (tests only);
#   gcc-mingw-w64-x86-64-win32  cross-compiles the fake nvcuda.dll for Windows (tests only);
#   wine64, wine          run Windows x64 executables (Debian 12's Wine 8.0 runs them here;
#                          `wine` puts the launcher on PATH, as tools/difftest expects).
# These are Debian packages installed system-wide with apt-get (needs root). Idempotent: exits
# at once when everything is present. Exit 3 (./pants records the step as unavailable; the
# tests skip with the reason) without root or apt.
set -euo pipefail

PACKAGES=(qemu-user libc6-arm64-cross libc6-dev-arm64-cross gcc-aarch64-linux-gnu
          gcc-mingw-w64-x86-64-win32 wine64 wine)

present() {
  command -v qemu-aarch64 >/dev/null && [[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ]] &&
    command -v aarch64-linux-gnu-gcc >/dev/null && command -v x86_64-w64-mingw32-gcc >/dev/null &&
    command -v wine >/dev/null
}

if present; then
  echo "host-cross: qemu-aarch64, the arm64 C library, cross compilers and wine are present"
  exit 0
fi
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "host-cross: needs root and apt-get to install ${PACKAGES[*]}" >&2
  exit 3
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends "${PACKAGES[@]}" >/dev/null 2>&1; then
  apt-get update >/dev/null
  apt-get install -y --no-install-recommends "${PACKAGES[@]}" >/dev/null || exit 3
fi
present || { echo "host-cross: installed, but a tool is still missing" >&2; exit 3; }
echo "host-cross: installed ${PACKAGES[*]}"
