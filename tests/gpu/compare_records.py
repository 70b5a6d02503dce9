"""Compare two output records of the hardware suite (harness.py, `$METTLE_GPU_RECORD`).

    python3 tests/gpu/compare_records.py plain.jsonl opt.jsonl [--ignore KERNEL:BUFFER ...]

Every launch recorded in both runs must have bitwise-identical outputs; launches recorded in
only one run (a test skipped in the other) are listed. Exit 1 on any difference.
`--ignore kernel:buffer` leaves out outputs that differ from run to run by design (the old
values returned by contended atomics depend on the order the hardware serves them; their
tests check them as a permutation).
"""
from __future__ import annotations

import json
import sys


def load(path: str) -> dict:
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            e = json.loads(line)
            out[(e["test"], e["kernel"], e["launch"])] = e["outputs"]
    return out


def main(argv: list[str]) -> int:
    ignore = {tuple(x.split(":", 1)) for x in argv[argv.index("--ignore") + 1:]} \
        if "--ignore" in argv else set()
    a, b = load(argv[1]), load(argv[2])
    for rec in (a, b):
        for k, outs in rec.items():
            for name in [n for n in outs if (k[1], n) in ignore]:
                del outs[name]
    common = sorted(set(a) & set(b))
    differ = [k for k in common if a[k] != b[k]]
    only = sorted(set(a) ^ set(b))
    for k in differ:
        bad = [n for n in a[k] if a[k][n] != b[k].get(n)]
        print(f"DIFFERENT {k[0]} :: {k[1]} launch {k[2]}: {', '.join(bad)}")
    for k in only:
        print(f"only in {'first' if k in a else 'second'}: {k[0]} :: {k[1]} launch {k[2]}")
    print(f"{len(common)} launches compared, {len(differ)} different, "
          f"{len(only)} recorded in one run only")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
