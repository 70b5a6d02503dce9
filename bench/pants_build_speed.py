"""Pants build speed (a script, not a test): package N small kernels, cold and then warm;
what one edit re-runs; optionally the whole test suite, cold and warm.

    python3 bench/pants_build_speed.py [--kernels 50] [--json out.json]
        [--reruns] [--test-suite]

In a temporary clone of this checkout (tools/remote/checkouts.py: own buildroot, the
bootstrapped tools borrowed), it writes N small kernel files, each a `mettle_kernel` target
of one BUILD file, salts them with a fresh value so no cache holds their results, and runs
`./pants package` on all of them twice: cold (every compile and ptxas check runs) and warm
(nothing changed: everything must come from the cache). It reports wall seconds, the
actions Pants executed (spawned processes from its debug log) and actions per second.
The Pants daemon is off in both runs, so each includes Pants' own start-up.

--reruns adds two measurements of what an edit costs:
- `spirv_touch`: how many of the `python_test` targets `./pants test ::` would re-run after
  an edit of one file in toolchain/compiler/targets/spirv/: those whose transitive
  dependencies include that file (`./pants dependents --transitive`), since a test's
  process cache key holds exactly its transitive sources. Goal: at most a quarter.
- `kernel_edit`: `./pants package //app:host`, then the same after an edit of
  app/kernels.mettle: the Mettle processes the second run executes (goal: the one kernel
  compile; the host's compile+link does not depend on kernel sources).
--test-suite adds `./pants test ::` in the fresh clone, cold then warm (tens of minutes).

Measured (shared 2-core machine, `--reruns --kernels 2`): spirv_touch 47 of 205 test
targets (23%, none in tests/gpu); kernel_edit 1 compile, 0 host builds, 0 checks.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.remote import checkouts  # noqa: E402
from tools.remote.checkouts import make_clone, run_pants, tail  # noqa: E402

KERNEL = """// salt {salt}
kernel k{i}(x: float32*, y: float32*, a: float32, n: int32) {{
    var i: int32 = block.x * block_dim.x + thread.x;
    if (i < n) {{
        y[i] = a * x[i] + y[i] + {i}.0;
    }}
}}
"""


def write_kernels(clone: Path, count: int) -> list[str]:
    salt = uuid.uuid4().hex
    pkg = clone / "benchkernels"
    pkg.mkdir()
    build = []
    for i in range(count):
        (pkg / f"k{i}.mettle").write_text(KERNEL.format(salt=salt, i=i))
        build.append(f'mettle_kernel(name="k{i}", source="k{i}.mettle", gpu_arch="sm_90a")')
    (pkg / "BUILD").write_text("\n".join(build) + "\n")
    return [f"//benchkernels:k{i}" for i in range(count)]


def measure(clone: Path, targets: list[str], label: str) -> dict:
    """One `./pants package` of every target: seconds, actions run, actions and targets/s."""
    run = run_pants(clone, "package", *targets)
    if run.returncode != 0:
        raise SystemExit(f"{label} build failed:\n{tail(run)}")
    actions = run.spawned()
    compiles = [a for a in actions if a.startswith("Run mettle compile")]
    return {"seconds": round(run.seconds, 1), "actions": len(actions),
            "compiles": len(compiles),
            "actions_per_second": round(len(actions) / run.seconds, 2),
            "targets_per_second": round(len(targets) / run.seconds, 2)}


SPIRV_FILE = "toolchain/compiler/targets/spirv/emit_math.py"


def _lines(run) -> list[str]:
    return [ln.strip() for ln in run.log.splitlines() if ln.strip() and "[" not in ln]


def spirv_touch(clone: Path) -> dict:
    """Test targets whose inputs include SPIRV_FILE, out of all test targets."""
    tests = run_pants(clone, "--filter-target-type=python_test", "list", "::")
    dependents = run_pants(clone, "dependents", "--transitive", SPIRV_FILE)
    for run in (tests, dependents):
        if run.returncode != 0:
            raise SystemExit(f"spirv_touch failed:\n{tail(run)}")
    all_tests = set(_lines(tests))
    rerun = sorted(all_tests & set(_lines(dependents)))
    gpu = [t for t in rerun if t.startswith("tests/gpu/")]
    return {"file": SPIRV_FILE, "test_targets": len(all_tests), "rerun": len(rerun),
            "fraction": round(len(rerun) / len(all_tests), 3),
            "rerun_outside_tests_gpu": len(rerun) - len(gpu), "targets": rerun}


def kernel_edit(clone: Path) -> dict:
    """The Mettle processes `package //app:host` runs after one kernel source changes."""
    first = run_pants(clone, "package", "//app:host")
    if first.returncode != 0:
        raise SystemExit(f"kernel_edit: first build failed:\n{tail(first)}")
    kernel = clone / "app" / "kernels.mettle"
    kernel.write_text(kernel.read_text() + f"\n// edit {uuid.uuid4().hex}\n")
    second = run_pants(clone, "package", "//app:host")
    if second.returncode != 0:
        raise SystemExit(f"kernel_edit: second build failed:\n{tail(second)}")
    mettle = second.spawned("Run mettle")
    return {"compiles": len([a for a in mettle if a.startswith("Run mettle compile")]),
            "host_builds": len([a for a in mettle if a.startswith("Run mettle build")]),
            "checks": len(second.spawned(("Run ptxas", "Run spirv-val"))),
            "processes": mettle, "seconds": round(second.seconds, 1)}


def test_suite(clone: Path, label: str, specs: list[str]) -> dict:
    checkouts.PANTS_TIMEOUT_S = max(checkouts.PANTS_TIMEOUT_S, 5400)   # a whole suite
    run = run_pants(clone, "test", *specs)
    return {"specs": specs, "exit_code": run.returncode, "seconds": round(run.seconds, 1),
            "pytest_runs": len(run.spawned("Run Pytest")),
            "failed": sorted(set(ln.split()[1] for ln in run.log.splitlines()
                                 if ln.startswith("✕ ") and len(ln.split()) > 1))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=50)
    ap.add_argument("--json", default="pants_build_speed.json")
    ap.add_argument("--reruns", action="store_true", help="measure what one edit re-runs")
    ap.add_argument("--test-suite", action="store_true",
                    help="also `./pants test ::`, cold and warm, in the fresh clone")
    ap.add_argument("--test-specs", default="::",
                    help="what --test-suite tests, space-separated (e.g. \":: -tests/rules::\" "
                    "leaves out the tests that start Pants themselves)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mettle-pants-bench-") as tmp:
        clone = make_clone(ROOT, Path(tmp) / "checkout")
        report = {"kernels": args.kernels, "cpus": os.cpu_count()}
        if args.test_suite:     # first, while the clone's caches of its tests are cold
            report["test_cold"] = test_suite(clone, "cold", args.test_specs.split())
            report["test_warm"] = test_suite(clone, "warm", args.test_specs.split())
            _dump(args.json, report)
        if args.reruns:
            report["spirv_touch"] = spirv_touch(clone)
            report["kernel_edit"] = kernel_edit(clone)
            _dump(args.json, report)
        targets = write_kernels(clone, args.kernels)
        report["cold"] = measure(clone, targets, "cold")
        report["warm"] = measure(clone, targets, "warm")
    for key in ("cold", "warm"):
        r = report[key]
        print(f"{key}: {r['seconds']:.1f} s, {r['actions']} actions executed "
              f"({r['compiles']} compiles), {r['actions_per_second']:.2f} actions/s, "
              f"{r['targets_per_second']:.2f} kernels/s")
    if "spirv_touch" in report:
        t, k = report["spirv_touch"], report["kernel_edit"]
        print(f"touching {t['file']}: {t['rerun']} of {t['test_targets']} test targets "
              f"re-run ({t['fraction']:.0%}; {t['rerun_outside_tests_gpu']} outside tests/gpu)")
        print(f"editing app/kernels.mettle: {k['compiles']} compile, {k['host_builds']} host "
              f"build, {k['checks']} check processes")
    for key in ("test_cold", "test_warm"):
        if key in report:
            r = report[key]
            print(f"./pants test :: {key[5:]}: {r['seconds']:.0f} s, exit {r['exit_code']}, "
                  f"{r['pytest_runs']} pytest processes")
    _dump(args.json, report)
    print(f"wrote {args.json}")
    return 0


def _dump(path: str, report: dict) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2)


if __name__ == "__main__":
    sys.exit(main())
