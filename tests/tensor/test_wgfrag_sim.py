"""The wgmma model of wgfrag_sim.py and wgmma_desc.py on hand-written sm_90a kernels (each
assembled by ptxas): B, and A for the SS form, stored into workgroup memory with st.shared
in a canonical layout, fenced, synchronised, read through descriptors by
`wgmma.mma_async m64nNk16` with A from registers or shared memory; results against numpy.
The layouts here are computed with a small evaluator of CuTe layouts from the CUTLASS
formulas (Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom tiled by tile_to_shape, ALayout_64x16,
CLayout_64xN), independently of the model's own decoder. Every missing synchronisation the
model claims to catch is shown caught."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support import tensor_oracle as O

from .ptx_sim import SimError
from .wgfrag_sim import run_wgfrag
from .wgmma_desc import element_offsets, make

# ---- CuTe layouts (cute/layout.hpp semantics: colexicographic coordinates)


def cute(shape, stride, index: int) -> int:
    """The offset of linear `index` in the (possibly nested) layout shape:stride."""
    if isinstance(shape, int):
        return (index % shape) * stride
    out = 0
    for s, d in zip(shape, stride):
        size = int(np.prod(_flat(s)))
        out += cute(s, d, index % size)
        index //= size
    return out


def _flat(s):
    return [s] if isinstance(s, int) else [x for e in s for x in _flat(e)]


def thread_value(shape, stride, t: int, v: int) -> tuple[int, int]:
    """(m, k or n) of value v of thread t in a ((threads),(values)) layout over m + 64 x."""
    nthr = int(np.prod(_flat(shape[0])))
    idx = cute(shape, stride, t + nthr * v)
    return idx % 64, idx // 64


A_LAYOUT = (((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512)))     # ALayout_64x16


def c_layout(n):                                                       # CLayout_64xN
    return (((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))


# The swizzle atoms of mma_traits_sm90_gmma.hpp, per element of 2 bytes (T = 8):
# layout type -> W (16-byte units per row); K-major atom (8, 8W):(8W, 1), MN-major atom
# (8W, 8):(1, 8W); Swizzle<log2 W, 4, 3> on byte addresses.
W = {0: 1, 3: 2, 2: 4, 1: 8}


def swizzle(addr: int, w: int) -> int:
    b = w.bit_length() - 1
    return addr ^ (((addr >> 7) & ((1 << b) - 1)) << 4)


def tiled_addr(layout: int, mn_major: bool, rows: int, kk: int, r: int, c: int) -> int:
    """Byte offset of element (r, c) of a rows x kk tile that tile_to_shape(atom, shape)
    lays out (atoms in column-major order), before the swizzle."""
    w = W[layout]
    if not mn_major:
        atom_shape, atom_stride, a0, a1 = (8, 8 * w), (8 * w, 1), 8, 8 * w
    else:
        atom_shape, atom_stride, a0, a1 = (8 * w, 8), (1, 8 * w), 8 * w, 8
    grid0 = rows // a0
    within = cute(atom_shape, atom_stride, (r % a0) + a0 * (c % a1))
    atom = (r // a0) + grid0 * (c // a1)
    return 2 * (atom * a0 * a1 + within)


def desc_fields(layout: int, mn_major: bool, rows: int) -> tuple[int, int]:
    """(LBO, SBO) bytes of that tiling, as make_gmma_desc reads them off the layout."""
    step = lambda r, c: tiled_addr(layout, mn_major, rows, 16, r, c)   # noqa: E731
    if not mn_major:
        if layout == 0:          # INTERLEAVE ((8,m),(T,2)):((1T,SBO),(1,LBO))
            return step(0, 8), step(8, 0) if rows > 8 else 128
        return 16, step(8, 0) if rows > 8 else 1024    # LBO unused (1 unit)
    wt = 8 * W[layout]
    if layout == 0:              # INTERLEAVE ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
        return step(0, 8), step(8, 0) if rows > 8 else 128
    return step(wt, 0) if rows > wt else 16, step(0, 8)


def image(mat: np.ndarray, layout: int, mn_major: bool, at: int = 0) -> np.ndarray:
    """The swizzled bytes (as uint16 elements) of `mat` (rows x kk 16-bit codes) for a
    tile at byte `at` of a 1024-aligned array (the swizzle acts on the whole address)."""
    rows, kk = mat.shape
    a0, a1 = (8 * W[layout], 8) if mn_major else (8, 8 * W[layout])   # the atom's shape
    out = np.zeros(-(-rows // a0) * -(-kk // a1) * a0 * a1, np.uint16)
    for r in range(rows):
        for c in range(kk):
            byte = swizzle(at + tiled_addr(layout, mn_major, rows, kk, r, c), W[layout]) - at
            out[byte // 2] = mat[r, c]
    return out


def test_decoder_matches_the_cute_layouts():
    for layout in (0, 1, 2, 3):
        for mn_major in (False, True):
            for rows in (8, 64, 128):
                lbo, sbo = desc_fields(layout, mn_major, rows)
                base = 3 * 2048
                got = element_offsets(make(base, layout, lbo, sbo), rows, 16, 2, mn_major)
                want = [[base + swizzle(tiled_addr(layout, mn_major, rows, 16, r, c),
                                        W[layout]) for c in range(16)] for r in range(rows)]
                assert np.array_equal(got, want), (layout, mn_major, rows)


def test_a_swizzled_start_off_the_repeat_or_a_base_offset_is_refused():
    start = 2048 + 3 * 128                       # phase 3 of the 128-byte pattern
    for base in (0, 3):                          # the H200 read neither as modelled before
        with pytest.raises(SimError, match="from the swizzle's repeat with base offset 0"):
            element_offsets(make(start, 1, base=base), 8, 16, 2, False)
    with pytest.raises(SimError, match="base offset 2"):
        element_offsets(make(2048, 1, base=2), 8, 16, 2, False)
    got = element_offsets(make(2048 + 32, 1), 8, 16, 2, False)   # a K step inside the row
    assert got[0, 0] == 2048 + 32
    element_offsets(make(start, 0), 8, 16, 2, False)     # no swizzle: no phase


# ---- the kernel


# the kernel's pieces; a line ending in `// name` can be left out by kernel(drop=...)
COPY = [                                 # the image (global) into `smem`, 16 bytes a step
    "mov.u32 %r0, %tid.x;", "mov.u32 %r1, smem;", "ld.param.u64 %rd1, [img];",
    "ld.param.u32 %r30, [nbytes];", "shl.b32 %r2, %r0, 4;",
    "COPY:", "setp.ge.u32 %p1, %r2, %r30;", "@%p1 bra COPIED;",
    "cvt.u64.u32 %rd2, %r2;", "add.u64 %rd3, %rd1, %rd2;",
    "ld.global.v4.b32 {%r4, %r5, %r6, %r7}, [%rd3];",
    "add.u32 %r3, %r1, %r2;", "st.shared.v4.b32 [%r3], {%r4, %r5, %r6, %r7};",
    "add.u32 %r2, %r2, 2048;", "bra COPY;", "COPIED:",
    "fence.proxy.async.shared::cta;  // proxy", "bar.sync 0;  // bar"]
DESCRIPTORS = [line for name, reg in (("b", "%rd10"), ("a", "%rd20")) for line in (
    f"ld.param.u64 %rd4, [dhi_{name}];", f"ld.param.u32 %r8, [off_{name}];",
    "add.u32 %r9, %r1, %r8;", "shr.u32 %r9, %r9, 4;", "and.b32 %r9, %r9, 16383;",
    "cvt.u64.u32 %rd5, %r9;", f"or.b64 {reg}, %rd4, %rd5;")]
B_ADDRESS = ["ld.param.u32 %r8, [off_b];", "add.u32 %r9, %r1, %r8;"]
HAZARDS = {                              # kernel(**{name: True}): after the wgmmas
    "overwrite": B_ADDRESS + ["st.shared.b32 [%r9], %r0;"],
    "late_copy": B_ADDRESS + ["cp.async.cg.shared.global [%r9], [%rd1], 16, 16;",
                              "cp.async.commit_group;", "cp.async.wait_group 0;"]}


def operand_lines(nd: int, ksteps: int, fence_first: bool) -> list[str]:
    """The A fragments (ksteps sets of 4 registers), D from `dio`, scale-d's predicate."""
    lines = ["ld.param.u64 %rd6, [afrag];", "shl.b32 %r10, %r0, 4;",
             "cvt.u64.u32 %rd7, %r10;", "add.u64 %rd6, %rd6, %rd7;"]
    for s in range(ksteps):
        lines.append(f"ld.global.v4.b32 {{%r{40 + 4 * s}, %r{41 + 4 * s}, %r{42 + 4 * s}, "
                     f"%r{43 + 4 * s}}}, [%rd6+{2048 * s}];")
    if fence_first:                  # D is loaded after the fence: the fence misses it
        lines.append("wgmma.fence.sync.aligned;")
    lines += ["ld.param.u64 %rd8, [dio];", f"mul.lo.u32 %r11, %r0, {4 * nd};",
              "cvt.u64.u32 %rd9, %r11;", "add.u64 %rd8, %rd8, %rd9;"]
    lines += [f"ld.global.f32 %f{i}, [%rd8+{4 * i}];" for i in range(nd)]
    return lines + ["ld.param.u32 %r12, [keep];", "setp.ne.b32 %p2, %r12, 0;"] + \
        ([] if fence_first else ["wgmma.fence.sync.aligned;  // wgfence"])


