"""Attention benchmark (a script, not a test): the Mettle example against torch SDPA.

    python3 bench/attention.py [--json bench/results/attention_h200.json] [--bf16]
                               [--shapes b16h16n2048d64,...] [--dtypes f16,bf16]
                               [--rounds 5] [--batch-ms 25] [--max-reps 100]
                               [--launch-budget-ms 10000] [--time-budget-s 110]
                               [--no-check] [--dry-run] [--forms mma,wgmma,wgmma-ss]

Contenders, in one process and on one device: ours (examples/attention: the tile-value
kernel through the `mettle` runtime, compiled -O for this GPU, by default in the form the
compiler builds there: `ours_wgmma_ss` on sm_90, the tile matmuls on wgmma with Q in
workgroup memory, else `ours`, mma.sync; `--forms mma,wgmma,wgmma-ss` times the forms side
by side: docs/internals/tile-wgmma.md), `flash` (SDPA with
SDPBackend.FLASH_ATTENTION) and `cudnn` (SDPBackend.CUDNN_ATTENTION), f16 (bf16 too with
--bf16), full and causal, on the shapes of the attention issue. Each row is first checked:
ours on the first two heads against SDPA on float32 copies, with FlashAttention's rule
(examples/attention/check_attention.py: max error <= 2x torch's own 16-bit error + the
format's rounding noise). Then every contender is timed once (CUDA events) to size its
batches (about --batch-ms of work, 1..--max-reps calls), and the contenders are timed in
--rounds interleaved rounds (bench/timing.timed_together; a clock change reaches all
alike); the table gives the median. TFLOP/s counts 4*b*h*n^2*d, halved for causal. The
SM clock is sampled (nvidia-smi) around each row.

A slow `ours` (the exact tile replay runs at about 0.7 TFLOP/s) is bounded: when one launch
exceeds --launch-budget-ms, or its rounds would end past --time-budget-s since the start,
it is not timed in rounds and the table shows its single timed launch, marked `*`; when
even that launch (predicted from ours' previous row) would end past the budget, it is not
launched (`-`; the check on two heads still runs). A
backend that refuses a shape (no kernel for it) shows `-`, with the reason in the JSON.
Prints a table and writes JSON. Without a GPU or torch it says why and exits 0;
--dry-run needs neither: it prints the plan and compiles every variant it would launch.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

SHAPES = ("b16h16n2048d64", "b8h16n4096d128", "b2h16n16384d128")
from examples.attention.attention import FORMS  # noqa: E402  (--forms: compile options)

CONTENDER = {"mma": "ours", "wgmma": "ours_wgmma",     # our contender's name in each form
             "wgmma-ss": "ours_wgmma_ss"}
CONTENDERS = (*CONTENDER.values(), "flash", "cudnn")
CHECK_HEADS = 2                    # the check runs ours on the first heads of batch 0
SLOW_MS = 100.0                    # a launch this slow needs no warm-up beyond its first


def parse_shape(text: str) -> tuple[int, int, int, int]:
    b, rest = text[1:].split("h")
    h, rest = rest.split("n")
    n, d = rest.split("d")
    return int(b), int(h), int(n), int(d)


def flops(b: int, h: int, n: int, d: int, causal: bool) -> float:
    return 4 * b * h * n * n * d / (2 if causal else 1)


def sm_clock() -> int | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,"
                              "nounits"], capture_output=True, text=True, timeout=10).stdout
        return int(out.split()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def single_ms(torch, fn) -> float:
    """Milliseconds of one CUDA-event-timed call."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def forms_of(args) -> list[str]:
    return [f for f in args.forms.split(",") if f]


def dtypes_of(args) -> list[str]:
    names = [d for d in args.dtypes.split(",") if d]
    if args.bf16 and "bf16" not in names:
        names.append("bf16")
    return names


