"""Mutation sensitivity of the checks of maps that change volume (docs/design.md §13).

Each mutant (``mutants.py``) drops the Jacobian or takes the wrong sign for backward
steps, in the exact matrices (a ``MeasuredLadder``'s ``move_jacobian``), in sampling
(a map's ``move_log_det_jacobian`` or ``volume_preserving``) or in the ragged step's
sum (``engine/ragged.py``'s source mutated). Each test runs a check that passes on the correct code
(in ``tests/exact/test_measured_exact.py``, ``tests/statistical/test_log_scale_walk.py``
and the controls here) and asserts that it fails on the mutant.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from driver_equivalence import assert_same_trace
from exact_properties import measured_exact_property, measured_persistent_uniform_property
from hypothesis import Phase
from mutants import (
    RAGGED_JACOBIAN_MUTANTS,
    BackwardSignLadder,
    BackwardSignSampledLadder,
    BackwardSignWalk,
    DroppedJacobianLadder,
    DroppedJacobianSampledLadder,
    DroppedJacobianWalk,
    install_engine_mutant,
)

from ladder_mcmc import DirectionRefresh, Ladder, LookAhead, sample
from ladder_mcmc.ladder import LogScaleRefresh, LogScaleWalk, LookAheadRule
from ladder_mcmc.ladder import ReducedFlipLookAheadRule as ReducedFlips
from ladder_mcmc.models import GammaTarget
from ladder_mcmc.verify import (
    MeasuredLadder,
    assert_fixed_point,
    assert_generalized_detailed_balance,
    assert_map,
    assert_one_step_invariance,
    assert_transition_frequencies,
    exact_transition_matrix,
)

# the same examples every run, no example database, and no shrinking (the failure, not
# its smallest example)
MUTANT_SETTINGS = {
    "derandomize": True,
    "database": None,
    "report_multiple_bugs": False,
    "phases": (Phase.explicit, Phase.generate),
}
EXACT_MUTANTS = [DroppedJacobianLadder, BackwardSignLadder]
# a 5-cycle whose measure is not constant: every exact mutant is wrong on it
WITNESS = (
    [1, 2, 3, 4, 0],
    [3, 1, 4, 1, 5],
    [2, 5, 1, 3, 1],
)


# ------------------------------------------------------------------ exact checks
@pytest.mark.parametrize("mutant", EXACT_MUTANTS, ids=lambda m: m.__name__)
def test_measured_exact_property_catches(mutant):
    with pytest.raises(AssertionError):
        measured_exact_property(mutant, max_examples=150, **MUTANT_SETTINGS)()


@pytest.mark.parametrize("mutant", EXACT_MUTANTS, ids=lambda m: m.__name__)
def test_persistent_uniform_property_catches(mutant):
    with pytest.raises(AssertionError):
        measured_persistent_uniform_property(mutant, max_examples=60, **MUTANT_SETTINGS)()


@pytest.mark.parametrize("mutant", EXACT_MUTANTS, ids=lambda m: m.__name__)
def test_fixed_point_and_balance_catch_on_a_witness(mutant):
    good, bad = MeasuredLadder(*WITNESS), mutant(*WITNESS)
    assert_fixed_point(LookAheadRule(3), good)  # control
    assert_generalized_detailed_balance(LookAheadRule(3), good)
    with pytest.raises(AssertionError, match=r"πT ≠ π at state \(i="):
        assert_fixed_point(LookAheadRule(3), bad)
    with pytest.raises(AssertionError, match="generalized detailed balance fails"):
        assert_generalized_detailed_balance(LookAheadRule(3), bad)


# ------------------------------------------------------------------ sampled vs exact
@pytest.mark.parametrize("schedule", ["synchronous", "ragged"])
@pytest.mark.parametrize(
    "mutant", [DroppedJacobianSampledLadder, BackwardSignSampledLadder], ids=lambda m: m.__name__
)
def test_sampled_frequencies_catch(mutant, schedule):
    exact = exact_transition_matrix(LookAheadRule(2), MeasuredLadder(*WITNESS))
    with pytest.raises(AssertionError, match="chains went|binomial p-value"):
        assert_transition_frequencies(
            LookAhead(mutant(*WITNESS), 2), exact, n_per_state=500, schedule=schedule
        )


@pytest.mark.parametrize("name", list(RAGGED_JACOBIAN_MUTANTS))
def test_sampled_frequencies_and_the_synchronous_trace_catch_ragged_mutant(name, monkeypatch):
    ladder = MeasuredLadder(*WITNESS)
    kernel = Ladder(ladder, ReducedFlips(2), DirectionRefresh(Fraction(1, 2)))
    synchronous = sample(kernel, np.arange(5).repeat(4), 30, seed=3, schedule="synchronous")
    assert_same_trace(sample(kernel, np.arange(5).repeat(4), 30, seed=3), synchronous)  # control
    install_engine_mutant(monkeypatch, RAGGED_JACOBIAN_MUTANTS[name])
    with pytest.raises(AssertionError, match="chains went|binomial p-value"):
        assert_transition_frequencies(kernel, n_per_state=500, schedule="ragged")
    with pytest.raises(AssertionError):
        assert_same_trace(sample(kernel, np.arange(5).repeat(4), 30, seed=3), synchronous)


# ------------------------------------------------------------------ the log-scale walk
TARGET = GammaTarget(2.0, 1.5)


def _kernel(walk=LogScaleWalk):
    return Ladder(walk(TARGET, 1.0), LookAheadRule(3), LogScaleRefresh(0.5))


@pytest.mark.parametrize(
    "mutant", [DroppedJacobianWalk, BackwardSignWalk], ids=lambda m: m.__name__
)
def test_one_step_invariance_catches(mutant):
    assert_one_step_invariance(_kernel(), TARGET.sample, n_chains=20_000, seed=3)  # control
    with pytest.raises(AssertionError, match="one step changed the distribution"):
        assert_one_step_invariance(_kernel(mutant), TARGET.sample, n_chains=20_000, seed=3)


def test_map_contract_catches_the_backward_sign():
    rng = np.random.default_rng(0)
    states = LogScaleWalk(TARGET, 1.0).prepare(TARGET.sample(8, rng), rng)
    assert_map(LogScaleWalk(TARGET, 1.0), states)  # control
    with pytest.raises(AssertionError, match=r"move_log_det_jacobian\(ζ, L⁻¹ ζ, −1\)"):
        assert_map(BackwardSignWalk(TARGET, 1.0), states)
