"""Warm-up adaptation: the step size reaches its target, the mass matrix the target's scales."""

import numpy as np
import pytest

from ladder_mcmc import Checkpoint, Warmup, hmc, lahmc, resume, sample
from ladder_mcmc.hamiltonian.warmup import moments
from ladder_mcmc.hamiltonian.warmup.dual_averaging import DualAveraging
from ladder_mcmc.hamiltonian.warmup.windows import stan_windows
from ladder_mcmc.models import IllConditionedGaussian


def test_stan_windows():
    assert stan_windows(1000) == (75, 50, [100, 150, 250, 450, 950])
    init, term, ends = stan_windows(100)
    assert (init, term) == (15, 10) and ends == [90]
    assert stan_windows(10) == (10, 0, [])


def test_dual_averaging_finds_the_step_size_of_a_known_acceptance_curve():
    # acceptance a(ε) = exp(-ε²): the target 0.8 is reached at ε* = sqrt(-log 0.8)
    da = DualAveraging(target=0.8)
    state = da.init(1.0)
    eps = 1.0
    for _ in range(2000):
        state = da.update(state, np.exp(-(eps**2)))
        eps = da.step_size(state)
    assert da.final(state) == pytest.approx(np.sqrt(-np.log(0.8)), rel=0.02)


def _regularised(x, dense, chains_per_step):
    m = moments.init(x.shape[1], dense, np)
    for step in np.split(x, x.shape[0] // chains_per_step):
        m = moments.update(m, step)
    return moments.regularised(m)


@pytest.mark.parametrize("chains_per_step", [1, 5])
def test_regularised_covariance_shrinks_towards_small_identity(chains_per_step):
    x = np.random.default_rng(0).normal(size=(5, 2)) * 3
    diag = _regularised(x, False, chains_per_step)
    np.testing.assert_allclose(diag, 0.5 * x.var(axis=0, ddof=1) + 0.5e-3)
    dense = _regularised(x, True, chains_per_step)
    np.testing.assert_allclose(np.diag(dense), diag)
    np.testing.assert_allclose(dense, 0.5 * np.cov(x, rowvar=False) + 0.5e-3 * np.eye(2))


@pytest.mark.parametrize("make", [hmc, lahmc])
def test_warmup_adapts_step_size_and_diagonal_mass(make):
    target = IllConditionedGaussian(5, log_condition=4)
    kernel = make(target, n_leapfrog=8, beta=1.0)  # the step size and the mass left unset
    x0 = np.ones((16, 5))  # far from typical: warm-up must cope
    trace = sample(kernel, x0, 300, seed=3, warmup=600)
    w = trace.warmup
    # the inverse mass approximates the variances (within a factor 2: windows are short)
    ratio = w.inverse_mass / target.variances
    assert np.all((ratio > 0.5) & (ratio < 2)), ratio
    # the first-rung probability at the end of warm-up is near the 0.8 target
    assert abs(w.first_stage_prob - 0.8) < 0.1
    assert trace.kernel["step_size"] == w.step_size
    # warm-up cost reported apart, per chain
    assert w.grad_evals.shape == (16,) and np.all(w.grad_evals >= 600 * 8)
    assert np.all(trace.grad_evals <= 300 * 8 * trace.max_rung)
    # and the draws have the right scale (E[x²/σ²] = 1; loose: 16 chains x 300 steps)
    z2 = (trace.positions**2 / target.variances).mean()
    assert 0.7 < z2 < 1.3


def test_dense_mass_and_bad_parameters():
    target = IllConditionedGaussian(3, log_condition=2)
    # the step size left to warm-up: a given step keeps its (unit) mass
    kernel = lahmc(target, n_leapfrog=5, beta=1.0)
    trace = sample(kernel, np.ones((8, 3)), 20, seed=1, warmup=Warmup(200, dense_mass=True))
    assert trace.warmup.inverse_mass.shape == (3, 3)
    with pytest.raises(ValueError, match="warmup.*-5"):
        sample(lahmc(target, 0.1, 5, 1.0), np.ones((8, 3)), 20, warmup=-5)
    with pytest.raises(ValueError, match="target_prob"):
        sample(lahmc(target, 0.1, 5, 1.0), np.ones((8, 3)), 20, warmup=Warmup(10, target_prob=1.0))


def test_trajectory_length_sets_the_leapfrog_steps():
    target = IllConditionedGaussian(10, log_condition=3)
    kernel = lahmc(target, beta=1.0, length_jitter=0)  # M left to warm-up, a fixed length
    trace = sample(
        kernel,
        target.sample(8, np.random.default_rng(0)),
        50,
        seed=2,
        warmup=Warmup(300, trajectory_length=np.pi / 2),
    )
    w = trace.warmup
    assert w.n_leapfrog == max(1, round((np.pi / 2) / w.step_size)) != 40
    assert abs(w.n_leapfrog * w.step_size - np.pi / 2) <= w.step_size / 2
    assert trace.cost == w.n_leapfrog == trace.kernel["n_steps"]
    # a given M is kept
    given = lahmc(target, n_leapfrog=40, beta=1.0)
    kept = sample(given, target.sample(8, np.random.default_rng(0)), 5, seed=2, warmup=50)
    assert kept.warmup.n_leapfrog == 40 == kept.cost
    with pytest.raises(ValueError, match="trajectory_length.*-1"):
        sample(kernel, np.ones((2, 10)), 5, warmup=Warmup(10, trajectory_length=-1.0))


def test_resume_restores_the_adapted_trajectory(tmp_path):
    target = IllConditionedGaussian(3, log_condition=2)
    kernel = lahmc(target, beta=1.0, length_jitter=0)
    x0 = target.sample(4, np.random.default_rng(0))
    path = tmp_path / "t.npz"
    opts = dict(seed=5, warmup=Warmup(200, trajectory_length=np.pi / 2))
    sample(kernel, x0, 20, checkpoint=Checkpoint(path, every=10), **opts)
    more = resume(path, kernel, 10)
    whole = sample(kernel, x0, 30, checkpoint=Checkpoint(every=10), **opts)
    assert more.cost == whole.cost == whole.warmup.n_leapfrog
    np.testing.assert_array_equal(more.positions, whole.positions)
