"""The sm_90a GEMM pipeline in clusters of 2, as compiled, on the two-workgroup CPU model
(cluster_sim.ClusterSim: both workgroups' threads interleaved at random, each with its own
shared memory, multicast copies landing independently in each workgroup, remote
arrives, cluster barriers), exact against the oracle on small-integer data with
NaN-poisoned D, and the model catching broken protocols; the model's own cluster
instructions on a hand-written exchange through distributed shared memory.

- the experimental one-region pairing (wgmma.CLUSTER = 2: B shared where both regions
  read the same B columns, decided at run time), the form that hung on the H200;
- `cluster: 2` on the persistent schedules (cooperative, ping-pong, auto; FP8): pair tiles
  of 2·128 rows, rank 1 of the last pair row past M (an odd count of row tiles), an idle
  cluster (grid larger than the pair tiles), K = 0, a ring that wraps;
- broken variants: a stage released on one workgroup's empty barriers only (the copy
  lands on rows the other workgroup still reads, or has not read yet), remote arrives
  dropped (deadlock), the final cluster barrier replaced by the workgroup's own barrier
  (a workgroup exits while the other still arrives on its barriers)."""
from __future__ import annotations

import numpy as np
import pytest

from bench.wgmma_kernels import persistent_grid
from toolchain.compiler.targets.ptx import ops as I
from toolchain.compiler.targets.ptx.tensor import wgmma

from .cluster_sim import ClusterSim
from .ptx_sim import SimError
from .test_wgmma_pipeline_sim import BN, _run, run_fp8, workspace_slots


# ---- the model itself, on hand-written PTX: each workgroup writes its rank + 10 to its
# own shared word, a cluster barrier, reads the peer's word through mapa, stores it, and
# leaves after a second cluster barrier (without it, one may leave while the other reads)
EXCHANGE = """
.version 8.0
.target sm_90a
.address_size 64
.shared .align 4 .b8 box[8];
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %cluster_ctarank;
  add.u32 %r2, %r1, 10;
  st.shared.u32 [box], %r2;
  barrier.cluster.arrive.release;
  barrier.cluster.wait.acquire;
  xor.b32 %r3, %r1, 1;
  mov.u32 %r4, box;
  mapa.shared::cluster.u32 %r5, %r4, %r3;
  ld.shared::cluster.u32 %r6, [%r5];
  ld.param.u64 %rd1, [out];
  mov.u32 %r7, %ctaid.x;
  mul.wide.u32 %rd2, %r7, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r6;
  barrier.cluster.arrive.release;
  barrier.cluster.wait.acquire;
  ret;
}
"""


def _exchange(ptx, seed, grid=4):
    sim = ClusterSim(ptx, "k", 0, seed=seed)
    return sim.run((grid, 1), 64, [("buf", "out", np.zeros(grid, np.uint32))]).read("out")


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_model_exchanges_through_distributed_shared_memory(seed):
    assert _exchange(EXCHANGE, seed).tolist() == [11, 10, 11, 10]


@pytest.mark.parametrize("seed", [None, 0, 1])
def test_model_catches_a_workgroup_leaving_while_its_peer_reads(seed):
    early = EXCHANGE[:EXCHANGE.rindex("barrier.cluster.arrive")] + "ret;\n}\n"
    with pytest.raises(SimError, match="which has exited"):
        _exchange(early, seed)


@pytest.mark.parametrize("edit,message", [
    (("  barrier.cluster.arrive.release;\n  barrier.cluster.wait", "  barrier.cluster.wait"),
     "wait without an arrive"),
    (("barrier.cluster.wait.acquire;\n  xor", "barrier.cluster.arrive.release;\n  xor"),
     "arrive twice without a wait"),
    (("xor.b32 %r3, %r1, 1;", "add.u32 %r3, %r1, 2;"), "mapa to rank 3 outside the cluster"),
])
def test_model_refuses_misused_cluster_instructions(edit, message):
    assert EXCHANGE.replace(*edit) != EXCHANGE
    with pytest.raises(SimError, match=message):
        _exchange(EXCHANGE.replace(*edit, 1), 3)


def test_model_needs_whole_clusters():
    with pytest.raises(SimError, match="not a multiple of the cluster size"):
        _exchange(EXCHANGE, None, grid=3)


# ---- the compiled pipeline
def _check(M, N, K, grid, schedule, seed, persistent=True, pitch=None):
    sim, got, want, untouched = _run(M, N, K, grid, schedule, persistent, seed=seed,
                                     pitch=pitch, sim=ClusterSim,
                                     cluster=2 if persistent else None)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    return sim


