"""Kernel sources that the optimizer tests (tests/opt) and the hardware suite (tests/gpu)
share. They live apart from the optimizer tests, which also compile SPIR-V, so that a
hardware test importing one depends on its source, not on the SPIR-V backend."""

# subgroup-width (tests/opt/test_subgroup_width.py); `shape` is the kernel's launch shape.
SUBGROUP_WIDTH = """
kernel{shape} rowsum(x: float32*, y: float32*, rows: int32, cols: int32) {{
  var row: int32 = (int32)(block.x * 4 + thread.x / 32);
  if (row >= rows) {{ return; }}
  var lane: int32 = (int32)subgroup_local_id();
  var s: float32 = 0.0;
  for (var c: int32 = lane; c < cols; c += (int32)subgroup_size()) {{
    s = s + x[(int64)row * (int64)cols + (int64)c];
  }}
  y[row] = subgroup_reduce_add(s);
}}
"""

# load-combine (tests/opt/test_load_combine.py).
LOAD_COMBINE = """
kernel(block = 64) lc(x: float32*, y: float64*) {
  workgroup var t: float32[256];
  workgroup var u: float64[128];
  var i: int32 = (int32)thread.x;
  var a: float32 = x[i];
  t[4 * i] = a;
  t[4 * i + 1] = a * 2.0;
  t[4 * i + 2] = a * 3.0;
  t[4 * i + 3] = a * 4.0;
  u[2 * i] = (float64)a;
  u[2 * i + 1] = (float64)a + 1.0;
  barrier(workgroup, acq_rel);
  var j: int32 = 4 * (63 - i);
  x[i] = t[j] + t[j + 1] + t[j + 2] + t[j + 3];
  y[i] = u[2 * (63 - i)] + u[2 * (63 - i) + 1];
}
"""

# async-staging (tests/opt/test_async_staging.py); `t`, `between`, `order` are filled in.
ASYNC_STAGE = """
kernel(block = 256) stage(x: {t}*, y: {t}*, n: int32) {{
  workgroup var tile: {t}[512];
  var t: int32 = (int32)thread.x;
  var base: int32 = (int32)block.x * 512;
  tile[t] = x[base + t];
  tile[256 + t] = x[base + 256 + t];
  {between}
  var scale: {t} = ({t})n;
  barrier(workgroup, {order});
  y[base + t] = tile[511 - t] * scale;
  y[base + 256 + t] = tile[255 - t] * scale;
}}
"""