def mma_lines(n, fmt, rs, b, a, scale_d, sa, sb, ksteps) -> list[str]:
    """ksteps chained wgmmas, B's descriptor advanced by its K step (2 SBO MN-major,
    32 bytes K-major) and A's registers (RS) or descriptor (SS, one step)."""
    dregs = "{" + ", ".join(f"%f{i}" for i in range(n // 2)) + "}"
    kb = 32 * n if b[1] else 32
    lines = []
    for s in range(ksteps):
        if s:
            lines.append(f"add.u64 %rd10, %rd10, {kb // 16};")
        head = f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{fmt}.{fmt}"
        scale = "%p2" if scale_d == "p" else ("1" if s else scale_d)
        if rs:
            aregs = "{" + ", ".join(f"%r{40 + 4 * s + i}" for i in range(4)) + "}"
            lines.append(f"{head} {dregs}, {aregs}, %rd10, {scale}, {sa}, {sb}, {int(b[1])};")
        else:
            lines.append(f"{head} {dregs}, %rd20, %rd10, {scale}, {sa}, {sb}, {int(a[1])}, "
                         f"{int(b[1])};")
    return lines


def kernel(n, fmt="f16", rs=True, b=(1, False), a=(1, False), scale_d="1", sa=1, sb=1,
           ksteps=1, drop=(), early_read=False, bad_desc=False, fence_first=False,
           **hazards) -> str:
    """A one-workgroup kernel: copy the image (global) into `smem` with st.shared.v4,
    fence.proxy.async, bar.sync, build the descriptors, load the A fragment and D, wgmma
    (ksteps chained), commit, wait, store D. `drop`: lines to leave out ("wgfence",
    "proxy", "bar", "commit"); the rest add one mistake each."""
    nd = n // 2
    lines = COPY + DESCRIPTORS
    if bad_desc:
        lines += ["setp.eq.u32 %p3, %r0, 77;", "@%p3 add.u64 %rd10, %rd10, 2;"]
    lines += operand_lines(nd, ksteps, fence_first)
    lines += mma_lines(n, fmt, rs, b, a, scale_d, sa, sb, ksteps)
    lines += [x for name, on in hazards.items() if on for x in HAZARDS[name]]
    lines.append("wgmma.commit_group.sync.aligned;  // commit")
    store = [f"st.global.f32 [%rd8+{4 * i}], %f{i};" for i in range(nd)]
    lines += (store[:1] if early_read else []) + ["wgmma.wait_group.sync.aligned 0;"] + \
        store + ["ret;"]
    body = "\n    ".join(x.split("  //")[0] for x in lines
                          if not any(x.endswith(f"// {d}") for d in drop))
    return f""".version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 img, .param .u32 nbytes, .param .u64 dhi_a,
    .param .u32 off_a, .param .u64 dhi_b, .param .u32 off_b, .param .u64 afrag,
    .param .u64 dio, .param .u32 keep)
{{
    .reg .b32 %r<60>;
    .reg .f32 %f<140>;
    .reg .b64 %rd<30>;
    .reg .pred %p<4>;
    .shared .align 1024 .b8 smem[{SMEM}];
    {body}
}}
"""


SMEM = 32768


def codes(x: np.ndarray, fmt: str) -> np.ndarray:
    return x.astype(np.float16).view(np.uint16) if fmt == "f16" else O.to_bf16_bits(x)


def build_case(n, fmt="f16", rs=True, b=(1, False), a=(1, False), scale_d="1", sa=1,
               sb=1, ksteps=1, off_b=0, base=None, **bad):
    """(kernel text, [(kind, name, value)] arguments in parameter order, D wanted, decode)
    for random small integers; `decode(dio)` maps the output buffer to D (64 x n). B's
    image starts `off_b` bytes into `smem` (swizzled as absolute addresses), its
    descriptor's base offset is `base` (default: (off_b >> 7) & 7, as the ISA asks)."""
    rng = np.random.default_rng(n * 7 + ksteps + sa + 3 * sb + len(fmt))
    kk = 16 * ksteps
    A = rng.integers(-3, 4, (64, kk)).astype(np.float64)
    B = rng.integers(-3, 4, (n, kk)).astype(np.float64)
    D0 = rng.integers(-9, 9, (64, n)).astype(np.float64)
    blayout, bmn = b
    bimg = np.concatenate([image(codes(B[:, 16 * s:16 * s + 16], fmt), blayout, bmn, off_b)
                           for s in range(ksteps)]) if bmn else image(codes(B, fmt), blayout,
                                                                      bmn, off_b)
    lbo, sbo = desc_fields(blayout, bmn, n)
    dhi_b = make(0, blayout, lbo, sbo, (off_b >> 7) & 7 if base is None else base)
    off_a = -(-(off_b + bimg.size * 2) // 1024) * 1024
    img = np.zeros(SMEM // 2, np.uint16)
    img[off_b // 2:off_b // 2 + bimg.size] = bimg
    dhi_a = 0
    if not rs:
        alayout, amn = a
        aimg = image(codes(A, fmt), alayout, amn)
        img[off_a // 2:off_a // 2 + aimg.size] = aimg
        lbo, sbo = desc_fields(alayout, amn, 64)
        dhi_a = make(0, alayout, lbo, sbo)
    afrag = np.zeros((ksteps, 128, 8), np.uint16)      # the A fragment, from ALayout_64x16
    for s in range(ksteps):
        ac = codes(A[:, 16 * s:16 * s + 16], fmt)
        for t in range(128):
            for v in range(8):
                afrag[s, t, v] = ac[thread_value(*A_LAYOUT, t, v)]
    where = [[thread_value(*c_layout(n), t, v) for v in range(n // 2)] for t in range(128)]
    dio = np.zeros((128, n // 2), np.float32)
    for t in range(128):
        for v in range(n // 2):
            dio[t, v] = D0[where[t][v]]

    def decode(out: np.ndarray) -> np.ndarray:
        got = np.zeros((64, n))
        for t in range(128):
            for v in range(n // 2):
                got[where[t][v]] = out.reshape(128, n // 2)[t, v]
        return got
    text = kernel(n, fmt, rs, b, a, scale_d, sa, sb, ksteps, **bad)
    args = [("buf", "img", img), ("u32", "nbytes", SMEM), ("u64", "dhi_a", dhi_a),
            ("u32", "off_a", off_a), ("u64", "dhi_b", dhi_b), ("u32", "off_b", off_b),
            ("buf", "afrag", afrag.view(np.uint32).ravel()), ("buf", "dio", dio.ravel()),
            ("u32", "keep", int(scale_d != "0"))]
    want = (sa * A) @ (sb * B).T + (D0 if scale_d != "0" else 0)
    return text, args, want, decode


def run_case(ptxas, *case, **kw):
    """The case on the model (assembled by ptxas first); returns (D got, D wanted)."""
    text, args, want, decode = build_case(*case, **kw)
    ptxas(text, "sm_90a")
    mem = run_wgfrag(text, "k", 128, [(kind, value) if kind != "buf" else (kind, name, value)
                                      for kind, name, value in args])
    return decode(mem.read("dio")), want


@pytest.mark.parametrize("n,fmt,rs,b,a,scale_d,sa,sb,ksteps", [
    (8, "f16", True, (1, False), None, "1", 1, 1, 1),       # RS, K-major B, 128B
    (64, "bf16", True, (1, True), None, "0", 1, 1, 1),      # MN-major B (a V tile), D dropped
    (128, "f16", True, (1, True), None, "p", -1, 1, 1),     # two 64-column atoms: LBO
    (64, "f16", True, (2, False), None, "1", 1, 1, 1),      # 64-byte swizzle
    (64, "bf16", True, (3, False), None, "1", 1, -1, 1),    # 32-byte swizzle, -B
    (64, "f16", True, (0, False), None, "1", 1, 1, 1),      # interleave, K-major
    (64, "f16", True, (0, True), None, "1", 1, 1, 1),       # interleave, MN-major
    (64, "f16", True, (2, True), None, "1", 1, 1, 1),       # 64B MN-major: two atoms in N
    (64, "f16", True, (1, False), None, "1", 1, 1, 2),      # k32: descriptor +32 bytes, chained
    (64, "bf16", True, (1, True), None, "0", 1, 1, 2),      # MN-major k32: +2 SBO, chained
    (64, "f16", False, (1, True), (1, False), "1", 1, 1, 1),    # SS: A K-major
    (128, "bf16", False, (1, False), (1, True), "1", -1, -1, 1),  # SS: A M-major
])
def test_wgmma_matches_numpy(ptxas, n, fmt, rs, b, a, scale_d, sa, sb, ksteps):
    got, want = run_case(ptxas, n, fmt, rs, b, a or (1, False), scale_d, sa, sb, ksteps)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("bad,message", [
    ({"drop": ("wgfence",)}, "without a wgmma.fence"),
    ({"early_read": True}, "not yet retired"),
    ({"drop": ("commit",)}, "not yet retired"),          # wait_group retires only commits
    ({"drop": ("proxy",)}, "generic-proxy write not fenced"),
    ({"drop": ("bar",)}, "not followed by a barrier"),
    ({"overwrite": True}, "unretired wgmma reads"),
    ({"late_copy": True}, "unretired wgmma reads"),       # a cp.async landing
    ({"bad_desc": True}, "differ across the warpgroup"),
    ({"fence_first": True}, "missing wgmma.fence"),      # D written after the fence
])
def test_missing_synchronisation_is_an_error(ptxas, bad, message):
    with pytest.raises(SimError, match=message):
        run_case(ptxas, 64, b=(1, True), **bad)


@pytest.mark.parametrize("b", [(1, False), (2, True)])
def test_a_tile_off_the_swizzle_repeat_is_refused(ptxas, b):
    """B starts 3 x 128 bytes past a 1024 boundary: refused with the ISA's base offset
    (what the H200 read there was not the absolute pattern) and with base offset 0."""
    for base in (None, 0):
        with pytest.raises(SimError, match="from the swizzle's repeat"):
            run_case(ptxas, 64, b=b, off_b=3 * 128, base=base)
