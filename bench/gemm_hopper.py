"""Shared pieces of the sm_90a workgroup GEMM checks (tests/gpu/test_gemm_hopper.py runs
bench/gemm.py --check) and benchmark (bench/gemm.py): the Mettle source, compile + typed
launch through the Python runtime (`mettle`) on torch's tensors, the fp32 torch oracle, and
the device-built tensor-map probe.

Everything that touches the GPU runs in the calling process; callers put each risky kernel
in its own process (a faulting kernel leaves the CUDA context unusable).
"""
from __future__ import annotations

import ctypes
import os

import mettle
from wgmma_kernels import BM, BN, EPILOGUES, GROUP, SMS, gemm_source, grid, \
    native_launch, persistent_grid  # noqa: F401


def compile_module(source: str, arch: str) -> "mettle.Module":
    """The GEMM's module: compiled in process as the hardware suite compiles (no -O unless
    $METTLE_GPU_OPT asks: plain, plain-nocontract, O, O-nocontract). Uncached: bench/gemm.py
    sets pipeline knobs (wgmma.PINGPONG_MAX_STAGES, --baseline ...) that the on-disk
    cache's key does not see, so a cached kernel could be the other setting's."""
    mode = os.environ.get("METTLE_GPU_OPT") or "plain"
    if mode not in OPT_MODES:
        raise ValueError(f"METTLE_GPU_OPT={mode!r}: expected one of {sorted(OPT_MODES)}")
    return mettle.compile(source, arch=arch, cache=False, **OPT_MODES[mode])


# tests/support/gpu_opt_mode.py's modes as mettle.compile options
OPT_MODES = {"plain": {"opt": False}, "plain-nocontract": {"opt": False, "fp_contract": False},
             "O": {"opt": True}, "O-nocontract": {"opt": True, "fp_contract": False}}


# multiprocessors a `cluster: 2` launch counts on (2 * min(pair tiles, CLUSTER_SMS // 2)
# workgroups): fewer where the GPCs cannot hold 66 clusters of 2 at once (bench/gemm.py
# --cluster-sms), else a second wave of clusters would wait for the first
CLUSTER_SMS = 132


class Gemm:
    """A compiled GEMM bound to torch tensors: a (M x K row-major), bt (N x K row-major, i.e.
    B column-major with ldb = K), c (M x N row-major f32) and d (M x N row-major, `out`:
    f32, f16 or bf16; leading dimension ldd). `epilogue`: a name of EPILOGUES fused onto
    the region; its launch then passes an Epilogue's operands too. `persistent`: one
    `persistent: group` call over the whole of D (`group`: row tiles per L2 group of the
    tile order, GROUP by default), launched on persistent_grid workgroups (or the
    launcher's `grid`). `schedule`: the call's `schedule:` option (None: none).
    `cluster`: 2 adds `cluster: 2` (persistent: clusters of 2, an even grid).
    `workspace`: stream-K through a zeroed workspace of wgmma_streamk.workspace_bytes
    (persistent, one workgroup per multiprocessor whatever the tile count; paired, every
    cluster of CLUSTER_SMS)."""

    def __init__(self, dev, fmt: str, arch: str = "sm_90a", bm: int = BM, bn: int = BN,
                 out: str = "f32", epilogue: str | None = None, persistent: bool = False,
                 schedule: str | None = None, cluster: int = 1, workspace: bool = False,
                 group: int = GROUP):
        self.persistent, self.pair, self.workspace = persistent, cluster, workspace
        self.module = compile_module(gemm_source(fmt, bm, bn, group, out=out,
                                                 epilogue=epilogue,
                                                 persistent=persistent, schedule=schedule,
                                                 cluster=cluster, workspace=workspace),
                                     arch)
        self.work = {}                        # grid -> its workspace
        self.ptx = self.module.ptx
        self.fn = self.module.gemm
        self.bm, self.bn, self.out, self.epilogue = bm, bn, out, epilogue
        self.threads, self.shared = native_launch(fmt, bm, bn, out,
                                                  schedule or "cooperative")
        from toolchain.compiler.targets.ptx.tensor import wgmma
        self.cluster = wgmma.CLUSTER

    def grid(self, m: int, n: int) -> int:
        """The default grid x: persistent_grid (whole clusters for `cluster: 2`, on
        CLUSTER_SMS), else one workgroup per region."""
        if not self.persistent:
            return grid(m, n, self.bm, self.bn, self.cluster)
        if self.workspace:                    # the parts need the idle multiprocessors
            return CLUSTER_SMS if self.pair == 2 else SMS
        if self.pair == 2:
            return persistent_grid(m, n, self.bm, self.bn, CLUSTER_SMS, cluster=2)
        return persistent_grid(m, n, self.bm, self.bn)

    def launcher(self, a, bt, c, d, m, n, k, threads=None, shared=None, epi=None,
                 grid_x=None, ldc=None):
        """A typed launch on torch's current stream: the tensors are checked against the
        kernel's uint16*/float32* parameters (f16/bf16 tensors pass as the uint16 carrier)
        and the sizes against uint32."""
        args = [a, bt, c, d] + \
            [m, n, k, a.stride(0), bt.stride(0), c.stride(0) if ldc is None else ldc,
             d.stride(0)]
        if self.epilogue:
            args += epi.args()
        g = grid_x or self.grid(m, n)
        if self.workspace:
            args.append(self.workspace_for(g))
        th = self.threads if threads is None else threads
        sh = self.shared if shared is None else shared
        bound = self.fn[g, th]
        return lambda: bound(*args, shared=sh)

    def workspace_for(self, grid_x: int):
        """The zeroed uint32 workspace of a grid_x launch (kept: the kernel leaves it zero)."""
        if grid_x not in self.work:
            self.work[grid_x] = zeroed_workspace(self.bm, self.bn, grid_x)
        return self.work[grid_x]


