"""Pants build speed (a script, not a test): package N small kernels, cold and then warm.

    python3 bench/pants_build_speed.py [--kernels 50] [--json out.json]

In a temporary clone of this checkout (tools/remote/checkouts.py: own buildroot, the
bootstrapped tools borrowed), it writes N small kernel files, each a `mettle_kernel` target
of one BUILD file, salts them with a fresh value so no cache holds their results, and runs
`./pants package` on all of them twice: cold (every compile and ptxas check runs) and warm
(nothing changed: everything must come from the cache). It reports wall seconds, the
actions Pants executed (spawned processes from its debug log) and actions per second.
The Pants daemon is off in both runs, so each includes Pants' own start-up.
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=50)
    ap.add_argument("--json", default="pants_build_speed.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mettle-pants-bench-") as tmp:
        clone = make_clone(ROOT, Path(tmp) / "checkout")
        targets = write_kernels(clone, args.kernels)
        report = {"kernels": args.kernels, "cpus": os.cpu_count(),
                  "cold": measure(clone, targets, "cold"),
                  "warm": measure(clone, targets, "warm")}
    for key in ("cold", "warm"):
        r = report[key]
        print(f"{key}: {r['seconds']:.1f} s, {r['actions']} actions executed "
              f"({r['compiles']} compiles), {r['actions_per_second']:.2f} actions/s, "
              f"{r['targets_per_second']:.2f} kernels/s")
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
