"""Rules whose fall-through code is a rung (``fallthrough > 0``): one contract, both schedules.

A chain that no stage stops moves to the rung at ``positions[-1]`` — in the exact
matrices (``ladder_mcmc.verify.finite``), in :meth:`Ladder.step` (warm-up and
``schedule="synchronous"``) and in the ragged step. HMC written as such a rule
(``FallThroughMetropolisRule`` in ``exact_properties.py``) must be exactly
``LookAheadRule(1)``, and sample like it on both schedules.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from exact_properties import FallThroughMetropolisRule, fallthrough_property

from ladder_mcmc import DirectionRefresh, Ladder, LookAhead
from ladder_mcmc.ladder import FLIP, STAY, LookAheadRule
from ladder_mcmc.verify import FiniteLadder, assert_exact, assert_transition_frequencies

LADDER = FiniteLadder([1, 2, 3, 4, 0, 6, 5], [3, 1, 4, 1, 5, 2, 2])


def test_fallthrough_rule_has_the_exact_matrix_of_lookahead_1():
    fallthrough_property()()


def test_fallthrough_rule_keeps_the_target_exactly():
    assert_exact(Ladder(LADDER, FallThroughMetropolisRule(), DirectionRefresh(Fraction(1, 3))))


@pytest.mark.parametrize(
    ("schedule", "refresh", "n_steps"),
    [
        pytest.param("synchronous", None, 1, id="1step-synchronous"),
        pytest.param("ragged", None, 1, id="1step-ragged", marks=pytest.mark.slow),
        pytest.param(
            "synchronous",
            DirectionRefresh(Fraction(1, 4)),
            3,
            id="3steps-refresh-synchronous",
            marks=pytest.mark.slow,
        ),
        pytest.param("ragged", DirectionRefresh(Fraction(1, 4)), 3, id="3steps-refresh-ragged"),
    ],
)  # the default run: one case per schedule; -m slow all four
def test_fallthrough_rule_samples_like_lookahead_1(schedule, refresh, n_steps):
    kernel = Ladder(LADDER, FallThroughMetropolisRule(), refresh)
    for reference in (None, LookAhead(LADDER, 1, refresh)):
        assert_transition_frequencies(
            kernel, reference, n_per_state=2000, n_steps=n_steps, schedule=schedule, seed=5
        )


def test_synchronous_step_moves_the_chains_that_fall_through():
    kernel = Ladder(LADDER, FallThroughMetropolisRule())
    rng = np.random.default_rng(0)
    start = np.arange(LADDER.n)
    ks = kernel.init(start, rng, direction=np.ones(LADDER.n, dtype=np.int8))
    new, info = kernel.step(ks, rng)
    moved = info.rung == 1
    assert moved.any()
    assert (new.state[moved] == LADDER.move(start, np.ones(LADDER.n, dtype=np.int8))[moved]).all()
    assert (new.log_density == LADDER.log_density(new.state)).all()


@pytest.mark.parametrize(
    ("positions", "outcomes", "fallthrough", "match"),
    [
        ((1, 2), (FLIP, FLIP), 1, r"fallthrough 1.*positions\[-1\] = 2"),
        ((1,), (FLIP,), 3, r"fallthrough 3.*positions\[-1\] = 1"),
        ((-1,), (STAY,), 1, r"fallthrough 1.*positions\[-1\] = -1"),
        ((1,), (FLIP,), -2, r"fallthrough -2"),
    ],
)
def test_check_rule_refuses_a_fallthrough_rung_the_rule_did_not_compute(
    positions, outcomes, fallthrough, match
):
    class Bad(LookAheadRule):
        pass

    Bad.positions, Bad.outcomes, Bad.fallthrough = positions, outcomes, fallthrough
    with pytest.raises(ValueError, match=match):
        Ladder(LADDER, Bad(1))
