# shellcheck shell=bash
# Unpacks Debian bullseye's CPython 3.9 into a private prefix, for machines without one.
#
# Sourced by tools/bootstrap/10-pants.sh. Invariants: nothing outside the prefix given
# as $1 is written (apt runs with a private sources list, state and cache under it; the
# packages are unpacked with `dpkg -x`, never installed); the mirror URL is read from this
# machine's own apt configuration at run time, never hard-coded. Prints the interpreter path.

# The Debian mirror this machine already uses (deb822 .sources first, then one-line lists).
debian_mirror() {
  local f url
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -r "$f" ]] || continue
    url=$(awk '/^URIs:/ {for (i = 2; i <= NF; i++) if ($i !~ /security/) {print $i; exit}}' "$f")
    [[ -n "$url" ]] && { echo "$url"; return 0; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r "$f" ]] || continue
    url=$(awk '$1 == "deb" && $0 !~ /security/ {
      for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' "$f")
    [[ -n "$url" ]] && { echo "$url"; return 0; }
  done
  return 1
}

# Packages that make a working python3.9 with venv, ssl and ctypes on a newer Debian:
# bullseye links against OpenSSL 1.1 and libffi7, which bookworm no longer ships.
DEBIAN_PY39_PACKAGES=(
  python3.9-minimal libpython3.9-minimal libpython3.9-stdlib python3.9 python3.9-venv
  python3-distutils python3-lib2to3 python-pip-whl
  libssl1.1 libffi7 libmpdec3
)

# $1: prefix to unpack into. Echoes the python3.9 path on success.
debian_python39() {
  local prefix=$1 apt_dir mirror keyring
  local py="$prefix/root/usr/bin/python3.9"
  if [[ -x "$py" && -f "$prefix/.complete" ]]; then echo "$py"; return 0; fi
  mirror=$(debian_mirror) || { echo "no Debian mirror in /etc/apt" >&2; return 1; }
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  apt_dir="$prefix/apt"
  rm -rf "$prefix/root" "$apt_dir"
  mkdir -p "$apt_dir"/{lists/partial,archives/partial,parts} "$prefix/root"
  : > "$apt_dir/status"
  echo "deb [signed-by=$keyring] $mirror bullseye main" > "$apt_dir/sources.list"
  local -a opts=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/parts"
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::State::status=$apt_dir/status"
    -o "Dir::Cache=$apt_dir" -o "Dir::Cache::archives=$apt_dir/archives"
    -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1"
  )
  echo "pants bootstrap: fetching CPython 3.9 from Debian bullseye ($mirror)" >&2
  # Explicit `|| return`: errexit does not reach into the $(...) that callers use.
  apt-get "${opts[@]}" -qq update >&2 || return 1
  (cd "$apt_dir/archives" && apt-get "${opts[@]}" -qq download "${DEBIAN_PY39_PACKAGES[@]}") >&2 ||
    return 1
  local deb
  for deb in "$apt_dir"/archives/*.deb; do dpkg -x "$deb" "$prefix/root" || return 1; done
  touch "$prefix/.complete"
  echo "$py"
}

# Library directories the unpacked interpreter needs (OpenSSL 1.1, libffi7, libmpdec).
debian_python39_libpath() {
  local root="$1/root"
  local triple
  triple="$(uname -m)-linux-gnu"
  echo "$root/usr/lib/$triple:$root/lib/$triple"
}

# Debian's ensurepip reads wheels from the system's /usr/share/python-wheels, so venvs made
# by the unpacked interpreter start without pip; Debian's de-vendored pip 20.3 runs from
# the unpacked wheels on PYTHONPATH and installs a regular pip. $1 prefix, $2 venv python.
debian_python39_pip() {
  local wheels
  wheels=$(find "$1/root/usr/share/python-wheels" -name '*.whl' | LC_ALL=C sort | paste -sd:)
  PYTHONPATH="$wheels" "$2" -m pip install -q "pip<24" >&2
}
