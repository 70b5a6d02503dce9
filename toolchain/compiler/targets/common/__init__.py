"""What the host targets (x86_64, arm64) share; it imports only the IR and diagnostics
(tests/test_repo_layout.py: a target never imports another target).

frame.py      the slot-per-value frame plan        regalloc.py   register allocation (-O)
isel_blocks   dispatch, block layout, branches     globals_data  module globals -> data
host.py       constant images, struct flattening, the gpu.launch ABI, module-level helpers
"""
