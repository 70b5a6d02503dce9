"""GEMM benchmark (a script, not a test): Mettle tensor_matmul against torch.matmul.

    python3 bench/gemm.py [--json gemm.json] [--reps 10] [--probe] [--check] [--no-bench]
                          [--subgroup] [--out f32,f16] [--shapes MxNxK,...|isolate]
                          [--epilogue all|NAME,...]

The default kernel is the workgroup-scope region (tests/gpu/gemm_hopper.gemm_source: one
workgroup per 128x256 region of D = A*B + C, f16 or bf16 A row-major and B column-major,
f32 accumulate, C f32, D f32 or --out f16: D in the input's 16-bit type, rounded once),
lowered on sm_90a to the TMA + mbarrier + wgmma pipeline (docs/reference/gemm.md).
--subgroup adds the older one-warp-per-64x64-region kernel. Kernels are compiled and
launched through the Python runtime (`mettle`: typed launches on torch's tensors, in torch's
primary context and on its current stream); every configuration is checked against torch in
fp32 (random data, D poisoned with NaN) before it is timed with CUDA events in the same
process as torch: every contender of a row (ours, torch, torch+C) gets one batch per round, 5 rounds
interleaved, medians reported, so a clock change during the row reaches all of them.
TFLOP/s counts 2*M*N*K. `torch` is torch.matmul(a, b) in the input dtype (f16/bf16 out,
no C: the ratio's denominator); `torch+C` is torch.add(c, torch.matmul(a, b), out=d), our
contract (f32 C in, f32 D out) in two torch calls.
Every configuration is also timed as `persistent` (one `persistent: 8` call over the
whole of D on min(tiles, 132) workgroups: docs/reference/gemm.md "Persistent tile loop"), and
as `pers/noC`: the persistent kernel on torch.matmul's contract (D = A*B in the row's D
format, no C: C is one row of zeros read with ldc = 0, so it costs no DRAM traffic; checked
against A*B alone; with an f32 D it writes twice torch's bytes). `ratio` columns divide by
`torch`.
`pingpong` and `pp/noC` are the same two persistent contracts with `schedule: pingpong`
(docs/reference/gemm.md "Ping-pong schedule"), timed in the same interleaved rounds
(--no-pingpong leaves them out); --check-pingpong checks only that form (PINGPONG_CHECKS:
tails, a right half tile wholly outside N, odd tile counts per workgroup, K = 0, C
aliasing D, the split path, 200 launches back to back).
`auto` and `auto/noC` (`r.auto`, `r.anoC`) are ours as we recommend writing it: the same
two contracts with `schedule: auto` (docs/reference/gemm.md "Automatic schedule": the
ping-pong pipeline when A's and B's rows start on 128-byte boundaries, else the
cooperative one), so each row shows the rule's pick next to both explicit schedules
(`persist`, `pingpong`); --no-auto leaves them out. --check-auto checks that form on both
of its branches (every PINGPONG_CHECKS case with aligned and misaligned row pitches).
`cluster`, `cl/noC`, `pp+cl` and `ppcl/noC` (`r.cl`, `r.clnoC`, `r.ppcl`, `r.ppclnoC`) are
the persistent and ping-pong contracts with `cluster: 2` (docs/reference/gemm.md "Clusters
of 2": pairs of workgroups sharing each B box through a multicast copy, an even grid),
timed in the same interleaved rounds (--no-cluster leaves them out), and `au+cl`,
`aucl/noC` (`r.aucl`, `r.auclnoC`) the same with `schedule: auto`, whose cooperative branch
(misaligned rows) pairs while its ping-pong branch runs each workgroup alone; --check-cluster checks
both paired schedules (CLUSTER_CHECKS: tails, rank 1's rows past M, odd pair-tile counts
per cluster, idle clusters, K = 0, C aliasing D, the split path, 200 launches of 4096^3
back to back); --cluster-stress N [--cluster-schedules S] runs only N back-to-back launches
of 4096^3 (one process per case: tests/gpu/test_gemm_cluster.py).
--shapes isolate (ISOLATE) times the odd shape next to the shapes that separate its
causes: 5000x3000x4104 and 5000x3000x4096 (the same tiles, 8208- vs 8192-byte rows),
4096x4096x4104 and 4096^3 (a square shape, misaligned vs aligned rows).
--probe compares the device-built tensor maps with cuTensorMapEncodeTiled's bytes.
--epilogue (names of bench/wgmma_kernels.EPILOGUES, or all): --check also checks
each fused epilogue on EPI_CHECKS (random data against the torch oracle, and pipeline vs
split path bit for bit on small-integer data), and the timing gains a column for the
first named epilogue (`+epi`: the same GEMM with it fused; with --baseline also `base+epi`,
that GEMM compiled with the knob).
--baseline KNOB=INT adds `base` and `base/noC` (`r.base`, `r.bnoC`): `schedule: auto`
compiled with the pipeline module's KNOB (toolchain/compiler/targets/ptx/tensor/wgmma.py)
set to INT, timed in the same interleaved rounds as the shipped `auto` (for example
--baseline PINGPONG_C_FIRST=1: the ping-pong consumer loads C into its accumulators before its
turn instead of adding it in the epilogue).
--bm 256 (with --bn 64, 128 or 160) checks and times 256-row tiles (docs/reference/gemm.md
"Tall tiles"); --baseline-bm sets the baseline kernel's height.
--knob KNOB=INT (repeatable) compiles every kernel of the run with that setting (for example
--knob CLIPPED_STORE=1 before it is the default).
--once MxNxK [--once-schedule S] [--once-cluster 2]: one launch of ours (the one-region
kernel, or the persistent one with schedule S on torch.matmul's contract) and one of
torch.matmul, for Nsight Compute (tools/gpu/device_session.sh gemm_profile).
--fp8 (default e4m3): FP8 rows after the 16-bit table, the same shapes, D bf16, against
torch._scaled_mm with the same scales (bench/gemm_fp8.py); --fp8-check runs its checks.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import gemm_fp8  # noqa: E402
import gemm_hopper as H  # noqa: E402
import mettle  # noqa: E402
from tensor_sources import matmul_source  # noqa: E402
from wgmma_kernels import parse_knob  # noqa: E402
from timing import timed_together  # noqa: E402

# The device-built tensor-map probe's parameters (hand-written PTX: no compiler signature).
PROBE_PARAMS = (("out", "uint8*"), ("p", "uint16*"), ("k", "uint32"), ("rows", "uint32"),
                ("ld", "uint64"))

SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024), (16384, 1024, 4096),
          (5000, 3000, 4104))
CHECKS = ((128, 256, 64), (300, 520, 200), (129, 257, 65), (1000, 1000, 1000),
          (64, 64, 0), (4096, 4096, 4096), (5000, 3000, 4104))
# --shapes isolate: the row pitch (K = 4104: 8208-byte rows, 7 of 8 TMA box rows straddle
# an extra 32-byte L2 sector) against the shape (M, N, wave quantization) of 5000x3000x4104
ISOLATE = ((5000, 3000, 4104), (5000, 3000, 4096), (4096, 4096, 4104), (4096, 4096, 4096))
EPI_CHECKS = ((128, 256, 64), (300, 520, 200), (129, 257, 65), (64, 64, 0),
              (1000, 1000, 1000))


def probe(torch) -> int:
    """Device-built maps vs the driver's encoder: print which variant matches."""
    mettle.device(0)
    x = torch.empty(1000, 72, device="cuda", dtype=torch.float16)
    variants = [(e, r, s) for e in (6, 9, 10) for r in (1, 2) for s in (0, 4)]
    module = mettle.Module("ptx", H.probe_ptx(variants, 128).encode(),
                           mettle.Signature.of("probe", PROBE_PARAMS), origin="probe")
    out = torch.zeros(128 * len(variants), dtype=torch.uint8, device="cuda")
    module.probe[1, 1](out, x, 64, 1000, 144)
    torch.cuda.synchronize()
    got = bytes(out.cpu().numpy())
    for fmt in ("f16", "bf16"):
        want = H.host_map(x.data_ptr(), fmt, 64, 1000, 144, 128)
        print(f"host {fmt}: {want.hex()}")
        for i, v in enumerate(variants):
            dv = got[128 * i:128 * i + 128]
            diff = [j for j in range(128) if dv[j] != want[j]]
            print(f"  variant elem={v[0]} rank={v[1]} shift={v[2]}: "
                  f"{'MATCH' if not diff else f'differs at {diff[:12]}'}")
            if fmt == "f16" and i in (0, 1):
                print(f"    dev: {dv.hex()}")
    return 0


