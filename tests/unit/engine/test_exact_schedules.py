"""The ragged step is the synchronous reference exactly, where the arithmetic is exact.

* On ``CycleShift`` (integer states, weights read from a table): for every rule
  (``LookAheadRule``, ``ReducedFlipRule``, ``ReducedFlipLookAheadRule``,
  ``PersistentUniformRule``, and the test rule that falls through to a rung), the ragged
  loop on each backend gives the synchronous schedule's trace bit for bit, with and
  without checkpoints; and the comparison fails when the batch shares one stream.
* Maps that change volume (docs/design.md §13): both schedules give the same trace bit for
  bit on a measured ladder and on the log-scale walk, for every rule (forward, backward and
  restarted rungs, a carried uniform), with and without checkpoints; the JAX backend the
  numpy backend's to 1e-10 on the walk. A non-finite log Jacobian is density zero: never
  taken, counted like a non-finite energy, the same under both schedules.
* A non-finite energy or gradient is density zero on every schedule and backend.
"""

from __future__ import annotations

from fractions import Fraction
from unittest import mock

import attrs
import numpy as np
import pytest
from driver_equivalence import assert_close_trace, assert_same_trace
from exact_properties import FallThroughMetropolisRule
from scipy import stats

from ladder_mcmc import Checkpoint, DirectionRefresh, Ladder, LookAheadRule, lahmc, sample
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder import (
    CycleShift,
    LogScaleRefresh,
    LogScaleWalk,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
)
from ladder_mcmc.models import FunctionTarget, GammaTarget
from ladder_mcmc.verify import MeasuredLadder

jax = pytest.importorskip("jax")
jnp = jax.numpy

from ladder_mcmc.models import from_jax  # noqa: E402

BACKENDS = ["numpy", "jax"]
WALK = CycleShift(21, stats.binom.pmf(np.arange(21), 20, 0.5))
CYCLE_X0 = np.arange(30) % 21
RULES = {
    "look-ahead": LookAheadRule(3),
    "reduced-flip look-ahead": ReducedFlipLookAheadRule(3),
    "reduced-flip": ReducedFlipRule(),
    "persistent uniform": PersistentUniformRule(3, 0.1),
    "fall-through to a rung": FallThroughMetropolisRule(),
}


def _sample(kernel, init, n_steps, **options):
    return sample(kernel, init, n_steps, seed=3, warmup=0, checks=False, **options)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rule", list(RULES))
def test_ragged_is_synchronous_exactly_on_a_cycle(rule, backend):
    """Integer states: the ragged loop, on either backend and with any
    ``Checkpoint.every``, is ``Ladder.step`` bit for bit — but for the persistent
    uniform's carry on JAX, which adds density ratios (``exp`` of differences of the
    weights' logarithms, rounded by XLA's ``exp``): equal to 1e-10 there."""
    kernel = Ladder(WALK, RULES[rule], DirectionRefresh(0.1))
    reference = _sample(kernel, CYCLE_X0, 200, schedule="synchronous")
    for every in (None, 7):
        ragged = _sample(kernel, CYCLE_X0, 200, backend=backend, checkpoint=Checkpoint(every=every))
        assert ragged.backend["name"] == backend
        if backend == "jax" and reference.final.carry is not None:
            assert_close_trace(reference, ragged)
            final = attrs.evolve(ragged.final, carry=reference.final.carry)
            ragged = attrs.evolve(ragged, final=final)
        assert_same_trace(ragged, reference)
    # several outcomes, chains deciding at different stages: the comparison has teeth
    assert len(np.unique(reference.rungs)) >= 2 + (len(RULES[rule].positions) > 1)
    if backend == "numpy":
        checkpointed = _sample(
            kernel, CYCLE_X0, 200, schedule="synchronous", checkpoint=Checkpoint(every=13)
        )
        assert_same_trace(checkpointed, reference)


def test_the_comparison_catches_streams_shared_by_the_batch():
    """The mutant moves every chain's stream on whenever any chain draws (as one
    generator shared by the batch did): then the ragged loop is not the synchronous
    schedule, and checkpoints change the draws."""
    kernel = Ladder(WALK, LookAheadRule(3), DirectionRefresh(0.1))
    reference = _sample(kernel, CYCLE_X0, 60, schedule="synchronous")
    original_view = ChainStreams.view

    def shared(self, ids=None, advance=None):
        return original_view(self, ids, None)

    with mock.patch.object(ChainStreams, "view", shared):
        whole = _sample(kernel, CYCLE_X0, 60)
        checkpointed = _sample(kernel, CYCLE_X0, 60, checkpoint=Checkpoint(every=10))
    assert not np.array_equal(whole.states, reference.states)
    assert not np.array_equal(checkpointed.states, whole.states)


# ---------------------------------------------------------------- maps that change volume
VOLUME_RULES = [
    LookAheadRule(3),
    ReducedFlipRule(),
    ReducedFlipLookAheadRule(2),
    PersistentUniformRule(2, delta=0.25),
]
LADDER = MeasuredLadder([1, 3, 0, 4, 2], [2, 2, 5, 5, 1], [1, 1, 3, 3, 2], flip=[1, 0, 3, 2, 4])
GAMMA = GammaTarget(2.0, 1.5, dim=2)
GAMMA_X0 = GAMMA.sample(12, np.random.default_rng(0))


def _volume_cases():
    for rule in VOLUME_RULES:
        yield Ladder(LADDER, rule, DirectionRefresh(0.5)), np.arange(5).repeat(3)
        yield Ladder(LogScaleWalk(GAMMA, 0.8), rule, LogScaleRefresh(0.3)), GAMMA_X0


