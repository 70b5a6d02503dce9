"""Fused epilogues with a bias on the direct m16n8 families (FP8 mma.sync, structured 2:4
mma.sp, block-scaled mma.sync): under -O an exactly compatible group (K loop, chain,
3-stage pipeline) followed by `tensor_epilogue` keeps the accumulator and applies scale,
bias (row, column, matrix in either layout with a static or runtime ldbias), activation and
clamp on the registers through the backend-owned m16n8 coordinate mapping, before the one
store of D. Checked here: ptxas (sm_90a and sm_121a), the structure (C loaded once, D
stored once, no memory epilogue, bias loads deduplicated), --explain and the PTX
annotation, the cases that keep the complete memory operation, and execution of the fused,
replayed (tuple budget) and unoptimized PTX on the CPU interpreter: bitwise equal to each
other and to the float32 oracle. tests/gpu/test_fused_bias.py runs the sm_90a families on
the H200.
"""
from __future__ import annotations

import re

import pytest

from tests.tensor import fused_bias_cases as FB
from tests.tensor.ptx_sim import M32, Sim, f32_bits
from toolchain.compiler.driver import Options, compile_file

MODES = {"plain": dict(optimize=False), "fused": dict(optimize=True),
         "replay": dict(optimize=True, tensor_tuple_budget=1)}


def compile_case(tmp_path, src: str, arch: str = "sm_90a", **kw):
    path = tmp_path / "fb.mettle"
    path.write_text(src)
    return compile_file(str(path), Options(emit="ptx", gpu_arch=arch, explain=True, **kw))


def sim_args(case) -> list:
    out = []
    for a in case.args:
        if a[0] == "buf":
            out.append(a[:3])
        elif a[0] == "f32":
            out.append(("u32", f32_bits(a[1])))
        else:
            out.append(("u32", int(a[1]) & M32))
    return out


def run_on_interpreter(tmp_path, case, arch: str, mode: str):
    r = compile_case(tmp_path, case.source, arch, **MODES[mode])
    sim = Sim(r.objects, case.kernel)
    mem = sim.run(case.grid, case.block, sim_args(case))
    return mem.read("c"), sim


def rows(families):
    return [pytest.param(row, id=FB.case_id(row)) for row in FB.MATRIX if row[0] in families]


@pytest.mark.parametrize("row", rows(("fp8", "sparse", "scaled")))
def test_fused_replayed_and_plain_agree_bitwise_with_the_oracle(tmp_path, row):
    arch = "sm_121a" if row[0] == "scaled" else "sm_90a"
    case = FB.build(row)
    got = {}
    for mode in MODES:
        got[mode], sim = run_on_interpreter(tmp_path, case, arch, mode)
        assert sim.mmas > 0, f"{mode}: the native m16n8 path did not run"
        case.check({"c": got[mode]})
    assert got["fused"].tobytes() == got["replay"].tobytes() == got["plain"].tobytes()


def _entry(ptx: str) -> str:
    start = ptx.index(".entry fb(")
    return ptx[start:ptx.index("\n}\n", start)]


def _mma_blocks(body: str) -> list[str]:
    return [b for b in re.split(r"^\$L\w+:.*$", body, flags=re.M) if "mma." in b]


@pytest.mark.parametrize("row", rows(("fp8", "sparse", "scaled")))
def test_structure_annotation_explain_and_ptxas(tmp_path, ptxas, row):
    fam, form, mode = row[:3]
    archs = ("sm_121a",) if fam == "scaled" else ("sm_90a", "sm_121a")
    for arch in archs:
        r = compile_case(tmp_path, FB.build(row).source, arch, optimize=True)
        ptx, body = r.data.decode(), _entry(r.data.decode())
        kind = {"loop": "loop", "chain": "chain", "pipeline": "pipeline"}[form]
        assert f"mtlc.tensor_{kind} resident m16n8 group=0" in body
        bias = f", {mode} bias" if mode != "none" else ""
        assert f"mtlc.tensor_epilogue fused on resident group=0 (m16n8 registers{bias})" in body
        # one C load, one D store: 2x2 subtiles x 4 registers per lane; bias loads only
        # for distinct elements (a row/column vector: 2 per subtile row/column)
        bias_loads = {"none": 0, "row": 4, "column": 4, "matrix": 16}[mode]
        assert body.count("st.global.f32") == 16
        assert body.count("ld.global.f32") == 16 + bias_loads
        assert "tep_e" not in body and "div.u32" not in body     # no memory epilogue
        assert not any("ld.global.f32" in b or "st.global.f32" in b for b in _mma_blocks(body)) \
            or form != "loop"
        assert body.index("mtlc.tensor_epilogue") < body.index("st.global.f32")
        assert "tensor epilogue fused onto group 0" in r.explain
        assert "ptx: tensor epilogue applied to group 0's registers before its store" \
            in r.explain
        if mode != "none":
            assert f"({mode} bias read through the m16n8 accumulator mapping: row = " \
                "groupID or groupID+8, column = 2*threadID_in_group + 0/1 per n8 block)" \
                in r.explain
        ptxas(ptx, arch)


def test_chain_loads_c_before_the_first_mma_and_stores_after_the_last(tmp_path):
    r = compile_case(tmp_path, FB.source("fp8", "chain", "column"), optimize=True)
    body = _entry(r.data.decode())
    assert body.count("mma.sync.aligned.m16n8k32") == 3 * 4
    first, last = body.index("mma.sync"), body.rindex("mma.sync")
    assert body[:first].count("ld.global.f32") == 16          # C, once, before the chain
    assert body[first:last].count("ld.global.f32") == 0
    assert body[last:].count("ld.global.f32") == 4            # the column bias, deduplicated
    assert body.rindex("mma.sync") < body.index("mtlc.tensor_epilogue") \
        < body.index("st.global.f32")


