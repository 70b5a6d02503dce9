#!/usr/bin/env bash
# setup-when: test
# The C compiler that tools/difftest uses as its oracle (tests/difftest compiles every random
# program as C too, with `cc -O0 -fwrapv`). Debian's gcc, installed system-wide with apt-get
# (needs root). Idempotent: exits at once when `cc` or `gcc` is on PATH. Exit 3 (./pants
# records the step as unavailable; the difftest tests skip with the reason) without root or
# apt.
set -euo pipefail

present() { command -v cc >/dev/null || command -v gcc >/dev/null; }

if present; then
  echo "c-compiler: $(command -v cc || command -v gcc) is present"
  exit 0
fi
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "c-compiler: needs root and apt-get to install gcc" >&2
  exit 3
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends gcc libc6-dev >/dev/null 2>&1; then
  apt-get update >/dev/null
  apt-get install -y --no-install-recommends gcc libc6-dev >/dev/null || exit 3
fi
present || { echo "c-compiler: installed, but cc is still missing" >&2; exit 3; }
echo "c-compiler: installed gcc"
