"""Loop shapes several passes share: unroll-runtime and load-ahead unroll the same
header-tested loops with a run-time trip count (one definition, so neither imports the
other's private helper).
"""
from __future__ import annotations

# the exit tests a counted loop may use, with the sign its step must have
_DIRECTION = {"lt": 1, "le": 1, "gt": -1, "ge": -1}


def runtime_trip_count(lp):
    """The TripCount of a header-tested loop with a run-time bound, or a refusal reason."""
    if lp.latch is None or lp.children:
        return None, "not an innermost loop with one latch"
    exits = [(e, x) for e in lp.exiting for x in e.successors if not lp.contains(x)]
    if len(exits) != 1 or exits[0][0] is not lp.header:
        return None, "the loop does not leave only from its header test"
    tc = lp.trip_count()
    if tc is None or tc.tests_next or tc.count is not None:
        return None, "not a counted loop with a run-time trip count"
    t = tc.iv.phi.type
    if tc.pred not in _DIRECTION or _DIRECTION[tc.pred] * tc.step <= 0 or t.bits > 32:
        return None, "an unsupported exit test"
    return tc, ""
