#!/usr/bin/env python3
"""Remote-execution demonstration: Mettle's build actions run on a BuildGrid worker, hardware
tests are scheduled only on a worker advertising a GPU, and a second clean checkout gets
every build action from the remote cache.

usage: exec_demo.py [--bgd PATH] [--work DIR]

1. starts BuildGrid (tools/remote/grid.py) with the test worker `plain` (gpu=none);
2. clone A, empty local store, tools/remote/pants.remote.toml: the preflight
   (tools/remote/preflight.py, the same flags) finds the `remote` environment served and
   names the `gpu` environment and tests/gpu:gpu as unserved (no GPU worker yet); then
   `package //app:host`, then
   `--tag=gpu test tests/gpu::`; once Pants reports the hardware-test actions waiting, the
   worker `gpu` (gpu=sm_90a, --record-only on Pants' pytest shim) joins: it runs the setup
   actions of the test environment and records, without executing, each pytest run;
3. meanwhile (once A's package is cached) clone B elsewhere at the same commit, with another
   empty local store, runs `package //app:host`;
4. passes (exit 0) only when
   - every Mettle action (compile, link, ptxas/spirv-val) of A executed on `plain`, none
     locally, and every action any worker saw carried that worker's `gpu` property;
   - the preflight passed for `remote` and failed for `gpu`, naming tests/gpu:gpu;
   - while no GPU worker existed the tests waited (Pants listed them as waiting) and `plain`
     took none of them; every hardware test was then leased by `gpu` (recorded, not run) and
     `./pants test` failed saying so;
   - the packaged outputs equal, byte for byte, the same compiler commands run here, locally,
     and A's and B's outputs are identical;
   - B had no remote cache miss and a hit for every Mettle action A executed (the recorded
     tests are never cached: no hardware produced them).

Exit 1 on a failed check (with the reason), 2 when BuildGrid, PostgreSQL or Pants is missing.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.remote.checkouts import (has_bootstrapped_pants, make_clone,  # noqa: E402
                                    run_pants, run_pants_watching, source_root, tail)
from tools.remote.grid import PLAIN, Grid, GridError, postgres_bindir  # noqa: E402

GPU = {"OSFamily": "linux", "ISA": "x86-64", "gpu": "sm_90a"}
# Pants' pytest runs execute this shim (building the PEX only names pytest_runner.pex); the
# recording worker runs everything else.
PYTEST_MARK = r"\./pytest_runner\.pex_pex_shim\.sh"
# Descriptions of the Mettle actions: compile/link, and the ptxas/spirv-val checks.
MARKER = ("Run mettle", "Run ptxas", "Run spirv-val")
PACKAGE = ("package", "//app:host")
GPU_TEST = ("--tag=gpu", "test", "tests/gpu::")
OUTPUTS = ("app/host", "app/kernels.ptx")
# Under `Long running tasks:` Pants lists a waiting action as `  NN.NNs\tScheduling: <desc>`.
_WAITING_RE = re.compile(r"^\s+\d+\.\d+s\s+Scheduling: ")
# Pants lists a task first after ~60 s of waiting; give up on the message this much later.
WAIT_S = 150
# Processes of dependency inference (toolchain/rules/dependency_inference.py), which run on
# the client; the description prefixes Pants gives them and their set-up steps.
INFERENCE_LOCAL = ("Scan the imports of ", "Build the Mettle compiler PEX", "Searching for `",
                   "Test binary ", "Find interpreter for constraints")
_CACHE_RE = re.compile(r'remote cache (hit|miss) for: "([^"]*)" digest=Digest \{ hash: '
                       r'Fingerprint<([0-9a-f]{64})>')


def remote_flags(grid: Grid) -> tuple:
    """Exactly the documented command's flags (docs/build_rules.md): the committed config
    carries everything else; each worker keeps its own append-only caches."""
    return ("--pants-config-files=tools/remote/pants.remote.toml",
            f"--remote-execution-address={grid.address}",
            f"--remote-store-address={grid.address}")


def preflight(grid: Grid, clone: Path, environment: str) -> subprocess.CompletedProcess:
    """The preflight of the clone's checkout, with the documented command's flags; a
    probe waits at most 5 s for a worker."""
    return subprocess.run([str(grid.python), str(clone / "tools/remote/preflight.py"),
                           *remote_flags(grid), f"--environment={environment}", "--wait=5"],
                          cwd=clone, capture_output=True, text=True, timeout=120)


def check_preflight(grid: Grid, clone: Path, problems: list, numbers: list) -> None:
    """`remote` is served by `plain`; `gpu` (no GPU worker yet) is named with its tests."""
    served, unserved = preflight(grid, clone, "remote"), preflight(grid, clone, "gpu")
    numbers.append(f"A: preflight `remote`: rc={served.returncode}; `gpu`: "
                   f"rc={unserved.returncode}, {unserved.stderr.splitlines()[:1]}")
    if served.returncode or "ran on worker `plain`" not in served.stdout:
        problems.append(f"preflight of `remote` failed: {served.stdout}{served.stderr}")
    if unserved.returncode != 1 or "used by: tests/gpu:gpu" not in unserved.stderr:
        problems.append(f"preflight of `gpu` did not name it unserved: {unserved.stderr}")


def logged(path: Path, run):
    """Keeps a Pants run's debug log in the work directory (for a failed check's reader)."""
    path.write_text(run.log)
    return run


def is_test_run(record: dict) -> bool:
    return re.search(PYTEST_MARK, " ".join(record.get("argv", ()))) is not None


def cache_lines(log: str, kind: str) -> dict:
    """{description: action digest} of Pants' `remote cache hit|miss for` debug lines."""
    return {m.group(2): m.group(3) for m in _CACHE_RE.finditer(log) if m.group(1) == kind}


