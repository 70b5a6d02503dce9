"""A random-schedule model of the sm_90a pipeline's ring protocol (wgmma.py) as the
persistent tile loop runs it: one producer thread and two consumer warpgroups, S stages
with a full and an empty mbarrier each (parity waits exactly as `mbarrier.try_wait.parity`
answers them), copies that land in any order, wgmma groups that retire in order
(`wait_group 1` per stage, `wait_group 0` at a tile's end), and the stage index and phase
parities carried from tile to tile. Checked on every schedule: no deadlock, no refill of
a stage a consumer's group still reads, and every consumer reads the chunk it expects.
The same model with the ring reset per tile must fail (the model can see the bug)."""
from __future__ import annotations

import random

import pytest

from .ring_protocol import Ring, advance, done


def _schedule(S: int, nk: int, tiles: int, seed: int, carry: bool = True) -> str:
    rnd = random.Random(seed)
    ring = Ring(S)
    empty = [[0, 0] for _ in range(S)]   # [completed phases, arrivals in this phase]
    cons = [{"s": 0, "ph": 0, "kb": 0, "prev": None, "groups": [], "tile": 0}
            for _ in range(2)]

    def release(s: int) -> None:
        empty[s][1] += 1
        if empty[s][1] == len(cons):
            empty[s][0] += 1
            empty[s][1] = 0
    for _ in range(200000):
        acts = []
        if ring.count < nk * tiles and done(empty[ring.s][0], ring.ph):
            acts.append(("produce", None))
        if ring.copies:
            acts.append(("land", None))
        for i, c in enumerate(cons):
            if c["tile"] < tiles:
                if c["kb"] < nk and done(ring.full[c["s"]], c["ph"]):
                    acts.append(("mma", i))
                if c["kb"] == nk:
                    acts.append(("end", i))
            if c["groups"]:
                acts.append(("retire", i))
        if not acts:
            finished = ring.count == nk * tiles and not ring.copies and \
                all(c["tile"] == tiles for c in cons)
            return "ok" if finished else "deadlock"
        what, i = rnd.choice(acts)
        if what == "produce":
            if err := ring.produce():
                return err
        elif what == "land":
            ring.land(rnd)
        elif what == "retire":
            ring.retire(cons[i]["groups"], i)
        elif what == "mma":
            c = cons[i]
            if err := ring.issue(c["groups"], i, c["s"], c["tile"] * nk + c["kb"]):
                return err
            if c["prev"] is not None:
                release(c["prev"])
            c["prev"], c["kb"] = c["s"], c["kb"] + 1
            c["s"], c["ph"] = advance(c["s"], c["ph"], S)
        else:                                                # a tile's end
            c = cons[i]
            ring.drain(c["groups"], i)                       # wait_group 0
            if c["prev"] is not None:
                release(c["prev"])
            c["prev"], c["kb"], c["tile"] = None, 0, c["tile"] + 1
            if not carry:
                c["s"], c["ph"] = 0, 0
    return "no progress"


@pytest.mark.parametrize("S", [2, 3, 4, 6])
def test_ring_carried_across_tiles_is_sound(S):
    for nk in (1, 2, 3, 5, 8):
        for tiles in (1, 2, 3, 5):
            for seed in range(25):
                assert _schedule(S, nk, tiles, seed) == "ok", (S, nk, tiles, seed)


def test_ring_reset_per_tile_is_caught():
    results = {_schedule(4, 3, 3, seed, carry=False) for seed in range(25)}
    assert results - {"ok"}, results
