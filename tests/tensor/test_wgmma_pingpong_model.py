"""A random-schedule model of the ping-pong schedule's protocol (wgmma_pingpong.py): one
producer thread filling ring positions (2i + h)·nk + kb with K chunk kb of half h of tile
i, two consumer warpgroups each reading only its own half tiles (consumer 1 starts nk
positions in, each skips the other's nk after a tile), one-arrival empty barriers, and the
two turn barriers (consumer h waits on turn h, parity 1 first for consumer 0, and hands
over on turn 1 - h once its K loop is issued). Every mbarrier answers a parity wait the
way `mbarrier.try_wait.parity` does (only modulo 2), copies land in any order, wgmma
groups retire in order. Checked on every schedule: no deadlock, no refill of a stage a
group still reads, every read finds the chunk it expects, and the main loops alternate
(consumer 0's tile i, consumer 1's tile i, consumer 0's tile i + 1, ...). The same model
without the turn barriers must fail: a consumer then trusts a stale phase."""
from __future__ import annotations

import random

import pytest

from .ring_protocol import Ring, advance, done


def _skip(s: int, ph: int, nk: int, S: int) -> tuple[int, int]:
    """wgmma_pingpong._skip: nk = q·S + r positions on."""
    q, r = divmod(nk, S)
    s += r
    if s >= S:
        s, ph = s - S, ph ^ 1
    return s, ph ^ (q & 1)


def _schedule(S: int, nk: int, tiles: int, seed: int, turns: bool = True) -> str:
    rnd = random.Random(seed)
    ring = Ring(S)
    empty = [0] * S                          # one arrival completes a phase
    turn = [0, 0]                            # completed phases of turn barriers 0 and 1
    order = []                               # (consumer, tile) as main loops start
    cons = []
    for h in (0, 1):
        s, ph = _skip(0, 0, nk, S) if h else (0, 0)
        cons.append({"s": s, "ph": ph, "kb": 0, "tile": 0, "prev": None, "groups": [],
                     "tp": 1 if h == 0 else 0, "state": "turn"})
    total = 2 * nk * tiles
    for _ in range(400000):
        acts = []
        if ring.count < total and done(empty[ring.s], ring.ph):
            acts.append(("produce", None))
        if ring.copies:
            acts.append(("land", None))
        for h, c in enumerate(cons):
            if c["tile"] < tiles:
                if c["state"] == "turn" and (not turns or done(turn[h], c["tp"])):
                    acts.append(("turn", h))
                if c["state"] == "loop" and c["kb"] < nk and done(ring.full[c["s"]], c["ph"]):
                    acts.append(("mma", h))
                if c["state"] == "loop" and c["kb"] == nk:
                    acts.append(("end", h))
            if c["groups"]:
                acts.append(("retire", h))
        if not acts:
            finished = ring.count == total and not ring.copies and \
                all(c["tile"] == tiles for c in cons)
            if not finished:
                return "deadlock"
            want = [(h, i) for i in range(tiles) for h in (0, 1)]
            return "ok" if not turns or order == want else f"order {order}"
        what, h = rnd.choice(acts)
        if what == "produce":
            if err := ring.produce():
                return err
        elif what == "land":
            ring.land(rnd)
        elif what == "retire":
            ring.retire(cons[h]["groups"], h)
        elif what == "turn":
            c = cons[h]
            c["tp"] ^= 1
            c["state"] = "loop"
            order.append((h, c["tile"]))
        elif what == "mma":
            c = cons[h]
            if err := ring.issue(c["groups"], h, c["s"], (2 * c["tile"] + h) * nk + c["kb"]):
                return err
            if c["prev"] is not None:
                empty[c["prev"]] += 1
            c["prev"], c["kb"] = c["s"], c["kb"] + 1
            c["s"], c["ph"] = advance(c["s"], c["ph"], S)
        else:                                                # K loop issued: hand over
            c = cons[h]
            turn[1 - h] += 1
            ring.drain(c["groups"], h)                       # wait_group 0
            if c["prev"] is not None:
                empty[c["prev"]] += 1
            c["prev"], c["kb"], c["tile"], c["state"] = None, 0, c["tile"] + 1, "turn"
            c["s"], c["ph"] = _skip(c["s"], c["ph"], nk, S)
    return "no progress"


@pytest.mark.parametrize("S", [2, 3, 4, 6])
def test_pingpong_protocol_is_sound(S):
    for nk in (0, 1, 2, 3, 5, 7, 8, 13):
        for tiles in (1, 2, 3, 4):
            for seed in range(12):
                assert _schedule(S, nk, tiles, seed) == "ok", (S, nk, tiles, seed)


def test_skip_is_nk_advances():
    for S in (2, 3, 6):
        for nk in range(0, 40):
            for start in [(x, p) for x in range(S) for p in (0, 1)]:
                a = start
                for _ in range(nk):
                    a = advance(*a, S)
                assert _skip(*start, nk, S) == a


def test_without_turns_a_stale_phase_is_caught():
    results = {_schedule(2, 3, 3, seed, turns=False) for seed in range(25)}
    assert results - {"ok"}, results
