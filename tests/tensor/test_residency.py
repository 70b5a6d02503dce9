"""Tensor accumulator residency (opt/tensor_residency.py + targets/ptx/tensor/resident.py).

Under -O a K loop of tensor_mma whose C and D are one tile (for and while spellings) and a
straight-line chain of connected MMAs read C once and write D once; the tuple budget turns
the same IR into exact replay; a loop that also stores is refused with a reason. Every
module assembles for sm_90a, sm_121a and the portable profile. (tests/gpu/test_residency.py
runs them on the GPU and checks resident == replay == unoptimized, bitwise.)
"""
import re

import pytest

from tests.tensor.kernels import compile_ptx
from tests.tensor.residency_kernels import (ALL, CHAIN, EPILOGUES, FOR_LOOP, STORING_LOOP,
                                           WHILE_LOOP, pipeline, with_epilogue)
from toolchain.compiler.driver import Options, compile_file

ARCHS = ("sm_90a", "sm_121a", "portable")


def compile_source(tmp_path, src: str, *, arch="sm_90a", optimize=True, budget=0):
    path = tmp_path / "k.mettle"
    path.write_text(src)
    r = compile_file(str(path), Options(emit="ptx", gpu_arch=arch, optimize=optimize,
                                        tensor_tuple_budget=budget, explain=True))
    return r.data.decode(), r.explain


def entry(ptx: str, name: str) -> str:
    start = ptx.index(f".entry {name}(")
    return ptx[start:ptx.index("\n}\n", start)]


def blocks_with(text: str, what: str) -> list[str]:
    """The PTX basic blocks (split at labels) that contain `what`."""
    return [b for b in re.split(r"^\$L__BB\d+:.*$", text, flags=re.M) if what in b]


def replays_every_update(text: str) -> bool:
    """Every MMA loads C and stores D in its own block (the unoptimized/replay form)."""
    mma = blocks_with(text, "wmma.mma.sync")
    return bool(mma) and all("wmma.load.c" in b and "wmma.store.d" in b for b in mma)


def staged_mmas(body: str, kind: str, updates: int) -> int:
    """wmma.mma count of a resident group of `updates` updates, by staging.py's form: direct
    1 per update; synchronous staging 2 (staged + direct fallback); pipelined 3 (the pending
    step's MMA, the direct fallback and the settle before it) plus the settle before the
    store."""
    form = re.search(rf"mtlc\.tensor_{kind} resident group=0 .*?( staged pipelined| staged"
                     r"| direct)", body).group(1)
    return {" direct": updates, " staged": 2 * updates,
            " staged pipelined": 3 * updates + 1}[form]


@pytest.mark.parametrize("name,src,line", [("kloop_for", FOR_LOOP, 11),
                                           ("kloop_while", WHILE_LOOP, 12)])
def test_k_loop_reads_c_once_and_writes_d_once(tmp_path, ptxas, name, src, line):
    ptx, explain = compile_source(tmp_path, src)
    body = entry(ptx, name)
    assert body.count("wmma.load.c") == 1 and body.count("wmma.store.d") == 1
    assert "mtlc.tensor_loop resident group=0" in body
    # one update in the loop body; staging.py versions it (staged + direct fallback)
    assert body.count("wmma.mma.sync") == staged_mmas(body, "loop", 1)
    assert not any("wmma.load.c" in b for b in blocks_with(body, "wmma.mma.sync"))
    assert f"{name}: line {line}: tensor-residency: tensor_loop group 0 formed" in explain
    assert "ptx: tensor_loop group 0: resident" in explain
    ptxas(ptx, "sm_90a")


def test_budget_turns_the_group_into_exact_replay(tmp_path, ptxas):
    ptx, explain = compile_source(tmp_path, FOR_LOOP, budget=16)
    body = entry(ptx, "kloop_for")
    assert "mtlc.tensor_loop replay group=0: tuple pressure 24 > budget 16" in body
    assert replays_every_update(body)
    assert "tensor_loop group 0: replay (tuple pressure 24 > budget 16)" in explain
    ptxas(ptx, "sm_90a")


def test_chain_of_three_connected_mmas(tmp_path, ptxas):
    ptx, explain = compile_source(tmp_path, CHAIN)
    body = entry(ptx, "chain3")
    assert body.count("wmma.load.c") == 1 and body.count("wmma.store.d") == 1
    assert body.count("wmma.mma.sync") == staged_mmas(body, "chain", 3)
    assert "mtlc.tensor_chain resident group=0" in body
    assert "tensor_chain group 0 formed: 3 connected MMAs" in explain
    ptxas(ptx, "sm_90a")


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_explicit_n_stage_pipeline_carries_the_tile_through_each_handoff(tmp_path, ptxas,
                                                                        stages):
    ptx, explain = compile_source(tmp_path, pipeline(stages))
    body = entry(ptx, f"pipe{stages}")
    assert body.count("wmma.load.c") == 1 and body.count("wmma.store.d") == 1
    assert body.count("wmma.mma.sync") == stages
    assert body.count("cp.async.wait_group") == stages and body.count("bar.sync") >= stages
    assert "mtlc.tensor_pipeline resident group=0" in body
    assert f"tensor_pipeline group 0 formed: {stages} connected MMAs across wait/barrier " \
        "handoffs" in explain
    # the store of D comes after the last MMA, the load of C before the first
    assert body.index("wmma.load.c") < body.index("wmma.mma.sync")
    assert body.rindex("wmma.mma.sync") < body.index("wmma.store.d")
    ptxas(ptx, "sm_90a")


