"""The registers/spills facts read from a JIT log (toolchain/runtime/cuda.spills_from_log): the
driver's log prefixes the figures' line with "ptxas         ." where ptxas -v indents it."""
from toolchain.runtime.cuda import spills_from_log

DRIVER_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'vadd' for 'sm_90a'
ptxas info    : Function properties for vadd
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
ptxas info    : Function properties for other
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""

PTXAS_LOG = """ptxas info    : Function properties for vadd
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 380 bytes cmem[0]
"""


def test_driver_jit_log_format():
    assert spills_from_log(DRIVER_LOG, "vadd") == {"stack": 16, "spill_stores": 8,
                                                   "spill_loads": 4}
    assert spills_from_log(DRIVER_LOG, "other") == {"stack": 0, "spill_stores": 0,
                                                    "spill_loads": 0}


def test_ptxas_verbose_format():
    assert spills_from_log(PTXAS_LOG, "vadd") == {"stack": 0, "spill_stores": 0,
                                                  "spill_loads": 0}


def test_unknown_symbol_is_none():
    assert spills_from_log(DRIVER_LOG, "missing") is None
