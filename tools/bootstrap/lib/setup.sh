# shellcheck shell=bash
# First-use setup for ./pants: runs the numbered steps tools/bootstrap/NN-*.sh, each once.
#
# Sourced by ./pants (and .ci/run through it). A step's header line `# setup-when: test`
# makes it run only before a `test` goal (the OpenCL root, BuildGrid); other steps run before
# any goal. A step is settled when .bootstrap/setup/NAME holds the step script's current
# `cksum`, so the fast path is one cksum call and no step runs; editing a step re-runs it.
# Step exit status: 0 done; 3 the tool cannot be had here (needs root, no such package:
# recorded, the tests that need it skip with the reason; METTLE_SETUP=retry tries again);
# anything else failed (not recorded, so the next run retries). Only a failing Pants step
# stops the launcher.

# $1 = "all" (a test goal or METTLE_SETUP=all) or "build". Returns non-zero only when the
# Pants step failed.
mettle_setup() {
  local mode=$1 root boot dir sum size path name state
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
  boot="$root/.bootstrap"
  dir="$boot/setup"
  local -a pending=()
  while read -r sum size path; do
    name=${path##*/}; name=${name%.sh}
    state=""
    [[ -f "$dir/$name" ]] && state=$(<"$dir/$name")
    if [[ "$state" == "done $sum $size" ]]; then continue; fi
    if [[ "$state" == "unavailable $sum $size" && "${METTLE_SETUP:-}" != retry ]]; then
      continue
    fi
    if [[ "$mode" != all ]] && grep -q '^# setup-when: test' "$path"; then continue; fi
    pending+=("$sum $size $path")
  done < <(cksum "$root"/tools/bootstrap/[0-9][0-9]-*.sh)
  ((${#pending[@]})) || return 0

  mkdir -p "$dir"
  # Two first runs at once (an editor and a terminal) must not build the same step twice.
  if command -v flock >/dev/null 2>&1; then
    exec {_setup_lock}>"$dir/.lock"
    flock "$_setup_lock"
  fi
  local i=0 total=${#pending[@]} start status rc=0
  for entry in "${pending[@]}"; do
    read -r sum size path <<<"$entry"
    name=${path##*/}; name=${name%.sh}
    i=$((i + 1))
    echo "pants: setup [$i/$total] $name (first use only; later runs skip it)" >&2
    start=$SECONDS
    status=0
    "$path" >&2 || status=$?
    case $status in
      0) echo "done $sum $size" >"$dir/$name"
         echo "pants: setup [$i/$total] $name done in $((SECONDS - start)) s" >&2 ;;
      3) echo "unavailable $sum $size" >"$dir/$name"
         echo "pants: setup [$i/$total] $name: not available on this machine (see above);" \
              "tests that need it will skip. Retry with METTLE_SETUP=retry ./pants ..." >&2 ;;
      *) echo "pants: setup [$i/$total] $name FAILED (exit $status); run $path to see" \
              "why. It is retried on the next ./pants run." >&2
         if [[ $name == *-pants ]]; then rc=1; break; fi ;;
    esac
  done
  if [[ -n "${_setup_lock:-}" ]]; then exec {_setup_lock}>&-; fi
  return $rc
}
