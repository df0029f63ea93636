"""Exact checks (Fractions) of the reduced-flip rules on Hypothesis-drawn finite ladders.

Each rule must give stochastic rows, keep ``p(i, d) = w_i/(2Σw)`` exactly
(with and without a direction refresh) and satisfy generalized detailed balance
``p(a) T(a→b) = p(Fb) T(Fb→Fa)`` with ``F(i, d) = (i, -d)`` — it does for the
reduced-flip rules (rungs are LAHMC's; the stay probability
``1 − max(C_K(ζ), C_K(Fζ))`` is the same from ``(ζ, ±d)``). The reduced-flip
rules must never flip more often than LAHMC with the same ``K``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladder_mcmc import DirectionRefresh, Ladder
from ladder_mcmc.ladder import FLIP, STAY, LookAheadRule, ReducedFlipLookAheadRule, ReducedFlipRule
from ladder_mcmc.verify import (
    FiniteLadder,
    assert_exact,
    exact_transition_matrix,
    finite_ladders,
    outcome_probabilities,
    stationary_distribution,
)

RULES = [ReducedFlipRule(), ReducedFlipLookAheadRule(1), ReducedFlipLookAheadRule(2),
         ReducedFlipLookAheadRule(3)]  # fmt: skip
ladders = finite_ladders(1, 6, 6, construction="both")


def _flip_index(n: int) -> np.ndarray:
    return (np.arange(2 * n) + n) % (2 * n)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{type(r).__name__}({r.max_rungs})")
@settings(max_examples=60)
@given(ladder=ladders, refresh=st.sampled_from([None, Fraction(1, 3), Fraction(1)]))
def test_reduced_flip_rules_keep_the_target_exactly(rule, ladder, refresh):
    kernel = Ladder(ladder, rule, None if refresh is None else DirectionRefresh(refresh))
    # rows, fixed point (move and move + refresh), generalized detailed balance (move)
    assert_exact(kernel, ladder)


@pytest.mark.parametrize("k", [1, 2, 3])
@settings(max_examples=60)
@given(ladder=ladders)
def test_reduced_flips_flip_no_more_than_look_ahead(k, ladder):
    """Same rung probabilities as LAHMC(K); flip ≤ LAHMC's flip from every state."""
    rf_probs, _ = outcome_probabilities(ReducedFlipLookAheadRule(k), ladder)
    la_probs, _ = outcome_probabilities(LookAheadRule(k), ladder)
    assert (rf_probs[:, :k] == la_probs[:, :k]).all()
    rf_flip = rf_probs[:, k : 2 * k].sum(axis=1)
    la_flip = la_probs[:, k]
    assert all(a <= b for a, b in zip(rf_flip, la_flip, strict=True))
    # the stay probability is the same from (ζ, d) and (ζ, -d)
    stay = rf_probs[:, -1]
    assert (stay == stay[_flip_index(ladder.n)]).all()


@settings(max_examples=60)
@given(ladder=ladders)
def test_reduced_flip_rule_is_the_2012_note(ladder):
    """K = 1: π_L = min(1, w(Lζ)/w(ζ)), π_F = max(0, π_L(Fζ) − π_L(ζ)), stay the rest."""
    probs, _ = outcome_probabilities(ReducedFlipRule(), ladder)
    w = ladder.weights
    n = ladder.n
    for k in range(2 * n):
        i, d = k % n, (1 if k < n else -1)
        fwd = ladder.permutation[i] if d > 0 else ladder.inverse[i]
        bwd = ladder.inverse[i] if d > 0 else ladder.permutation[i]
        pi_l = min(Fraction(1), w[fwd] / w[i])
        pi_l_flipped = min(Fraction(1), w[bwd] / w[i])
        assert probs[k, 0] == pi_l
        assert probs[k, 1] == max(Fraction(0), pi_l_flipped - pi_l)
        assert probs[k, 2] == 1 - pi_l - probs[k, 1]


def test_reduced_flip_flips_strictly_less_somewhere():
    """3-cycle, weights 1, 2, 3: from (2, +1) Metropolis flips w.p. 2/3, reduced flips 1/3."""
    ladder = FiniteLadder([1, 2, 0], [1, 2, 3])
    rf = exact_transition_matrix(ReducedFlipRule(), ladder)
    mh = exact_transition_matrix(LookAheadRule(1), ladder)
    assert mh[2, 5] == Fraction(2, 3)
    # π_L = w_0/w_2 = 1/3, π_L(Fζ) = w_1/w_2 = 2/3: flip 2/3 − 1/3, stay 1 − 2/3
    assert rf[2, 0] == mh[2, 0] == Fraction(1, 3)
    assert rf[2, 5] == Fraction(1, 3)
    assert rf[2, 2] == Fraction(1, 3)


def test_the_exact_check_catches_stay_instead_of_flip():
    """Mutation: 'stay instead of flipping' without the backward rung breaks the fixed point."""

    class StayNotFlip(ReducedFlipLookAheadRule):
        positions = (1,)
        outcomes = (1,)
        fallthrough = STAY

    ladder = FiniteLadder([1, 2, 0], [1, 2, 3])
    t = exact_transition_matrix(StayNotFlip(1), ladder)
    p = stationary_distribution(ladder)
    assert list(p @ t) != list(p)
    assert FLIP not in StayNotFlip(1).outcomes