FORMATS = ("f16", "bf16")


def configs(outs: list[str]) -> list[tuple[str, str]]:
    """(input, D) formats: "f16" in --out means a 16-bit D of the input's own type
    (f16->f16, bf16->bf16), as torch.matmul returns it; inputs in FORMATS' order."""
    return [(f, f if o == "f16" else o) for o in outs for f in FORMATS]


def check_epilogues(torch, dev, outs, names, shapes) -> int:
    bad = 0
    for fmt, out in configs(outs):
        for name in names:
            g = check_gemm(dev, fmt, out=out, epilogue=name)
            for m, n, k in shapes:
                err, same = H.check_epilogue(torch, g, fmt, m, n, k)
                print(f"check {fmt}->{out} +{name} {m}x{n}x{k}: rel err {err:.3g}, "
                      f"pipeline = split = oracle on integers: {same}", flush=True)
                bad += not (err < H.TOLERANCE[out] and same)
    return bad


def check(torch, outs, epilogues=()) -> int:
    dev = mettle.device(0)
    bad = check_epilogues(torch, dev, outs, epilogues, EPI_CHECKS[:4] if len(CHECKS) <= 3
                          else EPI_CHECKS) if epilogues else 0
    for fmt, out in configs(outs):
        g = check_gemm(dev, fmt, out=out)
        tol, what = H.TOLERANCE[out], f"{fmt}->{out}"
        for m, n, k in CHECKS:
            err = H.check(torch, dev, g, fmt, m, n, k)
            print(f"check {what} {m}x{n}x{k}: rel err {err:.3g}", flush=True)
            bad += not err < tol
        for label, kw in (("256 threads", {"threads": 256}), ("no smem", {"shared": 0})):
            err = H.check(torch, dev, g, fmt, 300, 520, 200, **kw)
            print(f"check {what} split path ({label}) 300x520x200: rel err {err:.3g}")
            bad += not err < tol
        bad += check_persistent(torch, dev, fmt, out)
    print("CHECK", "FAILED" if bad else "OK")
    return 1 if bad else 0


# (M, N, K, grid): tails in M, N and K; tile counts that are not multiples of the grid
# (9 tiles on 4 workgroups, 32 on 5, 8 on 3), more workgroups than tiles, K = 0
PERSISTENT_CHECKS = ((300, 520, 200, 4), (129, 257, 65, 3), (1000, 1000, 1000, 5),
                     (64, 64, 0, 2), (128, 256, 64, 7), (1000, 1000, 1000, 3))