@pytest.mark.parametrize(
    ("kernel", "init"),
    list(_volume_cases()),
    ids=[f"{m}-{type(r).__name__}" for r in VOLUME_RULES for m in ("measured", "walk")],
)
def test_schedules_and_checkpoints_give_the_same_trace(kernel, init):
    ragged = _sample(kernel, init, 40)
    assert_same_trace(_sample(kernel, init, 40, schedule="synchronous"), ragged)
    assert_same_trace(_sample(kernel, init, 40, checkpoint=Checkpoint(every=3)), ragged)
    assert len(np.unique(ragged.rungs)) > 1


@pytest.mark.parametrize("rule", [ReducedFlipLookAheadRule(2), PersistentUniformRule(2, 0.25)])
def test_the_log_scale_walk_on_jax_is_the_numpy_walk(rule):
    """Backward rungs restart the Jacobian's sum at the origin; the JAX loop's sum is the
    numpy loop's to 1e-10 (the target written with the namespace of its input)."""
    kernel = Ladder(LogScaleWalk(GAMMA, 0.8), rule, LogScaleRefresh(0.3))
    numpy_run = _sample(kernel, GAMMA_X0, 40)
    jax_run = _sample(kernel, GAMMA_X0, 40, backend="jax")
    assert_close_trace(numpy_run, jax_run)
    assert len(np.unique(numpy_run.rungs)) > 1


class HoleyLadder(MeasuredLadder):
    """``log_det_jacobian`` is NaN at state 2 and +inf at state 4 (on the 5-cycle)."""

    def log_det_jacobian(self, state):
        out = super().log_det_jacobian(state).copy()
        state = np.asarray(state)
        return np.where(state == 2, np.nan, np.where(state == 4, np.inf, out))


@pytest.mark.parametrize("rule", [LookAheadRule(3), ReducedFlipLookAheadRule(2)])
def test_a_non_finite_jacobian_is_density_zero_and_counted(rule):
    ladder = HoleyLadder([1, 2, 3, 4, 0], [1, 1, 1, 1, 1], [1, 2, 1, 2, 1])
    kernel = Ladder(ladder, rule, DirectionRefresh(Fraction(1, 2)))
    init = np.array([0, 1, 3] * 4)
    ragged = sample(kernel, init, 60, seed=1, warmup=0)
    assert_same_trace(sample(kernel, init, 60, seed=1, schedule="synchronous", warmup=0), ragged)
    assert ragged.non_finite_rungs.sum() > 0
    # the map applications 2 → 3 and 4 → 0 (and back) have non-finite Jacobians, so no
    # rung across them is taken: the chains stay on {0, 1, 2} or on {3, 4}
    states = np.concatenate([init[None], ragged.states])
    start = np.isin(init, [0, 1])
    assert np.all(np.isin(states[:, start], [0, 1, 2]))
    assert np.all(np.isin(states[:, ~start], [3, 4]))
    assert len(np.unique(states)) == 5


# ---------------------------------------------------------------- non-finite energies
def wall_target(kind):
    """A standard Gaussian whose energy is ``kind`` (nan/inf) beyond x₀ > 1.5."""

    def energy(x):
        e = 0.5 * (x**2).sum(1)
        return np.where(x[:, 0] > 1.5, kind, e)

    def grad(x):
        return x.copy()

    return FunctionTarget(energy, grad, dim=2)


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
@pytest.mark.parametrize("kind", [np.nan, np.inf, -np.inf])
def test_non_finite_rungs_are_never_taken(kind, schedule):
    target = wall_target(kind)
    x0 = np.random.default_rng(0).normal(size=(50, 2)) * 0.5
    kernel = lahmc(target, step_size=0.3, n_leapfrog=5, beta=0.5, look_ahead=3)
    trace = sample(kernel, x0, 300, seed=1, schedule=schedule, warmup=0)
    assert trace.non_finite > 0
    assert np.all(np.isfinite(trace.positions))
    assert np.all(trace.positions[..., 0] <= 1.5)
    assert trace.non_finite == trace.non_finite_rungs.sum()
    assert not trace.interrupted


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_nan_gradient_is_density_zero(schedule):
    def grad(x):
        g = x.copy()
        g[x[:, 1] > 1.0] = np.nan
        return g

    target = FunctionTarget(lambda x: 0.5 * (x**2).sum(1), grad, dim=2)
    x0 = np.random.default_rng(0).normal(size=(40, 2)) * 0.3
    trace = sample(lahmc(target, 0.3, 5, 0.5), x0, 200, seed=2, schedule=schedule, warmup=0)
    assert trace.non_finite > 0
    assert np.all(np.isfinite(trace.positions))


def _walled(x):
    return jnp.where(x[0] > 1.0, -jnp.inf, -0.5 * jnp.sum(x**2))


def test_non_finite_rungs_on_every_schedule_and_backend():
    """A JAX target with a wall: the ragged numpy loop is the synchronous reference bit
    for bit (non-finite counts included), and the JAX loop is numpy's to 1e-10."""
    kernel = lahmc(from_jax(_walled, dim=2), 0.4, 4, 0.3, look_ahead=3)
    x0 = np.minimum(np.random.default_rng(1).normal(size=(8, 2)) * 0.5, 0.9)
    reference = _sample(kernel, x0, 60, schedule="synchronous")
    numpy_run = _sample(kernel, x0, 60, backend="numpy")
    assert_same_trace(numpy_run, reference)
    assert_close_trace(numpy_run, _sample(kernel, x0, 60, backend="jax"))
    assert numpy_run.non_finite > 0 and np.all(numpy_run.positions[..., 0] <= 1.0)
