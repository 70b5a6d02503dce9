"""Launch-shape experiment for the row softmax (a tuning script, not a test).

    python3 bench/softmax_variants.py           # tuned rows.mettle softmax, launch shapes
    python3 bench/softmax_variants.py --plain   # plain.mettle -O row kernels: occupancy
                                                # caps and store cache policies
    python3 bench/softmax_variants.py --policy-emit DIR   # (no GPU) write the policy
    python3 bench/softmax_variants.py --policy DIR        # variants' PTX, then time them

--policy-emit compiles plain.mettle -O with load-ahead's unroll factors and the reread hint
varied and derives cache-policy text variants of the row kernels' PTX (streaming stores,
last-pass loads evict-first, L2 eviction-priority policies); --policy checks each against
torch (and bitwise against the committed -O) and times it, twice in opposite orders, at
65536x1024 and 16384x4096, plus the grid-stride vadd and saxpy with streaming accesses.

--plain times bench/kernels/plain.mettle's softmax_plain and layernorm_plain under -O at
65536x1024 and 16384x4096, as compiled and as text variants of that PTX: streaming stores
(`st.global.cs`, evict-first in L1 and L2, so the output does not push the rows being
re-read out of L2) and launches with extra dynamic shared memory that hold the resident
128-item blocks per SM down (14 / 12 / 10 blocks: 56 / 48 / 40 warps on an H200), alone
and together. The probe call of docs/reference/gpu.md found fewer warps faster at 1024 columns and
slightly slower at 4096; these rows say whether a store policy gets the same without the
cost.

Builds variants of tests/data/gpu_suite/rows.mettle's softmax_rows by rewriting its launch
shape (rows per block) and, for the "persistent" variant, wrapping the row body in a
grid-stride loop; times each against torch.softmax at 65536x1024 and 16384x4096 after
checking its result.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import mettle  # noqa: E402
from launching import compile_module, local_arch, with_ptx  # noqa: E402
from timing import timed  # noqa: E402

SOURCE = os.path.join(ROOT, "tests", "data", "gpu_suite", "rows.mettle")


def variant(text: str, rows_per_block: int, persistent: bool) -> str:
    text = text.replace("kernel(block = 128) softmax_rows",
                        f"kernel(block = {32 * rows_per_block}) softmax_rows")
    text = text.replace("var row: int32 = (int32)(block.x * 4 + thread.x / 32);\n"
                        "  var lane: int32 = (int32)(thread.x % 32);\n  if (row < rows && cols",
                        f"var row: int32 = (int32)(block.x * {rows_per_block} + thread.x / 32);"
                        "\n  var lane: int32 = (int32)(thread.x % 32);\n  if (row < rows && cols")
    if persistent:
        start = text.index("  if (row < rows && cols <= 1024")
        end = text.index("\n}\n", start)         # the kernel's closing brace
        body = text[start:end]
        text = (text[:start] + "  while (row < rows) {\n" + body +
                f"\n  row = row + (int32)(grid_dim.x * {rows_per_block});\n  }}" +
                text[end:])
    return text


def build(src: str, arch: str):
    return compile_module("softmax_rows.mettle", arch, text=src, optimize=True).softmax_rows


CAPS = ((0, "64 warps"), (15 * 1024, "56 warps"), (18 * 1024, "48 warps"),
        (22 * 1024, "40 warps"))          # dynamic shared bytes per 128-item block


def _plain(torch, arch: str) -> int:
    src = os.path.join(ROOT, "bench", "kernels", "plain.mettle")
    plain = compile_module(src, arch, optimize=True)
    mods = {"-O": plain,
            "-O st.cs": with_ptx(plain, plain.ptx.replace("st.global.f32", "st.global.cs.f32"),
                                 "plain.mettle st.cs")}
    for rows_n, cols in ((65536, 1024), (16384, 4096)):
        x = torch.randn(rows_n, cols, device="cuda")
        y = torch.empty_like(x)
        g, b = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
        refs = {"softmax": torch.softmax(x, dim=1),
                "layernorm": torch.nn.functional.layer_norm(x, (cols,), g, b, 1e-5)}
        for kind, ref in refs.items():
            args = [x, y, rows_n, cols] if kind == "softmax" else \
                [x, y, g, b, rows_n, cols, 1e-5]
            for name, mod in mods.items():
                f = mod[f"{kind}_plain"][(rows_n + 3) // 4, 128]
                for shared, label in CAPS:
                    launch = lambda: f(*args, shared=shared)
                    y.fill_(float("nan"))
                    launch()
                    torch.cuda.synchronize()
                    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
                    ms = timed(torch, launch, 20)
                    print(f"{kind:<9} {rows_n}x{cols:<5} {name:<9} {label:<9} "
                          f"{8 * x.numel() / ms / 1e6:7.0f} GB/s")
    return 0


def main() -> int:
    if "--policy-emit" in sys.argv[1:]:
        import policy_variants
        return policy_variants.emit(sys.argv[sys.argv.index("--policy-emit") + 1])
    import torch
    torch.zeros(1, device="cuda")
    dev = mettle.device(0)
    arch = local_arch()
    if "--plain" in sys.argv[1:]:
        return _plain(torch, arch)
    if "--policy" in sys.argv[1:]:
        import policy_variants
        return policy_variants.time_all(torch, sys.argv[sys.argv.index("--policy") + 1])
    sms = dev.attribute(16)                   # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    text = open(SOURCE, encoding="utf-8").read()
    for rows_n, cols in ((65536, 1024), (16384, 4096)):
        x = torch.randn(rows_n, cols, device="cuda")
        y = torch.empty_like(x)
        ref_ms = timed(torch, lambda: torch.softmax(x, dim=1), 50)
        print(f"{rows_n}x{cols}: torch {8 * x.numel() / ref_ms / 1e6:.0f} GB/s")
        for rpb, persistent, waves in ((4, False, 0), (8, False, 0), (2, False, 0),
                                       (8, True, 4), (8, True, 8), (4, True, 16)):
            f = build(variant(text, rpb, persistent), arch)
            grid = (rows_n + rpb - 1) // rpb
            if persistent:
                grid = min(grid, sms * waves)
            bound = f[grid, 32 * rpb]
            launch = lambda: bound(x, y, rows_n, cols, cols, cols)
            y.fill_(float("nan"))
            launch()
            torch.cuda.synchronize()
            torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=2e-5, atol=1e-6)
            ms = timed(torch, launch, 50)
            name = f"rows/block={rpb}" + (f" persistent x{waves}/SM" if persistent else "")
            print(f"  {name:<32} {8 * x.numel() / ms / 1e6:7.0f} GB/s  {ref_ms / ms:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