def zeroed_workspace(bm: int, bn: int, grid_x: int):
    """A zeroed uint32 stream-K workspace for a grid_x launch of bm x bn tiles."""
    import torch
    from types import SimpleNamespace
    from toolchain.compiler.targets.ptx.tensor.wgmma_streamk import workspace_bytes
    words = workspace_bytes(SimpleNamespace(m=bm, n=bn), grid_x) // 4
    return torch.zeros(words, dtype=torch.int32, device="cuda").view(torch.uint32)


def torch_dtype(torch, fmt: str):
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[fmt]


# relative error bound per D format against the fp32 oracle rounded once to D's format:
# only elements whose f32 sums (another order) straddle a rounding boundary differ, by one
# unit; a truncating or double rounding would be off in about half the elements
# (~2.8e-4 in f16, ~2.2e-3 in bf16)
TOLERANCE = {"f32": 1e-4, "f16": 2e-4, "bf16": 1.5e-3}


def check(torch, dev, gemm: Gemm, fmt: str, m: int, n: int, k: int, pad: int = 8,
          repeat: int = 1, alias: bool = False, **launch) -> float:
    """Run one GEMM (`repeat` launches back to back) on fresh random data with poisoned,
    padded D; return the relative error against torch fp32 (inf when any in-range
    element is unwritten or padding was touched). For an f16/bf16 result, the error
    against the fp32 oracle rounded once to that format is returned (so a missed or
    doubled rounding shows). `alias` (f32 D, one launch): C is D itself, D holding C's
    values at the launch (D = A*B + D in place)."""
    dtype = torch.float16 if fmt == "f16" else torch.bfloat16
    a = torch.randn(m, k + pad, device="cuda").to(dtype)[:, :k]
    bt = torch.randn(n, k + pad, device="cuda").to(dtype)[:, :k]
    c = torch.randn(m, n + pad, device="cuda")[:, :n]
    dfull = torch.full((m, n + pad), float("nan"), device="cuda",
                       dtype=torch_dtype(torch, gemm.out))
    d = dfull[:, :n]
    if alias:
        assert gemm.out == "f32" and repeat == 1, "C aliases an f32 D, one launch"
        d.copy_(c)
    run = gemm.launcher(a, bt, d if alias else c, d, m, n, k, **launch)
    for _ in range(repeat):                 # back to back, one stream, then one sync
        run()
    torch.cuda.synchronize()
    ref = (c + a.float() @ bt.float().t()).to(d.dtype).float()
    if torch.isnan(d).any() or not torch.isnan(dfull[:, n:]).all():
        return float("inf")
    return ((d.float() - ref).norm() / ref.norm()).item()


def deterministic(torch, gemm: Gemm, fmt: str, m: int, n: int, k: int) -> bool:
    """Two launches on the same operands write the same D, bit for bit."""
    dtype = torch.float16 if fmt == "f16" else torch.bfloat16
    a = torch.randn(m, k + 8, device="cuda").to(dtype)[:, :k]
    bt = torch.randn(n, k + 8, device="cuda").to(dtype)[:, :k]
    c = torch.randn(m, n, device="cuda")
    ds = [torch.full((m, n), float("nan"), device="cuda", dtype=torch_dtype(torch, gemm.out))
          for _ in range(2)]
    for d in ds:
        gemm.launcher(a, bt, c, d, m, n, k)()
    torch.cuda.synchronize()
    return bool(torch.equal(ds[0].view(torch.int16 if gemm.out != "f32" else torch.int32),
                            ds[1].view(torch.int16 if gemm.out != "f32" else torch.int32)))


