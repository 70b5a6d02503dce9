"""`cluster: 2` on a persistent workgroup-scope tensor_matmul (docs/reference/gemm.md "Clusters
of 2"): the sm_90a structure (the cluster shape, empty barriers counting both workgroups'
consumers, half (ping-pong: quarter) B boxes multicast to both, remote releases in the
default-semantics form), the agreement of the pair, ptxas resources at the entry cap, the
consumer's K loop in SASS (one remote arrive more, no memory barrier), the option's
diagnostics and --explain line, the IR round trip. The protocol runs on the two-workgroup
model in test_wgmma_cluster_sim.py; the H200 checks are tests/gpu/test_gemm_cluster.py."""
from __future__ import annotations

import collections
import re

import pytest

from bench.fp8_kernels import fp8_source
from bench.wgmma_kernels import gemm_source
from toolchain.compiler.diagnostics import CompileError
from toolchain.compiler.ir.tensor import TensorDesc
from toolchain.compiler.targets.ptx.tensor import wgmma

from tests.ptx.source import find_nvdisasm, sass

from .kernels import compile_ptx
from .test_wgmma import assert_entry_cap
from .test_wgmma_pingpong import explain, located_e0340


def _desc(schedule: str, bn: int = 256) -> TensorDesc:
    return TensorDesc(128, bn, 64, "f16", "f16", "f32", "f32", b_layout="col",
                      scope="workgroup", persistent=8, schedule=schedule, cluster=2)


def _src(schedule: str = "cooperative", cluster: int = 2, **kw) -> str:
    return gemm_source("f16", persistent=True, schedule=schedule, cluster=cluster, **kw)


@pytest.mark.parametrize("schedule,readers,b_rows,tag", [
    ("cooperative", 4, 128, "wg_prod"),      # 2 consumers x 2 workgroups; half of 256
    ("pingpong", 2, 64, "wg_pp_prod"),       # 1 consumer x 2; a quarter of 256
])
def test_structure(schedule, readers, b_rows, tag):
    text = compile_ptx(_src(schedule), "sm_90a")
    S = wgmma.stages(_desc(schedule))
    assert ".reqnctapercluster 2, 1, 1" in text
    inits = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+(?:\+\d+)?\], (\d+);", text)
    turns = ["128", "128"] if schedule == "pingpong" else []
    assert inits == ["1", str(readers)] * S + turns, inits
    # B's map: boxes of b_rows rows (A's: 128; D's, built first: 16), every B box one
    # multicast to both
    boxes = re.findall(r"tensormap\.replace\.tile\.box_dim\.global\.b1024\.b32 "
                       r"\[%rd\d+\], 1, (\d+);", text)
    assert boxes == [str(wgmma.STORE_ROWS), "128", str(b_rows)], boxes
    prod = _label_span(text, f"{tag}_tile", f"{tag}_tiles_done")
    assert prod.count(".multicast::cluster") == 1 and prod.count("cp.async.bulk.tensor") == 2
    assert "mbarrier.try_wait.parity.acquire.cluster" in prod
    # consumers release on their own empty barrier and, through mapa, on the peer's
    remote = re.findall(r"mbarrier\.arrive\S*shared::cluster\S* ", text)
    assert remote == ["mbarrier.arrive.shared::cluster.b64 "] * 2, remote   # loop, drain
    assert text.count("barrier.cluster.arrive") == 5   # agree (2), init, join (2 roles)


def _label_span(text: str, start: str, end: str) -> str:
    """From the label $L__<start>N: to the label $L__<end>M: (definitions, not uses)."""
    a = re.search(rf"^\$L__{start}\d+:", text, re.M).start()
    return text[a:re.compile(rf"^\$L__{end}\d+:", re.M).search(text, a).start()]


def test_auto_pairs_only_its_cooperative_pipeline():
    """`schedule: auto` with `cluster: 2`: the cooperative pipeline (misaligned rows)
    multicasts B and releases on the peer; the ping-pong one runs each workgroup alone:
    no multicast, no remote arrive, no cluster barrier between the rule's branch and the
    cooperative pipeline's label."""
    text = compile_ptx(_src("auto"), "sm_90a")
    assert text.count(".reqnctapercluster 2, 1, 1") == 1
    branch = re.search(r"bra\.uni \$L__wg_auto_coop\d+;", text)
    label_at = re.search(r"^\$L__wg_auto_coop\d+:", text, re.M).start()
    pp, coop = text[branch.end():label_at], text[label_at:]
    assert "wgmma.mma_async" in pp and "wgmma.mma_async" in coop
    for spelling in (".multicast::cluster", "mbarrier.arrive.shared::cluster.b64",
                     "barrier.cluster", "mapa"):
        assert spelling not in pp, spelling
    assert coop.count(".multicast::cluster") == 1
    assert coop.count("mbarrier.arrive.shared::cluster.b64") == 2


def test_the_pair_agrees_on_area_and_operands():
    """One exchange through distributed shared memory before anything else: both
    predicates, origin, M, N, K, lda, ldb (u32) and A, B (u64) of the peer."""
    text = compile_ptx(_src(), "sm_90a")
    head = text[:text.index("mbarrier.init")]
    assert head.count("ld.shared::cluster.u32") == 8 and head.count("ld.shared::cluster.u64") == 2
    assert re.search(r"\.shared \.align 16 \.b8 \w+_wgmma_pair\[48\];", text)
    assert re.search(r"setp\.lt\.and\.u32 %p\d+, %r\d+, 2147483392, %p\d+;", head)


def test_off_by_default_and_cluster_1_is_the_default():
    plain = compile_ptx(gemm_source("f16", persistent=True), "sm_90a")
    assert plain == compile_ptx(_src(cluster=1), "sm_90a")
    assert "reqnctapercluster" not in plain and "multicast" not in plain
    assert "mapa" not in plain and "barrier.cluster" not in plain