def check_persistent(torch, dev, fmt, out) -> int:
    """The persistent kernel on tails, on the pipeline and the split path (256
    work-items), plus 4096^3 on the default grid."""
    g = check_gemm(dev, fmt, out=out, persistent=True)
    cases = [(m, n, k, {"grid_x": gx}) for m, n, k, gx in PERSISTENT_CHECKS] + \
        [(300, 520, 200, {"grid_x": 4, "threads": 256}), (4096, 4096, 4096, {})]
    if len(CHECKS) <= 3:                                   # --small
        cases = cases[:2] + cases[-2:-1]
    bad = run_cases(torch, dev, g, fmt, out, "persistent", cases)
    if len(CHECKS) > 3:
        bad += stress(torch, dev, g, fmt, out, "persistent", STRESS)
    return bad


def run_cases(torch, dev, g, fmt, out, what, cases) -> int:
    """H.check of every (M, N, K, launch keywords) case, one line each; the count of
    failures."""
    bad = 0
    for m, n, k, kw in cases:
        err = H.check(torch, dev, g, fmt, m, n, k, **kw)
        print(f"check {fmt}->{out} {what} {m}x{n}x{k} {kw}: rel err {err:.3g}", flush=True)
        bad += not err < H.TOLERANCE[out]
    return bad


def stress(torch, dev, g, fmt, out, what, repeat) -> int:
    """4096^3 `repeat` times back to back (a race inside a launch shows as a hang: the
    caller's time limit); 1 when the result is wrong."""
    err = H.check(torch, dev, g, fmt, 4096, 4096, 4096, repeat=repeat)
    print(f"stress {fmt}->{out} {what} 4096^3 x{repeat} back to back: rel err {err:.3g}",
          flush=True)
    return not err < H.TOLERANCE[out]


STRESS = 200        # back-to-back launches: a race inside a launch shows as a hang
CHECK_BN = H.BN      # the checks' tile width (--bn)
CHECK_BM = H.BM      # and height (--bm)


def check_gemm(dev, fmt, **kw):
    """A kernel of the checks, at the --bm x --bn tile."""
    return H.Gemm(dev, fmt, bm=CHECK_BM, bn=CHECK_BN, **kw)


def schedule_cases(checks, out: str, aliases) -> list:
    """The (M, N, K, launch keywords) cases of a schedule's check: `checks` ((M, N, K,
    grid; 0: the default)), the split path (256 work-items) and, with f32 D, `aliases`
    (cases of C aliasing D)."""
    cases = [(m, n, k, {"grid_x": gx} if gx else {}) for m, n, k, gx in checks]
    cases.append((300, 520, 200, {"grid_x": 4, "threads": 256}))
    if out == "f32":
        cases += aliases
    return cases

# (M, N, K, grid; 0: the default): PERSISTENT_CHECKS' tails and grids, plus: N = 100 (a
# tile's right half wholly outside N: its B copies are zero-filled boxes), 12 tiles on 5
# workgroups (3, 3, 2, 2, 2: odd and even tile counts), 1 tile on 1, the odd
# 5000x3000x4104 on the default grid
PINGPONG_CHECKS = PERSISTENT_CHECKS + ((100, 100, 64, 1), (300, 1000, 130, 5),
                                       (128, 256, 64, 1), (5000, 3000, 4104, 0))


def check_pingpong(torch, dev, fmt, out, small: bool = False) -> int:
    """`schedule: pingpong` (persistent) on PINGPONG_CHECKS, the split path (256
    work-items), C aliasing D (f32 D), then 4096^3 STRESS times back to back; --small:
    four cases, no stress."""
    g = check_gemm(dev, fmt, out=out, persistent=True, schedule="pingpong")
    cases = schedule_cases(PINGPONG_CHECKS, out, [(300, 520, 200, {"grid_x": 3, "alias": True}),
                                                  (1000, 1000, 1000, {"alias": True})])
    if small:
        cases = cases[:2] + cases[6:8]
    bad = run_cases(torch, dev, g, fmt, out, "pingpong", cases)
    if not small:
        bad += stress(torch, dev, g, fmt, out, "pingpong", STRESS)
    return bad


AUTO_STRESS = 100   # back-to-back launches of 4096^3 per branch of `schedule: auto`


def pitch_pads(k: int) -> tuple[tuple[str, int], ...]:
    """(branch, padding) of A's and B's rows so that `schedule: auto` takes each branch:
    a row pitch of K + pad elements that is a multiple of 64 (128 bytes: ping-pong) or
    not (cooperative); torch's allocations are 128-byte aligned."""
    return (("aligned", -k % 64 or 64), ("misaligned", 8 if (k + 8) % 64 else 16))


def check_auto(torch, dev, fmt, out, small: bool = False) -> int:
    """`schedule: auto` (persistent) on PINGPONG_CHECKS, each with aligned and misaligned
    row pitches (pitch_pads: both pipelines of the kernel), the split path (256
    work-items), C aliasing D (f32 D), then 4096^3 AUTO_STRESS times back to back on each
    branch; --small: three cases, no stress."""
    g, tol, bad = check_gemm(dev, fmt, out=out, persistent=True, schedule="auto"), \
        H.TOLERANCE[out], 0
    cases = schedule_cases(PINGPONG_CHECKS, out, [(300, 520, 200, {"grid_x": 3, "alias": True})])
    if small:
        cases = cases[:2] + cases[7:8]
    for m, n, k, kw in cases:
        for branch, pad in pitch_pads(k):
            err = H.check(torch, dev, g, fmt, m, n, k, pad=pad, **kw)
            print(f"check {fmt}->{out} auto {branch} {m}x{n}x{k} {kw}: rel err {err:.3g}",
                  flush=True)
            bad += not err < tol
    if not small:
        for branch, pad in pitch_pads(4096):
            err = H.check(torch, dev, g, fmt, 4096, 4096, 4096, pad=pad, repeat=AUTO_STRESS)
            print(f"stress {fmt}->{out} auto {branch} 4096^3 x{AUTO_STRESS} back to back: "
                  f"rel err {err:.3g}", flush=True)
            bad += not err < tol
    return bad


