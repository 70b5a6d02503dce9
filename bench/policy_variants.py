"""Row-kernel cache-policy and unroll-factor variants (a tuning script, not a test).

Driven by bench/softmax_variants.py: `--policy-emit DIR` (any machine with the compiler and
ptxas) writes the variants' PTX, the kernels' signature (signature.json: every variant is
plain.mettle with edited PTX) and a manifest, `--policy DIR` (the GPU machine) loads them
through the Python runtime (`mettle`), checks and times them. Why: under -O, softmax 65536x1024 lost speed to occupancy (64 warps
per SM against 48 or 40 with the same SASS; docs/internals/optimizer.md, load-ahead). One reading is
L2 capacity: 64 warps x 132 SMs x 4 KiB rows is 34.6 MB of rows waiting for their second
and third pass while the output streams through the same L2. If so, an access policy that
keeps the output and the rows' last reads from displacing rows still to be re-read should
win back the speed at any row length, with no occupancy limit. The variants:

  compile configs   load-ahead's store/load-only factors (16/8 committed, 8/8, 8/4, 4/4,
                    16/4), reread hint (L1::evict_last on every pass of a re-read row) on,
                    reread.STREAM off ("stcs+lastcs" is exactly what STREAM on compiles)
  stcs              the row kernels' stores st.global.cs (evict-first in L1 and L2)
  lastcs            the last pass's re-read loads ld.global.cs (the row's last use)
  noreread          no L1::evict_last on the passes before the last
  l2last            the passes before the last: L2::cache_hint with an L2::evict_last policy
  l2first           the last pass: L1::evict_first + L2::cache_hint with L2::evict_first
  shared=N          launched with N bytes of dynamic shared memory (an occupancy cap)
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "bench", "kernels", "plain.mettle")
ROWS = ("softmax_plain", "layernorm_plain")
STREAMS = ("vadd_gs", "saxpy_helper")
CONFIGS = {"s16l8": (16, 8), "s8l8": (8, 8), "s8l4": (8, 4), "s4l4": (4, 4),
           "s16l4": (16, 4)}
# (variant name, compile config, text edits, dynamic shared bytes)
VARIANTS = (
    ("head", "s16l8", (), 0),
    ("stcs", "s16l8", ("stcs",), 0),
    ("lastcs", "s16l8", ("lastcs",), 0),
    ("stcs+lastcs", "s16l8", ("stcs", "lastcs"), 0),
    ("noreread", "s16l8", ("noreread", "nolast"), 0),
    ("noreread+stcs", "s16l8", ("noreread", "nolast", "stcs"), 0),
    ("noreread+stcs+lastcs", "s16l8", ("noreread", "stcs", "lastcs"), 0),
    ("l2last", "s16l8", ("l2last",), 0),
    ("stcs+lastcs+l2last", "s16l8", ("stcs", "lastcs", "l2last"), 0),
    ("stcs+l2first", "s16l8", ("stcs", "l2first"), 0),
    ("stcs+l2first+l2last", "s16l8", ("stcs", "l2first", "l2last"), 0),
    ("s8l8", "s8l8", (), 0),
    ("s8l4", "s8l4", (), 0),
    ("s4l4", "s4l4", (), 0),
    ("s16l4", "s16l4", (), 0),
    ("s8l4+stcs+lastcs", "s8l4", ("stcs", "lastcs"), 0),
    ("s4l4+stcs+lastcs", "s4l4", ("stcs", "lastcs"), 0),
    ("head smem18K", "s16l8", (), 18 * 1024),
    ("stcs+lastcs smem18K", "s16l8", ("stcs", "lastcs"), 18 * 1024),
)
STREAM_VARIANTS = (("head", ()), ("st.cs", ("stcs",)), ("ld.cs+st.cs", ("stcs", "ldcs")))
EL = "ld.global.L1::evict_last.f32"


def _compile(store: int, load: int) -> tuple[str, dict]:
    """(PTX, kernel signature) of plain.mettle with these load-ahead factors."""
    sys.path.insert(0, ROOT)
    from toolchain.compiler.driver import Options, compile_file
    from toolchain.compiler.opt import load_ahead, reread
    saved = load_ahead.STORE_FACTOR, load_ahead.LOAD_FACTOR, getattr(reread, "STREAM", False)
    load_ahead.STORE_FACTOR, load_ahead.LOAD_FACTOR = store, load
    reread.STREAM = False           # the text edits start from evict_last on every pass
    try:
        result = compile_file(SOURCE, Options(emit="ptx", gpu_arch="sm_90a", optimize=True))
        return result.data.decode(), result.signature
    finally:
        load_ahead.STORE_FACTOR, load_ahead.LOAD_FACTOR, reread.STREAM = saved


def _entries(ptx: str) -> dict:
    """entry name -> (start, end) offsets of its text."""
    out = {}
    for m in re.finditer(r"\.visible \.entry (\w+)\(", ptx):
        end = ptx.index("\n}\n", m.start()) + 3
        out[m.group(1)] = (m.start(), end)
    return out


def _edit_row(text: str, edits) -> str:
    """One row kernel's text with `edits`; the last pass is what follows the last
    subgroup broadcast (shfl.sync.idx) of the reductions before it."""
    cut = text.rindex("shfl.sync.idx")
    cut = text.index("\n", cut) + 1
    head, last = text[:cut], text[cut:]
    if "noreread" in edits:
        head = head.replace(EL, "ld.global.f32")
    if "nolast" in edits:
        last = last.replace(EL, "ld.global.f32")
    if "lastcs" in edits:
        last = last.replace(EL, "ld.global.cs.f32")
    if "l2first" in edits:
        last = re.sub(r"ld\.global\.L1::evict_last\.f32 (%f\d+), (\[[^\]]+\]);",
                      r"ld.global.L1::evict_first.L2::cache_hint.f32 \1, \2, %rdpolf;", last)
    if "l2last" in edits:
        head = re.sub(r"ld\.global\.L1::evict_last\.f32 (%f\d+), (\[[^\]]+\]);",
                      r"ld.global.L1::evict_last.L2::cache_hint.f32 \1, \2, %rdpoll;", head)
    if "stcs" in edits:
        last = last.replace("st.global.f32", "st.global.cs.f32")
    text = head + last
    pol = []
    if "l2last" in edits:
        pol += ["\t.reg .b64 %rdpoll;",
                "\tcreatepolicy.fractional.L2::evict_last.b64 %rdpoll, 1.0;"]
    if "l2first" in edits:
        pol += ["\t.reg .b64 %rdpolf;",
                "\tcreatepolicy.fractional.L2::evict_first.b64 %rdpolf, 1.0;"]
    if pol:
        brace = text.index("{\n") + 2
        text = text[:brace] + "\n".join(pol) + "\n" + text[brace:]
    return text


def _edit_stream(text: str, edits) -> str:
    if "stcs" in edits:
        text = text.replace("st.global.f32", "st.global.cs.f32")
    if "ldcs" in edits:
        text = text.replace("ld.global.f32", "ld.global.cs.f32")
    return text


def _apply(ptx: str, names, editor, edits) -> str:
    spans = _entries(ptx)
    for name in sorted(names, key=lambda n: -spans[n][0]):
        a, b = spans[name]
        ptx = ptx[:a] + editor(ptx[a:b], edits) + ptx[b:]
    return ptx


def _regs(path: str) -> dict:
    """ptxas's register counts (the timing run reads the loaded module's, so a machine
    without ptxas on PATH can emit too)."""
    try:
        log = subprocess.run(["ptxas", "-arch=sm_90a", "-v", path, "-o", os.devnull],
                             capture_output=True, text=True, check=True).stderr
    except FileNotFoundError:
        return {}
    return {m.group(1): int(m.group(2)) for m in re.finditer(
        r"entry function '(\w+)'.*?Used (\d+) registers", log, re.S)}


def emit(out_dir: str) -> int:
    os.makedirs(out_dir, exist_ok=True)
    compiled = {name: _compile(*f) for name, f in CONFIGS.items()}
    base = {name: ptx for name, (ptx, _) in compiled.items()}
    with open(os.path.join(out_dir, "signature.json"), "w", encoding="utf-8") as fh:
        json.dump(next(iter(compiled.values()))[1], fh, indent=1, sort_keys=True)
    manifest = {"rows": [], "streams": []}
    for name, cfg, edits, shared in VARIANTS:
        ptx = _apply(base[cfg], ROWS, _edit_row, edits)
        digest = hashlib.sha1(ptx.encode()).hexdigest()[:10]
        path = os.path.join(out_dir, f"rows_{digest}.ptx")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(ptx)
        regs = _regs(path)
        manifest["rows"].append({"name": name, "file": os.path.basename(path),
                                 "shared": shared, "regs": regs})
        print(f"{name:<24} {os.path.basename(path)} {regs}")
    for name, edits in STREAM_VARIANTS:
        ptx = _apply(base["s16l8"], STREAMS, _edit_stream, edits)
        path = os.path.join(out_dir, f"streams_{name.replace('+', '_')}.ptx")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(ptx)
        _regs(path)                               # assembles
        manifest["streams"].append({"name": name, "file": os.path.basename(path)})
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    return 0


def time_all(torch, out_dir: str, reps: int = 30) -> int:
    import mettle
    from timing import timed
    with open(os.path.join(out_dir, "manifest.json"), encoding="utf-8") as fh:
        manifest = json.load(fh)
    signature = os.path.join(out_dir, "signature.json")
    mods = {v["file"]: mettle.load(os.path.join(out_dir, v["file"]), signature=signature)
            for v in manifest["rows"] + manifest["streams"]}
    for v in manifest["rows"]:
        v["regs"] = {k: mods[v["file"]][k].registers for k in ROWS}
    problems = []
    for rows_n, cols in ((65536, 1024), (16384, 4096)):
        x = torch.randn(rows_n, cols, device="cuda")
        g, b = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
        for kind in ("softmax", "layernorm"):
            problems.append((kind, rows_n, cols, x, g, b))
    table, ok = {}, {}              # (variant, problem) -> [GB/s per round], check
    try:
        _rows(torch, mods, manifest, problems, table, ok, timed, reps)
    finally:
        _print_rows(manifest, problems, table, ok)
    _streams(torch, mods, manifest, timed, reps)
    return 0


def _rows(torch, mods, manifest, problems, table, ok, timed, reps):
    from plain_kernels import row_case        # bench/ is on the path (softmax_variants)
    heads = {}
    for rnd in range(2):
        order = manifest["rows"] if rnd == 0 else manifest["rows"][::-1]
        for kind, rows_n, cols, x, g, b in problems:
            y = torch.empty_like(x)
            ref, args = row_case(torch, kind, x, y, g, b)
            label = f"{kind} {rows_n}x{cols}"
            for v in order:
                f = mods[v["file"]][f"{kind}_plain"][(rows_n + 3) // 4, 128]
                launch = lambda: f(*args, shared=v["shared"])
                key = (v["name"], label)
                if rnd == 0:
                    y.fill_(float("nan"))
                    launch()
                    torch.cuda.synchronize()
                    good = bool(torch.allclose(y, ref, rtol=1e-4, atol=1e-4))
                    if v["name"] == "head":
                        heads[label] = y.clone()
                    same = bool(torch.equal(y, heads[label])) if label in heads else False
                    ok[key] = ("ok" if good else "BAD") + ("=" if same else "~")
                    if not good:
                        continue
                elif ok[key].startswith("BAD"):
                    continue
                ms = timed(torch, launch, reps)
                table.setdefault(key, []).append(8 * x.numel() / ms / 1e6)


def _print_rows(manifest, problems, table, ok):
    print("variant                  problem                    regs  check  round1  round2")
    for v in manifest["rows"]:
        for kind, rows_n, cols, *_ in problems:
            label = f"{kind} {rows_n}x{cols}"
            key = (v["name"], label)
            r = table.get(key, [])
            regs = v["regs"].get(f"{kind}_plain", "?")
            print(f"{v['name']:<24} {label:<20} {regs:>10}  {ok.get(key, '-'):<5} " +
                  "  ".join(f"{x:6.0f}" for x in r))


def _streams(torch, mods, manifest, timed, reps):
    n = 1 << 26
    a, bb = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    y0 = torch.randn(n, device="cuda")
    rates = {}
    for rnd in range(2):
        order = manifest["streams"] if rnd == 0 else manifest["streams"][::-1]
        for v in order:
            mod = mods[v["file"]]
            fv, fs = mod.vadd_gs[sms * 8, 256], mod.saxpy_helper[(n + 255) // 256, 256]
            lv = lambda: fv(a, bb, c, n)
            y = y0.clone()
            ls = lambda: fs(1.5, a, y, n)
            if rnd == 0:
                lv()
                ls()
                torch.cuda.synchronize()
                assert torch.equal(c, a + bb), v["name"]
                assert torch.allclose(y, 1.5 * a + y0, rtol=1e-6, atol=1e-6), v["name"]
            rates.setdefault((v["name"], "vadd_gs"), []).append(12 * n / timed(torch, lv, reps) / 1e6)
            rates.setdefault((v["name"], "saxpy"), []).append(12 * n / timed(torch, ls, reps) / 1e6)
    for (name, k), r in rates.items():
        print(f"{name:<24} {k + ' 2^26':<20} {'':>10}  ok    " +
              "  ".join(f"{x:6.0f}" for x in r))
