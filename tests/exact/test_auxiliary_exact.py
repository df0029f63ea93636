"""Exact checks on product ladders: a map parameter with a state-dependent law (§14; issue 17).

An :class:`~ladder_mcmc.verify.AuxiliaryLadder` has states ``(ζ, α)``, one permutation
``π_α`` of the ``ζ``'s per ``α`` (with a common flip in construction (b)), weights ``p(ζ)``
and a rational table ``p(α | ζ)``. In rational arithmetic, on Hypothesis-drawn product
ladders:

* every shipped rule with a matrix (look-ahead with K = 1, 2, 4, reduced flip,
  reduced-flip look-ahead with K = 2, 3, a fall-through rule) gives stochastic rows, keeps
  ``p(ζ) p(α | ζ)`` for the move and for the whole step (move, refreshes of ``ζ`` and
  ``d``, the Gibbs redraw of ``α`` last) and satisfies generalized detailed balance (move);
* the persistent-uniform rule's slice moves are bijections of the slices of
  ``p(ζ) p(α | ζ)`` and carry the uniform to ``s / p(ζ') p(α | ζ')``; every refresh keeps
  the masses;
* sampled transitions of both schedules (the ``AuxiliaryMap`` with its float densities,
  ``TableLaw.sample``, ``InnerResample``) agree with the exact matrices.

``tests/mutation/test_auxiliary_mutants.py`` runs the same properties on the mutants of
the construction, and they fail.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from exact_properties import (
    AUXILIARY,
    MEASURED_RULES,
    auxiliary_exact_property,
    auxiliary_persistent_uniform_property,
)
from hypothesis import given, settings

from ladder_mcmc import DirectionRefresh, Ladder, LookAhead
from ladder_mcmc.ladder import (
    AuxiliaryRefresh,
    AuxiliaryState,
    InnerRefresh,
    LookAheadRule,
    ReducedFlipLookAheadRule,
)
from ladder_mcmc.verify import (
    AuxiliaryLadder,
    FiniteLadder,
    InnerResample,
    assert_exact,
    assert_transition_frequencies,
    exact_transition_matrix,
    exact_transition_rows,
    stationary_distribution,
)

F = Fraction


def test_every_rule_keeps_the_joint_target_exactly():
    auxiliary_exact_property(max_examples=200)()


def test_persistent_uniform_slices_and_the_refreshes_keep_the_joint_target():
    auxiliary_persistent_uniform_property(max_examples=80)()


@settings(max_examples=40)
@given(ladder=AUXILIARY)
def test_the_move_is_the_finite_ladder_of_the_masses(ladder):
    """The move of the product ladder is the plain finite ladder's with weights ``p·q``."""
    plain = FiniteLadder(ladder.permutation, ladder.masses)
    for rule in MEASURED_RULES:
        assert exact_transition_rows(rule, ladder) == exact_transition_rows(rule, plain)


# a 3-cycle with step 1 (α = 0) or 2 (α = 1); the long step likelier at state 2
HAND = AuxiliaryLadder(
    [[1, 2, 0], [2, 0, 1]], [1, 1, 2], [[F(1, 2), F(1, 2)], [F(3, 4), F(1, 4)], [F(1, 4), F(3, 4)]]
)


def test_a_hand_example():
    assert HAND.permutation == (1, 2, 0, 5, 3, 4)
    assert HAND.masses == (F(1, 2), F(3, 4), F(1, 2), F(1, 2), F(1, 4), F(3, 2))
    t = exact_transition_matrix(LookAheadRule(1), HAND)
    # (ζ=0, α=1, +1) at index 3 → rung (ζ=2, α=1): mass 3/2 > 1/2, always
    assert t[3, 5] == 1
    # (ζ=1, α=0, +1) at index 1 → (ζ=2, α=0): mass 1/2 against 3/4, else flip to index 6 + 1
    assert t[1, 2] == F(2, 3) and t[1, 7] == F(1, 3)
    p = stationary_distribution(HAND)
    assert list(p.dot(t)) == list(p)
    # a kernel on the AuxiliaryMap needs its finite model for a matrix
    kernel = Ladder(HAND.map, LookAheadRule(1), AuxiliaryRefresh(HAND.law))
    with pytest.raises(TypeError, match="pass ladder="):
        exact_transition_matrix(kernel)
    # the redraw of α: from (ζ=2, α=0, +1) at index 2 to α = 1 with p(α=1 | ζ=2) = 3/4
    step = exact_transition_matrix(kernel, HAND)
    move = exact_transition_matrix(kernel, HAND, include_refresh=False)
    assert move[2, 0] == 1  # (ζ=2 → ζ=0 with α = 0: mass 1/2 against 1/2)
    assert step[2, 0] == F(1, 2) and step[2, 3] == F(1, 2)  # then α redrawn given ζ = 0


def test_the_redraw_is_an_exact_gibbs_kernel():
    kernel = Ladder(HAND.map, LookAheadRule(1), AuxiliaryRefresh(HAND.law))
    move = exact_transition_matrix(kernel, HAND, include_refresh=False)
    step = exact_transition_matrix(kernel, HAND)
    gibbs = np.full((12, 12), F(0), dtype=object)
    for e in range(12):
        zeta, offset = e % 3, e - e % 6
        for a in range(2):
            gibbs[e, offset + 3 * a + zeta] = HAND.law.table[zeta][a]
    assert (step == move.dot(gibbs)).all()
    p = stationary_distribution(HAND)
    assert list(p.dot(step)) == list(p)