# (M, N, K, grid; 0: one workgroup per multiprocessor) with a `workspace:`: fewer tiles
# than workgroups split 8 ways (16 tiles), 4 ways (32 tiles; 9 tiles of 4 K chunks) and 2
# ways (2 K chunks), not at all (one K chunk; K = 0); more tiles than workgroups (whole
# rounds, then a last round split 3 ways and 2 ways under --stream-k 2): 5000x3000x4104,
# 12 tiles on 5, 4096^3
STREAMK_CHECKS = ((1000, 1000, 1000, 0), (300, 520, 200, 0), (129, 257, 65, 0),
                  (500, 1000, 2100, 0),
                  (300, 520, 64, 0), (64, 64, 0, 0), (5000, 3000, 4104, 0),
                  (300, 1000, 130, 5), (4096, 4096, 4096, 0))
STREAMK_SHAPE = (1000, 1000, 8200)    # 32 tiles on 132: every tile split 4 ways


def check_streamk(torch, dev, fmt, out, small: bool = False) -> int:
    """Stream-K (`workspace:`), cooperative and auto (both branches: pitch_pads), alone and
    in clusters of 2 (grids rounded up to whole clusters), on STREAMK_CHECKS, the split
    path (256 work-items) and C aliasing D (f32 D); then the workspace's counters all back
    at zero, two launches of STREAMK_SHAPE bitwise equal (the parts are summed in one
    order whichever finishes last) and (not --small) that shape STRESS times back to back;
    --small: three cases."""
    bad = 0
    for schedule, cluster in (("cooperative", 1), ("auto", 1), ("cooperative", 2),
                              ("auto", 2)):
        g = check_gemm(dev, fmt, out=out, persistent=True, schedule=schedule, cluster=cluster,
                   workspace=True)
        name = f"stream-K {schedule}" + (" cluster" if cluster == 2 else "")
        cases = schedule_cases(STREAMK_CHECKS, out, [(300, 520, 200, {"alias": True})])
        if small:
            cases = cases[:3]
        for m, n, k, kw in cases:
            if cluster == 2 and "grid_x" in kw:
                kw = dict(kw, grid_x=kw["grid_x"] + kw["grid_x"] % 2)
            for branch, pad in pitch_pads(k) if schedule == "auto" else (("", 8),):
                err = H.check(torch, dev, g, fmt, m, n, k, pad=pad, **kw)
                print(f"check {fmt}->{out} {name} {branch} {m}x{n}x{k} {kw}: "
                      f"rel err {err:.3g}", flush=True)
                bad += not err < H.TOLERANCE[out]
        same = H.deterministic(torch, g, fmt, *STREAMK_SHAPE)
        left = sum(H.counters_left(torch, g, grid) for grid in g.work)
        print(f"check {fmt}->{out} {name}: two launches bitwise equal: {same}; "
              f"counters left non-zero: {left}", flush=True)
        bad += (not same) + (left != 0)
        if not small:
            err = H.check(torch, dev, g, fmt, *STREAMK_SHAPE, repeat=STRESS)
            print(f"stress {fmt}->{out} {name} {'x'.join(map(str, STREAMK_SHAPE))}"
                  f" x{STRESS} back to back: rel err {err:.3g}", flush=True)
            bad += not err < H.TOLERANCE[out]
    return bad


# (M, N, K, grid; 0: the default), every grid even (whole clusters): 9 tiles as 6 pair
# tiles on 2 clusters (rank 1 of the third row tile past M), 4 tiles as 2 pair tiles on 1,
# 32 tiles as 16 pair tiles on 3 clusters (6, 5, 5), K = 0, 1 tile on 4 clusters (rank 1
# past M, 3 idle clusters), N = 100 (a ping-pong right half wholly outside N), 3 row tiles
# (an odd tile count), 12 tiles on 5 clusters, the odd 5000x3000x4104 on the default grid
CLUSTER_CHECKS = ((300, 520, 200, 4), (129, 257, 65, 2), (1000, 1000, 1000, 6),
                  (64, 64, 0, 2), (128, 256, 64, 8), (100, 100, 64, 2), (384, 256, 64, 2),
                  (300, 1000, 130, 10), (5000, 3000, 4104, 0))
CLUSTER_SCHEDULES = ("cooperative", "pingpong", "auto")


def check_cluster(torch, dev, fmt, out, schedule, small: bool = False,
                  with_stress: bool = True) -> int:
    """`cluster: 2` (persistent, `schedule`) on CLUSTER_CHECKS, the split path (256
    work-items), C aliasing D (f32 D), then (`with_stress`) 4096^3 STRESS times back to back;
    --small: four cases, no stress."""
    g = cluster_gemm(dev, fmt, out, schedule)
    cases = schedule_cases(CLUSTER_CHECKS, out, [(300, 520, 200, {"grid_x": 2, "alias": True})])
    if small:
        cases = cases[:2] + cases[4:6]
    bad = run_cases(torch, dev, g, fmt, out, f"cluster {schedule}", cases)
    if with_stress and not small:
        bad += stress(torch, dev, g, fmt, out, f"cluster {schedule}", STRESS)
    return bad


