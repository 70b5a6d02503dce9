"""Hardware tests of `cluster: 2` on the persistent sm_90a GEMM (docs/reference/gemm.md "Clusters
of 2"): the paired schedules (cooperative, ping-pong, and auto, whose ping-pong branch runs
unpaired in the cluster) against torch fp32 on tails, rank
1's rows past M, odd pair-tile counts per cluster, idle clusters, K = 0, C aliasing D and
the split path, f16/bf16 with f32 and 16-bit results (bench/gemm.py --check-cluster), and
200 launches of 4096^3 back to back per schedule and format, each in its own process with
a time limit, so that a hang (the earlier one-region pairing hung on some launch of a long
sequence) is reported as a hang rather than waited on. Skips without torch or a compute
capability 9.0 GPU.

    python3 -m pytest tests/gpu/test_gemm_cluster.py
"""
from __future__ import annotations

import subprocess

import pytest

from .bench_scripts import require_hopper, run_script

STRESS_LIMIT = 120          # s: 200 launches of ~0.3 ms, plus compile, check and start-up


@pytest.fixture(autouse=True)
def _hopper():
    require_hopper()


def test_cluster_tails_alias_and_split():
    """The paired schedules on CLUSTER_CHECKS, f16/bf16 with f32 and 16-bit D, in one
    process (the stress runs below, one process each)."""
    proc = run_script("gemm.py", "--check-cluster", "--no-stress", "--no-bench", timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "CHECK OK" in out, out
    # 4 (input, D) formats x 10 cases (f32 D: one more, C aliasing D) per schedule
    assert out.count(" cluster cooperative ") == out.count(" cluster pingpong ") == \
        out.count(" cluster auto ") == 42, out


@pytest.mark.parametrize("schedule", ["cooperative", "pingpong", "auto"])
@pytest.mark.parametrize("fmt,out", [("f16", "f32"), ("bf16", "f32"), ("f16", "f16"),
                                     ("bf16", "f16")])
def test_200_back_to_back_launches_finish(schedule, fmt, out):
    try:
        proc = run_script("gemm.py", "--cluster-stress", "200", "--cluster-schedules",
                          schedule, "--formats", fmt, "--out", out, timeout=STRESS_LIMIT)
    except subprocess.TimeoutExpired as exc:
        text = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) \
            else exc.stdout or ""
        pytest.fail(f"HANG: `cluster: 2` {schedule} {fmt}->{out}: 200 launches of 4096^3 "
                    f"did not finish in {STRESS_LIMIT} s\n{text}")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "CHECK OK" in text, text