@pytest.mark.parametrize("src", [
    _src("cooperative"), _src("pingpong"), _src("auto"),
    gemm_source("bf16", bn=128, out="bf16", persistent=True, schedule="pingpong", cluster=2),
    fp8_source(persistent=True, cluster=2), fp8_source(persistent=True, schedule="pingpong",
                                                        cluster=2),
], ids=["coop", "pingpong", "auto", "bf16-n128-pingpong", "fp8", "fp8-pingpong"])
def test_no_spills_at_the_entry_cap(ptxas_path, src):
    assert_entry_cap(ptxas_path, compile_ptx(src, "sm_90a"))


def _k_loop(text: str) -> list[str]:
    """The consumer's K loop in SASS: from the full barrier's wait before the first
    HGMMA to the loop's backward branch (opcodes, guards dropped)."""
    ops = [re.sub(r"^\s*/\*[0-9a-f]+\*/\s*", "", ln).split(";")[0].strip()
           for ln in text.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", ln)]
    ops = [re.sub(r"^@!?U?P\w+\s+", "", o).split()[0] for o in ops]
    first = next(i for i, o in enumerate(ops) if o.startswith("HGMMA"))
    lo = max(i for i in range(first) if o_is(ops[i], "SYNCS.PHASECHK"))
    hi = next(i for i in range(first, len(ops)) if ops[i] == "BRA")
    return ops[lo:hi + 1]


def o_is(op: str, stem: str) -> bool:
    return op.startswith(stem)


@pytest.mark.parametrize("schedule", ["cooperative", "pingpong"])
def test_consumer_k_loop_gains_one_remote_arrive_and_no_fence(ptxas_path, schedule):
    """ptxas 13.0 makes `.release.cluster` a MEMBAR.ALL.GPU before every arrive (in the
    K loop, a full memory barrier per stage); the default-semantics remote arrive is one
    SYNCS instruction, so the paired loop is the unpaired one plus that arrive (and the
    address's mapping)."""
    nvdisasm = find_nvdisasm(ptxas_path)
    if nvdisasm is None:
        pytest.skip("nvdisasm unavailable (pip install nvidia-cuda-nvdisasm)")
    one, two = (_k_loop(sass(ptxas_path, nvdisasm, compile_ptx(_src(schedule, c), "sm_90a")))
                for c in (1, 2))
    diff = collections.Counter(two)
    diff.subtract(collections.Counter(one))
    gained = {k: v for k, v in diff.items() if v > 0}
    lost = {k: v for k, v in diff.items() if v < 0}
    assert gained.pop("SYNCS.ARRIVE.TRANS64.RED.A1T0") == 1, (gained, one, two)
    assert not any(k.startswith(("MEMBAR", "HGMMA", "SYNCS", "WARPGROUP")) for k in gained)
    assert sum(gained.values()) <= 3 and not lost or sum(-v for v in lost.values()) <= 3, \
        (gained, lost)
    assert [o for o in two if o.startswith("HGMMA")] == [o for o in one if o.startswith("HGMMA")]


@pytest.mark.parametrize("edit,message", [
    (("cluster: 2", "cluster: 3"), "clusters of 2"),
    (("cluster: 2", "cluster: 0"), "positive integer constant"),
    (("persistent: 8, ", ""), "needs `scope: workgroup` and `persistent: G`"),
])
def test_bad_cluster_option_is_located(edit, message):
    src = _src().replace(*edit)
    assert src != _src()
    assert message in located_e0340(src).message


def test_subgroup_and_tensor_mma_refuse_the_option():
    sub = """kernel k(a: uint16*, b: uint16*, c: float32*, d: float32*) {
  tensor_matmul(a, b, c, d, 0, 0, 16, 16, 16, shape: m16n16k16, input_type: f16,
                output_type: f32, cluster: 2);
}
"""
    d = located_e0340(sub)
    assert "`cluster: 2`" in d.message and "scope: workgroup" in d.message
    mma = sub.replace("tensor_matmul(a, b, c, d, 0, 0, 16, 16, 16,", "tensor_mma(a, b, c, d,")
    with pytest.raises(CompileError) as exc:
        compile_ptx(mma, "sm_90a")
    assert "unknown option `cluster:`" in exc.value.diagnostics[0].message


@pytest.mark.parametrize("arch,src,says", [
    ("sm_90a", _src(), "clusters of 2: the two workgroups of a cluster compute the two "
     "128-row halves of one 256x256 pair tile"),
    ("sm_90a", _src("pingpong"), "each copies half of every half tile's B box"),
    ("sm_90a", _src("auto"), "clusters of 2 (the cooperative pipeline; in the ping-pong "
     "one each workgroup of a cluster runs alone)"),
    ("sm_121a", _src(), "`cluster: 2` has no effect without the pipeline"),
    ("sm_90a", fp8_source(persistent=True, cluster=2), "multiple of 2"),
])
def test_explain_line(tmp_path, arch, src, says):
    assert says in explain(tmp_path, arch, src)


def test_other_profiles_ignore_the_option(ptxas):
    text = compile_ptx(_src(), "sm_90")
    assert "reqnctapercluster" not in text and "wgmma" not in text
    ptxas(text, "sm_90")


def test_ir_round_trip_keeps_the_cluster():
    from toolchain.compiler.frontend.api import compile_to_ir
    from toolchain.compiler.ir.printer import format_module
    from toolchain.compiler.ir.reader import parse_module
    module, _ = compile_to_ir("g.mettle", gpu=True, source_text=_src("pingpong"))
    text = format_module(module)
    assert "persistent=8 schedule=pingpong cluster=2>" in text
    assert format_module(parse_module(text)) == text
