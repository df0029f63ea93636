"""Refreshes and laws that evaluate gradients declare them (docs/design.md §6).

* ``Refresh.with_cost`` is the refresh and its reported cost: ``None`` by default, summed
  over a composition, passed through ``InnerRefresh``; a class that redefines
  ``__call__`` without ``with_cost`` is called through it and reports nothing;
* a law's ``sample_with_cost`` is dropped by a subclass that redefines ``sample``; a
  cost of the wrong shape is a ``ValueError`` naming the method;
* a refresh that reports a cost is counted in warm-up too (``warmup.grad_evals``), on
  both schedules: a counting target's rows equal the init's, warm-up's and the trace's.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from multiscale_funnel import Funnel

from ladder_mcmc import Ladder, Leapfrog, LookAheadRule, MomentumRefresh, Warmup, sample
from ladder_mcmc.diagnostics import GradientCounter
from ladder_mcmc.hamiltonian.refined_step import RefinementLaw, refined_lahmc
from ladder_mcmc.ladder import AuxiliaryRefresh, InnerRefresh
from ladder_mcmc.ladder.refresh import ComposedRefresh, DirectionRefresh, Refresh
from ladder_mcmc.models import IllConditionedGaussian

GAUSS = IllConditionedGaussian(2, log_condition=1)


@attrs.frozen
class Probe(Refresh):
    """Evaluates the target's gradient at every chain's position; reports ``per_chain``."""

    target: object = attrs.field(eq=False)
    per_chain: int = 1
    changes_state = False

    @property
    def costly(self) -> bool:
        return True

    def __call__(self, state, direction, rng):
        return self.with_cost(state, direction, rng)[:2]

    def with_cost(self, state, direction, rng):
        for _ in range(self.per_chain):
            self.target.grad(getattr(state, "x", state))
        return state, direction, np.full(len(direction), self.per_chain, dtype=np.int64)


def test_costs_are_reported_summed_and_passed_through():
    rng, state = np.random.default_rng(0), GAUSS.sample(3, np.random.default_rng(1))
    direction = np.ones(3, dtype=np.int8)
    assert not DirectionRefresh(0.5).costly
    assert DirectionRefresh(0.5).with_cost(state, direction, rng)[2] is None
    composed = ComposedRefresh((Probe(GAUSS), DirectionRefresh(0.5), Probe(GAUSS, 2)))
    assert composed.costly
    np.testing.assert_array_equal(composed.with_cost(state, direction, rng)[2], [3, 3, 3])
    assert InnerRefresh(Probe(GAUSS)).costly and not InnerRefresh(MomentumRefresh(0.5)).costly

    class Redone(Probe):  # a new __call__ and no with_cost: called, and reports nothing
        def __call__(self, state, direction, rng):
            return state, -direction

    redone = Redone(GAUSS)
    assert not redone.costly
    out = redone.with_cost(state, direction, rng)
    np.testing.assert_array_equal(out[1], -direction)
    assert out[2] is None


def test_a_law_that_redefines_sample_declares_no_cost_and_bad_costs_are_refused():
    kernel = refined_lahmc(Funnel(3), 0.8, n_steps=2, max_level=3)
    law = kernel.map.law
    assert AuxiliaryRefresh(law).costly and law.log_prob_cost is not None

    @attrs.frozen
    class Coarsest(RefinementLaw):
        def sample(self, state, rng):
            return np.zeros(state.x.shape[0], dtype=np.int64)

    own = Coarsest(law.target, law.step_size, max_level=3)
    assert own.sample_with_cost is None and not AuxiliaryRefresh(own).costly

    @attrs.frozen
    class Miscounted(RefinementLaw):
        def sample_with_cost(self, state, rng):
            return np.zeros(state.x.shape[0], dtype=np.int64), np.zeros(1, dtype=np.int64)

    bad = Miscounted(law.target, law.step_size, max_level=3)
    states = kernel.map.prepare(
        Funnel(3).sample(4, np.random.default_rng(0)), np.random.default_rng(1)
    )
    with pytest.raises(ValueError, match="Miscounted.sample_with_cost"):
        AuxiliaryRefresh(bad)(states, np.ones(4, dtype=np.int8), np.random.default_rng(0))


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_warmup_counts_what_the_refresh_reports(schedule):
    counting = GradientCounter(GAUSS)
    refresh = MomentumRefresh(0.3) + Probe(counting)
    kernel = Ladder(Leapfrog(counting, 0.5, 3), LookAheadRule(3), refresh, adapt={"step_size"})
    init = GAUSS.sample(5, np.random.default_rng(0))
    trace = sample(
        kernel,
        init,
        10,
        seed=1,
        warmup=Warmup(20, adapt_mass=False),
        schedule=schedule,
        checks=False,
    )
    prepare_rows = 5  # Leapfrog.prepare: one gradient per chain
    reported = int(trace.grad_evals.sum() + trace.warmup.grad_evals.sum())
    assert counting.rows == reported + prepare_rows
    np.testing.assert_array_equal(trace.step_overhead, 1)


@attrs.frozen
class Undeclared(Refresh):
    """Reports a cost through ``with_cost`` but declares no ``costly``: costly all the same."""

    target: object = attrs.field(eq=False)
    cost: object = attrs.field(default=None, eq=False)  # None: one gradient per chain
    changes_state = False

    def __call__(self, state, direction, rng):
        return self.with_cost(state, direction, rng)[:2]

    def with_cost(self, state, direction, rng):
        self.target.grad(state.x)
        cost = np.ones(len(direction), int) if self.cost is None else self.cost
        return state, direction, cost


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_a_refresh_that_reports_costs_is_costly_and_counted(schedule):
    counting = GradientCounter(GAUSS)
    assert Undeclared(counting).costly
    kernel = Ladder(Leapfrog(counting, 0.5, 3), LookAheadRule(3), Undeclared(counting))
    init = GAUSS.sample(5, np.random.default_rng(0))
    trace = sample(kernel, init, 10, seed=1, warmup=0, schedule=schedule, checks=False)
    assert counting.rows == int(trace.grad_evals.sum()) + 5  # + Leapfrog.prepare's
    np.testing.assert_array_equal(trace.step_overhead, 1)


@pytest.mark.parametrize("cost", [2.0, np.ones(1, int), -np.ones(5, int)])
def test_a_bad_refresh_cost_is_refused_naming_the_refresh(cost):
    kernel = Ladder(Leapfrog(GAUSS, 0.5, 3), LookAheadRule(3), Undeclared(GAUSS, cost))
    init = GAUSS.sample(5, np.random.default_rng(0))
    for schedule in ("ragged", "synchronous"):
        with pytest.raises(ValueError, match="Undeclared.with_cost"):
            sample(kernel, init, 3, seed=1, warmup=0, schedule=schedule, checks=False)
