"""Mutation sensitivity: every check of ``ladder_mcmc.verify`` fails on a broken variant.

Each mutant (``mutants.py`` beside this file) changes one line of a correct
piece of the library. A test here runs a check on the mutant and asserts that
the check *fails* (``pytest.raises(AssertionError)``); the same check passes
on the correct code in ``tests/exact``, ``tests/unit/hamiltonian/test_leapfrog_contract.py``
and ``tests/statistical/test_one_step_invariance.py`` (and in the controls
below). Which check catches which mutant, and how fast, is tabulated in
``docs/mutation.md``. The engine's mutants: ``test_engine_mutants.py``.
"""

from __future__ import annotations

from fractions import Fraction

# check_properties (tests/unit) and exact_properties (tests/exact) are on the path:
# tests/conftest.py puts them there
import numpy as np
import pytest
from check_properties import assert_rhat_flags_different_scales, assert_wrong_gradients_refused
from exact_properties import (
    FallThroughMetropolisRule,
    closed_form_property,
    fallthrough_property,
    lookahead_exact_property,
)
from mutants import (
    LinearRefresh,
    NoFinalHalfKickLeapfrog,
    NoFlipRule,
    NoKineticLeapfrog,
    NoReverseTermRule,
    OffByOneRule,
    StaleFallThroughLadder,
    StopIsAcceptRule,
    sign_blind_gradient_error,
    unfolded_rank_rhat,
)

import ladder_mcmc.diagnostics.gradient
from ladder_mcmc import (
    DirectionRefresh,
    Ladder,
    Leapfrog,
    LookAhead,
    MomentumRefresh,
    check_gradient,
)
from ladder_mcmc.diagnostics import rank_rhat
from ladder_mcmc.ladder import FLIP, LookAheadRule
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.verify import (
    FiniteLadder,
    assert_fixed_point,
    assert_generalized_detailed_balance,
    assert_map,
    assert_one_step_invariance,
    assert_stochastic,
    assert_transition_frequencies,
)

# Hypothesis settings for the mutant runs: derandomized (the same examples every
# run, so "the check fails" is deterministic) and no example database.
MUTANT_SETTINGS = {"derandomize": True, "database": None, "report_multiple_bugs": False}
RULE_MUTANTS = [NoReverseTermRule, OffByOneRule, NoFlipRule]

# A small ladder on which every rule mutant with K = 3 is wrong (a fast, explicit
# witness besides the Hypothesis runs): a 5-cycle, longer than K, so that chains
# do reach the flip (on a cycle of length <= K rung "length" returns to the start
# with ratio 1 and the flip is never taken).
WITNESS = FiniteLadder([1, 2, 3, 4, 0], [1, 3, 2, 5, 4])


# ------------------------------------------------------------------ exact checks
@pytest.mark.parametrize("mutant", RULE_MUTANTS, ids=lambda m: m.__name__)
def test_exact_property_catches_rule_mutant(mutant):
    # the very property that passes on LookAheadRule with 1000 examples
    with pytest.raises(AssertionError):
        lookahead_exact_property(mutant, max_examples=300, **MUTANT_SETTINGS)()


@pytest.mark.parametrize("mutant", [NoReverseTermRule, OffByOneRule], ids=lambda m: m.__name__)
def test_closed_form_property_catches_rule_mutant(mutant):
    with pytest.raises(AssertionError):
        closed_form_property(mutant, max_examples=300, **MUTANT_SETTINGS)()


@pytest.mark.parametrize("mutant", RULE_MUTANTS, ids=lambda m: m.__name__)
def test_fixed_point_catches_rule_mutant_on_witness(mutant):
    assert_fixed_point(LookAheadRule(3), WITNESS)  # control
    with pytest.raises(AssertionError, match=r"πT ≠ π at state \(i="):
        assert_fixed_point(mutant(3), WITNESS)


@pytest.mark.parametrize("mutant", RULE_MUTANTS, ids=lambda m: m.__name__)
def test_generalized_detailed_balance_catches_rule_mutant_on_witness(mutant):
    assert_generalized_detailed_balance(LookAheadRule(3), WITNESS)  # control
    with pytest.raises(AssertionError, match="generalized detailed balance fails for x = "):
        assert_generalized_detailed_balance(mutant(3), WITNESS)


def test_stochastic_catches_a_rule_breaking_its_contract():
    # C decreasing with the stage: a negative stage probability
    class Decreasing(LookAheadRule):
        def update(self, memory, stage, ratio):
            c = np.where(stage == 0, Fraction(1, 2), Fraction(1, 4))
            return memory, np.array(list(c), dtype=object)

    assert_stochastic(LookAheadRule(2), WITNESS)  # control
    with pytest.raises(AssertionError, match="negative transition probability"):
        assert_stochastic(Decreasing(2), WITNESS)


def test_fallthrough_property_catches_stop_is_accept():
    fallthrough_property(max_examples=50, **MUTANT_SETTINGS)()  # control
    with pytest.raises(AssertionError):
        fallthrough_property(StopIsAcceptRule, max_examples=300, **MUTANT_SETTINGS)()