def cluster_gemm(dev, fmt, out, schedule):
    return check_gemm(dev, fmt, out=out, persistent=True, schedule=schedule, cluster=2)


def subgroup_launcher(dev, fmt, a, bt, c, d, m, n, k):
    src = matmul_source("gemm", fmt, fmt, "f32", "f32", "m64n64k16",
                        layouts=("row", "col", "row", "row"), warps=4)
    bound = H.compile_module(src, "sm_90a").gemm[((n + 255) // 256, (m + 63) // 64, 1), 128]
    args = (a, bt, c, d, m, n, k, a.stride(0), bt.stride(0), c.stride(0), d.stride(0))
    return lambda: bound(*args)


def bench_shape(torch, dev, gemms, fmt, out, m, n, k, reps, subgroup, epi_gemms=None,
                pgemms=None, ppgemms=None, agemms=None, clgemms=None, ppclgemms=None,
                auclgemms=None, bgemms=None, bepi_gemms=None):
    dtype = torch.float16 if fmt == "f16" else torch.bfloat16
    a = torch.randn(m, k, device="cuda").to(dtype)
    bt = torch.randn(n, k, device="cuda").to(dtype)
    c = torch.randn(m, n, device="cuda")
    d = torch.empty(m, n, device="cuda", dtype=H.torch_dtype(torch, out))
    ref = (c + a.float() @ bt.float().t()).to(d.dtype).float()
    runs = {"workgroup": gemms[fmt, out].launcher(a, bt, c, d, m, n, k)}
    refs = {}
    # the persistent contracts per schedule: with C, and torch.matmul's own, no C (a zero
    # row read with ldc = 0), D in the row's format
    for name, noc, pg in (("auto", "autonoc", agemms), ("persistent", "noc", pgemms),
                          ("pingpong", "ppnoc", ppgemms), ("cluster", "clnoc", clgemms),
                          ("ppcluster", "ppclnoc", ppclgemms),
                          ("aucluster", "auclnoc", auclgemms),
                          ("base", "basenoc", bgemms)):
        if not pg:
            continue
        runs[name] = pg[fmt, out].launcher(a, bt, c, d, m, n, k)
        zero = torch.zeros(1, n, device="cuda")
        runs[noc] = pg[fmt, out].launcher(a, bt, zero, d, m, n, k, ldc=0)
        refs[noc] = (a.float() @ bt.float().t()).to(d.dtype).float()
    for name, eg in (("epilogue", epi_gemms), ("baseepi", bepi_gemms)):
        if not eg:
            continue
        g = eg[fmt, out]
        epi = H.Epilogue(torch, g.epilogue, out, m, n)
        runs[name] = g.launcher(a, bt, c, d, m, n, k, epi=epi)
        refs[name] = epi.apply(torch, c + a.float() @ bt.float().t()).to(d.dtype).float()
    if subgroup and out == "f32":
        runs["subgroup"] = subgroup_launcher(dev, fmt, a, bt, c, d, m, n, k)
    flop = 2.0 * m * n * k
    row = {"dtype": fmt, "out": out, "shape": f"{m}x{n}x{k}"}
    for name, run in runs.items():
        print(f"# {fmt} {m}x{n}x{k} {name}: check", flush=True)   # locates a hang
        d.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        want = refs.get(name, ref)
        err = ((d.float() - want).norm() / want.norm()).item()
        if not err < H.TOLERANCE[out]:
            raise SystemExit(f"{name} {fmt} {m}x{n}x{k}: result differs from torch "
                             f"(rel err {err})")
    b = bt.t()
    dc = torch.empty_like(c)
    timed_runs = dict(runs)
    timed_runs["torch"] = lambda: torch.matmul(a, b)
    timed_runs["torch_c"] = lambda: torch.add(c, torch.matmul(a, b), out=dc)
    print(f"# {fmt} {m}x{n}x{k}: time {', '.join(timed_runs)} interleaved", flush=True)
    for name, ms in timed_together(torch, timed_runs, reps).items():
        row[f"{name}_tflops"] = round(flop / ms / 1e9, 1)
    for name in runs:
        key = "ratio" if name == "workgroup" else f"{name}_ratio"
        row[key] = round(row[f"{name}_tflops"] / row["torch_tflops"], 3)
    print(row, flush=True)
    return row


def once(torch, dev, bn, m, n, k, schedule: str = "", cluster: int = 1) -> int:
    """One launch of the f16 kernel and one torch.matmul of the same shape (profilers).
    `schedule`: empty, the one-region kernel with f32 C and D; else the persistent kernel
    with that schedule on torch.matmul's contract (f16 D, no C: a zero row, ldc = 0), in
    clusters of `cluster`."""
    a = torch.randn(m, k, device="cuda").half()
    bt = torch.randn(n, k, device="cuda").half()
    if schedule:
        c = torch.zeros(1, n, device="cuda")
        d = torch.empty(m, n, device="cuda", dtype=torch.float16)
        H.Gemm(dev, "f16", bn=bn, out="f16", persistent=True, schedule=schedule,
               cluster=cluster).launcher(a, bt, c, d, m, n, k, ldc=0)()
    else:
        c = torch.randn(m, n, device="cuda")
        d = torch.empty_like(c)
        H.Gemm(dev, "f16", bn=bn).launcher(a, bt, c, d, m, n, k)()
    torch.matmul(a, bt.t())
    torch.cuda.synchronize()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default="gemm.json")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--small", action="store_true", help="--check on small shapes only")
    ap.add_argument("--subgroup", action="store_true")
    ap.add_argument("--once", default="",
                    help="MxNxK: one f16 launch of ours, then torch.matmul (for ncu)")
    ap.add_argument("--once-schedule", default="",
                    help="with --once: the persistent kernel with this schedule, f16 D, "
                         "no C (default: the one-region kernel, f32 C and D)")
    ap.add_argument("--once-cluster", type=int, default=1, help="with --once-schedule: "
                    "the `cluster:` option (2: clusters of 2)")
    ap.add_argument("--shapes", default="")
    ap.add_argument("--cluster", type=int, default=0, help="override wgmma.CLUSTER")
    ap.add_argument("--out", default="f32,f16",
                    help="D formats to check and time (f32, f16: the input's 16-bit type)")
    ap.add_argument("--prefetch-ahead", type=int, default=-1,
                    help="override wgmma.PREFETCH_C_AHEAD (0: no L2 prefetch of C)")
    ap.add_argument("--bn", type=int, default=H.BN, help="region width (64..256)")
    ap.add_argument("--bm", type=int, default=H.BM,
                    help="region height (128, or 256: tall tiles, cooperative and unpaired)")
    ap.add_argument("--epilogue", default="",
                    help="fused epilogues to check and time (names or all)")
    ap.add_argument("--formats", default="f16,bf16",
                    help="input formats, in the order they are timed")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds idle before each timed row (clocks recover from the "
                    "previous row's power draw)")
    ap.add_argument("--check-persistent", action="store_true",
                    help="check only the persistent kernel (every --out format)")
    ap.add_argument("--no-persistent", action="store_true",
                    help="leave out the persistent rows")
    ap.add_argument("--check-pingpong", action="store_true",
                    help="check only the `schedule: pingpong` kernel (every --out format)")
    ap.add_argument("--no-pingpong", action="store_true",
                    help="leave out the `schedule: pingpong` columns (and FP8's)")
    ap.add_argument("--check-auto", action="store_true",
                    help="check only the `schedule: auto` kernel, both branches (every "
                    "--out format)")
    ap.add_argument("--no-auto", action="store_true",
                    help="leave out the `schedule: auto` columns (and FP8's)")
    ap.add_argument("--check-cluster", action="store_true",
                    help="check only the `cluster: 2` kernels (--cluster-schedules, every "
                    "--out format)")
    ap.add_argument("--check-streamk", action="store_true",
                    help="check only the stream-K kernels (`workspace:`, cooperative and "
                    "auto, every --out format)")
    ap.add_argument("--no-cluster", action="store_true",
                    help="leave out the `cluster: 2` columns")
    ap.add_argument("--cluster-stress", type=int, default=0,
                    help="only N back-to-back launches of 4096^3 with `cluster: 2`")
    ap.add_argument("--cluster-sms", type=int, default=0,
                    help="multiprocessors a `cluster: 2` launch counts on (default 132: "
                    "66 clusters); fewer if the GPCs hold fewer clusters at once")
    ap.add_argument("--no-stress", action="store_true",
                    help="--check-cluster without its back-to-back launches")
    ap.add_argument("--cluster-schedules", default=",".join(CLUSTER_SCHEDULES),
                    help="schedules of --check-cluster / --cluster-stress")
    ap.add_argument("--baseline", default="",
                    help="KNOB=INT: also time `schedule: auto` compiled with the wgmma "
                         "module's KNOB set to INT (columns base, base/noC), an A/B of a "
                         "pipeline choice in the same interleaved rounds")
    ap.add_argument("--knob", action="append", default=[],
                    help="KNOB=INT: compile every kernel with the wgmma module's KNOB set to "
                         "INT (repeatable; --baseline's knob is set on top for its kernel)")
    ap.add_argument("--workspace", action="store_true",
                    help="give the `schedule: auto` kernels, the cooperative and auto "
                         "`cluster: 2` ones (and --baseline's) a stream-K `workspace:` and "
                         "one workgroup per multiprocessor; A/B with --baseline STREAM_K=0")
    ap.add_argument("--baseline-cluster", action="store_true",
                    help="--baseline's kernel in clusters of 2 (compare with au+cl)")
    ap.add_argument("--baseline-bn", type=int, default=0,
                    help="the baseline kernel (`schedule: auto`, with or without --baseline's "
                    "knob) with this region width instead of --bn")
    ap.add_argument("--group", type=int, default=0,
                    help="row tiles per L2 group of the persistent kernels' tile order "
                         "(`persistent: G`; default 8)")
    ap.add_argument("--baseline-bm", type=int, default=0,
                    help="the baseline kernel's region height instead of --bm")
    ap.add_argument("--baseline-group", type=int, default=0,
                    help="the baseline kernel's `persistent: G` instead of --group's")
    ap.add_argument("--stream-k", type=int, default=-1,
                    help="override wgmma.STREAM_K (what a workspace splits: 1 launches of "
                         "fewer tiles than workgroups, 2 also the last round, 0 nothing)")
    ap.add_argument("--pingpong-stages", type=int, default=0,
                    help="override wgmma.PINGPONG_MAX_STAGES (the ping-pong ring depth)")
    ap.add_argument("--epilogue-batch", type=int, default=0,
                    help="override wgmma.EPILOGUE_BATCH (1: the first measured epilogue)")
    ap.add_argument("--fp8", default="e4m3",
                    help="A formats of the FP8 rows (bench/gemm_fp8.py: ours against "
                    "torch._scaled_mm, D bf16; empty: none)")
    ap.add_argument("--fp8-check", action="store_true",
                    help="also run bench/gemm_fp8.py's checks on the --fp8 formats")
    args = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.zeros(1, device="cuda")               # create torch's (primary) context first
    from toolchain.compiler.targets.ptx.tensor import wgmma
    if args.cluster:
        wgmma.CLUSTER = args.cluster
    if args.epilogue_batch:
        wgmma.EPILOGUE_BATCH = args.epilogue_batch
    if args.prefetch_ahead >= 0:
        wgmma.PREFETCH_C_AHEAD = args.prefetch_ahead
    if args.pingpong_stages:
        wgmma.PINGPONG_MAX_STAGES = args.pingpong_stages
    if args.stream_k >= 0:
        wgmma.STREAM_K = args.stream_k
    def knob_option(option: str, text: str):
        try:
            return parse_knob(wgmma, text)
        except ValueError as e:
            ap.error(f"{option} {e}")
    for text in args.knob:
        setattr(wgmma, *knob_option("--knob", text))
    knob, value = knob_option("--baseline", args.baseline) if args.baseline else ("", None)
    if args.cluster_sms:
        H.CLUSTER_SMS = args.cluster_sms
    outs = args.out.split(",")
    global FORMATS
    FORMATS = tuple(args.formats.split(","))
    epilogues = list(H.EPILOGUES) if args.epilogue == "all" else \
        [e for e in args.epilogue.split(",") if e]
    if args.probe:
        return probe(torch)
    if args.small:
        global CHECKS
        CHECKS = CHECKS[:3]
    cl_scheds = [x for x in args.cluster_schedules.split(",") if x]
    global CHECK_BN, CHECK_BM
    CHECK_BN, CHECK_BM = args.bn, args.bm
    if (args.bm, args.bn) != (H.BM, H.BN):
        print(f"# kernels of the checks: {args.bm}x{args.bn} tiles", flush=True)
    if args.cluster_stress:
        dev0 = mettle.device(0)
        bad = sum(stress(torch, dev0, cluster_gemm(dev0, f, o, sch), f, o, f"cluster {sch}",
                         args.cluster_stress) for f, o in configs(outs) for sch in cl_scheds)
        print("CHECK", "FAILED" if bad else "OK")
        return 1 if bad else 0
    if args.check_persistent or args.check_pingpong or args.check_auto or \
            args.check_cluster or args.check_streamk:
        dev0 = mettle.device(0)
        bad = sum(check_persistent(torch, dev0, f, o) for f, o in configs(outs)) \
            if args.check_persistent else 0
        if args.check_pingpong:
            bad += sum(check_pingpong(torch, dev0, f, o, args.small)
                       for f, o in configs(outs))
        if args.check_auto:
            bad += sum(check_auto(torch, dev0, f, o, args.small) for f, o in configs(outs))
        if args.check_streamk:
            bad += sum(check_streamk(torch, dev0, f, o, args.small) for f, o in configs(outs))
        if args.check_cluster:
            bad += sum(check_cluster(torch, dev0, f, o, sch, args.small, not args.no_stress)
                       for f, o in configs(outs) for sch in cl_scheds)
        print("CHECK", "FAILED" if bad else "OK")
        if bad:
            return 1
    elif args.check and check(torch, outs, epilogues):
        return 1
    fp8 = [f for f in args.fp8.split(",") if f]
    if args.fp8_check and fp8 and gemm_fp8.check(torch, fp8, ["bf16"],
                                             gemm_fp8.CHECKS[:3] if args.small else
                                             gemm_fp8.CHECKS,
                                             pingpong=not args.no_pingpong,
                                             auto=not args.no_auto):
        return 1
    if args.no_bench:
        return 0
    dev = mettle.device(0)
    if args.once:
        return once(torch, dev, args.bn, *(int(x) for x in args.once.split("x")),
                    schedule=args.once_schedule, cluster=args.once_cluster)
    pairs = configs(outs)
    group = args.group or H.GROUP
    gemms = {(f, o): H.Gemm(dev, f, bm=args.bm, bn=args.bn, out=o) for f, o in pairs}
    shapes = SHAPES if not args.shapes else ISOLATE if args.shapes == "isolate" else \
        [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    epi_gemms = {(f, o): H.Gemm(dev, f, bm=args.bm, bn=args.bn, out=o, epilogue=epilogues[0])
                 for f, o in pairs} if epilogues else None
    pgemms = None if args.no_persistent else \
        {(f, o): H.Gemm(dev, f, bm=args.bm, bn=args.bn, out=o, persistent=True, group=group)
         for f, o in pairs}
    ppgemms = None if args.no_persistent or args.no_pingpong else \
        {(f, o): H.Gemm(dev, f, bm=args.bm, bn=args.bn, out=o, persistent=True, group=group,
                        schedule="pingpong") for f, o in pairs}
    agemms = None if args.no_persistent or args.no_auto else \
        {(f, o): H.Gemm(dev, f, bm=args.bm, bn=args.bn, out=o, persistent=True, group=group,
                        schedule="auto", workspace=args.workspace) for f, o in pairs}
    clgemms, ppclgemms, auclgemms = (
        {(f, o): H.Gemm(dev, f, bm=args.bm, bn=args.bn, out=o, persistent=True, group=group,
                        schedule=sch, cluster=2,
                        workspace=args.workspace and sch != "pingpong")
         for f, o in pairs}
        if not (args.no_persistent or args.no_cluster) else None
        for sch in ("cooperative", "pingpong", "auto"))
    bgemms = bepi_gemms = None
    if args.baseline or args.baseline_bn or args.baseline_bm or args.baseline_group:
        kept = getattr(wgmma, knob) if args.baseline else None
        if args.baseline:
            setattr(wgmma, knob, value)
        bbn, bbm = args.baseline_bn or args.bn, args.baseline_bm or args.bm
        bgroup = args.baseline_group or group
        bgemms = {(f, o): H.Gemm(dev, f, bm=bbm, bn=bbn, out=o, persistent=True,
                                 schedule="auto",
                                 workspace=args.workspace, group=bgroup,
                                 cluster=2 if args.baseline_cluster else 1) for f, o in pairs}
        if epilogues:
            bepi_gemms = {(f, o): H.Gemm(dev, f, bm=bbm, bn=bbn, out=o,
                                         epilogue=epilogues[0])
                          for f, o in pairs}
        if args.baseline:
            setattr(wgmma, knob, kept)
    header = (f"{'gemm':<22} {'mettle':>8} {'auto':>8} {'auto/noC':>8} {'persist':>8} "
              f"{'pers/noC':>8} {'pingpong':>8} {'pp/noC':>8} {'cluster':>8} "
              f"{'cl/noC':>8} {'pp+cl':>8} {'ppcl/noC':>8} {'au+cl':>8} {'aucl/noC':>8} "
              f"{'torch':>8} "
              f"{'torch+C':>8} {'ratio':>6} {'r.auto':>6} {'r.anoC':>6} {'r.pers':>6} "
              f"{'r.noC':>6} {'r.pp':>6} {'r.ppnoC':>7} {'r.cl':>6} {'r.clnoC':>7} "
              f"{'r.ppcl':>6} {'r.ppclnoC':>9} {'r.aucl':>6} {'r.auclnoC':>9}"
              + (f" {'base':>8} {'base/noC':>8} {'r.base':>6} {'r.bnoC':>6}"
                 if bgemms else "")
              + ("  subgroup" if args.subgroup else "")
              + (f"  +{epilogues[0]}" if epilogues else "")
              + ("  base+epi" if bepi_gemms else ""))

    def col(r, key, fmt):
        return format(r[key], fmt) if key in r else "-"

    def line(r) -> str:
        name = f"{r['dtype']}->{r['out']} {r['shape']}"
        return (name.ljust(22) + f" {r['workgroup_tflops']:>8.1f} "
                f"{col(r, 'auto_tflops', '.1f'):>8} {col(r, 'autonoc_tflops', '.1f'):>8} "
                f"{col(r, 'persistent_tflops', '.1f'):>8} {col(r, 'noc_tflops', '.1f'):>8} "
                f"{col(r, 'pingpong_tflops', '.1f'):>8} {col(r, 'ppnoc_tflops', '.1f'):>8} "
                f"{col(r, 'cluster_tflops', '.1f'):>8} {col(r, 'clnoc_tflops', '.1f'):>8} "
                f"{col(r, 'ppcluster_tflops', '.1f'):>8} "
                f"{col(r, 'ppclnoc_tflops', '.1f'):>8} "
                f"{col(r, 'aucluster_tflops', '.1f'):>8} "
                f"{col(r, 'auclnoc_tflops', '.1f'):>8} "
                f"{r['torch_tflops']:>8.1f} {r['torch_c_tflops']:>8.1f} {r['ratio']:>6.3f} "
                f"{col(r, 'auto_ratio', '.3f'):>6} {col(r, 'autonoc_ratio', '.3f'):>6} "
                f"{col(r, 'persistent_ratio', '.3f'):>6} {col(r, 'noc_ratio', '.3f'):>6} "
                f"{col(r, 'pingpong_ratio', '.3f'):>6} {col(r, 'ppnoc_ratio', '.3f'):>7} "
                f"{col(r, 'cluster_ratio', '.3f'):>6} {col(r, 'clnoc_ratio', '.3f'):>7} "
                f"{col(r, 'ppcluster_ratio', '.3f'):>6} {col(r, 'ppclnoc_ratio', '.3f'):>9} "
                f"{col(r, 'aucluster_ratio', '.3f'):>6} {col(r, 'auclnoc_ratio', '.3f'):>9}"
                + (f" {col(r, 'base_tflops', '.1f'):>8} {col(r, 'basenoc_tflops', '.1f'):>8}"
                   f" {col(r, 'base_ratio', '.3f'):>6} {col(r, 'basenoc_ratio', '.3f'):>6}"
                   if bgemms else "")
                + (f"  {r['subgroup_tflops']:.1f}" if args.subgroup else "")
                + (f"  {r['epilogue_tflops']:.1f}" if epilogues else "")
                + (f"  {r['baseepi_tflops']:.1f}" if bepi_gemms else ""))
    rows = []
    print("row: " + header, flush=True)   # each row as it is measured: a hang keeps them
    for f, o in pairs:
        for shape in shapes:
            if args.pause:
                torch.cuda.synchronize()
                time.sleep(args.pause)
            rows.append(bench_shape(torch, dev, gemms, f, o, *shape, args.reps,
                                    args.subgroup, epi_gemms, pgemms, ppgemms, agemms,
                                    clgemms, ppclgemms, auclgemms, bgemms, bepi_gemms))
            print("row: " + line(rows[-1]), flush=True)
    fp8_rows = gemm_fp8.bench(torch, fp8, ["bf16"], shapes, args.reps,
                              pingpong=not args.no_pingpong, auto=not args.no_auto) \
        if fp8 else []
    print(f"device: {dev.name}")
    print(header)
    for r in rows:
        print(line(r))
    if fp8_rows:
        print(gemm_fp8.table(fp8_rows))
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"device": dev.name, "unit": "TFLOP/s", "results": rows,
                   "fp8": fp8_rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
