"""PTX target profiles: which ISA version and `.target` a module is emitted for.

A `PtxProfile` is the single source of capability answers for the PTX backend; the IR never
names a PTX version or an `sm_NN` (DESIGN.md layer 4). Invariants:
- every profile satisfies the minimum ISA of its target (`MIN_ISA`), else resolve_profile
  raises E0503 naming both the version asked for and the version the target needs;
- ISA versions newer than `MAX_ISA` are refused (E0502): ptxas 13.0 and the driver on the
  GPU machine reject 9.1 and later (notes/facts.md);
- arch-specific `a` targets exist only from sm_90 on, as NVIDIA defines them.
Diagnostic codes: E0501 bad --gpu-arch, E0502 bad --ptx-version, E0503 ISA too old for the
target, E0504 an operation needs a newer ISA/target (raised by `PtxProfile.need`).
What each profile can do is asked by feature name (`has`, `need`): isa.py's instruction
table is the one place that says which ISA and SM generation a feature needs.
"""
from __future__ import annotations

import re
from ....records import dataclass

from ...diagnostics import Span, error
from . import isa as _isa

# Minimum PTX ISA per SM generation (PTX ISA "Target ISA notes"). The `a` variants share the
# base number except sm_90a, which arrived one ISA version after sm_90.
MIN_ISA: dict[int, tuple[int, int]] = {
    50: (4, 0), 52: (4, 1), 53: (4, 2), 60: (5, 0), 61: (5, 0), 62: (5, 0), 70: (6, 0),
    72: (6, 1), 75: (6, 3), 80: (7, 0), 86: (7, 1), 87: (7, 4), 89: (7, 8), 90: (7, 8),
    100: (8, 6), 101: (8, 6), 103: (8, 8), 110: (9, 0), 120: (8, 7), 121: (8, 8),
}
MIN_ISA_ARCH_SPECIFIC = {90: (8, 0)}
ARCH_SPECIFIC_FROM = 90
MAX_ISA = (9, 0)
DEFAULT_ISA = (8, 8)
KNOWN_ISA = {(1, m) for m in range(6)} | {(2, m) for m in range(4)} | \
    {(3, m) for m in range(3)} | {(4, m) for m in range(4)} | {(5, 0)} | \
    {(6, m) for m in range(6)} | {(7, m) for m in range(9)} | {(8, m) for m in range(9)} | \
    {(9, 0)}

_ARCH_RE = re.compile(r"(sm|compute)_(\d{2,3})(a?)")


@dataclass(frozen=True)
class PtxProfile:
    """One resolved emission profile. `sm` is the numeric generation (75, 90, 121)."""
    name: str                     # what was asked for: "gb10", "portable", "sm_90a", ...
    isa: tuple[int, int]
    sm: int
    arch_specific: bool = False
    virtual: bool = False         # compute_NN: a virtual target, JIT-compiled later

    @property
    def version(self) -> str:
        return f"{self.isa[0]}.{self.isa[1]}"

    @property
    def target(self) -> str:
        kind = "compute" if self.virtual else "sm"
        return f"{kind}_{self.sm}{'a' if self.arch_specific else ''}"

    def has(self, feature: str) -> bool:
        """Whether the profile has `feature` (a name of isa.FEATURES)."""
        return _isa.has(feature, self.isa, self.sm, self.arch_specific, self.virtual)

    def need(self, feature: str, what: str, span: Span | None = None) -> None:
        """Raise E0504 (naming `what`) unless the profile has `feature`."""
        if not self.has(feature):
            self._refuse(what, *_isa.requirement(feature), span)

    @property
    def shared_memory_per_block(self) -> int:
        """The most shared memory one workgroup may opt into (bytes)."""
        return _isa.SM_LIMITS[self.sm][1]

    @property
    def fp8_mma_emulated(self) -> bool:
        """ptxas expands FP8 mma.sync on this target (isa.FP8_MMA_EMULATED)."""
        return self.sm in _isa.FP8_MMA_EMULATED

    @property
    def tuple_budget(self) -> int:
        """The default register budget per lane of a resident tensor_matmul region."""
        return next(budget for sm, budget in _isa.TUPLE_BUDGET if self.sm >= sm)

    def _refuse(self, feature: str, isa: tuple[int, int], sm: int,
                span: Span | None = None) -> None:
        raise error("E0504", f"{feature} needs PTX ISA {isa[0]}.{isa[1]} and target sm_{sm} "
                    f"or newer; the profile is PTX {self.version} / {self.target}", span,
                    help=f"compile with --gpu-arch=sm_{sm} (or newer) and "
                    f"--ptx-version={max(isa, self.isa)[0]}.{max(isa, self.isa)[1]}")


