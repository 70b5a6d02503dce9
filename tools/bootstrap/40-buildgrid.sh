#!/usr/bin/env bash
# Installs BuildGrid (a REAPI server) into the git-ignored .bootstrap/buildgrid/ virtualenv,
# for the remote-cache demonstration (tools/remote/cache_demo.py, exec_demo.py, tests/rules/).
#
# Why a separate venv and not the lockfile: BuildGrid is a server the demo starts as a
# process (bgd), never imported by our code or tests, and it brings grpc/SQLAlchemy/... pins
# that the python-default resolve does not need. Pinned; idempotent through a stamp file.
# Host pip configuration (constraints, local find-links) is ignored, as for Pants itself.
# setup-when: test
set -euo pipefail

BUILDGRID_VERSION=0.4.4
ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEST="$ROOT_DIR/.bootstrap/buildgrid"
STAMP="buildgrid==$BUILDGRID_VERSION"

if [[ -f "$DEST/.stamp" && "$(cat "$DEST/.stamp")" == "$STAMP" && -x "$DEST/bin/bgd" ]]; then
  echo "buildgrid: $STAMP already installed at $DEST"
  exit 0
fi
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
unset PIP_FIND_LINKS PIP_CONSTRAINT PIP_EXTRA_INDEX_URL PIP_INDEX_URL PIP_REQUIRE_VIRTUALENV
# Ignoring the host pip configuration must not drop its trust: pip's own CA bundle lacks
# the CA of a TLS-intercepting proxy, which the system bundle (pants.toml's) has.
if [[ -z "${PIP_CERT:-}" && -r /etc/ssl/certs/ca-certificates.crt ]]; then
  export PIP_CERT=/etc/ssl/certs/ca-certificates.crt
fi

# BuildGrid 0.4 needs CPython >= 3.10; the tests' 3.11 is always there.
PY=""
for c in "${METTLE_PYTHON311:-}" python3.11 python3; do
  if [[ -n "$c" ]] && command -v "$c" >/dev/null &&
     "$c" -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    PY="$c"; break
  fi
done
[[ -n "$PY" ]] || { echo "buildgrid: no CPython >= 3.10 found" >&2; exit 3; }

rm -rf "$DEST"
"$PY" -m venv "$DEST"
"$DEST/bin/python" -m pip install -q "$STAMP" >&2
echo "$STAMP" > "$DEST/.stamp"
echo "buildgrid: installed $STAMP at $DEST"
