#!/usr/bin/env bash
# Bootstraps Pants (and the pex tool Pants runs) into the git-ignored .bootstrap/ directory.
#
# Idempotent: each step leaves a stamp and is skipped when its stamp matches the pinned
# versions, so a second run costs a few stat() calls. Never changes the system: Python 3.9
# comes from pyenv or PATH, otherwise it is unpacked from Debian packages into .bootstrap/.
# Host pip configuration (constraints, local find-links) is ignored for every install here.
# Run directly (.ci/run runs every tools/bootstrap/*.sh in order) or through ./pants.
set -euo pipefail

PANTS_VERSION=2.17.1
PEX_VERSION=2.1.137
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BOOT="$REPO_ROOT/.bootstrap"
# shellcheck source=tools/bootstrap/lib/debian_python39.sh
source "$REPO_ROOT/tools/bootstrap/lib/debian_python39.sh"

# Host pip settings must not leak into our installs (they pin and redirect packages).
bootstrap_pip_env() {
  export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
  unset PIP_FIND_LINKS PIP_CONSTRAINT PIP_EXTRA_INDEX_URL PIP_INDEX_URL PIP_REQUIRE_VIRTUALENV
  # Ignoring the host pip configuration must not drop its trust: pip's own CA bundle lacks
  # the CA of a TLS-intercepting proxy, which the system bundle (pants.toml's) has.
  if [[ -z "${PIP_CERT:-}" && -r /etc/ssl/certs/ca-certificates.crt ]]; then
    export PIP_CERT=/etc/ssl/certs/ca-certificates.crt
  fi
}

is_python39() {
  "$1" -c 'import sys, ssl, venv; sys.exit(sys.version_info[:2] != (3, 9))' >/dev/null 2>&1
}

# Sets PY39 (and LD_LIBRARY_PATH for the Debian fallback). The pyenv shim named python3.9
# may exist yet fail when 3.9 is not the selected version, hence the trial run of each.
find_python39() {
  local c
  local -a candidates=("${METTLE_PYTHON39:-}" /root/.pyenv/versions/3.9.*/bin/python3.9)
  candidates+=("${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.9.*/bin/python3.9)
  candidates+=("$(command -v python3.9 || true)" /usr/bin/python3.9 /usr/local/bin/python3.9)
  if [[ "${METTLE_PANTS_DEBIAN_PYTHON:-0}" != 1 ]]; then
    for c in "${candidates[@]}"; do
      if [[ -n "$c" && -x "$c" ]] && is_python39 "$c"; then
        PY39=$c
        rm -f "$BOOT/env.sh"
        return 0
      fi
    done
  fi
  local libpath
  libpath=$(debian_python39_libpath "$BOOT/python3.9")
  export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  PY39=$(debian_python39 "$BOOT/python3.9")
  DEBIAN_PY39=1
  # ./pants sources this on every run: the unpacked interpreter needs its libraries.
  echo "export LD_LIBRARY_PATH=\"$libpath\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\"" \
    > "$BOOT/env.sh"
  is_python39 "$PY39" || { echo "pants bootstrap: unpacked python3.9 does not run" >&2; return 1; }
}

# $1 venv dir, $2 stamp text, rest: requirements. Recreates the venv when the stamp differs.
ensure_venv() {
  local dir=$1 stamp=$2; shift 2
  [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$stamp" ]] && return 0
  rm -rf "$dir"
  if [[ -n "${DEBIAN_PY39:-}" ]]; then
    "$PY39" -m venv --without-pip "$dir"
    debian_python39_pip "$BOOT/python3.9" "$dir/bin/python"
  else
    "$PY39" -m venv "$dir"
  fi
  "$dir/bin/python" -m pip install -q --upgrade "pip<24" >&2
  "$dir/bin/python" -m pip install -q "$@" >&2
  echo "$stamp" > "$dir/.stamp"
}

# Builds the pex PEX that [pex-cli] url_template points at (file://.../.bootstrap/pex).
ensure_pex() {
  local out="$BOOT/pex"
  [[ -f "$out" && -f "$BOOT/pex.stamp" && "$(cat "$BOOT/pex.stamp")" == "$PEX_VERSION" ]] &&
    return 0
  ensure_venv "$BOOT/pex-venv" "pex==$PEX_VERSION" "pex==$PEX_VERSION"
  # A fixed shebang keeps the file identical whichever 3.9 built it; Pants runs it as
  # `python pex ...`, so the shebang is never used to pick an interpreter.
  # pex runs pip --isolated (no environment, no config), so the CA bundle is passed on.
  local -a cert=()
  if [[ -n "${PIP_CERT:-}" ]]; then cert=(--cert "$PIP_CERT"); fi
  "$BOOT/pex-venv/bin/pex" "${cert[@]}" "pex==$PEX_VERSION" -c pex -o "$out.tmp" \
    --python-shebang='/usr/bin/env python3' >&2
  mv "$out.tmp" "$out"
  # ./pants compares these with pants.toml's [pex-cli] known_versions on every run.
  echo "$(sha256sum "$out" | cut -d' ' -f1)|$(stat -c %s "$out")" > "$BOOT/pex.sha256"
  echo "$PEX_VERSION" > "$BOOT/pex.stamp"
}

main() {
  mkdir -p "$BOOT"
  bootstrap_pip_env
  local pants_venv="$BOOT/pants-$PANTS_VERSION"
  if [[ ! -f "$pants_venv/.stamp" || ! -f "$BOOT/pex.stamp" ]]; then
    find_python39
    echo "pants bootstrap: using $PY39" >&2
    ensure_venv "$pants_venv" "pantsbuild.pants==$PANTS_VERSION" \
      "pantsbuild.pants==$PANTS_VERSION"
    ensure_pex
  fi
}

main "$@"