def counters_left(torch, gemm: Gemm, grid_x: int) -> int:
    """The stream-K counters of gemm's grid_x workspace that are not zero (each launch
    must leave them all zero for the next)."""
    from toolchain.compiler.targets.ptx.tensor.wgmma_streamk import counter_bytes
    torch.cuda.synchronize()
    words = gemm.work[grid_x].view(torch.int32)[:counter_bytes(grid_x) // 4]
    return int(torch.count_nonzero(words).item())


class Epilogue:
    """The operands of a fused epilogue (tests/tensor/wgmma_kernels.EPILOGUES) on torch
    buffers: a bias of the mode's shape in D's format (a matrix one padded, column-major
    for `bias_layout: col`), alpha, beta and the clamp bounds; `apply` is the oracle
    (tensor_epilogue's order, one float32 torch operation per step, so no contraction)."""

    def __init__(self, torch, name: str | None, out: str, m: int, n: int, pad: int = 8,
                 integers: bool = False):
        self.name, self.opts = name, EPILOGUES.get(name or "", "")
        self.alpha, self.beta, self.lo, self.hi = 0.75, -0.5, -3.0, 40.0
        mode = next((w for w in ("row", "column", "matrix") if f"bias_mode: {w}"
                     in self.opts), None)
        shape = {"row": (m,), "column": (n,), "matrix": (m, n), None: (1,)}[mode]
        vals = torch.randint(-8, 8, shape, device="cuda").float() if integers else \
            torch.randn(shape, device="cuda")
        self.bias = vals.to(torch_dtype(torch, out))          # its values as D's format
        self.store, self.ldbias = self.bias, 1
        if mode == "matrix":
            col = "bias_layout: col" in self.opts
            full = torch.full((n, m + pad) if col else (m, n + pad), float("nan"),
                              device="cuda", dtype=self.bias.dtype)
            view = full[:, :m] if col else full[:, :n]
            view.copy_(self.bias.t() if col else self.bias)
            self.store, self.ldbias = view, full.stride(0)
        self.mode = mode

    def args(self) -> list:
        return [self.store, self.ldbias, self.alpha, self.beta, self.lo, self.hi]

    def apply(self, torch, t):
        """act(alpha*t + beta*bias) on the float32 sums t (M x N)."""
        if "alpha:" in self.opts:
            t = torch.mul(t, self.alpha)
        if self.mode is not None:
            b = self.bias.float()
            if "beta:" in self.opts:
                b = torch.mul(b, self.beta)
            t = torch.add(t, b[:, None] if self.mode == "row" else b)
        if "relu" in self.opts:
            t = torch.where(t < 0, torch.zeros_like(t), t)
        if "clamp" in self.opts:
            t = torch.where(t < self.lo, torch.full_like(t, self.lo), t)
            t = torch.where(t > self.hi, torch.full_like(t, self.hi), t)
        return t


def operands(torch, fmt: str, m: int, n: int, k: int, pad: int = 8, integers=False):
    """a (M x K), bt (N x K), c (M x N f32), all padded views; small integers when
    `integers` (every sum exact in f32, whatever the order)."""
    dtype = torch.float16 if fmt == "f16" else torch.bfloat16

    def rnd(rows, cols):
        if integers:
            return torch.randint(-2, 3, (rows, cols + pad), device="cuda").float()
        return torch.randn(rows, cols + pad, device="cuda")
    return (rnd(m, k).to(dtype)[:, :k], rnd(n, k).to(dtype)[:, :k],
            (rnd(m, n) * (4 if integers else 1))[:, :n])


def poisoned_d(torch, out: str, m: int, n: int, pad: int = 8):
    full = torch.full((m, n + pad), float("nan"), device="cuda",
                      dtype=torch_dtype(torch, out))
    return full, full[:, :n]


def check_epilogue(torch, gemm: Gemm, fmt: str, m: int, n: int, k: int) -> tuple[float, bool]:
    """(relative error against the oracle on random data, whether the pipeline and the
    split path (256 work-items) agree bit for bit with each other and with the oracle on
    small-integer data, where every sum is exact). inf: an in-range element unwritten
    or padding touched."""
    a, bt, c = operands(torch, fmt, m, n, k)
    epi = Epilogue(torch, gemm.epilogue, gemm.out, m, n)
    full, d = poisoned_d(torch, gemm.out, m, n)
    gemm.launcher(a, bt, c, d, m, n, k, epi=epi)()
    torch.cuda.synchronize()
    ref = epi.apply(torch, c + a.float() @ bt.float().t()).to(d.dtype).float()
    err = float("inf") if torch.isnan(d).any() or not torch.isnan(full[:, n:]).all() else \
        ((d.float() - ref).norm() / ref.norm()).item()
    a, bt, c = operands(torch, fmt, m, n, k, integers=True)
    epi = Epilogue(torch, gemm.epilogue, gemm.out, m, n, integers=True)
    outs = []
    for threads in (None, 256):
        full, d = poisoned_d(torch, gemm.out, m, n)
        gemm.launcher(a, bt, c, d, m, n, k, threads=threads, epi=epi)()
        torch.cuda.synchronize()
        outs.append((full, d))
    ref = epi.apply(torch, c + a.float() @ bt.float().t()).to(outs[0][1].dtype)
    bits = torch.int32 if gemm.out == "f32" else torch.int16
    same = all(torch.isnan(f[:, n:]).all().item() and
               torch.equal(d.contiguous().view(bits), ref.contiguous().view(bits))
               for f, d in outs)
    return err, same


# ---------------------------------------------------------------- tensor-map probe
DTYPE_CODE = {"f16": 6, "bf16": 9}         # CUtensorMapDataType


def host_map(ptr: int, fmt: str, kdim: int, rows: int, ld_bytes: int, box_rows: int,
             box_k: int = 64) -> bytes:
    """cuTensorMapEncodeTiled's bytes for the map wgmma.py builds on the device."""
    from toolchain.providers.cuda import driver
    out = (ctypes.c_uint8 * 128)()
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    dims, strides = (u64 * 2)(kdim, rows), (u64 * 1)(ld_bytes)
    box, estr = (u32 * 2)(box_k, box_rows), (u32 * 2)(1, 1)
    fn = driver.library().dll.cuTensorMapEncodeTiled
    rc = fn(ctypes.byref(out), DTYPE_CODE[fmt], 2, ctypes.c_void_p(ptr), dims, strides, box,
            estr, 0, 3, 0, 0)
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed ({rc})")
    return bytes(out)


class _Em:
    """The few emitter methods tma.build uses, for a hand-assembled probe kernel."""

    def __init__(self):
        self.lines, self.n = [], 0

    def new(self, cls: str) -> str:
        self.n += 1
        return {"r": "%r", "rd": "%rd", "p": "%p"}[cls] + str(self.n)

    def put(self, *instrs) -> None:
        from toolchain.compiler.targets.ptx.printer import format_instr
        self.lines += [format_instr(i) for i in instrs]


def probe_ptx(variants: list[tuple[object, int, int]], box_rows: int) -> str:
    """A one-thread kernel writing one device-built map per (elemtype, rank field, stride
    shift) variant to out[i*128] for base pointer p, extents (kdim, rows), pitch ld."""
    from toolchain.compiler.targets.ptx import ops
    from toolchain.compiler.targets.ptx.tensor import tma
    em = _Em()
    for i, (elem, rank, shift) in enumerate(variants):
        tma.RANK_FIELD, tma.STRIDE_SHIFT = rank, shift
        try:
            slot = em.new("rd")
            em.put(ops.binary("add", "s64", slot, "%rd_out", 128 * i))
            tma.build(em, slot, "%rd_p", elem, "%r_k", "%r_rows", "%rd_ld", box_rows, 64)
        finally:
            tma.RANK_FIELD, tma.STRIDE_SHIFT = 1, 0
    regs = f"\t.reg .b64 %rd<{em.n + 1}>;\n\t.reg .b32 %r<{em.n + 1}>;\n"
    return (".version 8.3\n.target sm_90a\n.address_size 64\n"
            ".visible .entry probe(.param .u64 out, .param .u64 p, .param .u32 k,"
            " .param .u32 rows, .param .u64 ld)\n{\n" + regs +
            "\t.reg .b64 %rd_out, %rd_p, %rd_ld;\n\t.reg .b32 %r_k, %r_rows;\n"
            "\tld.param.u64 %rd_out, [out];\n\tcvta.to.global.u64 %rd_out, %rd_out;\n"
            "\tld.param.u64 %rd_p, [p];\n\tld.param.u32 %r_k, [k];\n"
            "\tld.param.u32 %r_rows, [rows];\n\tld.param.u64 %rd_ld, [ld];\n"
            + "\n".join(em.lines) + "\n\tret;\n}\n")
