# Is the driver's verbose JIT info log empty when its JIT cache answers? Two loads of the
# same PTX, each in its own process, with a fresh cache directory.
import os, subprocess, sys, tempfile
child = r'''
import sys
from toolchain.providers.cuda import driver
dev = driver.Device(0)
ptx = open(sys.argv[1]).read()
m = dev.load_ptx(ptx, verbose=True)
print(len(m.info_log), repr(m.info_log[:160]))
'''
src = "kernel vadd(a: float32*, b: float32*, c: float32*, n: int32) {\n var i: int32 = (int32)(block.x * block_dim.x + thread.x);\n if (i < n) { c[i] = a[i] + b[i]; }\n}\n"
d = tempfile.mkdtemp()
open(f"{d}/k.mettle", "w").write(src)
subprocess.run([sys.executable, "-m", "mettle.compiler", "--emit-ptx", f"{d}/k.mettle", "-o", f"{d}/k.ptx", "--gpu-arch=sm_90a"], check=True)
env = dict(os.environ, CUDA_CACHE_PATH=f"{d}/cache")
for i in range(2):
    r = subprocess.run([sys.executable, "-c", child, f"{d}/k.ptx"], env=env, capture_output=True, text=True)
    print(f"load {i}:", r.stdout.strip(), r.stderr.strip()[-300:])
