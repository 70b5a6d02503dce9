"""Whether the driver's verbose JIT log is empty when its JIT cache answers a load (the fact
behind toolchain/runtime/cuda.LoadedModule.spills): the same PTX loaded twice, each time in
its own process, with a fresh cache directory. Run on the GPU machine from the repository
root: `PYTHONPATH=. python3 tools/gpu/jit_cache_probe.py`."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = """kernel vadd(a: float32*, b: float32*, c: float32*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < n) { c[i] = a[i] + b[i]; }
}
"""
LOAD = """import sys
from toolchain.providers.cuda import driver
log = driver.Device(0).load_ptx(open(sys.argv[1]).read(), verbose=True).info_log
print(len(log), repr(log[:160]))
"""


def main() -> int:
    work = Path(tempfile.mkdtemp())
    (work / "k.mettle").write_text(SOURCE)
    subprocess.run([sys.executable, "-m", "mettle.compiler", "--emit-ptx", str(work / "k.mettle"),
                    "-o", str(work / "k.ptx"), "--gpu-arch=sm_90a"], check=True)
    env = dict(os.environ, CUDA_CACHE_PATH=str(work / "cache"))
    for i in range(2):
        r = subprocess.run([sys.executable, "-c", LOAD, str(work / "k.ptx")], env=env,
                           capture_output=True, text=True)
        print(f"load {i}: log of", r.stdout.strip(), r.stderr.strip()[-300:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