def mettle(entries: dict) -> dict:
    return {d: h for d, h in entries.items() if d.startswith(MARKER)}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def local_replay(clone: Path, records: list, work: Path) -> dict:
    """Runs the recorded Mettle compile/build commands here, with this interpreter, and
    returns {output name: sha256}: what a local build of the same actions produces."""
    out = {}
    for rec in records:
        argv = rec["argv"]
        if "./mettle.pex_pex_shim.sh" not in argv:
            continue
        args = argv[argv.index("./mettle.pex_pex_shim.sh") + 1:]
        if "-o" not in args:
            continue                    # `--print-target` (the ptxas arch): no output file
        target = work / "local" / args[args.index("-o") + 1]
        target.parent.mkdir(parents=True, exist_ok=True)
        args[args.index("-o") + 1] = str(target)
        env = {**rec["env"], "PYTHONPATH": str(clone)}
        proc = subprocess.run([sys.executable, "-c", "import sys; from toolchain.compiler.cli "
                               "import main; sys.exit(main(sys.argv[1:]))", *args],
                              cwd=clone, env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode:
            raise RuntimeError(f"local replay of {args} failed: {proc.stderr[-2000:]}")
        out[target.name] = sha(target)
    return out


def check_placement(grid: Grid, problems: list) -> None:
    for name, props in (("plain", PLAIN), ("gpu", GPU)):
        for rec in grid.records(name):
            if "error" in rec:
                problems.append(f"worker {name} failed: {rec['error']}")
            elif rec["platform"].get("gpu") != props["gpu"]:
                problems.append(f"worker {name} leased an action for {rec['platform']}")
    if any(is_test_run(r) for r in grid.records("plain")):
        problems.append("the plain worker leased a hardware test")


def run(bgd: Path, work: Path) -> int:
    root = source_root()
    problems, numbers = [], []
    # Both pools are declared up front: the GPU worker joins later (as a GPU runner from
    # another host would). The plain pool's actions resolve packages: network shared.
    with Grid(work / "grid", bgd, pools=[PLAIN, GPU]) as grid:
        grid.add_worker("plain", PLAIN, extra=["--share-network"])
        flags = remote_flags(grid)
        env = {"PANTS_LOCAL_STORE_DIR": str(work / "store-a")}
        a_clone = make_clone(root, work / "a" / "checkout")
        check_preflight(grid, a_clone, problems, numbers)
        checked = len(grid.records("plain"))  # the preflight's probe: not the package
        a_pkg = logged(work / "a-package.log", run_pants(a_clone, *flags, *PACKAGE, env=env))
        plain_pkg = grid.records("plain")[checked:]
        # No GPU worker yet: the hardware tests must wait (Pants says so), not run on plain
        # (check_placement: every lease carried its worker's own `gpu` value).
        waited = {}

        def gpu_arrives():
            grid.add_worker("gpu", GPU, record_only=PYTEST_MARK, extra=["--share-network"])

        def waiting(line: str) -> bool:
            if _WAITING_RE.search(line):
                waited.setdefault("message", line.strip())
                return True
            if "environment:gpu" in line:  # Pants has reached the tests: the clock starts
                waited.setdefault("since", time.monotonic())
            return time.monotonic() > waited.get("since", float("inf")) + WAIT_S

        # Checkout B needs only A's package in the cache: it builds while A's tests wait.
        b_clone = make_clone(root, work / "b" / "elsewhere", like=a_clone)
        b_env = {"PANTS_LOCAL_STORE_DIR": str(work / "store-b")}
        with ThreadPoolExecutor(1) as pool:
            b_future = pool.submit(run_pants, b_clone, *flags, *PACKAGE, env=b_env)
            a_test = run_pants_watching(a_clone, *flags, *GPU_TEST, log=work / "a-test.log",
                                        env=env, when=waiting, then=gpu_arrives)
            b_pkg = logged(work / "b-package.log", b_future.result())
        grid.check_workers()
        gpu_a = grid.records("gpu")
        # A's tests lease nothing on plain: what plain ran since is B's.
        plain_b = grid.records("plain")[checked + len(plain_pkg):]
        check_placement(grid, problems)

    # A: every action of the package ran on `plain`, the Mettle ones included; none here.
    if a_pkg.returncode or b_pkg.returncode:
        problems.append(f"package failed (A rc={a_pkg.returncode}, B rc={b_pkg.returncode})")
    executed = {r["action"]: r for r in plain_pkg if r.get("executed") and r["exit_code"] == 0}
    a_mettle = mettle(cache_lines(a_pkg.log, "miss"))
    if not a_mettle:
        problems.append("checkout A requested no Mettle action (was the store not empty?)")
    for desc, digest in sorted(a_mettle.items()):
        rec = executed.get(digest)
        numbers.append(f"A: {desc} -> executed on {rec['worker'] if rec else 'NOWHERE'}")
        if rec is None:
            problems.append(f"checkout A: {desc!r} did not execute on the plain worker")
    # Dependency inference runs on the client, as Pants' own inference does: it scans the
    # .mettle files with the compiler (`mettle imports`), for which Pants builds the compiler
    # PEX and finds an interpreter and bash here. Every build action stays remote.
    local = [d for d in a_pkg.spawned() if not d.startswith(INFERENCE_LOCAL)]
    numbers.append(f"A package: {len(plain_pkg)} actions executed on plain, "
                   f"{len(a_pkg.spawned()) - len(local)} dependency-inference processes "
                   f"locally, {len(local)} other processes locally")
    if local:
        problems.append(f"checkout A's package ran build processes locally: {local}")
    if a_test.spawned(MARKER) or b_pkg.spawned(MARKER):
        problems.append("Mettle actions ran locally")

    # Hardware tests: waited while no GPU worker existed; then leased by `gpu` only,
    # recorded, never run; ./pants test says so.
    numbers.append(f"A: with no gpu worker, Pants listed as waiting: {waited.get('message')!r}")
    if "message" not in waited:
        problems.append("Pants listed no hardware-test action as waiting for a GPU worker")
    tests_a = [r for r in gpu_a if is_test_run(r)]
    numbers.append(f"A: {len(tests_a)} hardware test runs recorded (not run) by gpu, "
                   f"{len(gpu_a) - len(tests_a)} setup actions of the gpu environment "
                   "executed there, 0 of either on plain")
    if not tests_a or any(r["executed"] for r in tests_a):
        problems.append(f"the gpu worker recorded no test run or executed one: {tests_a}")
    if a_test.returncode == 0 or "recorded this action, did not execute it" not in a_test.log:
        problems.append(f"`--tag=gpu test` rc={a_test.returncode} without the record message")

    # Byte-identical outputs: remote (A) == local replay == B.
    dist_a = {rel: sha(a_clone / "dist" / rel) for rel in OUTPUTS}
    dist_b = {rel: sha(b_clone / "dist" / rel) for rel in OUTPUTS if
              (b_clone / "dist" / rel).is_file()}
    replay = local_replay(a_clone, plain_pkg, work)
    for rel, digest in dist_a.items():
        same = replay.get(Path(rel).name) == digest
        numbers.append(f"{rel}: remote sha256 {digest[:16]}... local "
                       f"{'identical' if same else 'DIFFERENT'}; B "
                       f"{'identical' if dist_b.get(rel) == digest else 'DIFFERENT'}")
        if not same or dist_b.get(rel) != digest:
            problems.append(f"{rel} differs between remote, local and checkout B")

    # B: Pants took every cacheable action from the remote cache (no `remote cache miss`).
    # Worker leases during B are Pants' per-session probes (salted, never cached: they run on
    # every invocation, as locally) and its speculation (it submits an execution while the
    # cache lookup is in flight and drops the loser): counted, but no result came from them.
    b_hits, b_misses = cache_lines(b_pkg.log, "hit"), cache_lines(b_pkg.log, "miss")
    probes = [r for r in plain_b if "PANTS_CACHE_KEY_SALT" in r.get("env", {})]
    numbers.append(f"B: {len(b_hits)} remote cache hits ({len(mettle(b_hits))} of "
                   f"{len(a_mettle)} Mettle actions), {len(b_misses)} misses; plain leases: "
                   f"{len(probes)} per-session probes, {len(plain_b) - len(probes)} "
                   "speculative duplicates")
    if mettle(b_hits) != a_mettle:
        problems.append(f"B's Mettle hits {sorted(mettle(b_hits))} != A's {sorted(a_mettle)}")
    if b_misses:
        problems.append(f"checkout B missed the remote cache for {sorted(b_misses)}")

    for line in numbers:
        print(line)
    print(f"times: A package {a_pkg.seconds:.0f} s, A test {a_test.seconds:.0f} s, "
          f"B package {b_pkg.seconds:.0f} s")
    for p in problems:
        print(f"FAIL: {p}", file=sys.stderr)
    if problems:
        for r in (a_pkg, a_test, b_pkg):
            print(tail(r, 25), file=sys.stderr)
        return 1
    print("PASS: Mettle actions executed on the plain worker, hardware tests only on the gpu "
          "worker, outputs identical to local, checkout B served by the remote cache")
    return 0


def main(argv: list) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bgd", default=str(source_root() / ".bootstrap/buildgrid/bin/bgd"),
                   help="BuildGrid's bgd (default: .bootstrap/buildgrid/bin/bgd)")
    p.add_argument("--work", help="work directory to keep (default: a temporary one)")
    args = p.parse_args(argv)
    if not Path(args.bgd).is_file():
        print(f"exec_demo: no BuildGrid at {args.bgd} (tools/bootstrap/40-buildgrid.sh)",
              file=sys.stderr)
        return 2
    if postgres_bindir() is None:
        print("exec_demo: no PostgreSQL server (BuildGrid's scheduler needs one)",
              file=sys.stderr)
        return 2
    if not has_bootstrapped_pants(source_root()):
        print("exec_demo: Pants is not bootstrapped (run ./pants once)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # unwinds through Grid.__exit__
    try:
        if args.work:
            Path(args.work).mkdir(parents=True, exist_ok=True)
            return run(Path(args.bgd), Path(args.work))
        with tempfile.TemporaryDirectory(prefix="mettle-remote-exec-") as tmp:
            return run(Path(args.bgd), Path(tmp))
    except (GridError, RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"exec_demo: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
