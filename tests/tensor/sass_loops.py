"""A check of ptxas's output (nvdisasm -c text) for the miscompile lower_tile._held works
around: in a loop, a register that an `HGMMA` reads as its A operand (A from registers:
`HGMMA.64xNx16... Rd, Ra, gdesc[..]`, Ra..Ra+3) whose value comes from before the loop
(no write to it between the loop's head and the HGMMA) must not be written anywhere else
in the loop, or the next iteration reads the wrong A. Loops are the spans between a label
and a later branch back to it; the order inside is the listing's (a branch inside the
loop is not followed: the check reads the straight-line order ptxas emitted).
"""
from __future__ import annotations

import re

_LINE = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_BACK = re.compile(r"BRA\s+`\((\.L_x_\d+)\)")
_HGMMA_RS = re.compile(r"HGMMA\.\S+ R\d+, R(\d+), gdesc")
# opcodes whose first operand is not a register they write
_NO_DEST = ("ST", "STG", "STS", "STL", "LDGSTS", "BRA", "BAR", "HGMMA", "WARPGROUP",
            "DEPBAR", "MEMBAR", "FENCE", "EXIT", "RET", "NOP", "LDGDEPBAR", "SYNCS",
            "BSSY", "BSYNC", "CALL", "RED", "ATOM", "UTMALDG", "UTMASTG")


def _instructions(sass: str) -> list[str]:
    """The listing as a list: labels as `.L_x_N:`, instructions without guard and `;`."""
    out = []
    for raw in sass.splitlines():
        label = _LABEL.match(raw.strip())
        if label:
            out.append(label.group(1) + ":")
            continue
        m = _LINE.match(raw)
        if m:
            out.append(re.sub(r"^@!?U?P\w+\s+", "", m.group(1)))
    return out


def _writes(ins: str) -> set[int]:
    """The R registers an instruction writes (its first register operand after any
    predicate ones; pairs and quads by the width suffixes)."""
    op, _, rest = ins.partition(" ")
    if op.split(".")[0] in _NO_DEST:
        return set()
    operands = [o.strip() for o in rest.split(",")]
    while operands and re.fullmatch(r"!?U?P(T|\d)", operands[0]):
        operands.pop(0)                 # a predicate written first (SHFL's PT)
    m = re.fullmatch(r"R(\d+)", operands[0]) if operands else None
    if not m:
        return set()
    r = int(m.group(1))
    width = 4 if ".128" in op else 2 if (".64" in op or ".WIDE" in op) else 1
    return set(range(r, r + width))


def clobbered_a_operands(sass: str) -> list[str]:
    """`HGMMA` A registers of a loop whose loop-carried value is overwritten inside it."""
    ins = _instructions(sass)
    labels = {x[:-1]: i for i, x in enumerate(ins) if x.endswith(":")}
    found = []
    for end, x in enumerate(ins):
        back = _BACK.search(x)
        if not back or labels.get(back.group(1), end) >= end:
            continue
        head = labels[back.group(1)]
        body = ins[head + 1:end]
        for k, y in enumerate(body):
            m = _HGMMA_RS.match(y)
            if not m:
                continue
            for r in range(int(m.group(1)), int(m.group(1)) + 4):
                if any(r in _writes(z) for z in body[:k]):
                    continue                    # defined in this iteration first
                later = [z for z in body[k + 1:] if r in _writes(z)]
                if later:
                    found.append(f"R{r} (A of `{y}`) written in the loop by `{later[0]}`")
    return found
