"""A non-finite energy is density zero: never taken, counted, the run goes on."""

import numpy as np
import pytest

from ladder_mcmc import lahmc, sample
from ladder_mcmc.models import FunctionTarget


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
