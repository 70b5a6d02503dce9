"""Save, then check, what `-O` produces for a corpus of files (optimizer speed work must
leave the output byte-identical).

    python3 tools/opt_output_digest.py --save /tmp/opt-before [--root DIR] [extra files/dirs]
    python3 tools/opt_output_digest.py --check /tmp/opt-before [extra files/dirs]
    python3 tools/opt_output_digest.py --all-profiles --save /tmp/ptx-before [...]

Every `.mettle` under tests/data, tests/spirv_emit/data, tests/difftest/data, bench, examples,
app and std, the programs embedded as strings in tests/host (`fn main(`, the std-using host
programs), and the extra files or directories given, is compiled in process with -O: files
with a kernel to PTX (sm_90a) and to SPIR-V, host programs (no kernel) to IR (`--dump-ir`).
A file that does not compile records its diagnostics instead, so a changed error counts as a
difference too.
`--root` picks the checkout whose compiler runs (the baseline can come from `git archive`);
the corpus is listed from this checkout, and each file compiles by its path relative to the
`--root` checkout (so a baseline compiles its own copy, and a file it lacks records an
error). Paths are relative and the embedded programs compile from memory under a fixed
name, so two runs of one checkout, wherever it lies, record the same digests.
`--all-profiles` records, for every file with a kernel, the PTX of every profile in
`PROFILES` with -O and without it, and the SPIR-V both ways (PTX backend work must leave
all of them byte-identical, or list each difference); `--jobs N` compiles in N processes.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = ("tests/data", "tests/spirv_emit/data", "tests/difftest/data", "bench", "examples",
          "app", "std")
PROFILES = ("portable", "compute_75", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a",
            "sm_120a", "gb10")


def _relative(path: str) -> str:
    """`path` relative to the checkout when it lies inside it, else as it is (absolute)."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def corpus(extra: list[str]) -> list[str]:
    out = []
    for d in [os.path.join(ROOT, c) for c in CORPUS] + extra:
        if os.path.isfile(d):
            out.append(os.path.abspath(d))
            continue
        for dirpath, _, names in os.walk(d):
            out += [os.path.join(dirpath, n) for n in names if n.endswith(".mettle")]
    return sorted(out)


EMBEDDED = "tests/host/embedded"   # where the embedded programs claim to live: no such directory


def test_programs() -> dict[str, str]:
    """The Mettle programs written as string constants in tests/host (the std-using host
    programs, each with a `fn main(`): a fixed relative path under `EMBEDDED` -> the text.
    They are compiled from memory, never written to a temporary directory: their IR records
    the source path (runtime check sites), which must be the same on every run."""
    import ast
    programs = {}
    for dirpath, _, names in os.walk(os.path.join(ROOT, "tests", "host")):
        for n in sorted(names):
            if not n.endswith(".py"):
                continue
            with open(os.path.join(dirpath, n), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            k = 0
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and "fn main(" in node.value:
                    programs[f"{EMBEDDED}/{n[:-3]}_{k}.mettle"] = node.value
                    k += 1
    return programs


def outputs(path: str, all_profiles: bool = False, text: str | None = None) -> dict[str, str]:
    """kind -> the -O output text (or the error) of one file (`text`: its source, for a
    program compiled from memory); with `all_profiles`, also every profile's PTX and the
    SPIR-V without -O (kind `ptx:<profile>[:O]`, `spirv[:O]`)."""
    got = {"ptx": _one(path, text, emit="ptx", gpu_arch="sm_90a")}
    if "no kernel" in got["ptx"]:          # a host program
        return {"ir": _one(path, text, emit="ir", dump_ir=True)}
    got["spirv"] = _one(path, text, emit="spirv")
    if all_profiles:
        for arch in PROFILES:
            for opt in (True, False):
                got[f"ptx:{arch}{':O' if opt else ''}"] = _one(path, text, optimize=opt,
                                                               emit="ptx", gpu_arch=arch)
        got["spirv:plain"] = _one(path, text, optimize=False, emit="spirv")
    return got


def _one(path: str, text: str | None, optimize: bool = True, **kw) -> str:
    from toolchain.compiler.diagnostics import CompileError
    from toolchain.compiler.driver import Options, compile_file
    try:
        r = compile_file(path, Options(optimize=optimize, **kw), source_text=text)
        if kw["emit"] == "spirv":
            return r.data.hex()
        return _import_keys(r.ir_text if kw["emit"] == "ir" else r.data.decode())
    except CompileError as e:
        return "error: " + "; ".join(d.message for d in e.diagnostics)
    except Exception as e:        # a crash is an output too: it must not change either
        return f"crash: {type(e).__name__}: {e}"


_IMPORT_KEY = re.compile(r"__import_([0-9a-f]{8})_")


def _import_keys(text: str) -> str:
    """`text` with each hidden name's module key (a hash of the module's real path, so it
    differs between checkouts) numbered in order of first appearance: `__import_k1_name`."""
    keys: dict[str, int] = {}
    return _IMPORT_KEY.sub(
        lambda m: f"__import_k{keys.setdefault(m.group(1), len(keys) + 1)}_", text)


def _digests(work: tuple[str, bool, str | None]) -> dict[str, str]:
    path, all_profiles, text = work
    return {k: hashlib.sha256(v.encode()).hexdigest() for k, v in
            outputs(path, all_profiles, text).items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", metavar="DIR")
    mode.add_argument("--check", metavar="DIR")
    ap.add_argument("--root", default=ROOT, help="checkout whose compiler runs")
    ap.add_argument("--no-test-programs", action="store_true",
                    help="leave out the host programs embedded in tests/host")
    ap.add_argument("--all-profiles", action="store_true",
                    help="every PTX profile, with and without -O, and plain SPIR-V too")
    ap.add_argument("--jobs", type=int, default=1, help="compile in this many processes")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.root))
    # every file is compiled by its path relative to the compiling checkout, which is the
    # working directory: the IR records source paths (check sites, and std's import names
    # hash them), so the digest must not depend on where a checkout or temporary lies
    files = [_relative(p) for p in corpus([os.path.abspath(e) for e in a.extra])]
    os.chdir(a.root)
    embedded = {} if a.no_test_programs else test_programs()
    files += list(embedded)
    result = {}
    work = [(p, a.all_profiles, embedded.get(p)) for p in files]
    if a.jobs > 1:
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(a.jobs) as pool:
            got = pool.map(_digests, work, chunksize=1)
    else:
        got = [_digests(w) for w in work]
    for p, digests in zip(files, got):
        name = ("tests/host:" + os.path.basename(p)) if p in embedded else p
        result[name] = digests
    if a.save:
        os.makedirs(a.save, exist_ok=True)
        with open(os.path.join(a.save, "digests.json"), "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        print(f"saved {len(result)} files' -O outputs to {a.save}")
        return 0
    with open(os.path.join(a.check, "digests.json")) as f:
        want = json.load(f)
    bad = [n for n in sorted(set(want) | set(result)) if want.get(n) != result.get(n)]
    for n in bad:
        old, new = want.get(n) or {}, result.get(n) or {}
        kinds = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        print(f"DIFFERS: {n}: {', '.join(kinds)}")
    print(f"{len(result) - len(bad)}/{len(result)} identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