def _parse_version(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)\.(\d+)", text.strip())
    if not m:
        raise error("E0502", f"bad --ptx-version `{text}`: expected MAJOR.MINOR such as 8.8")
    isa = (int(m.group(1)), int(m.group(2)))
    if isa > MAX_ISA:
        raise error("E0502", f"PTX ISA {text} is newer than the newest supported PTX ISA "
                    f"{MAX_ISA[0]}.{MAX_ISA[1]} (ptxas 13.0 and the CUDA 13.0 driver refuse it)")
    if isa not in KNOWN_ISA:
        raise error("E0502", f"PTX ISA {text} does not exist")
    return isa


def _parse_arch(arch: str) -> tuple[int, bool, bool]:
    m = _ARCH_RE.fullmatch(arch.strip())
    if not m or int(m.group(2)) not in MIN_ISA:
        known = ", ".join(f"sm_{n}" for n in sorted(MIN_ISA))
        raise error("E0501", f"unknown GPU architecture `{arch}`",
                    help=f"use gb10, portable, sm_NN, sm_NNa or compute_NN with NN in: {known}")
    sm, specific = int(m.group(2)), m.group(3) == "a"
    if specific and sm < ARCH_SPECIFIC_FROM:
        raise error("E0501", f"`{arch}`: arch-specific `a` targets exist only from sm_90 on")
    return sm, specific, m.group(1) == "compute"


def min_isa(sm: int, arch_specific: bool) -> tuple[int, int]:
    if arch_specific and sm in MIN_ISA_ARCH_SPECIFIC:
        return MIN_ISA_ARCH_SPECIFIC[sm]
    return MIN_ISA[sm]


def resolve_profile(arch: str | None, ptx_version: str | None) -> PtxProfile:
    """Resolve --gpu-arch / --ptx-version. `arch=None` asks the local GPU, then uses GB10."""
    if arch is None:
        arch = detect_local_arch() or "gb10"
    isa = _parse_version(ptx_version) if ptx_version is not None else None
    if arch == "gb10":
        name, sm, specific, virtual, default = "gb10", 121, True, False, DEFAULT_ISA
    elif arch == "portable":
        name, sm, specific, virtual, default = "portable", 75, False, True, (6, 4)
    else:
        name = arch
        sm, specific, virtual = _parse_arch(arch)
        default = DEFAULT_ISA
    profile = PtxProfile(name, isa or default, sm, specific, virtual)
    need = min_isa(sm, specific)
    if profile.isa < need:
        raise error("E0503", f"target {profile.target} needs PTX ISA {need[0]}.{need[1]} or "
                    f"newer, but PTX ISA {profile.version} was requested",
                    help=f"use --ptx-version={need[0]}.{need[1]} or newer")
    return profile


def detect_local_arch(timeout: float = 2.0) -> str | None:
    """`sm_NN` of the first local GPU (with `a` from sm_90 on), or None without a driver."""
    import subprocess       # only when no --gpu-arch is given: keeps it off compile start-up
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    m = re.match(r"\s*(\d+)\.(\d+)", proc.stdout)
    if not m:
        return None
    sm = int(m.group(1)) * 10 + int(m.group(2))
    if sm not in MIN_ISA:
        return None
    return f"sm_{sm}{'a' if sm >= ARCH_SPECIFIC_FROM else ''}"
