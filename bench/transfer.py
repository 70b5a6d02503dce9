"""tensor_transfer_workgroup bandwidth (a script, not a test): native TMA against replay.

    python3 bench/transfer.py [--json transfer.json] [--reps 20]

One kernel copies a 8192x8192 float32 tensor through workgroup memory, one 64x32 tile per
workgroup: a load transfer then a store transfer. It runs with driver-encoded tensor maps
(the TMA path) and with null views (the run-time fallback to cooperative replay: the same
PTX), checked bit for bit against the source, timed with CUDA events; GB/s counts the bytes
read plus written. torch's device-to-device copy of the same tensor is the ceiling.

Needs a CUDA GPU, its driver and torch (only --help works without them). The kernel is
compiled for the local GPU's profile (sm_90a on the H200); below sm_90 the profile has no
tensor copy engine, so both rows are the replay (the script says so). Prints one line per
row (ms per launch, GB/s) and writes the same table to --json.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import mettle  # noqa: E402
from launching import compile_module, local_arch  # noqa: E402
from timing import timed  # noqa: E402
from toolchain.providers.cuda import tensor_map  # noqa: E402

N, TX, TY = 8192, 64, 32
GEO = f"""extent0: {N}, extent1: {N}, stride1: {4 * N}, tile0: {TX}, tile1: {TY},
      coordinate0: c0, coordinate1: c1"""
SOURCE = f"""kernel(block = 256) copy2d(src: float32*, dst: float32*, vin: uint8*, vout: uint8*,
                         tiles_x: int32) {{
  workgroup var tile: float32[{TX * TY}];
  var bx: int32 = (int32)block.x;
  var c0: int32 = (bx % tiles_x) * {TX};
  var c1: int32 = (bx / tiles_x) * {TY};
  tensor_transfer_workgroup(&tile[0], src, rank: 2, element: f32, direction: load,
      {GEO}, view: vin);
  tensor_transfer_workgroup(dst, &tile[0], rank: 2, element: f32, direction: store,
      {GEO}, view: vout);
}}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", default="transfer.json",
                    help="where to write the results table (default: %(default)s)")
    ap.add_argument("--reps", type=int, default=20,
                    help="launches per timed batch; the median of 5 batches is reported "
                         "(default: %(default)s)")
    args = ap.parse_args()
    import torch
    torch.zeros(1, device="cuda")
    dev = mettle.device(0)
    arch = local_arch()
    module = compile_module("copy2d.mettle", arch, text=SOURCE)
    if "mtlc.tensor_transfer native" not in module.ptx:
        print(f"note: {arch} has no tensor copy engine: the 'tma' row is the replay too")
    src = torch.randn(N, N, device="cuda")
    dst = torch.empty_like(src)
    geo = dict(element="f32", extents=(N, N), strides=(4, 4 * N), tiles=(TX, TY),
               element_strides=(1, 1))
    maps = [tensor_map.device_view(dev.driver, t.data_ptr(), **geo) for t in (src, dst)]
    tiles = (N // TX) * (N // TY)
    copy2d = module.copy2d[tiles, 256]
    rows = []
    for name, vin, vout in (("tma", maps[0][1], maps[1][1]), ("replay", 0, 0)):
        # the views are raw device addresses of the maps (c_void_p: passed unchecked)
        args = (src, dst, ctypes.c_void_p(vin), ctypes.c_void_p(vout), N // TX)
        launch = lambda: copy2d(*args)
        dst.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        if not torch.equal(dst, src):
            raise SystemExit(f"{name}: the copy differs from the source")
        ms = timed(torch, launch, args.reps)
        rows.append((f"tensor_transfer {name}", ms))
    rows.append(("torch copy_", timed(torch, lambda: dst.copy_(src), args.reps)))
    nbytes = 2 * 4 * N * N
    print(f"device: {dev.name} ({arch})")
    table = []
    for name, ms in rows:
        gbs = nbytes / ms / 1e6
        print(f"{name:<26} {ms:>9.4f} ms {gbs:>9.1f} GB/s")
        table.append({"kernel": name, "ms": round(ms, 5), "gb_per_s": round(gbs, 1)})
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"device": dev.name, "arch": arch, "results": table}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
