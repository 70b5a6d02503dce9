"""Exact sign test, median and Bonferroni against enumeration and published values."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from tools.gpu import paired_statistics as ps


def enumerated_two_sided(wins: int, n: int) -> Fraction:
    """Independent check: enumerate all 2^n equally likely sign vectors and count those at
    least as far from n/2 as the observed number of wins."""
    dist = abs(2 * wins - n)
    extreme = sum(1 for signs in itertools.product((0, 1), repeat=n)
                  if abs(2 * sum(signs) - n) >= dist)
    return Fraction(extreme, 2 ** n)


@pytest.mark.parametrize("n", [1, 2, 5, 6, 9, 10, 13])
def test_sign_test_matches_enumeration_for_every_outcome(n):
    for wins in range(n + 1):
        assert ps.sign_test_two_sided(wins, n - wins) == enumerated_two_sided(wins, n)


@pytest.mark.parametrize("wins,losses,published", [
    (1, 9, 0.02148438),    # binom.test(1, 10): p = 0.02148
    (10, 2, 0.03857422),   # binom.test(10, 12): p = 0.03857
    (15, 5, 0.04138947),   # binom.test(15, 20): p = 0.04139
    (5, 0, 0.0625),        # n = 5 can never reach 0.05
    (6, 0, 0.03125),
    (10, 10, 1.0),
])
def test_sign_test_matches_published_binomial_values(wins, losses, published):
    # published values carry 8 decimals
    assert float(ps.sign_test_two_sided(wins, losses)) == pytest.approx(published, abs=1e-8)


def test_sign_test_exact_tail_for_21_pairs():
    assert ps.sign_test_two_sided(21, 0) == Fraction(2, 2 ** 21)
    tail = sum(math.comb(21, i) for i in range(5))          # 1+21+210+1330+5985
    assert tail == 7547
    assert ps.sign_test_two_sided(17, 4) == Fraction(2 * 7547, 2 ** 21)
    assert ps.sign_test_two_sided(0, 0) == 1


def test_bonferroni_and_median():
    assert ps.bonferroni_alpha(0.01, 1) == Fraction(1, 100)
    assert ps.bonferroni_alpha(0.01, 4) == Fraction(1, 400)
    assert ps.median([3, 1, 2]) == 2 and ps.median([4, 1, 3, 2]) == Fraction(5, 2)
    with pytest.raises(ValueError):
        ps.median([])


def test_compare_paired_counts_positive_pairs_ties_and_speedup():
    best = [100, 100, 100, 0, 100, 100]
    other = [110, 120, 100, 90, 90, 130]          # the 0 sample drops round 3
    c = ps.compare_paired(best, other)
    assert (c.positive_pairs, c.wins, c.losses, c.ties) == (5, 3, 1, 1)
    assert c.median_speedup == Fraction(11, 10)    # ratios 1.1,1.2,1.0,0.9,1.3
    assert c.p_value == ps.sign_test_two_sided(3, 1)
