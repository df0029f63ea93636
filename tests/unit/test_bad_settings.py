"""Kernel settings that used to give wrong answers or late crashes are refused, or now work.

Each refusal is a ``ValueError`` naming the parameter and the value, raised before
any work; settings that numpy gives (``np.int64``, ``np.float32``, ...) work
everywhere a Python number does.
"""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc import (
    Ladder,
    LookAheadRule,
    Metric,
    lahmc,
    lifted_lahmc,
    resume,
    sample,
)
from ladder_mcmc.adaptation import regularised_covariance
from ladder_mcmc.finite import FiniteLadder
from ladder_mcmc.targets import FunctionTarget, IllConditionedGaussian, RoughWell
from ladder_mcmc.trace import Recorder

TARGET = IllConditionedGaussian(2, log_condition=1)
X0 = np.zeros((4, 2))


# ------------------------------------------------------------------ dense inverse mass
def test_non_symmetric_inverse_mass_is_refused_with_the_asymmetry():
    m = np.array([[1.0, 0.5], [0.4, 1.0]])
    with pytest.raises(ValueError, match=r"inverse_mass must be symmetric.*0\.1"):
        Metric(m)
    with pytest.raises(ValueError, match=r"inverse_mass must be symmetric"):
        lahmc(TARGET, 0.5, 3, 0.5, inverse_mass=m)


@pytest.mark.parametrize(
    ("m", "smallest"),
    [
        (np.array([[1.0, 2.0], [2.0, 1.0]]), "-1"),
        (np.array([[1.0, 1.0], [1.0, 1.0]]), "0"),
        (-np.eye(3), "-1"),
    ],
)
def test_non_positive_definite_inverse_mass_is_refused_with_its_smallest_eigenvalue(m, smallest):
    with pytest.raises(ValueError, match=rf"inverse_mass must be positive definite.*{smallest}"):
        Metric(m)


def test_inverse_mass_asymmetric_by_rounding_is_accepted_and_made_symmetric():
    a = np.random.default_rng(0).standard_normal((4, 4))
    m = a @ a.T + 4 * np.eye(4)
    m[0, 1] *= 1 + 1e-15
    metric = Metric(m)
    assert np.array_equal(metric.inverse_mass, metric.inverse_mass.T)
    np.testing.assert_allclose(metric.inverse_mass, m, rtol=1e-14)


def test_dense_warmup_estimate_is_exactly_symmetric():
    x = np.random.default_rng(1).standard_normal((300, 5)) @ np.triu(np.ones((5, 5)))
    cov = regularised_covariance(x, dense=True)
    assert np.array_equal(cov, cov.T)
    Metric(cov)
    trace = sample(lahmc(TARGET, 0.5, 3, 0.5), X0, 5, seed=0, warmup=200, dense_mass=True)
    assert trace.warmup.inverse_mass.shape == (2, 2)


# ------------------------------------------------------------------ rung codes
def test_recorder_dtype_follows_the_largest_rung():
    assert Recorder(2, 2).rungs.dtype == np.int8
    assert Recorder(2, 2, max_rung=127).rungs.dtype == np.int8
    assert Recorder(2, 2, max_rung=150).rungs.dtype == np.int16
    assert Recorder(2, 2, max_rung=40_000).rungs.dtype == np.int32


def _far_rung_kernel():
    """From state 1 forwards, rungs 1..149 are a million times lighter, rung 150 heavier."""
    n = 151
    weights = [1] * n
    weights[0], weights[1] = 10**12, 10**6
    ladder = FiniteLadder([(i + 1) % n for i in range(n)], weights)
    kernel = Ladder(ladder, LookAheadRule(150))
    ks = kernel.init(np.ones(6, dtype=np.int64), np.random.default_rng(0), np.ones(6, np.int8))
    return kernel, ks


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
def test_rung_150_is_recorded_as_150(schedule):
    kernel, ks = _far_rung_kernel()
    trace = sample(kernel, ks, 1, seed=0, schedule=schedule)
    assert (trace.rungs[0] == 150).all()
    assert trace.transition_fractions()["L150"] == 1.0
    assert "stay" not in trace.transition_fractions()


def test_rung_150_survives_a_checkpoint_and_resume(tmp_path):
    kernel, ks = _far_rung_kernel()
    path = tmp_path / "run.npz"
    whole = sample(kernel, ks, 4, seed=3)
    first = sample(kernel, ks, 4, seed=3, checkpoint=path, checkpoint_every=1)
    assert first.rung_counts[150] > 0
    resumed = resume(path, kernel, n_steps=2)
    assert resumed.rungs.dtype == first.rungs.dtype
    np.testing.assert_array_equal(resumed.rungs[:4], whole.rungs)
    assert resumed.rungs.max() <= 150 and resumed.rungs.min() >= 0


# ------------------------------------------------------------------ dense mass, diagonal family
def test_dense_mass_with_a_diagonal_only_kinetic_energy_is_refused_before_any_work():
    calls = []
    well = RoughWell()

    def energy(x):
        calls.append(len(x))
        return well.energy(x)

    target = FunctionTarget(energy, well.grad, dim=2)
    kernel = lifted_lahmc(target, 0.5, 3)
    with pytest.raises(ValueError, match=r"dense_mass=True.*PowerKinetic.*diagonal"):
        sample(kernel, X0, 10, seed=0, warmup=300, dense_mass=True)
    assert calls == []
    sample(kernel, X0, 2, seed=0, warmup=20, dense_mass=True, adapt_mass=False)  # no mass: fine
