"""The hottest SASS instructions of one Nsight Compute report (a probe, not a benchmark).

Reads `ncu -i REPORT --page source --csv --print-source sass` on stdin and prints the
instructions with the most warp-stall samples, each with its address, its share of all
samples and the stall reasons that make up most of it, so "where do the warps wait" has
an answer per instruction (the mbarrier wait of the K loop, the wgmma wait, the epilogue's
stores) rather than one average over every warp of the kernel.

    ncu -i r.ncu-rep --page source --csv --print-source sass | python3 tools/gpu/ncu_hot.py [N]
"""
from __future__ import annotations

import csv
import sys


def number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main(argv: list[str]) -> int:
    top = int(argv[0]) if argv else 40
    rows = list(csv.reader(sys.stdin))
    at = next((i for i, r in enumerate(rows) if any("Sampling" in c for c in r)), None)
    if at is None:
        print("no sampling columns in the input", file=sys.stderr)
        return 1
    head, body = rows[at], [r for r in rows[at + 1:] if len(r) == len(rows[at])]
    total_col = next(i for i, c in enumerate(head) if "Sampling (All" in c)
    src_col = next((i for i, c in enumerate(head) if c.strip() == "Source"), 1)
    addr_col = next((i for i, c in enumerate(head) if "Address" in c), 0)
    reasons = [i for i, c in enumerate(head)
               if i != total_col and "Sampling" not in c and ("stall" in c.lower())]
    total = sum(number(r[total_col]) for r in body) or 1.0
    print(f"{len(body)} instructions, {total:.0f} samples; reason columns: "
          f"{', '.join(head[i] for i in reasons[:30])}")
    for r in sorted(body, key=lambda r: -number(r[total_col]))[:top]:
        n = number(r[total_col])
        why = sorted(((number(r[i]), head[i]) for i in reasons), reverse=True)[:3]
        print(f"{r[addr_col]:>8} {100 * n / total:5.1f}%  {r[src_col].strip()[:60]:<60} "
              + " ".join(f"{name}={v:.0f}" for v, name in why if v))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
