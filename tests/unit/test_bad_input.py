"""Invalid hyperparameters and initial values raise ValueError naming the parameter and value."""

import numpy as np
import pytest

from ladder_mcmc import (
    DirectionRefresh,
    Leapfrog,
    LookAhead,
    LookAheadRule,
    MomentumRefresh,
    hmc,
    lahmc,
    sample,
)
from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian, RoughWell

TARGET = IllConditionedGaussian(2)


@pytest.mark.parametrize("value", [0.0, -1.0, np.inf, np.nan])
def test_step_size(value):
    with pytest.raises(ValueError, match=rf"step_size.*{value}"):
        lahmc(TARGET, step_size=value, n_leapfrog=10, beta=0.1)
    with pytest.raises(ValueError, match="step_size"):
        Leapfrog(TARGET, value, 10)


@pytest.mark.parametrize("value", [0, -3, 2.5, True])
def test_n_leapfrog_and_n_steps(value):
    with pytest.raises(ValueError, match=rf"n_leapfrog.*{value}"):
        hmc(TARGET, 1.0, value, 0.1)
    with pytest.raises(ValueError, match=rf"n_steps.*{value}"):
        Leapfrog(TARGET, 1.0, value)
    with pytest.raises(ValueError, match=rf"n_steps.*{value}"):
        sample(hmc(TARGET, 1.0, 10, 0.1), np.zeros((2, 2)), value, warmup=0)


@pytest.mark.parametrize("value", [0, -1, 1.5])
def test_look_ahead_and_max_rungs(value):
    with pytest.raises(ValueError, match=rf"look_ahead.*{value}"):
        lahmc(TARGET, 1.0, 10, 0.1, look_ahead=value)
    with pytest.raises(ValueError, match=rf"max_rungs.*{value}"):
        LookAheadRule(value)
    with pytest.raises(ValueError, match=rf"max_rungs.*{value}"):
        LookAhead(Leapfrog(TARGET, 1.0, 10), max_rungs=value)


@pytest.mark.parametrize("value", [-0.1, 1.1, np.nan, "a"])
def test_beta_and_prob(value):
    with pytest.raises(ValueError, match=r"beta.*"):
        lahmc(TARGET, 1.0, 10, value)
    with pytest.raises(ValueError, match=r"beta"):
        MomentumRefresh(value)
    with pytest.raises(ValueError, match=r"prob"):
        DirectionRefresh(value)
    with pytest.raises(ValueError, match=r"alpha"):
        MomentumRefresh.from_alpha(value, 1.0, 10)


def test_from_alpha_is_the_papers_beta():
    r = MomentumRefresh.from_alpha(0.5, step_size=0.5, n_steps=4)
    assert r.beta == pytest.approx(0.5 ** (1 / 2))


@pytest.mark.parametrize(
    "init, match",
    [
        (np.zeros(2), r"shape \(chains, dim\).*\(2,\)"),
        (np.zeros((4, 3)), r"dimension 3.*dim=2"),
        (np.zeros((0, 2)), r"shape \(chains, dim\)"),
        (np.array([[0.0, np.nan], [1.0, 1.0]]), r"finite.*\[0\]"),
        (np.array([[0.0, 0.0], [np.inf, 1.0]]), r"finite.*\[1\]"),
    ],
)
def test_init(init, match):
    with pytest.raises(ValueError, match=match):
        sample(lahmc(TARGET, 1.0, 10, 0.1), init, 5, seed=0, warmup=0)


def test_init_with_non_finite_energy_and_bad_gradient_shape():
    bad_energy = FunctionTarget(lambda x: np.where(x[:, 0] > 0, np.nan, 0.0), lambda x: x, dim=2)
    with pytest.raises(ValueError, match=r"not finite.*chains \[1\]"):
        sample(
            lahmc(bad_energy, 1.0, 2, 0.1), np.array([[-1.0, 0.0], [1.0, 0.0]]), 3, seed=0, warmup=0
        )
    bad_grad = FunctionTarget(lambda x: (x**2).sum(1), lambda x: x[:, :1], dim=2)
    shape = r"FunctionTarget returned gradient of shape \(2, 1\) \(expected \(2, 2\)\)"
    with pytest.raises(ValueError, match=shape):
        sample(lahmc(bad_grad, 1.0, 2, 0.1), np.zeros((2, 2)), 3, seed=0, warmup=0)


def test_schedule_and_thin():
    kernel = lahmc(TARGET, 1.0, 10, 0.1)
    with pytest.raises(ValueError, match="schedule.*'fast'"):
        sample(kernel, np.zeros((2, 2)), 5, schedule="fast", warmup=0)
    with pytest.raises(ValueError, match="thin.*0"):
        sample(kernel, np.zeros((2, 2)), 5, thin=0, warmup=0)


@pytest.mark.parametrize("executor", [None, "threads"])
def test_thin_beyond_n_steps_is_refused_before_any_work(executor):
    """No draw would be kept (``states=None``): refused, the target never called."""
    from concurrent.futures import ThreadPoolExecutor

    calls = []
    target = FunctionTarget(lambda x: calls.append(1) or (x**2).sum(1) / 2, lambda x: x, dim=2)
    kernel = lahmc(target, 1.0, 2, 0.1)
    pool = ThreadPoolExecutor(2) if executor else None
    with pytest.raises(ValueError, match=r"thin=6.*n_steps=5"):
        sample(kernel, np.zeros((4, 2)), 5, thin=6, warmup=10, executor=pool)
    assert calls == []
    trace = sample(kernel, np.zeros((4, 2)), 5, seed=0, thin=5, executor=pool, warmup=0)
    assert trace.positions.shape == (1, 4, 2)
    if pool:
        pool.shutdown()


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: IllConditionedGaussian(0), "dim.*0"),
        (lambda: IllConditionedGaussian(2, log_condition=-1), "log_condition.*-1"),
        (lambda: RoughWell(sigma1=0), "sigma1.*0"),
        (lambda: RoughWell(sigma2=np.inf), "sigma2.*inf"),
    ],
)
def test_targets(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_inverse_mass_shape():
    with pytest.raises(ValueError, match="inverse_mass"):
        lahmc(TARGET, 1.0, 10, 0.1, inverse_mass=np.ones((2, 3)))
    with pytest.raises(ValueError, match="inverse_mass has dimension 3"):
        sample(lahmc(TARGET, 1.0, 10, 0.1, inverse_mass=np.ones(3)), np.zeros((2, 2)), 2, warmup=0)