@pytest.mark.parametrize("M,N,K,grid,seed,shared_pairs", [
    (270, 70, 130, 6, 1, 2),                 # pairs (0,1), (4,5) share B; (2,3) do not
    (270, 70, 130, 6, 7, 2),
    (150, 70, 450, 4, 2, 2),                 # nk = 8 > 6 stages: the ring wraps
    (150, 70, 0, 4, 3, 2),                   # K = 0: D = C, no copy
])
def test_one_region_pairing_is_sound_on_the_model(monkeypatch, M, N, K, grid, seed,
                                                  shared_pairs):
    """The CLUSTER = 2 kernel (one region per workgroup, cooperative, B multicast where
    the pair's regions read the same B columns): exact, no deadlock, no early release
    on any of these schedules; so the intermittent H200 hang is not in its protocol
    (docs/internals/measurements.md)."""
    monkeypatch.setattr(wgmma, "CLUSTER", 2)
    sim = _check(M, N, K, grid, "cooperative", seed, persistent=False)
    nk = -(-K // 64)
    assert sim.clusters == grid // 2
    assert sim.multicasts == 2 * shared_pairs * nk          # each producer, each chunk
    assert sim.wgmmas == grid * nk * 8
    assert sim.remote_arrives == 2 * shared_pairs * nk * 2  # 2 consumers a workgroup


def _tiles(M, N):
    return -(-M // 128), -(-N // BN)


@pytest.mark.parametrize("schedule,M,N,K,grid,seed", [
    ("cooperative", 300, 130, 130, 4, 1),    # 9 tiles: 6 pair tiles, rank 1 of 3 past M
    ("cooperative", 150, 70, 450, 2, 2),     # the ring wraps (nk 8, 6 stages)
    ("cooperative", 150, 70, 130, 6, 3),     # 2 pair tiles, 3 clusters: one idle
    ("cooperative", 300, 70, 0, 2, 4),       # K = 0
    ("pingpong", 150, 70, 450, 2, 5),        # nk 8 > 7 stages: skips wrap the ring
    ("pingpong", 300, 70, 130, 4, 6),        # rank 1 of the second pair row past M
    ("pingpong", 150, 70, 0, 2, 7),          # K = 0: turns still taken
])
def test_paired_persistent_pipeline_exact(schedule, M, N, K, grid, seed):
    sim = _check(M, N, K, grid, schedule, seed)
    tm, tn = _tiles(M, N)
    pair_tiles = -(-tm // 2) * tn
    nk = -(-K // 64)
    halves = 2 if schedule == "pingpong" else 1
    per_chunk = 8 * halves                                  # k16 steps x 64-row blocks
    assert sim.clusters == grid // 2
    assert sim.wgmmas == 2 * pair_tiles * nk * per_chunk     # rank 1 past M still computes
    assert sim.multicasts == 2 * pair_tiles * nk * halves   # every B box, both producers
    consumers_a_stage = 1 if schedule == "pingpong" else 2
    assert sim.remote_arrives == 2 * pair_tiles * nk * halves * consumers_a_stage


@pytest.mark.parametrize("pitch,branch", [(192, "pingpong"), (200, "cooperative")])
def test_paired_auto_takes_one_branch_on_both(pitch, branch):
    """`schedule: auto` paired: both workgroups take the branch its rule names (their A
    and B are the same, cluster_pair), and either branch is exact; only the cooperative
    branch pairs (multicasts B, releases on the peer), the ping-pong one runs each
    workgroup alone on its own tiles."""
    sim = _check(150, 70, 130, 2, "auto", 8, pitch=pitch)
    halves = 2 if branch == "pingpong" else 1
    assert sim.wgmmas == 2 * 2 * 3 * 8 * halves
    if branch == "pingpong":
        assert sim.multicasts == 0 and sim.remote_arrives == 0
    else:
        tm, tn = _tiles(150, 70)
        pair_tiles = -(-tm // 2) * tn
        assert sim.multicasts == 2 * pair_tiles * 3                 # nk = 3
        assert sim.remote_arrives == 2 * pair_tiles * 3 * 2        # two consumers


# (schedule, M, N, K, grid, STREAM_K, D's format, A/B pitch, reverse, split slots, seed):
# paired stream-K, the units being pair tiles' parts; `split slots`: the workspace slots
# that must hold partial sums (2·unit + rank; a rank past M sums zeros)
PAIRED_STREAMK_CASES = [
    ("cooperative", 150, 64, 580, 8, 1, "f32", None, False, 8, 1),   # 1 pair tile, 4 clusters: s 4
    ("cooperative", 150, 64, 580, 8, 1, "f32", None, True, 8, 2),    # ... rank 1 last cluster first
    ("cooperative", 500, 70, 450, 6, 2, "f32", None, True, 6, 3),    # 4 on 3: the last split 3 ways
    ("auto", 300, 70, 450, 6, 2, "bf16", 456, False, 3, 4),          # misaligned; rank 1 past M
    ("auto", 150, 64, 130, 8, 1, "f32", 192, False, 6, 5),           # aligned, T < W: coop, s 3 (nk)
]


@pytest.mark.parametrize("schedule,M,N,K,grid,mode,out,pitch,reverse,written,seed",
                         PAIRED_STREAMK_CASES)
def test_paired_stream_k_parts_meet_in_the_workspace(monkeypatch, schedule, M, N, K, grid,
                                                     mode, out, pitch, reverse, written,
                                                     seed):
    """`workspace:` with `cluster: 2`: both workgroups of a cluster run each part of a
    pair tile (B still multicast, each K chunk once per rank), each rank keeps its half
    tile's partial sums in its own slots and counters, and the last part to count sums
    them in part order, whichever cluster that is: exact, D's padding and the words after
    the workspace untouched, every counter back at zero."""
    monkeypatch.setattr(wgmma, "STREAM_K", mode)
    monkeypatch.setattr(ClusterSim, "reverse_x", reverse)
    sim, got, want, untouched = _run(M, N, K, grid, schedule, seed=seed, out=out,
                                     pitch=pitch, sim=ClusterSim, cluster=2, workspace=True)
    np.testing.assert_array_equal(got, want)
    assert untouched, "D's padding was written"
    slots = workspace_slots(sim, grid).reshape(-1, 128 * BN)
    assert sum(bool(slot.any()) for slot in slots) == written
    tm, tn = _tiles(M, N)
    pair_tiles, nk = -(-tm // 2) * tn, -(-K // 64)
    assert sim.wgmmas == 2 * pair_tiles * nk * 8            # each chunk once, both ranks
    assert sim.multicasts == 2 * pair_tiles * nk


@pytest.mark.parametrize("schedule", [None, "pingpong"])
def test_paired_fp8_exact(schedule):
    """FP8 (E4M3, k32, 128-byte stages) with per-tensor scales, bf16 D, `cluster: 2`."""
    sim, got, want = run_fp8(300, 70, 300, 2, schedule, 9, 11, ClusterSim, cluster=2)
    np.testing.assert_array_equal(got, want)
    assert sim.multicasts == 2 * 4 * 3 * (2 if schedule else 1)


def test_persistent_grid_is_whole_clusters():
    """The bench's launch: whole clusters, at most one per pair tile, never an odd grid."""
    assert persistent_grid(4096, 4096, cluster=2) == 132     # 256 pair tiles, 66 clusters
    assert persistent_grid(300, 130, bn=BN, cluster=2) == 12   # 6 pair tiles
    assert persistent_grid(128, 256, cluster=2) == 2          # 1 tile: its cluster
    assert persistent_grid(0, 0, cluster=2) == 2
    assert all(persistent_grid(m, 4096, cluster=2) % 2 == 0 for m in range(0, 9000, 700))


# ---- broken protocols the model must catch
def _own_only(em, have_prev, leader, prev, empty, share, peer):
    """A consumer that releases a shared stage on its own empty barrier twice instead of
    on both workgroups' (the count still matches: its own producer refills early)."""
    pb, eb = em.new("p"), em.new("r")
    em.put(I.binary("and", "pred", pb, have_prev, leader),
           I.mad("lo", "u32", eb, prev, 8, empty), I.guarded(I.mbarrier_arrive(eb), pb))
    if share:
        em.put(I.guarded(I.mbarrier_arrive(eb), pb))


def _no_remote(em, have_prev, leader, prev, empty, share, peer):
    pb, eb = em.new("p"), em.new("r")
    em.put(I.binary("and", "pred", pb, have_prev, leader),
           I.mad("lo", "u32", eb, prev, 8, empty), I.guarded(I.mbarrier_arrive(eb), pb))


@pytest.mark.parametrize("schedule,seed", [("cooperative", 1), ("cooperative", 5),
                                           ("pingpong", 2), ("pingpong", 3)])
def test_a_stage_released_on_one_workgroup_only_is_caught(monkeypatch, schedule, seed):
    """Seeds 0-5 catch it on 3 of 6 cooperative and 6 of 6 ping-pong schedules (a miss is a
    schedule where no consumer fell a ring behind); each seed's schedule is fixed by the
    seed and the kernel's instructions, so a change to the PTX can move the catches."""
    monkeypatch.setattr(wgmma, "_release", _own_only)
    with pytest.raises(SimError, match="still reads|no wgmma has read"):
        _check(150, 70, 450, 2, schedule, seed)


def test_dropped_remote_arrives_deadlock(monkeypatch):
    monkeypatch.setattr(wgmma, "_release", _no_remote)
    with pytest.raises(SimError, match="deadlock"):
        _check(150, 70, 450, 2, "cooperative", 4)


def test_a_workgroup_leaving_before_its_peer_is_caught(monkeypatch):
    """The join's cluster barrier replaced by the workgroup's own: a workgroup may
    invalidate its barriers and exit while its peer's consumers still arrive on them."""
    monkeypatch.setattr(wgmma, "_join_sync", lambda em, share: em.put(I.bar_sync(0)))
    with pytest.raises(SimError, match="after inval|has exited|cluster exited"):
        for seed in range(4):
            _check(150, 70, 130, 2, "cooperative", seed)
