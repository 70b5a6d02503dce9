"""Launch overhead: host microseconds per launch of one tiny kernel, in one process, through
mettle (typed launches), the raw ctypes binding beneath it, NVIDIA's cuda-bindings, CuPy,
Triton and torch.

    python3 bench/launch_overhead.py [--launches 5000] [--rounds 7] [--json out.json]

Every contender adds 1.0 to the same 256 float32 values (one block): mettle on a torch
tensor (torch's current stream, looked up per launch) and on a mettle array with an explicit
stream; the ctypes binding with prebuilt cells (the path before the runtime); cuda-bindings'
cuLaunchKernel with the same PTX; CuPy's RawModule with the same PTX; a Triton kernel; torch's
`x.add_(1)`. A sample is the host time of `--launches` back-to-back launches divided by their
number (the kernel itself takes about 2 us, so the queue never fills and the host side is
what is measured), then one synchronize; rounds interleave the contenders so clock changes
reach all alike; the median of the rounds is reported. Contenders whose package is missing
are listed as skipped with the reason. Without a GPU the script says so and exits 0 (the
JSON then holds only the reason).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import mettle  # noqa: E402
from mettle.providers.cuda import driver  # noqa: E402  # pants: no-infer-dep

N = 256
SOURCE = """kernel inc(x: float32*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < n) { x[i] = x[i] + 1.0; }
}
"""


def contenders(torch, mod) -> tuple[dict, dict, list]:
    """name -> zero-argument launch, name -> skip reason, and objects to keep alive."""
    fns, skipped, keep = {}, {}, []
    x = torch.zeros(N, device="cuda")
    inc = mod.inc[1, N]
    fns["mettle (torch tensor, torch's stream)"] = lambda: inc(x, N)
    stream = mettle.Stream()
    arr = mettle.zeros(N)
    keep += [stream, arr]
    fns["mettle (mettle array, explicit stream)"] = lambda: inc(arr, N, stream=stream)

    function = mod.inc.plan().function       # the binding beneath, cells prepared once
    cells = [ctypes.c_uint64(x.data_ptr()), ctypes.c_int32(N)]
    fns["ctypes binding (prebuilt cells)"] = lambda: function.launch(1, N, cells)

    try:
        fns["cuda-bindings cuLaunchKernel"] = _cuda_bindings(mod.ptx, x, keep)
    except Exception as exc:  # noqa: BLE001  ImportError or a driver error: say which
        skipped["cuda-bindings cuLaunchKernel"] = f"{type(exc).__name__}: {exc}"
    try:
        import cupy  # pants: no-infer-dep
        kernel = _cupy_module(cupy, mod.ptx, keep).get_function("inc")
        xc = cupy.zeros(N, dtype=cupy.float32)
        n32 = cupy.int32(N)
        keep.append(xc)
        fns["CuPy RawModule"] = lambda: kernel((1,), (N,), (xc, n32))
    except Exception as exc:  # noqa: BLE001
        skipped["CuPy RawModule"] = f"{type(exc).__name__}: {exc}"
    try:
        fns["Triton"] = _triton(torch, x)
    except Exception as exc:  # noqa: BLE001
        skipped["Triton"] = f"{type(exc).__name__}: {exc}"
    fns["torch x.add_(1)"] = lambda: x.add_(1)
    return fns, skipped, keep


def _cupy_module(cupy, ptx: str, keep: list):
    """CuPy's RawModule loads a PTX file through the driver's JIT, as mettle does."""
    import tempfile
    folder = tempfile.mkdtemp(prefix="mettle-overhead-")
    path = os.path.join(folder, "inc.ptx")
    with open(path, "w") as f:
        f.write(ptx)
    module = cupy.RawModule(path=path)
    keep.append(module)
    return module


def _cuda_bindings(ptx: str, x, keep: list):
    from cuda.bindings import driver as cu  # pants: no-infer-dep

    def check(result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise RuntimeError(f"cuda-bindings call failed: {err}")
        return rest[0] if len(rest) == 1 else rest
    check(cu.cuInit(0))
    module = check(cu.cuModuleLoadData(ptx.encode() + b"\0"))
    function = check(cu.cuModuleGetFunction(module, b"inc"))
    keep.append(module)
    args = ((x.data_ptr(), N), (ctypes.c_void_p, ctypes.c_int))
    return lambda: cu.cuLaunchKernel(function, 1, 1, 1, N, 1, 1, 0, 0, args, 0)


def _triton(torch, x):
    import triton  # pants: no-infer-dep
    import triton.language as tl  # pants: no-infer-dep

    @triton.jit
    def inc(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)
    return lambda: inc[(1,)](x, N, BLOCK=N)


def measure(torch, fns: dict, launches: int, rounds: int) -> dict:
    for fn in fns.values():                  # warm-up: JIT, caches, first-use paths
        for _ in range(200):
            fn()
    torch.cuda.synchronize()
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(launches):
                fn()
            elapsed = time.perf_counter() - start
            torch.cuda.synchronize()
            samples[name].append(elapsed / launches * 1e6)
    return samples


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launches", type=int, default=5000, help="launches per sample")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    reason = driver.probe()
    if reason is None:
        try:
            import torch
            if not torch.cuda.is_available():
                reason = "torch sees no CUDA device"
        except ImportError:
            reason = "torch is not installed"
    if reason is not None:
        print(f"launch_overhead: skipped: {reason}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"skipped": reason}, f, indent=2)
        return 0
    torch.zeros(1, device="cuda")            # torch's context first: mettle shares it
    mod = mettle.compile(SOURCE)
    fns, skipped, _keep = contenders(torch, mod)
    samples = measure(torch, fns, args.launches, args.rounds)
    device = mettle.device(0)
    print(f"device: {device.name}; {args.launches} launches per sample, {args.rounds} rounds")
    print(f"{'contender':<42} {'us/launch':>10} {'min':>8}")
    rows = {}
    for name, values in samples.items():
        med, low = statistics.median(values), min(values)
        rows[name] = {"us_per_launch": round(med, 3), "min_us": round(low, 3),
                      "samples_us": [round(v, 3) for v in values]}
        print(f"{name:<42} {med:10.2f} {low:8.2f}")
    for name, why in skipped.items():
        print(f"{name:<42} skipped: {why}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device.name, "launches_per_sample": args.launches,
                       "rounds": args.rounds, "results": rows, "skipped": skipped}, f,
                      indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