# ------------------------------------------------------------------ sampled vs exact
@pytest.mark.parametrize("schedule", ["synchronous", "ragged"])
def test_sampled_frequencies_catch_the_missing_flip(schedule):
    correct = LookAhead(WITNESS, 3)
    with pytest.raises(AssertionError, match="chains went|binomial p-value"):
        assert_transition_frequencies(
            Ladder(WITNESS, NoFlipRule(3)), reference=correct, n_per_state=500, schedule=schedule
        )


class NoFlipLadder(Ladder):
    """The flip left out of the *driver* (synchronous step), the rule intact."""

    def step(self, ks, rng):
        ks, info = super().step(ks, rng)
        d = np.where(info.rung == FLIP, -ks.direction, ks.direction).astype(np.int8)
        return type(ks)(ks.state, d, ks.log_density, ks.carry), info


def test_sampled_frequencies_catch_a_driver_without_the_flip():
    correct = LookAhead(WITNESS, 3, DirectionRefresh(Fraction(1, 4)))
    broken = NoFlipLadder(WITNESS, LookAheadRule(3), DirectionRefresh(Fraction(1, 4)))
    with pytest.raises(AssertionError, match="chains went|binomial p-value"):
        assert_transition_frequencies(
            broken, reference=correct, n_per_state=500, schedule="synchronous"
        )


def test_sampled_frequencies_catch_a_driver_that_leaves_fall_through_chains():
    rule = FallThroughMetropolisRule()
    correct = Ladder(WITNESS, rule)
    assert_transition_frequencies(correct, n_per_state=500, schedule="synchronous")  # control
    with pytest.raises(AssertionError, match="chains went|binomial p-value"):
        assert_transition_frequencies(
            StaleFallThroughLadder(WITNESS, rule),
            reference=correct,
            n_per_state=500,
            schedule="synchronous",
        )


# ------------------------------------------------------------------ map contract
TARGET = IllConditionedGaussian(2, log_condition=2)


def _phase_states(map_, n=8, seed=0):
    rng = np.random.default_rng(seed)
    return map_.prepare(TARGET.sample(n, rng), rng)


def test_map_contract_catches_missing_final_half_kick():
    good = Leapfrog(TARGET, 0.8, 10)
    assert_map(good, _phase_states(good))  # control
    bad = NoFinalHalfKickLeapfrog(TARGET, 0.8, 10)
    with pytest.raises(AssertionError, match="inverse: .* differs from ζ"):
        assert_map(bad, _phase_states(bad))


# ------------------------------------------------------------------ one-step invariance
# 2-d Gaussian (variances 1 and 100), ε = 0.8, M = 10, K = 4: every chain
# moves; 20 000 chains, false alarm 1e-6 (each run < 1 s).
def _kernel(map_cls=Leapfrog, rule=None, refresh=None):
    return Ladder(
        map_cls(TARGET, 0.8, 10),
        LookAheadRule(4) if rule is None else rule,
        MomentumRefresh(0.1) if refresh is None else refresh,
    )


def test_one_step_invariance_catches_missing_kinetic_energy():
    assert_one_step_invariance(_kernel(), TARGET.sample, n_chains=20_000, seed=3)  # control
    with pytest.raises(AssertionError, match="one step changed the distribution"):
        assert_one_step_invariance(
            _kernel(map_cls=NoKineticLeapfrog), TARGET.sample, n_chains=20_000, seed=3
        )


def test_one_step_invariance_catches_refresh_without_square_roots():
    # β = 0.5: v' = 0.5 v + 0.5 n has variance 0.5 instead of 1
    assert_one_step_invariance(
        _kernel(refresh=MomentumRefresh(0.5)), TARGET.sample, n_chains=20_000, seed=4
    )
    with pytest.raises(AssertionError, match=r"distribution of d·v\[|projection"):
        assert_one_step_invariance(
            _kernel(refresh=LinearRefresh(0.5)), TARGET.sample, n_chains=20_000, seed=4
        )


def test_one_step_invariance_refuses_a_kernel_that_does_not_move():
    class Identity(Ladder):
        def step(self, ks, rng):
            return super().step(ks, rng)[0].__class__(
                ks.state, ks.direction, ks.log_density, ks.carry
            ), None

    with pytest.raises(AssertionError, match="moved only 0.00%"):
        assert_one_step_invariance(
            Identity(Leapfrog(TARGET, 0.8, 10), LookAheadRule(1)), TARGET.sample, n_chains=1000
        )


# ------------------------------------------------------------------- run checks
def test_scale_case_catches_r_hat_without_its_folded_part():
    assert_rhat_flags_different_scales(rank_rhat)  # control
    with pytest.raises(AssertionError, match="misses 3 N"):
        assert_rhat_flags_different_scales(unfolded_rank_rhat)


def test_wrong_gradients_catch_a_sign_blind_gradient_check(monkeypatch):
    assert_wrong_gradients_refused(check_gradient)  # control
    monkeypatch.setattr(
        ladder_mcmc.diagnostics.gradient, "_gradient_error", sign_blind_gradient_error
    )
    with pytest.raises(AssertionError, match=r"\['wrong sign'\]"):
        assert_wrong_gradients_refused(check_gradient)
