"""Save, then check, what `-O` produces for a corpus of files (optimizer speed work must
leave the output byte-identical).

    python3 tools/opt_output_digest.py --save /tmp/opt-before [--root DIR] [extra files/dirs]
    python3 tools/opt_output_digest.py --check /tmp/opt-before [extra files/dirs]

Every `.mettle` under tests/data, tests/spirv_emit/data, tests/difftest/data, bench, examples
and app, the programs embedded as strings in tests/host (`fn main(`, the std-using host
programs), and the extra files or directories given, is compiled in process with -O: files
with a kernel to PTX (sm_90a) and to SPIR-V, host programs (no kernel) to IR (`--dump-ir`).
A file that does not compile records its diagnostics instead, so a changed error counts as a
difference too.
`--root` picks the checkout whose compiler runs (the baseline can come from `git archive`);
file names are recorded relative to the current directory's corpus.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = ("tests/data", "tests/spirv_emit/data", "tests/difftest/data", "bench", "examples",
          "app")


def corpus(extra: list[str]) -> list[str]:
    out = []
    for d in [os.path.join(ROOT, c) for c in CORPUS] + extra:
        if os.path.isfile(d):
            out.append(os.path.abspath(d))
            continue
        for dirpath, _, names in os.walk(d):
            out += [os.path.join(dirpath, n) for n in names if n.endswith(".mettle")]
    return sorted(out)


def test_programs(out_dir: str) -> list[str]:
    """The Mettle programs written as string constants in tests/host (the std-using host
    programs, each with a `fn main(`), saved as files under `out_dir`."""
    import ast
    paths = []
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
                    path = os.path.join(out_dir, f"{n[:-3]}_{k}.mettle")
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(node.value)
                    paths.append(path)
                    k += 1
    return paths


def outputs(path: str) -> dict[str, str]:
    """kind -> the -O output text (or the error) of one file."""
    got = {"ptx": _one(path, emit="ptx", gpu_arch="sm_90a")}
    if "no kernel" in got["ptx"]:          # a host program
        return {"ir": _one(path, emit="ir", dump_ir=True)}
    got["spirv"] = _one(path, emit="spirv")
    return got


def _one(path: str, **kw) -> str:
    from toolchain.compiler.diagnostics import CompileError
    from toolchain.compiler.driver import Options, compile_file
    try:
        r = compile_file(path, Options(optimize=True, **kw))
        return r.ir_text if kw["emit"] == "ir" else r.data.hex() if kw["emit"] == "spirv" \
            else r.data.decode()
    except CompileError as e:
        return "error: " + "; ".join(d.message for d in e.diagnostics)
    except Exception as e:        # a crash is an output too: it must not change either
        return f"crash: {type(e).__name__}: {e}"


def main() -> int:
    ap = argparse.ArgumentParser()
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", metavar="DIR")
    mode.add_argument("--check", metavar="DIR")
    ap.add_argument("--root", default=ROOT, help="checkout whose compiler runs")
    ap.add_argument("--no-test-programs", action="store_true",
                    help="leave out the host programs embedded in tests/host")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.root))
    import tempfile
    tmp = tempfile.mkdtemp(prefix="opt-digest-")
    embedded = [] if a.no_test_programs else test_programs(tmp)
    files = corpus(a.extra) + embedded
    result = {}
    for p in files:
        name = ("tests/host:" + os.path.basename(p)) if p in embedded \
            else os.path.relpath(p, ROOT)
        result[name] = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in
                        outputs(p).items()}
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
        print(f"DIFFERS: {n}: {want.get(n)} -> {result.get(n)}")
    print(f"{len(result) - len(bad)}/{len(result)} identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