def test_a_wait_without_its_publication_barrier_breaks_the_group(tmp_path):
    barrier = "  barrier(workgroup, acq_rel);\n"
    src = pipeline(3).replace(barrier, "")
    ptx, explain = compile_source(tmp_path, src)
    assert "tensor_pipeline" not in explain and "mtlc.tensor_pipeline" not in ptx
    first, rest = pipeline(3).split(barrier, 1)            # drop only the middle barrier
    middle, last = rest.split(barrier, 1)
    ptx, explain = compile_source(tmp_path, first + barrier + middle + last)
    assert "tensor_pipeline group 0 formed: 2 connected MMAs" in explain
    assert entry(ptx, "pipe3").count("wmma.load.c") == 2


def test_loop_that_stores_is_refused_with_its_reason(tmp_path, ptxas):
    ptx, explain = compile_source(tmp_path, STORING_LOOP)
    assert "tensor_loop not formed: the loop body also executes store" in explain
    assert "mtlc.tensor" not in ptx
    assert replays_every_update(entry(ptx, "kloop_store"))
    ptxas(ptx, "sm_90a")


def test_without_O_every_mma_loads_and_stores(tmp_path):
    ptx, _ = compile_source(tmp_path, FOR_LOOP, optimize=False)
    assert "mtlc.tensor" not in ptx
    assert replays_every_update(entry(ptx, "kloop_for"))


@pytest.mark.parametrize("arch", ARCHS)
def test_every_profile_assembles_resident_and_replay(tmp_path, ptxas, arch):
    target = {"portable": "sm_75"}.get(arch, arch)
    for budget in (0, 16):
        ptx, _ = compile_source(tmp_path, ALL, arch=arch, budget=budget)
        assert ptx.count("mtlc.tensor_") == 3
        ptxas(ptx, target)


def test_ir_is_the_same_whatever_the_budget(tmp_path):
    """The choice is the backend's: the optimized IR does not depend on the budget."""
    path = tmp_path / "k.mettle"
    path.write_text(ALL)
    texts = [compile_file(str(path), Options(emit="ptx", gpu_arch="sm_90a", optimize=True,
                                             tensor_tuple_budget=b, dump_ir=True)).ir_text
             for b in (0, 16)]
    assert texts[0] == texts[1] and "tensor.acc_begin" in texts[0]


def test_compile_ptx_helper_still_works():
    assert "wmma" in compile_ptx(FOR_LOOP, "sm_90a")


@pytest.mark.parametrize("case", ["relu_alpha", "clamp"])
def test_bias_free_epilogue_is_fused_onto_the_resident_tile(tmp_path, ptxas, case):
    opts, params = EPILOGUES[case]
    ptx, explain = compile_source(tmp_path, with_epilogue(opts, extra_params=params))
    body = entry(ptx, "gemm_ep")
    assert "mtlc.tensor_epilogue fused on resident group=0" in body
    assert body.count("wmma.store.d") == 1 and "st.global.f32" not in body
    assert body.index("mtlc.tensor_epilogue") < body.index("wmma.store.d")
    assert "tensor epilogue fused onto group 0" in explain
    ptxas(ptx, "sm_90a")


def test_bias_epilogue_on_wmma_and_replay_keep_the_memory_operation(tmp_path, ptxas):
    """A bias needs the accumulator's coordinates; stable WMMA's are opaque, so the resident
    group stores D where the fused epilogue sits (once: the commit stores nothing more) and
    the complete memory operation follows. A replayed group runs the memory operation too."""
    opts, params = EPILOGUES["bias"]
    ptx, explain = compile_source(tmp_path, with_epilogue(opts, extra_params=params))
    body = entry(ptx, "gemm_ep")
    assert "tensor epilogue fused onto group 0" in explain
    assert "ptx: tensor epilogue on group 0: complete memory operation (a bias needs " \
        "fragment coordinates and stable WMMA's are opaque; D stored first)" in explain
    assert "mtlc.tensor_epilogue memory group=0: a bias needs fragment coordinates" in body
    assert body.count("wmma.store.d") == 1 and body.count("wmma.load.c") == 1
    assert body.index("wmma.store.d") < body.index("mtlc.tensor_epilogue") \
        < body.index("st.global.f32")
    ptxas(ptx, "sm_90a")
    opts, params = EPILOGUES["relu_alpha"]
    ptx, explain = compile_source(tmp_path, with_epilogue(opts, extra_params=params),
                                  budget=16)
    body = entry(ptx, "gemm_ep")      # fused in the IR, but the group replays: memory op
    assert "mtlc.tensor_epilogue memory group=0: the group replays" in body
    assert "mtlc.tensor_epilogue fused" not in body and "st.global.f32" in body
    assert "tensor epilogue on group 0: complete memory operation (the group replays" \
        in explain
    ptxas(ptx, "sm_90a")