def test_product_ladders_refuse_bad_tables_and_flips():
    with pytest.raises(ValueError, match=r"table\[1\] must sum to 1"):
        AuxiliaryLadder([[1, 0]], [1, 1], [[1], [F(1, 2)]])
    with pytest.raises(ValueError, match="one row per state"):
        AuxiliaryLadder([[1, 0], [0, 1]], [1, 1], [[F(1, 2), F(1, 2)]])
    # F = (0 1)(2 3), π_α = F ∘ G_α: the table must be constant on {0, 1} and {2, 3}
    perms, flip = [[1, 0, 3, 2], [1, 0, 2, 3]], [1, 0, 3, 2]
    table = [[F(1, 2)] * 2, [F(1, 4), F(3, 4)], [F(1, 3), F(2, 3)], [F(1, 3), F(2, 3)]]
    message = (
        r"invariant under the flip .* ζ = 0, α = 0: p\(α \| ζ\) = 1/2 but p\(α \| F ζ = 1\) = 1/4"
    )
    with pytest.raises(ValueError, match=message):
        AuxiliaryLadder(perms, [1, 1, 2, 2], table, flip)
    with pytest.raises(ValueError, match="flip must keep the weights"):
        AuxiliaryLadder(perms, [1, 2, 2, 2], [[F(1, 2)] * 2] * 4, flip)
    with pytest.raises(ValueError, match="F π_α F"):
        AuxiliaryLadder([[1, 2, 0, 3]], [1, 1, 1, 1], [[1]] * 4, [1, 0, 3, 2])


class UncheckedFlipLadder(AuxiliaryLadder):
    """A product ladder that accepts a table which is not flip-invariant."""

    @staticmethod
    def check_law_flip_invariance(table, flip):
        return None


def test_in_the_samplers_coordinates_a_law_need_not_be_flip_invariant_to_keep_the_target():
    """docs/design.md §14: the flip only computes ``π_α⁻¹``, so a law read at ``ζ`` keeps
    ``p(ζ) q(α | ζ)`` even if ``q(α | F ζ) ≠ q(α | ζ)``; flip-invariance is the map contract
    (``check_map``) and what makes the physical reading of the law safe (the mutants)."""
    table = [[F(1, 4), F(3, 4)], [F(1, 2), F(1, 2)], [F(2, 3), F(1, 3)], [F(1, 5), F(4, 5)]]
    ladder = UncheckedFlipLadder([[1, 3, 0, 2], [2, 0, 3, 1]], [2, 2, 3, 3], table, [1, 0, 3, 2])
    w = ladder.family.weights
    for rule in MEASURED_RULES:
        refresh = InnerRefresh(InnerResample(w)) + AuxiliaryRefresh(ladder.law)
        assert_exact(Ladder(ladder.map, rule, refresh), ladder)


# construction (b): F = (0 1)(2 3), π_0 = F ∘ (1 2), π_1 = F ∘ (0 3); table constant on F-orbits
PRODUCT = AuxiliaryLadder(
    [[1, 3, 0, 2], [2, 0, 3, 1]],
    [2, 2, 3, 3],
    [[F(1, 4), F(3, 4)], [F(1, 4), F(3, 4)], [F(2, 3), F(1, 3)], [F(2, 3), F(1, 3)]],
    flip=[1, 0, 3, 2],
)


def _kernels():
    w, law = PRODUCT.family.weights, PRODUCT.law
    pairs = InnerRefresh(InnerResample(w, [0, 0, 1, 1]))
    fresh = InnerRefresh(InnerResample(w))
    return [
        (Ladder(PRODUCT.map, ReducedFlipLookAheadRule(2), fresh + AuxiliaryRefresh(law)), 1),
        (LookAhead(PRODUCT.map, 3, pairs + DirectionRefresh(F(1, 4)) + AuxiliaryRefresh(law)), 2),
    ]


@pytest.mark.parametrize("schedule", ["synchronous", "ragged"])
@pytest.mark.parametrize("case", [0, 1], ids=["reduced-flips", "look-ahead-2steps"])
def test_sampled_frequencies_match_the_exact_matrix(schedule, case):
    """600 chains per extended state ``(ζ, α, d)``; exact binomial tests, false alarm 1e-6."""
    kernel, n_steps = _kernels()[case]
    counts = assert_transition_frequencies(
        kernel, n_per_state=600, n_steps=n_steps, schedule=schedule, seed=5, ladder=PRODUCT
    )
    assert counts.sum() == 600 * 2 * PRODUCT.n
    assert np.count_nonzero(counts) > 4 * PRODUCT.n  # the redraw and the refresh move α, ζ


def test_encode_and_decode_are_inverse():
    index = np.arange(PRODUCT.n)
    state = PRODUCT.encode(index)
    assert isinstance(state, AuxiliaryState)
    assert (
        state.inner.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
        and state.alpha.tolist() == [0] * 4 + [1] * 4
    )
    assert PRODUCT.decode(state).tolist() == index.tolist()
