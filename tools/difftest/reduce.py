"""Delta debugging over statements: delete chunks of statements (halving the chunk size,
then single statements, repeated to a fixpoint) while the program stays interesting, i.e.
the C oracle still runs and the Mettle build still disagrees in the same way."""
from __future__ import annotations

import copy

from .program import Program, Return


def _lists(prog: Program):
    """Every statement list of the program, outermost first (re-walked after each change)."""
    out = []

    def walk(stmts):
        out.append(stmts)
        for s in stmts:
            for child in s.children():
                walk(child)
    for f in prog.functions:
        walk(f.body)
    return out


def _removable(stmts, i, n):
    """A function's final `return` stays (helpers must return a value)."""
    return not any(isinstance(s, Return) for s in stmts[i:i + n])


def reduce_program(prog: Program, interesting, max_checks: int = 400) -> tuple[Program, int]:
    """The smallest program found that is still `interesting(program)`; and checks used."""
    prog = copy.deepcopy(prog)
    checks = 0
    changed = True
    while changed and checks < max_checks:
        changed = False
        for stmts in _lists(prog):
            if not any(live is stmts for live in _lists(prog)):
                continue            # its statement was deleted meanwhile
            size = max(1, len(stmts) // 2)
            while size >= 1 and checks < max_checks:
                i = 0
                while i < len(stmts) and checks < max_checks:
                    if not _removable(stmts, i, size):
                        i += size
                        continue
                    removed = stmts[i:i + size]
                    del stmts[i:i + size]
                    checks += 1
                    if interesting(prog):
                        changed = True
                    else:
                        stmts[i:i] = removed
                        i += size
                size //= 2
    return prog, checks
