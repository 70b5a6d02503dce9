"""Exact paired statistics for measured variant selection.

The sign test is computed exactly with integers (math.comb) and returned as a Fraction, so
p-values are reproducible bit for bit and comparable against published binomial tables.
Pairs are (best_i, other_i) from the same round; a pair counts only when both samples are
positive ("positive pairs"); tied pairs are positive pairs but carry no sign and are
dropped from the sign test, as the classical test prescribes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction


def sign_test_two_sided(wins: int, losses: int) -> Fraction:
    """Exact two-sided sign-test p-value for `wins` vs `losses` (ties excluded):
    p = min(1, 2 * P[X <= min(wins, losses)]) with X ~ Binomial(n, 1/2)."""
    if wins < 0 or losses < 0:
        raise ValueError("wins and losses must be non-negative")
    n = wins + losses
    if n == 0:
        return Fraction(1)
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1))
    return min(Fraction(1), Fraction(2 * tail, 2 ** n))


def median(values: list) -> Fraction:
    """Exact median of ints or Fractions (mean of the middle two for even length)."""
    if not values:
        raise ValueError("median of no values")
    s = sorted(Fraction(v) for v in values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def bonferroni_alpha(alpha: Fraction | float, comparisons: int) -> Fraction:
    """Per-comparison threshold controlling the family-wise error rate at `alpha`."""
    return Fraction(alpha).limit_denominator(10 ** 12) / max(comparisons, 1)


@dataclass(frozen=True)
class PairedComparison:
    positive_pairs: int
    wins: int            # rounds where the provisional best was strictly faster
    losses: int          # rounds where it was strictly slower
    ties: int
    p_value: Fraction
    median_speedup: Fraction | None   # median of other_i / best_i over positive pairs

    def to_json(self) -> dict:
        speed = self.median_speedup
        return {"positive_pairs": self.positive_pairs, "wins": self.wins,
                "losses": self.losses, "ties": self.ties, "p_value": float(self.p_value),
                "median_speedup": None if speed is None else round(float(speed), 9)}


def compare_paired(best: list[int], other: list[int]) -> PairedComparison:
    """Sign test and median speedup of `best` against `other`, paired by round index."""
    if len(best) != len(other):
        raise ValueError("paired samples must have equal length")
    pairs = [(b, o) for b, o in zip(best, other) if b > 0 and o > 0]
    wins = sum(1 for b, o in pairs if b < o)
    losses = sum(1 for b, o in pairs if b > o)
    speedup = median([Fraction(o, b) for b, o in pairs]) if pairs else None
    return PairedComparison(len(pairs), wins, losses, len(pairs) - wins - losses,
                            sign_test_two_sided(wins, losses), speedup)
