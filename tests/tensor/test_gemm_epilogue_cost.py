"""bench/gemm_epilogue_cost.py's PTX edit: every D store of the pipeline is predicated on a
run-time test no launch passes, the tensor maps' stores are left alone, and ptxas keeps
every wgmma (an edit that deleted the stores let ptxas delete the wgmma that fed them)."""
from __future__ import annotations

import re

import pytest

from bench.gemm_epilogue_cost import without_stores
from bench.wgmma_kernels import gemm_source

from .kernels import compile_ptx
from .test_wgmma import _usage


@pytest.mark.parametrize("schedule", ["cooperative", "pingpong"])
@pytest.mark.parametrize("tma_store", [False, True])
def test_d_stores_are_switched_off_and_the_wgmma_stay(ptxas_path, monkeypatch, schedule,
                                                      tma_store):
    from toolchain.compiler.targets.ptx.tensor import wgmma
    monkeypatch.setattr(wgmma, "TMA_STORE", tma_store)
    text = compile_ptx(gemm_source("f16", out="f16", persistent=True, schedule=schedule),
                       "sm_90a")
    edited = without_stores(text)
    first = edited.index("wgmma.mma_async")
    before, after = edited[:first], edited[first:]
    inserted = ("\t.reg .pred %p_never, %p_store;", "\tsetp.eq.u32 %p_never, %r1, -1;")
    kept = [line for line in before.split("\n") if line not in inserted]
    assert kept == text[:text.index("wgmma.mma_async")].split("\n")   # maps untouched
    guards = set(re.findall(r"^\s*(\S+)\s+st\.global", after, re.M))
    assert guards == {"@%p_never", "@%p_store"}          # unguarded ones, guarded ones
    bulk = re.findall(r"^\s*(\S+)\s+cp\.async\.bulk\.tensor\.2d\.global\.shared", after, re.M)
    assert set(bulk) == ({"@%p_store"} if tma_store else set())   # the copy engine's too
    assert "st.global.v4.b32" in before                  # the tensor maps still written
    assert edited.count("wgmma.mma_async") == text.count("wgmma.mma_async")
    assert "Used 168 registers" in _usage(ptxas_path, edited, "sm_90a")


def test_clipped_paired_f32_stores_are_switched_off_too(ptxas_path):
    """The paired 232-wide `auto` kernel with an f32 D (the odd shape's form): its rank-2
    and clipped rank-3 copy-engine stores, in both pipelines, are all guarded."""
    text = compile_ptx(gemm_source("f16", bn=232, out="f32", persistent=True,
                                   schedule="auto", cluster=2), "sm_90a")
    edited = without_stores(text)
    after = edited[edited.index("wgmma.mma_async"):]
    bulk = re.findall(r"^\s*(\S+)\s+cp\.async\.bulk\.tensor\.(\d)d\.global\.shared", after,
                      re.M)
    assert {rank for _, rank in bulk} == {"2", "3"}
    assert {guard for guard, _ in bulk} == {"@%p_store"}
    assert edited.count("wgmma.mma_async") == text.count("wgmma.mma_async")
    assert "Used 168 registers" in _usage(ptxas_path, edited, "sm_90a")
