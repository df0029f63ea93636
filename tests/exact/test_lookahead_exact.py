"""Exact checks of the look-ahead ladder on finite ladders (docs/design.md §4, §7.1; issue 2).

Everything here is rational arithmetic (``fractions.Fraction`` / integers over a
common denominator) and compared with ``==``: no tolerance anywhere.

* rows sum to 1, ``πT = π`` and generalized detailed balance, for ``K = 1..6``,
  both constructions of docs/design.md §7.1, with and without a direction refresh;
* the closed form ``C_a = min(1, max_{j≤a} p_j/p_0)`` used by ``LookAheadRule``
  equals the paper's recursive definition of ``π_{L^a}``, written here
  independently;
* ``K = 1`` is Metropolis–Hastings with proposal ``F L`` followed by the flip.

The properties live in ``exact_properties.py`` beside this file, so that
``tests/mutation/test_mutants.py`` runs the very same properties on broken rules
and asserts that they fail.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from exact_properties import (
    closed_form_property,
    lookahead_exact_property,
    metropolis_property,
    paper_recursion,
)

from ladder_mcmc import Ladder
from ladder_mcmc.ladder import LookAheadRule
from ladder_mcmc.verify import FiniteLadder, assert_exact


# ------------------------------------------------------------------ the tests
def test_lookahead_is_stochastic_invariant_and_balanced():
    lookahead_exact_property()()


def test_closed_form_equals_paper_recursion():
    closed_form_property()()


def test_k1_is_metropolis_hastings():
    metropolis_property()()


def test_recursion_helper_on_a_hand_example():
    # 3-cycle 0 -> 1 -> 2 -> 0, weights 1, 2, 3. From (2, +1): rung 1 is state 0
    # (ratio 1/3), rung 2 is state 1 (ratio 2/3). π_1 = 1/3; π_2 = min(2/3, 2/3 ·
    # (1 − π_1((1, −1)))) where from (1, −1) rung 1 is state 0: π_1 = min(1, 1/2).
    pi = paper_recursion(FiniteLadder([1, 2, 0], [1, 2, 3]), 2)
    assert pi(2, 1, 1) == Fraction(1, 3)
    assert pi(1, -1, 1) == Fraction(1, 2)
    assert pi(2, 1, 2) == Fraction(1, 3)  # = min(2/3, 2/3 · 1/2); closed form: 2/3 − 1/3


def test_exact_checks_are_not_vacuous_on_a_known_wrong_kernel():
    # A rule accepting rung 1 always (a deterministic permutation step) keeps π
    # only when L preserves the weights; here it does not.
    class AlwaysAccept(LookAheadRule):
        def update(self, memory, stage, ratio):
            return memory, np.ones(len(ratio), dtype=object)

    ladder = FiniteLadder([1, 2, 0], [1, 2, 3])
    assert_exact(Ladder(ladder, LookAheadRule(1)), ladder)
    try:
        assert_exact(Ladder(ladder, AlwaysAccept(1)), ladder)
    except AssertionError as err:
        assert "(i=" in str(err)
    else:  # pragma: no cover - the check must fail
        raise AssertionError("the exact checks accepted a wrong kernel")
