#!/usr/bin/env bash
# setup-when: test
# What BuildGrid needs to *execute* (not only cache) actions, for tools/remote/exec_demo.py:
#   - a PostgreSQL server (Debian's postgresql: initdb + postgres; BuildGrid 0.4's scheduler
#     keeps its job queue only in PostgreSQL). tools/remote/grid.py starts a private,
#     throwaway one per demonstration; the system's own cluster is never used.
#   - the psycopg2 driver, pinned, in .bootstrap/buildgrid-pg (pip --target; grid.py puts it
#     on BuildGrid's PYTHONPATH). A directory of its own, not the BuildGrid venv, so that a
#     re-run of 40-buildgrid (which rebuilds that venv) cannot silently drop it.
#   - bubblewrap (Debian's bubblewrap: bwrap), which jails every action the worker runs
#     (tools/remote/sandbox.py).
# Idempotent (stamp file). Exit 3 (./pants records the step as unavailable; the demonstration
# test skips with the reason) without BuildGrid, or without PostgreSQL and no root/apt-get.
set -euo pipefail

PSYCOPG2=psycopg2-binary==2.9.13
ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BGD_PY="$ROOT_DIR/.bootstrap/buildgrid/bin/python"
DEST="$ROOT_DIR/.bootstrap/buildgrid-pg"

have_postgres() {
  command -v initdb >/dev/null || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

[[ -x "$BGD_PY" ]] || { echo "buildgrid-execution: no BuildGrid (40-buildgrid)" >&2; exit 3; }
if ! have_postgres || ! command -v bwrap >/dev/null; then
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
    echo "buildgrid-execution: needs root and apt-get to install postgresql bubblewrap" >&2
    exit 3
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends postgresql bubblewrap >/dev/null 2>&1; then
    apt-get update >/dev/null
    apt-get install -y --no-install-recommends postgresql bubblewrap >/dev/null || exit 3
  fi
  have_postgres || { echo "buildgrid-execution: postgresql installed, no initdb" >&2; exit 3; }
fi

if [[ -f "$DEST/.stamp" && "$(cat "$DEST/.stamp")" == "$PSYCOPG2" ]]; then
  echo "buildgrid-execution: PostgreSQL present, $PSYCOPG2 already at $DEST"
  exit 0
fi
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
unset PIP_FIND_LINKS PIP_CONSTRAINT PIP_EXTRA_INDEX_URL PIP_INDEX_URL PIP_REQUIRE_VIRTUALENV
# Ignoring the host pip configuration must not drop its trust: pip's own CA bundle lacks
# the CA of a TLS-intercepting proxy, which the system bundle (pants.toml's) has.
if [[ -z "${PIP_CERT:-}" && -r /etc/ssl/certs/ca-certificates.crt ]]; then
  export PIP_CERT=/etc/ssl/certs/ca-certificates.crt
fi
rm -rf "$DEST"
"$BGD_PY" -m pip install -q --target "$DEST" --no-deps "$PSYCOPG2" >&2
echo "$PSYCOPG2" > "$DEST/.stamp"
echo "buildgrid-execution: PostgreSQL present, installed $PSYCOPG2 at $DEST"
