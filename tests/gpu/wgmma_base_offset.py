"""What silicon reads through a 128-byte-swizzled wgmma B descriptor whose start is off the
swizzle repeat (384 bytes past a 1024-byte boundary), for every base-offset field value:
the raw D of each run goes to an .npz, for tests/tensor/wgmma_desc.py's model of the field
(`python3 -m tests.gpu.wgmma_base_offset OUT.npz` from the repository root, on an sm_90a
GPU; the analysis recovers the B the hardware read from D = A·Bᵀ + D0). A script, not a
test: what silicon does there is not known yet, so there is nothing to assert."""
from __future__ import annotations

import sys

import numpy as np

from tests.gpu.harness import run_kernel
from tests.gpu.test_wgmma_model import cells
from tests.tensor import test_wgfrag_sim as M


def run(b, base: int) -> np.ndarray:
    text, args, want, decode = M.build_case(64, b=b, off_b=3 * 128, base=base)
    got = decode(run_kernel(text, "k", grid=1, block=128, args=cells(args), shared=0)["dio"])
    print(f"B {b} base {base}: {'model' if np.array_equal(got, want) else 'differs'}",
          flush=True)
    return got


def main() -> int:
    out = {}
    for b in ((1, False), (2, True)):
        for base in range(8):
            out[f"{b[0]}{int(b[1])}_{base}"] = run(b, base)
    np.savez(sys.argv[1], **out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
