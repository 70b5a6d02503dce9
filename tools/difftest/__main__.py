"""`python3 -m tools.difftest`: run seeded random programs against the C oracle.

    python3 -m tools.difftest --seeds 0:300 --jobs 2     # the suite's bounded batch
    python3 -m tools.difftest --seeds 1000:21000 --size 3 --jobs 2 --out difftest-out
    python3 -m tools.difftest --seeds 42 --show           # print one program (Mettle and C)
    python3 -m tools.difftest --kernels --seeds 0:50      # scalar kernels: PTX (ptxas) + SPIR-V
    python3 -m tools.difftest --traps --seeds 0:24        # programs failing a run-time check
    python3 -m tools.difftest --literals --seeds 0:8      # literals at and beyond uint64
    python3 -m tools.difftest --later --seeds 0:20        # later-tier constructs (later.py)

Every mismatch is reduced (delta debugging over statements) and written to --out as
`seed<N>.mettle` / `seed<N>.c` with the first differing line. Exit status 1 when any
program disagrees, 0 otherwise; the last line gives the counts per target and opt level.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile
import time

from .gen import generate
from .reduce import reduce_program
from .runner import OPT_LEVELS, Mismatch, cc_path, check_batch, run_c, run_mettle
from .targets import TARGETS, availability


def parse_seeds(text: str) -> range:
    if ":" in text:
        a, b = text.split(":")
        return range(int(a), int(b))
    return range(int(text), int(text) + 1)


def _code(outcome) -> str:
    m = re.search(r"error\[(\w+)\]|exit status -?\d+", outcome.detail)
    return m.group(0) if m else ""


def reduce_mismatch(prog, mismatch, targets_by_name, workdir):
    target = targets_by_name[mismatch.target]

    def interesting(p):
        ref = run_c(p.c(), workdir, "red")
        if ref.kind != "ok":
            return False
        got = run_mettle(p.mettle(), workdir, target, mismatch.opt, "red")
        if mismatch.got.kind != "ok":        # the same failure: kind and diagnostic code
            return got.kind == mismatch.got.kind and _code(got) == _code(mismatch.got)
        return got.kind == "ok" and got.stdout != ref.stdout
    return reduce_program(prog, interesting)


def _run_chunk(job):
    """One batch (in a worker process with --jobs): {seed: (reference, mismatches)}."""
    seeds, size, target_names, opts, workdir = job
    os.makedirs(workdir, exist_ok=True)
    targets = [t for t in TARGETS if t.name in target_names]
    return check_batch([generate(s, size, prefix=f"q{s}_") for s in seeds], workdir,
                       targets, opts)


def report(s, prog, m, by_name, work, a) -> None:
    print(f"seed {s}: MISMATCH {m.summary()}", flush=True)
    if a.no_reduce:
        return
    small, checks = reduce_mismatch(prog, m, by_name, work)
    ref2 = run_c(small.c(), work, "red")
    got2 = run_mettle(small.mettle(), work, by_name[m.target], m.opt, "red")
    line = Mismatch(m.target, m.opt, ref2, got2).summary()
    print(f"seed {s}: reduced in {checks} checks: {line}")
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        stem = os.path.join(a.out, f"seed{s}-{m.target}-{m.opt}")
        with open(stem + ".mettle", "w") as f:
            f.write(f"// {line}\n" + small.mettle())
        with open(stem + ".c", "w") as f:
            f.write(small.c())
        print(f"seed {s}: reproducer {stem}.mettle / .c", flush=True)
    else:
        print(small.mettle(), flush=True)


def traps_main(seeds, a, names, literals: bool = False) -> int:
    """--traps: every debug build of each trap program must fail with the same message.
    --literals: literals at the widest type build and run; beyond it, every build is E0005."""
    if literals:
        from .literals import literal_case as trap_case, run_case
    else:
        from .traps import run_case, trap_case
    targets = []
    for t in TARGETS:
        ok, why = availability(t) if names is None or t.name in names else (False, "")
        if ok:
            targets.append(t)
        elif why:
            print(f"difftest: skipping target {t.name}: {why}", file=sys.stderr)
    opts = [o for o in a.opt.split(",") if o in OPT_LEVELS]
    bad, t0 = [], time.time()
    with tempfile.TemporaryDirectory(prefix="difftest-traps-") as work:
        for s in seeds:
            case = trap_case(s, a.size)
            if a.show:
                print(case.mettle())
                continue
            found = run_case(case, work, targets, opts)
            for line in found:
                print(line, flush=True)
            bad += found
    print(f"difftest --{'literals' if literals else 'traps'}: {len(seeds)} programs on {', '.join(t.name for t in targets)} "
          f"({', '.join(opts)}), {len(bad)} disagreeing, {time.time() - t0:.0f}s")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.difftest", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0:100", help="N or A:B (A inclusive, B exclusive)")
    ap.add_argument("--size", type=int, default=1, help="program size knob (1-4)")
    ap.add_argument("--targets", default=None,
                    help="comma-separated host targets (default: every available one)")
    ap.add_argument("--opt", default="O0,O", help="comma-separated: O0, O")
    ap.add_argument("--out", default=None, help="folder for reduced reproducers")
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--batch", type=int, default=20,
                    help="programs per executable (each keeps its own main; default 20)")
    ap.add_argument("--jobs", type=int, default=1, help="batches run in parallel processes")
    ap.add_argument("--show", action="store_true", help="print the programs, run nothing")
    ap.add_argument("--kernels", action="store_true", help="random scalar kernels instead")
    ap.add_argument("--traps", action="store_true",
                    help="programs that must fail a run-time check (traps.py)")
    ap.add_argument("--literals", action="store_true",
                    help="integer literals at and beyond uint64 (literals.py)")
    ap.add_argument("--later", action="store_true",
                    help="generics, traits, closures, match, defer, new, import_str "
                    "(later.py)")
    a = ap.parse_args(argv)
    seeds = parse_seeds(a.seeds)
    if a.kernels:
        from .kernels import main as kernels_main
        return kernels_main(seeds, a)
    if a.later and a.show:
        from .later import main as later_main
        return later_main(seeds, a, [], sys.stdout)
    if a.show and not (a.traps or a.literals):
        for s in seeds:
            p = generate(s, a.size)
            print(p.mettle(), "\n", p.c(), sep="")
        return 0
    if cc_path() is None:
        print("difftest: no C compiler (cc/gcc) on PATH; install gcc", file=sys.stderr)
        return 2
    names = a.targets.split(",") if a.targets else None
    if a.traps or a.literals:
        return traps_main(seeds, a, names, literals=a.literals)
    targets = []
    for t in TARGETS:
        if names is not None and t.name not in names:
            continue
        ok, why = availability(t)
        if ok:
            targets.append(t)
        else:
            print(f"difftest: skipping target {t.name}: {why}", file=sys.stderr)
    if a.later:
        from .later import main as later_main
        return later_main(seeds, a, targets, sys.stdout)
    opts = [o for o in a.opt.split(",") if o in OPT_LEVELS]
    by_name = {t.name: t for t in targets}
    counts, failures, oracle_failed, t0 = collections.Counter(), [], [], time.time()
    with tempfile.TemporaryDirectory(prefix="difftest-") as work:
        progs = {s: generate(s, a.size, prefix=f"q{s}_") for s in seeds}
        order = list(seeds)
        chunks = [order[i:i + a.batch] for i in range(0, len(order), a.batch)]
        jobs = [(c, a.size, [t.name for t in targets], opts, os.path.join(work, f"b{k}"))
                for k, c in enumerate(chunks)]
        if a.jobs > 1:
            from concurrent.futures import ProcessPoolExecutor
            with ProcessPoolExecutor(a.jobs) as pool:
                results = list(pool.map(_run_chunk, jobs))
        else:
            results = map(_run_chunk, jobs)
        for res in results:
            for s, (ref, bad) in res.items():
                if ref.kind != "ok":     # a generator bug, not a compiler one: reported
                    print(f"seed {s}: the C oracle failed ({ref.kind}): "
                          f"{ref.detail[:500]}", flush=True)
                    oracle_failed.append(s)
                    continue
                for t in targets:
                    for o in opts:
                        counts[(t.name, o)] += 1
                for m in bad:
                    failures.append(s)
                    report(s, progs[s], m, by_name, work, a)
    runs = ", ".join(f"{t} {o}: {n}" for (t, o), n in sorted(counts.items()))
    print(f"difftest: {len(seeds)} programs, runs per target/opt [{runs}], "
          f"{len(set(failures))} disagreeing, {len(oracle_failed)} skipped (C oracle failed), "
          f"{time.time() - t0:.0f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
