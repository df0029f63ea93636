"""``hmc()`` is draw for draw a plain textbook persistent HMC (bayes-kit's equivalence idea)."""

import numpy as np
import pytest

from ladder_mcmc import hmc, sample
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.models import IllConditionedGaussian, RoughWell


def textbook_hmc(target, x, step_size, n_leapfrog, beta, n_steps, rng):
    """Neal (2011) HMC with partial momentum refresh and a momentum flip on rejection.

    Each chain's random stream is consumed as: its momentum at the start (once),
    then per step one uniform and one normal per coordinate.
    """
    v = rng.standard_normal(x.shape)
    out = np.empty((n_steps,) + x.shape)
    accepted = np.empty((n_steps, x.shape[0]), dtype=bool)
    for t in range(n_steps):
        x1, v1 = x.copy(), v.copy()
        v1 = v1 - 0.5 * step_size * target.grad(x1)
        for i in range(n_leapfrog):
            x1 = x1 + step_size * v1
            if i < n_leapfrog - 1:
                v1 = v1 - step_size * target.grad(x1)
        v1 = v1 - 0.5 * step_size * target.grad(x1)
        h0 = target.energy(x) + 0.5 * (v * v).sum(1)
        h1 = target.energy(x1) + 0.5 * (v1 * v1).sum(1)
        u = rng.random(x.shape[0])
        acc = u < np.exp(h0 - h1)
        x = np.where(acc[:, None], x1, x)
        v = np.where(acc[:, None], v1, -v)
        v = np.sqrt(1 - beta) * v + np.sqrt(beta) * rng.standard_normal(x.shape)
        out[t], accepted[t] = x, acc
    return out, accepted


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
@pytest.mark.parametrize("beta", [1.0, 0.1])
@pytest.mark.parametrize(
    "target", [IllConditionedGaussian(2), RoughWell()], ids=["gauss2", "rough"]
)
def test_hmc_equals_textbook_draw_for_draw(target, beta, schedule):
    x0 = target.sample(16, np.random.default_rng(3))
    n_steps = 200
    # Our kernel draws the initial directions first (one uniform per chain); give
    # both the same streams by starting every chain with d = +1 and replaying.
    kernel = hmc(target, step_size=1.0, n_leapfrog=10, beta=beta)
    streams = ChainStreams.for_chains(7, 16)
    ks = kernel.init(x0, streams.view(), direction=np.ones(16, dtype=np.int8))
    trace = sample(kernel, ks, n_steps, seed=streams, schedule=schedule, warmup=0)
    textbook_rng = ChainStreams.for_chains(7, 16).view()
    expected, accepted = textbook_hmc(target, x0, 1.0, 10, beta, n_steps, textbook_rng)
    np.testing.assert_array_equal(trace.rungs == 1, accepted)
    np.testing.assert_allclose(trace.positions, expected, rtol=1e-12, atol=1e-12)
    assert 0 < accepted.mean() < 1  # both outcomes occur, so the comparison has teeth


def test_textbook_comparison_detects_a_changed_acceptance():
    """The comparison fails when the kernel differs (here: a different step size)."""
    target = IllConditionedGaussian(2)
    x0 = target.sample(16, np.random.default_rng(3))
    kernel = hmc(target, step_size=1.05, n_leapfrog=10, beta=0.1)
    streams = ChainStreams.for_chains(7, 16)
    ks = kernel.init(x0, streams.view(), direction=np.ones(16, dtype=np.int8))
    trace = sample(kernel, ks, 50, seed=streams, schedule="synchronous", warmup=0)
    expected, _ = textbook_hmc(target, x0, 1.0, 10, 0.1, 50, ChainStreams.for_chains(7, 16).view())
    assert not np.allclose(trace.positions, expected)
