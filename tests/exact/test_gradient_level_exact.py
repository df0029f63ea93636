"""Exact checks of the level drawn from the gradient's size (``span_lahmc``; docs/design.md §14).

The construction of :mod:`ladder_mcmc.hamiltonian.span_step` on a finite phase space: a
Hypothesis-drawn product ladder of involutions (``π_ℓ = F ∘ G_ℓ``, one map per level,
the flip ``F`` common, the weights constant on its orbits), whose table ``p(ℓ | ζ)`` is
:class:`~ladder_mcmc.hamiltonian.gradient_level.GradientLevelLaw`'s own numbers: each
``F``-orbit is a position with a gradient (drawn), each of its states a phase state
``(x, ±v)``, and the row of ``ζ`` is the law at that phase state, made exact (the float
probabilities as Fractions, renormalised). The law reads ``ζ`` only (the gradient at
``x``), so both states of an orbit get the same row — checked here, and by
:class:`~ladder_mcmc.verify.AuxiliaryLadder`, which refuses a table that is not
flip-invariant.

In rational arithmetic, every rule with a matrix keeps ``p(ζ) p(ℓ | ζ)`` for the move and
for the whole step (move, refresh of ``ζ``, the Gibbs redraw of ``ℓ`` last), with stochastic
rows and generalized detailed balance of the move (``exact_properties``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from exact_properties import auxiliary_exact_property
from hypothesis import strategies as st

from ladder_mcmc.hamiltonian import GradientLevelLaw, PhaseState
from ladder_mcmc.verify import AuxiliaryLadder, auxiliary_ladders

#: the law's levels in these ladders: ``−1 … 1`` (three maps per ladder)
LEVELS = (-1, 1)


def law_rows(law: GradientLevelLaw, gradients: list[float], dim: int = 2) -> list[list[Fraction]]:
    """``p(ℓ | ζ)`` of each position's two phase states ``(x, v)`` and ``(x, −v)``, exact;
    asserts that they are equal (the law reads ``ζ`` only)."""
    n = len(gradients)
    grad = np.zeros((n, dim))
    grad[:, 0] = gradients
    v = np.random.default_rng(0).standard_normal((n, dim))
    rows = []
    for sign in (1.0, -1.0):
        state = PhaseState(x=np.zeros((n, dim)), v=sign * v, energy=np.zeros(n), grad=grad)
        rows.append(np.exp(law.log_weights(state)))
    np.testing.assert_array_equal(rows[0], rows[1])
    exact = []
    for row in rows[0]:
        parts = [Fraction(float(p)) for p in row]
        total = sum(parts)
        exact.append([p / total for p in parts])
    return exact


@st.composite
def gradient_level_ladders(draw):
    """A product ladder of involutions with three levels and the law's table."""
    base = draw(auxiliary_ladders(2, 6, 3, 6, 1, construction="involutions"))
    family = base.family
    perms = (list(family.permutations) * 3)[:3]  # one map per level (repeats allowed)
    flip = family.flip_permutation
    n = len(flip)
    reps = sorted({min(i, flip[i]) for i in range(n)})
    scales = draw(st.lists(st.integers(-6, 6), min_size=len(reps), max_size=len(reps)))
    gradient = {r: 2.0 ** (k / 2) for r, k in zip(reps, scales, strict=True)}
    width = draw(st.sampled_from([0.5, 1.0, 2.0]))
    law = GradientLevelLaw(0.5, 1.0, width, *LEVELS)
    rows = law_rows(law, [gradient[min(i, flip[i])] for i in range(n)])
    return AuxiliaryLadder(perms, family.weights, rows, flip=flip)


def test_every_rule_keeps_the_joint_target_of_the_gradient_level_law_exactly():
    auxiliary_exact_property(ladders=gradient_level_ladders(), max_examples=60)()


def test_the_laws_rows_are_positive_and_follow_the_gradient():
    law = GradientLevelLaw(0.5, 1.0, 1.0, *LEVELS)
    rows = law_rows(law, [0.0, 1.0, 2.0**6, float("inf")])
    assert all(sum(row) == 1 and min(row) > 0 for row in rows)
    assert (
        rows[0][0] > rows[0][2] and rows[2][2] > rows[2][0]
    )  # coarse where flat, fine where steep
    assert rows[3] == rows[2] or rows[3][2] >= rows[2][2]
