"""A chain that cannot move must not freeze the others (``hamiltonian/warmup/stuck.py``).

One chain of four started far in the tails of a target with quartic tails (gradient
``x + x³``) rejects every rung at any step the others can use. Dual averaging on the
fraction of all chains taking the first rung would then aim at a probability the run
cannot reach and drive the shared step size to nothing; the warm-up leaves idle chains
out of that statistic and moves them to another chain's state at the end of each slow
window. The test runs both with the guard and with
it switched off (``STUCK_STEPS`` beyond the warm-up), which must collapse.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from ladder_mcmc import FunctionTarget, lahmc, sample, summary
from ladder_mcmc.hamiltonian.warmup import stuck
from ladder_mcmc.ladder import LadderState


def _energy(x):
    return np.sum(x**2 / 2 + x**4 / 4, axis=1)


def _gradient(x):
    return x + x**3


TARGET = FunctionTarget(_energy, _gradient, dim=2)
X0 = np.array([[0.5, -0.3], [-0.2, 0.4], [0.1, 0.1], [100.0, -100.0]])  # chain 3 far out


def _warm(n_steps=200):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sample(lahmc(TARGET), X0, n_steps, seed=1, warmup=400)


def test_a_stuck_chain_neither_collapses_the_step_nor_stays_stuck():
    trace = _warm()
    assert trace.warmup.step_size > 0.5 * _warm_reference_step()
    np.testing.assert_array_equal(trace.warmup.relocated > 0, [False, False, False, True])
    assert np.abs(trace.positions[:, 3]).max() < 100  # sampling starts where the others are
    assert "moved idle chains to other chains' states: chain 3" in str(summary(trace))


def test_without_the_guard_the_step_collapses(monkeypatch):
    monkeypatch.setattr(stuck, "STUCK_STEPS", 10**9)
    trace = _warm(n_steps=5)
    assert trace.warmup.step_size < 1e-2 * _warm_reference_step()
    assert not trace.warmup.relocated.any()


@functools.cache
def _warm_reference_step():
    """The step the three healthy chains adapt on their own."""
    return sample(lahmc(TARGET), X0[:3], 4, seed=1, warmup=400, checks=False).warmup.step_size


def test_idle_counts_and_the_statistic():
    idle = np.array([0, 5, stuck.STUCK_STEPS - 1, stuck.STUCK_STEPS])
    rungs = np.array([1, 0, 2, 0])
    new = stuck.count_idle(idle, rungs, True, np)
    np.testing.assert_array_equal(new, [0, 6, 0, stuck.STUCK_STEPS + 1])
    np.testing.assert_array_equal(stuck.count_idle(idle, rungs, False, np), idle)  # padding
    # chain 3 is idle: the fraction is over chains 0-2, of which chain 0 took rung 1
    assert stuck.first_rung_fraction(rungs, idle, np) == pytest.approx(1 / 3)
    all_idle = np.full(4, stuck.STUCK_STEPS)
    assert stuck.first_rung_fraction(rungs, all_idle, np) == pytest.approx(1 / 4)


class CountingRandom:
    def __init__(self, values):
        self.values, self.calls = np.asarray(values, dtype=float), 0

    def random(self, n):
        self.calls += 1
        return self.values[:n]


def _state(n):
    return LadderState(np.arange(2 * n, dtype=float).reshape(n, 2), np.ones(n), -np.arange(n))


def test_relocation_copies_whole_rows_from_active_chains_and_draws_only_when_needed():
    ks = _state(4)
    idle = np.array([0, stuck.STUCK_STEPS, 0, stuck.STUCK_STEPS + 3])
    rng = CountingRandom([0.9, 0.2, 0.0, 0.7])  # chain 1 picks active[0], chain 3 active[1]
    moved, which = stuck.relocate_idle(ks, idle, rng)
    np.testing.assert_array_equal(which, [False, True, False, True])
    np.testing.assert_array_equal(moved.state, ks.state[[0, 0, 2, 2]])
    np.testing.assert_array_equal(moved.log_density, ks.log_density[[0, 0, 2, 2]])
    for none_or_all in (np.zeros(4, dtype=int), np.full(4, stuck.STUCK_STEPS)):
        rng = CountingRandom([0.5] * 4)
        same, which = stuck.relocate_idle(ks, none_or_all, rng)
        assert same is ks and not which.any() and rng.calls == 0


@pytest.mark.slow
def test_the_compiled_warmup_moves_the_same_chain_and_adapts_the_same_step():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from ladder_mcmc import from_jax

    target = from_jax(energy=lambda x: jnp.sum(x**2 / 2 + x**4 / 4), dim=2)
    runs = {}
    for backend in ("numpy", "jax"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs[backend] = sample(
                lahmc(target), X0, 20, seed=1, warmup=400, backend=backend
            ).warmup
    np.testing.assert_array_equal(runs["jax"].relocated, [0, 0, 0, 1])
    np.testing.assert_array_equal(runs["jax"].relocated, runs["numpy"].relocated)
    assert runs["jax"].step_size == pytest.approx(runs["numpy"].step_size, rel=1e-6)
