"""Warp-stall samples per SASS basic block (a probe, not a benchmark).

ncu_hot.py lists instructions; a loop's cost is spread over dozens of them. This sums
ncu_hot.py's per-instruction shares (run with a large N so every instruction is listed)
per basic block of the same kernel's SASS (`nvdisasm -c` of the cubin that ptxas makes
from the kernel's PTX here), after lining up the report's absolute addresses with the
disassembly's by the first instruction whose text starts with ANCHOR. Two reports of two
builds of a kernel then say which block grew: the K loop, a barrier wait, an epilogue.

    python3 tools/gpu/sass_blocks.py kernel.sass hot.txt "HGMMA.64x256x16.F32 R24" [N]
"""
from __future__ import annotations

import re
import sys

MARKS = r"HGMMA|SYNCS|LDG|STG|MEMBAR|ATOM|RED|UTMA|STS|BAR|DEPBAR|CCTL"


def disassembly(path: str) -> list[tuple[int, str, str]]:
    """(address, instruction, block label) of every instruction of an `nvdisasm -c` file."""
    out, block = [], "entry"
    for line in open(path).read().splitlines():
        label = re.match(r"^\s*(\.L_x_\d+):", line)
        if label:
            block = label.group(1)
            continue
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s*(.*?)\s*;?\s*$", line)
        if m and m.group(2) and not m.group(2).startswith("/*"):
            out.append((int(m.group(1), 16), m.group(2).rstrip(" ;"), block))
    return out


def samples(path: str) -> list[tuple[int, float, str]]:
    """(address, share of all samples in %, instruction) of ncu_hot.py's output lines."""
    out = []
    for line in open(path).read().splitlines():
        m = re.match(r"\s*(0x[0-9a-f]+)\s+([\d.]+)%\s+(.*)", line)
        if m:
            out.append((int(m.group(1), 16), float(m.group(2)), m.group(3).strip()))
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    sass, hot, anchor = argv[:3]
    top = int(argv[3]) if len(argv) > 3 else 25
    code, hits = disassembly(sass), samples(hot)
    here = [a for a, text, _ in code if text.startswith(anchor)]
    there = [a for a, _, text in hits if text.startswith(anchor)]
    if not here or not there:
        print(f"anchor {anchor!r} not in {'the disassembly' if not here else 'the report'}",
              file=sys.stderr)
        return 1
    shift = there[0] - here[0]
    block_of = {a: b for a, _, b in code}
    body: dict[str, list[str]] = {}
    for _, text, b in code:
        body.setdefault(b, []).append(text)
    share: dict[str, float] = {}
    unmatched = 0.0
    for a, pct, _ in hits:
        b = block_of.get(a - shift)
        if b is None:
            unmatched += pct
        else:
            share[b] = share.get(b, 0.0) + pct
    print(f"unmatched {unmatched:.1f}%")
    for b, pct in sorted(share.items(), key=lambda kv: -kv[1])[:top]:
        marks = [t for t in body[b] if re.search(MARKS, t)]
        print(f"{pct:5.1f}% {b:10} n={len(body[b]):4d} {'; '.join(marks[:4])[:140]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
