"""Mutation sensitivity of the engine's tests: every broken engine is caught.

Each mutant (:data:`mutants.ENGINE_MUTANTS`) changes one line of the engine's source —
the ragged step (``engine/ragged.py``), the compiled loop (``engine/jax_loop.py``) or its
pre-drawn numbers (``engine/block_draws.py``) — and :func:`mutants.install_engine_mutant`
makes ``sample`` run on it. A test here runs a check that passes on the correct engine
(``tests/unit/engine``, and the controls below, through the same harness) and asserts
that it fails:

* the ragged step's mutants (random numbers advanced for the wrong chains, the
  fall-through code, a flip that moves, the rule's memory and carry, the Jacobian's sum,
  the counts a step records): the composition property on the numpy backend (the ragged
  loop against the synchronous reference ``Ladder.step``);
* ``first_prob`` of the latest stage, which no trace records: the dedicated check of
  ``StepRecord.first_prob`` (``assert_first_stage_probabilities``);
* the JAX loop's and its numbers' mutants (a finished chain still moving, a step written
  to another column, block offsets advanced for idle chains or one number off, normals
  read at the uniforms' offset): the property on the JAX backend (against the numpy
  backend) on a fixed composition.
"""

from __future__ import annotations

import numpy as np
import pytest
from driver_equivalence import (
    GAMMA,
    GAMMA_X0,
    TARGET,
    X0,
    Case,
    assert_first_stage_probabilities,
    check_case,
    composition_property,
    run,
)
from hypothesis import Phase
from mutants import ENGINE_MUTANTS, install_engine_mutant

from ladder_mcmc import FunctionTarget, Ladder, Leapfrog, LookAheadRule, MomentumRefresh
from ladder_mcmc.hamiltonian import Metric
from ladder_mcmc.ladder import (
    ComposedRefresh,
    LogScaleRefresh,
    LogScaleWalk,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
)
from ladder_mcmc.models import RoughWell

#: the same examples every run, no example database, no shrinking (the failure, not its
#: smallest example)
MUTANT_SETTINGS = {
    "derandomize": True,
    "database": None,
    "report_multiple_bugs": False,
    "phases": (Phase.explicit, Phase.generate),
}
JAX_MUTANTS = {
    "a finished chain still moving in the JAX loop",
    "a step written to the next column",
    "block offsets advanced for every chain",
    "block offsets one number off",
    "normals read at the uniforms' offset",
}
DEDICATED = {"first_prob of the latest stage"}
RAGGED_MUTANTS = [name for name in ENGINE_MUTANTS if name not in JAX_MUTANTS | DEDICATED]

DENSE = Metric(np.array([[1.0, 0.3], [0.3, 2.0]]))
#: a fixed composition for the JAX loop's mutants: normals (the momentum refresh) and
#: uniforms, chains deciding at different stages and finishing at different iterations
JAX_CASE = Case(
    Leapfrog(TARGET, 1.5, 3, DENSE), LookAheadRule(3), MomentumRefresh(0.3, DENSE), False, X0
)
WELL = RoughWell()


def _cliff_energy(x):
    """The target with density zero (energy +inf) beyond x₀ = 1."""
    return np.where(x[:, 0] > 1.0, np.inf, TARGET.energy(x))


CLIFF = FunctionTarget(_cliff_energy, TARGET.grad, dim=2)
#: a fixed composition whose chains meet non-finite rungs, for the mutant of their count
CLIFF_CASE = Case(
    Leapfrog(CLIFF, 0.6, 3), LookAheadRule(3), MomentumRefresh(0.5), False, np.minimum(X0, 0.9)
)
#: a fixed composition on a map that changes volume, taking second rungs: the example the
#: property's search found for the Jacobian's sum, kept so that new parts in the search
#: cannot hide it
VOLUME_CASE = Case(LogScaleWalk(GAMMA, 1.15), ReducedFlipLookAheadRule(2), None, False, GAMMA_X0)
#: a log-scale walk under the reduced-flip rule, its velocity refreshed twice: the example
#: the property's search found for the rule's memory not restarted at a jump
JUMP_CASE = Case(
    LogScaleWalk(GAMMA, 0.15),
    ReducedFlipRule(),
    ComposedRefresh((LogScaleRefresh(1.0), LogScaleRefresh(0.3))),
    False,
    GAMMA_X0,
)
#: mutants shown caught by the property on one fixed composition (faster than a search)
ON_ONE_CASE = {
    "not restarted at a jump": JUMP_CASE,
    "non-finite count not restarted after a step": CLIFF_CASE,
    "not summed": VOLUME_CASE,
}


def _first_stage_check():
    kernel = Ladder(Leapfrog(WELL, 1.4, 10), ReducedFlipLookAheadRule(3), MomentumRefresh(0.5))
    assert_first_stage_probabilities(kernel, WELL.sample(40, np.random.default_rng(1)))


def test_every_mutant_is_checked_here():
    assert set(RAGGED_MUTANTS) | JAX_MUTANTS | DEDICATED == set(ENGINE_MUTANTS)
    assert JAX_MUTANTS <= set(ENGINE_MUTANTS) and DEDICATED <= set(ENGINE_MUTANTS)


def test_the_checks_pass_through_the_unmutated_harness(monkeypatch):
    """The harness itself (the engine's modules run from their sources) changes nothing."""
    pytest.importorskip("jax")
    install_engine_mutant(monkeypatch, {})
    composition_property(60, **MUTANT_SETTINGS)()
    _first_stage_check()
    for case in ON_ONE_CASE.values():
        check_case(case, seed=4)
    assert run(CLIFF_CASE.kernel(), CLIFF_CASE.init, 4).non_finite > 0
    check_case(JAX_CASE, seed=4, backends=("jax",), check_streams=False)
    # the JAX case is ragged: chains decide at every stage, and finish at other times
    assert set(np.unique(run(JAX_CASE.kernel(), X0, 4).n_moves)) == {1, 2, 3}


@pytest.mark.parametrize("name", RAGGED_MUTANTS)
def test_the_property_catches_a_broken_ragged_step(name, monkeypatch):
    install_engine_mutant(monkeypatch, ENGINE_MUTANTS[name])
    with pytest.raises(AssertionError):
        if name in ON_ONE_CASE:
            check_case(ON_ONE_CASE[name], seed=4)
        else:
            composition_property(300, **MUTANT_SETTINGS)()


def test_the_first_stage_check_catches_first_prob_of_the_latest_stage(monkeypatch):
    install_engine_mutant(monkeypatch, ENGINE_MUTANTS["first_prob of the latest stage"])
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        _first_stage_check()


@pytest.mark.parametrize("name", sorted(JAX_MUTANTS))
def test_the_property_on_jax_catches_a_broken_jax_loop(name, monkeypatch):
    pytest.importorskip("jax")
    install_engine_mutant(monkeypatch, ENGINE_MUTANTS[name])
    with pytest.raises(AssertionError):
        check_case(JAX_CASE, seed=4, backends=("jax",), check_streams=False)