def ptxas_report(ptxas: str, ptx: str) -> tuple[bool, str]:
    """(assembled, "ok Used N registers, ..." or "FAILED <its error>") of `ptx` for sm_90a."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "attention.ptx")
        with open(path, "w", encoding="utf-8") as f:
            f.write(ptx)
        proc = subprocess.run([ptxas, "--gpu-name=sm_90a", "-v", path, "-o",
                               os.path.join(tmp, "a.cubin")], capture_output=True, text=True)
    regs = [ln.split("info    : ")[-1] for ln in proc.stderr.splitlines() if "registers" in ln]
    ok = proc.returncode == 0
    return ok, f"{'ok' if ok else 'FAILED'} {regs[0] if regs else proc.stderr.strip()[-300:]}"


def sdpa_or_reason():
    """(torch, torch.nn.functional, SDPBackend, sdpa_kernel) on a CUDA machine, else the
    reason there is nothing to time (a str)."""
    try:
        import torch  # pants: no-infer-dep
        import torch.nn.functional as F  # pants: no-infer-dep
        from torch.nn.attention import SDPBackend, sdpa_kernel  # pants: no-infer-dep
    except ImportError as e:
        return f"torch unavailable ({e})"
    if not torch.cuda.is_available():
        return "no CUDA device"
    return torch, F, SDPBackend, sdpa_kernel


def dry_run(args) -> int:
    """The plan, and every variant it would launch compiled (and ptxas-checked when ptxas
    is there) for sm_90a: no GPU or torch needed."""
    from examples.attention.attention import constants, module
    print(f"kernel: BLOCK_M {constants()['BLOCK_M']}, BLOCK_N {constants()['BLOCK_N']}")
    variants = set()
    for shape in args.shapes.split(","):
        b, h, n, d = parse_shape(shape)
        for dt in dtypes_of(args):
            variants.add((d, dt))
            for causal in (False, True):
                print(f"{shape:<18} {dt:<5} {'causal' if causal else 'full':<6} "
                      f"{flops(b, h, n, d, causal) / 1e12:8.3f} TFLOP per call")
    ptxas = os.environ.get("METTLE_PTXAS") or shutil.which("ptxas")
    failed = 0
    for (d, dt), form in ((v, f) for v in sorted(variants) for f in forms_of(args)):
        mod = module(d, dt, "sm_90a", options=FORMS[form])
        line = f"variant d{d} {dt}{'' if form == 'mma' else ' ' + form}: {len(mod.ptx)} " \
               f"bytes of PTX, block {mod.signature.kernels['attention'].block}"
        if ptxas:
            ok, report = ptxas_report(ptxas, mod.ptx)
            failed += not ok
            line += f"; ptxas: {report}"
        print(line)
    return 1 if failed else 0


def sdpa_runner(torch, F, sdpa_kernel, backend, q, k, v, causal):
    def run():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run


def bench_row(torch, args, ctx, shape, dt, causal, q, k, v, o, t_start) -> dict:
    b, h, n, d = parse_shape(shape)
    row = {"shape": shape, "dtype": dt, "causal": causal, "clock_before": sm_clock()}
    work = flops(b, h, n, d, causal)
    ours = list(ctx["ours"])
    fns = {name: (lambda f=f: f(q, k, v, causal, out=o)) for name, f in ctx["ours"].items()}
    for name, backend in (("flash", ctx["flash"]), ("cudnn", ctx["cudnn"])):
        if backend is None:
            row[f"{name}_unavailable"] = "this torch has no such SDPA backend"
            continue
        fn = sdpa_runner(torch, ctx["F"], ctx["sdpa_kernel"], backend, q, k, v, causal)
        try:
            fn()
            torch.cuda.synchronize()
            fns[name] = fn
        except RuntimeError as exc:
            row[f"{name}_unavailable"] = str(exc).splitlines()[0][:300]
    for name in ours:
        rate = ctx.get(f"{name}_flop_per_ms")      # from its last timed launch
        if rate and time.perf_counter() - t_start + work / rate / 1e3 > args.time_budget_s:
            row[f"{name}_untimed"] = (f"one launch would take about {work / rate / 1e3:.0f} "
                                      f"s and end past --time-budget-s "
                                      f"{args.time_budget_s:.0f}")
            del fns[name]
    est = {name: single_ms(torch, fn) for name, fn in fns.items()}
    row["single_ms"] = est
    for name in ours:
        if name in est:
            ctx[f"{name}_flop_per_ms"] = work / est[name]
    if not args.no_check:
        sl = [x[:1, :CHECK_HEADS] for x in (q, k, v)]
        for name, f in ctx["ours"].items():
            ok, err, bound = ctx["checker"].rule(*sl, causal, None, f(*sl, causal))
            tag = name.removeprefix("ours")             # "" or "_wgmma"
            row.update({f"check_ok{tag}": ok, f"max_err{tag}": err, f"bound{tag}": bound})
    reps = {name: max(1, min(args.max_reps, round(args.batch_ms / max(ms, 1e-3))))
            for name, ms in est.items()}
    warmup = {name: 0 if ms > SLOW_MS else 2 for name, ms in est.items()}
    for name in ours:
        if name not in est:
            continue
        cost_s = (warmup[name] + args.rounds * reps[name]) * est[name] / 1e3
        elapsed = time.perf_counter() - t_start
        if est[name] > args.launch_budget_ms:
            row[f"{name}_untimed"] = f"one launch took {est[name]:.0f} ms > --launch-budget-ms"
        elif elapsed + cost_s > args.time_budget_s:
            row[f"{name}_untimed"] = (f"its rounds ({cost_s:.0f} s) would end past "
                                      f"--time-budget-s {args.time_budget_s:.0f}")
        if f"{name}_untimed" in row:
            del fns[name]
    ms = ctx["timed_together"](torch, fns, reps, args.rounds, warmup)
    row["reps"] = {name: reps[name] for name in fns}
    for name in CONTENDERS:
        if name in ms:
            row[f"{name}_ms"] = ms[name]
            row[f"{name}_tflops"] = work / (ms[name] * 1e-3) / 1e12
    for name in ours:
        if f"{name}_untimed" in row and name in est:
            row[f"{name}_single_tflops"] = work / (est[name] * 1e-3) / 1e12
    row["clock_after"] = sm_clock()
    return row


def table_line(row: dict, ours_names=("ours",)) -> str:
    def tf(name):
        return row.get(f"{name}_tflops")

    def cell(x, mark=""):
        return f"{x:8.2f}{mark}" if x is not None else f"{'-':>8} "

    def ratio(a, c):
        return f"{a / c:10.3f}" if a and c else f"{'-':>10}"
    line = f"{row['shape']:<18} {row['dtype']:<5} {'causal' if row['causal'] else 'full':<6} "
    ours = {}
    for name in ours_names:
        ours[name] = tf(name) or row.get(f"{name}_single_tflops")
        line += cell(ours[name], "*" if f"{name}_untimed" in row else " ")
    line += f"{cell(tf('flash'))}{cell(tf('cudnn'))}"
    for name in ours_names:
        line += f"{ratio(ours[name], tf('flash'))} {ratio(ours[name], tf('cudnn'))}  "
    checks = [str(row.get("check_ok" + n.removeprefix("ours"), "-")) for n in ours_names]
    return line + "/".join(checks)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results",
                                                   "attention_h200.json"))
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--dtypes", default="f16", help="comma-separated: f16, bf16")
    ap.add_argument("--bf16", action="store_true", help="bf16 rows too")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median)")
    ap.add_argument("--batch-ms", type=float, default=25.0,
                    help="work per timed batch: sets each contender's calls per batch")
    ap.add_argument("--max-reps", type=int, default=100, help="most calls per batch")
    ap.add_argument("--launch-budget-ms", type=float, default=10000.0,
                    help="ours is not timed in rounds when one launch takes longer")
    ap.add_argument("--time-budget-s", type=float, default=110.0,
                    help="ours is not timed in rounds that would end later (since start)")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the plan and compile the variants; no GPU needed")
    ap.add_argument("--forms", default="",
                    help="comma-separated forms of ours, timed side by side: mma (the "
                    "mma.sync form, `ours`), wgmma (`ours_wgmma`, sm_90a), wgmma-ss (Q in "
                    "workgroup memory, `ours_wgmma_ss`); default: the compiler's own form "
                    "for the GPU (wgmma-ss on sm_90, else mma; mma for --dry-run)")
    args = ap.parse_args(argv)
    explicit = bool(args.forms)
    args.forms = args.forms or "mma"
    bad = set(forms_of(args)) - set(FORMS)
    if bad or not forms_of(args):
        ap.error(f"--forms: expected a comma-separated list of {', '.join(FORMS)}")
    for shape in args.shapes.split(","):
        try:
            parse_shape(shape)
        except ValueError:
            ap.error(f"--shapes: {shape!r} is not bBhHnNdD (e.g. b16h16n2048d64)")
    unknown = set(dtypes_of(args)) - {"f16", "bf16"}
    if unknown:
        ap.error(f"--dtypes: {', '.join(sorted(unknown))}: expected f16, bf16")
    if args.dry_run:
        return dry_run(args)
    found = sdpa_or_reason()
    if isinstance(found, str):
        print(f"attention bench: {found}; nothing to do")
        return 0
    torch, F, SDPBackend, sdpa_kernel = found
    if not explicit and torch.cuda.get_device_capability(0) >= (9, 0):
        args.forms = "wgmma-ss"              # what the compiler builds for sm_90a
    from examples.attention.attention import attention, constants
    from examples.attention.check_attention import Checker
    from timing import timed_together  # pants: no-infer-dep

    import functools
    t_start = time.perf_counter()
    ours = {CONTENDER[f]: functools.partial(attention, options=FORMS[f])
            for f in forms_of(args)}
    ctx = {"ours": ours, "F": F, "sdpa_kernel": sdpa_kernel,
           "timed_together": timed_together,
           "checker": None if args.no_check else Checker(),
           "flash": getattr(SDPBackend, "FLASH_ATTENTION", None),
           "cudnn": getattr(SDPBackend, "CUDNN_ATTENTION", None)}
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}
    rows = []
    labels = ["ours" if n == "ours" else "wgmma" for n in ours]
    head = "".join(f"{n:>8} " for n in labels)
    ratios = "".join(f"{n + '/flash':>10} {n + '/cudnn':>10}  " for n in labels)
    print(f"{'shape':<18} {'dtype':<5} {'mask':<6} {head}{'flash':>8} {'cudnn':>8} "
          f"{ratios}check   (TFLOP/s)", flush=True)
    for shape in args.shapes.split(","):
        b, h, n, d = parse_shape(shape)
        for dt in dtypes_of(args):
            gen = torch.Generator(device="cuda").manual_seed(0)
            q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtypes[dt], generator=gen)
                       for _ in range(3))
            o = torch.empty_like(q)
            for f in ours.values():                                   # compile and load
                f(q[:1, :1, :1], k[:1, :1, :1], v[:1, :1, :1])
            torch.cuda.synchronize()
            for causal in (False, True):
                row = bench_row(torch, args, ctx, shape, dt, causal, q, k, v, o, t_start)
                rows.append(row)
                print(table_line(row, tuple(ours)), flush=True)
            del q, k, v, o
    if any(f"{n}_untimed" in r for r in rows for n in ours):
        print("* ours: one timed launch, not interleaved rounds, or none (`-`): over a time "
              "budget (the JSON says which)")
    print(f"total {time.perf_counter() - t_start:.0f} s")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "cudnn": torch.backends.cudnn.version(), "unit": "TFLOP/s",
                   "kernel": {k: constants()[k] for k in ("BLOCK_M", "BLOCK_N")},
                   "settings": {k: v for k, v in vars(args).items() if k != "json"},
                   "rows": rows}, f, indent=1)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