def test_over_budget_group_replays_and_keeps_the_memory_epilogue(tmp_path, ptxas):
    r = compile_case(tmp_path, FB.source("fp8", "loop", "matrix"), optimize=True,
                     tensor_tuple_budget=1)
    body = _entry(r.data.decode())
    assert "mtlc.tensor_loop replay group=0: tuple pressure 26 > budget 1" in body
    assert "mtlc.tensor_epilogue memory group=0: the group replays, D is in memory" in body
    assert "tep_e" in body
    assert "tensor epilogue on group 0: complete memory operation (the group replays" \
        in r.explain
    ptxas(r.data.decode(), "sm_90a")


def test_profile_without_the_native_family_replays(tmp_path, ptxas):
    """sm_80 has no FP8 mma.sync (sm_89+): the group and the epilogue replay exactly."""
    r = compile_case(tmp_path, FB.source("fp8", "loop", "row"), arch="sm_80", optimize=True)
    body = _entry(r.data.decode())
    assert "mtlc.tensor_loop replay group=0: no native m16n8 instruction for this family " \
        "on sm_80" in body
    assert "mtlc.tensor_epilogue memory group=0" in body and "mma.sync" not in body
    ptxas(r.data.decode(), "sm_80")


@pytest.mark.parametrize("change,why", [
    (lambda s: s.replace("tensor_epilogue(c,", "tensor_epilogue(bias,"), "a different D"),
    (lambda s: s.replace("m: 32, n: 16, element_type", "m: 16, n: 16, element_type"),
     "a different shape or format"),
    (lambda s: s.replace("layout: row, ldd: ldc", "layout: col, ldd: ldc"),
     "a different layout or scope"),
    (lambda s: s.replace("ldd: ldc,\n", "ldd: ldb,\n"), "a different stride"),
    (lambda s: s.replace("ldd: ldc,\n", "ldd: 21,\n"), "a different stride"),
    (lambda s: s.replace("activation: relu", "scope: workgroup, activation: relu"),
     "a different layout or scope"),
])
def test_incompatible_epilogues_keep_the_complete_memory_operation(tmp_path, change, why):
    src = change(FB.source("fp8", "loop", "column"))
    r = compile_case(tmp_path, src, optimize=True)
    body = _entry(r.data.decode())
    assert f"tensor epilogue not fused: {why}; the complete memory operation runs after " \
        "the commit" in r.explain
    assert "mtlc.tensor_epilogue" not in body and "tep_e" in body
    # the group itself stays resident and stores D before the memory operation
    assert body.index("mtlc.tensor_loop resident") < body.index("tep_e")


def test_bypassed_epilogue_label_keeps_the_memory_operation(tmp_path):
    """An outer guard that jumps to the epilogue's label around the loop: ambiguous control
    flow, so the epilogue is not fused (gpu.md)."""
    src = FB.source("fp8", "loop", "row").replace(
        "  for kk in 0..kt {", "  if (kt > 0) {\n  for kk in 0..kt {").replace(
        "  }\n  tensor_epilogue", "  }\n  }\n  tensor_epilogue")
    r = compile_case(tmp_path, src, optimize=True)
    body = _entry(r.data.decode())
    assert "mtlc.tensor_epilogue fused" not in body and "tep_e" in body
    assert "tensor epilogue not fused: the epilogue's block is also reached around the " \
        "commit" in r.explain


@pytest.mark.parametrize("arch", ["sm_90a", "sm_121a"])
def test_bf16_structured_sparse_group_fuses_a_matrix_bias(tmp_path, ptxas, arch):
    src = FB.source("sparse", "loop", "matrix").replace("f16", "bf16")
    r = compile_case(tmp_path, src, arch, optimize=True)
    body = _entry(r.data.decode())
    assert "m16n8k16.row.col.f32.bf16.bf16.f32" in body
    assert "mtlc.tensor_epilogue fused on resident group=0 (m16n8 registers, matrix bias)" \
        in body
    assert body.count("st.global.f32") == 16 and "tep_e" not in body
    ptxas(r.data.decode(), arch)


@pytest.mark.parametrize("fam,form", [("fp8", "loop"), ("fp8", "pipeline"),
                                      ("sparse", "chain"), ("scaled", "loop")])
def test_m16n8_group_without_epilogue_is_resident_and_exact(tmp_path, fam, form):
    """The residency itself (no epilogue): C loaded once, D stored once, and the resident,
    replayed and unoptimized PTX give the oracle's tile bit for bit."""
    arch = "sm_121a" if fam == "scaled" else "sm_90a"
    case = FB.case(fam, form, "none", activation="identity", alpha=False)
    head, _, _ = case.source.partition("  tensor_epilogue(")
    case.source = head + "}\n"
    body = _entry(compile_case(tmp_path, case.source, arch, optimize=True).data.decode())
    assert f"mtlc.tensor_{form} resident m16n8 group=0" in body
    assert body.count("ld.global.f32") == 16 and body.count("st.global.f32") == 16
    got = {mode: run_on_interpreter(tmp_path, case, arch, mode)[0] for mode in MODES}
    for out in got.values():
        case.check({"c": out})
    assert got["fused"].tobytes() == got["replay"].tobytes() == got["plain"].tobytes()
