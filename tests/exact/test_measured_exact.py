"""Exact checks on measured ladders: maps that change volume (docs/design.md §13; issue 17).

A :class:`~ladder_mcmc.verify.MeasuredLadder` has a base measure ``m``; its map's
"Jacobian" is ``m(L s)/m(s)`` and its stationary masses are ``p·m``. In rational
arithmetic, on Hypothesis-drawn measured ladders (both constructions of §7.1, the
flip keeping ``p`` and ``m``):

* every shipped rule with a matrix (look-ahead, reduced flip, reduced-flip
  look-ahead, a fall-through rule) gives stochastic rows, keeps the masses ``p·m``
  (move and move + direction refresh) and satisfies their generalized detailed
  balance (move);
* the persistent-uniform rule's slice moves are bijections of the slices of ``p·m``
  and carry the uniform to ``s/(p·m)``;
* the measured ladder's matrix is the finite ladder's with weights ``p·m``;
* sampled transitions of both schedules, which sum the float ``log_det_jacobian``
  along the ladder, agree with the exact matrices.

``tests/mutation/test_jacobian_mutants.py`` runs the same properties on ladders that
drop the Jacobian or take the wrong sign for backward steps, and they fail.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from exact_properties import (
    MEASURED,
    MEASURED_RULES,
    measured_exact_property,
    measured_persistent_uniform_property,
)
from hypothesis import given, settings

from ladder_mcmc import DirectionRefresh, Ladder, LookAhead
from ladder_mcmc.ladder import LookAheadRule, ReducedFlipLookAheadRule
from ladder_mcmc.verify import (
    FiniteLadder,
    MeasuredLadder,
    assert_transition_frequencies,
    exact_rungs,
    exact_transition_matrix,
    exact_transition_rows,
    stationary_distribution,
)


def test_every_rule_keeps_the_masses_exactly():
    measured_exact_property()()


def test_persistent_uniform_slices_are_bijections_of_the_masses():
    measured_persistent_uniform_property()()


@settings(max_examples=60)
@given(ladder=MEASURED)
def test_measured_ladder_is_the_finite_ladder_of_its_masses(ladder):
    plain = FiniteLadder(ladder.permutation, ladder.masses)
    for rule in MEASURED_RULES:
        assert exact_transition_rows(rule, ladder) == exact_transition_rows(rule, plain)


def test_a_hand_example():
    # uniform density on a 3-cycle with measure 1, 2, 4: the masses are 1, 2, 4
    ladder = MeasuredLadder([1, 2, 0], [1, 1, 1], [1, 2, 4])
    origin, d = np.array([0, 0, 2]), np.array([1, -1, 1])
    (rung1, r1), (rung2, r2) = exact_rungs(ladder, (1, 2), origin, d)
    assert rung1.tolist() == [1, 2, 0] and rung2.tolist() == [2, 1, 1]
    # forward m(L s)/m(s) multiplied up; backward one over m(L s')/m(s') at s' = L⁻¹ s
    assert r1.tolist() == [2, 4, Fraction(1, 4)]
    assert r2.tolist() == [4, 2, Fraction(1, 2)]
    t = exact_transition_matrix(LookAheadRule(1), ladder)
    assert t[2, 0] == Fraction(1, 4) and t[2, 5] == Fraction(3, 4)  # (2, +1): to 0 or flip
    assert t[0, 1] == 1  # (0, +1) → (1, +1): mass 2 > 1
    p = stationary_distribution(ladder)
    assert p.tolist() == [Fraction(k, 14) for k in (1, 2, 4, 1, 2, 4)]
    assert list(p @ t) == list(p)


def test_a_flip_must_keep_the_measure_and_invert_the_map():
    with pytest.raises(ValueError, match="keep the weights and the measure"):
        MeasuredLadder([1, 0], [1, 1], [1, 2], flip=[1, 0])
    with pytest.raises(ValueError, match="involution"):
        MeasuredLadder([1, 2, 0], [1, 1, 1], [1, 1, 1], flip=[1, 2, 0])
    with pytest.raises(ValueError, match="F L F"):
        MeasuredLadder([1, 2, 0], [1, 1, 1], [1, 1, 1], flip=[0, 1, 2])
    with pytest.raises(ValueError, match="measure must be positive"):
        MeasuredLadder([1, 0], [1, 1], [1, 0])


# construction (a), and (b): L = F∘G with F = [1, 0, 3, 2, 4], G = [0, 2, 1, 4, 3]
PERMUTATION = MeasuredLadder([1, 2, 3, 4, 0], [3, 1, 4, 1, 5], [2, 5, 1, 3, 1])
INVOLUTIONS = MeasuredLadder([1, 3, 0, 4, 2], [2, 2, 5, 5, 1], [1, 1, 3, 3, 2], [1, 0, 3, 2, 4])


@pytest.mark.parametrize("schedule", ["synchronous", "ragged"])
@pytest.mark.parametrize(
    ("kernel", "n_steps"),
    [
        (Ladder(PERMUTATION, ReducedFlipLookAheadRule(2)), 1),
        (LookAhead(INVOLUTIONS, 3, DirectionRefresh(Fraction(1, 4))), 2),
    ],
    ids=["reduced-flips", "look-ahead-refresh"],
)
def test_sampled_frequencies_match_the_exact_matrix(schedule, kernel, n_steps):
    """1 000 chains per extended state; exact binomial tests, total false alarm 1e-6."""
    counts = assert_transition_frequencies(
        kernel, n_per_state=1000, n_steps=n_steps, schedule=schedule, seed=5
    )
    assert np.count_nonzero(counts) > 2 * kernel.map.n  # not a deterministic kernel
