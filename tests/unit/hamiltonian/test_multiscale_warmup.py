"""Warm-up of the multiscale leapfrogs: ``state_length_lahmc`` and ``refined_lahmc`` are
tuning-free on both backends.

What they are not given (``step_size``; ``inverse_mass`` too when the step is unset) is
listed in ``Ladder.adapt`` and adapted by the Hamiltonian warm-up through the map's
family (``AuxiliaryMap.adaptation``): a first step from one plain leapfrog step, dual
averaging of the first-rung fraction, the windowed mass. The family, the law and the
refresh take the values together (``with_hmc_parameters``), also on the traced values of
the compiled warm-up, so the numpy and JAX warm-ups agree to rounding.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ladder_mcmc import Ladder, LookAheadRule, Warmup, sample
from ladder_mcmc.diagnostics.gradient import GradientCounter
from ladder_mcmc.hamiltonian import Leapfrog, Metric, refined_lahmc, state_length_lahmc
from ladder_mcmc.hamiltonian.warmup.dual_averaging import initial_step_size, one_step_acceptance
from ladder_mcmc.hamiltonian.warmup.parameters import (
    apply_warmup,
    metric_of,
    step_size_of,
    with_hmc_parameters,
)
from ladder_mcmc.ladder.auxiliary import AuxiliaryLaw, AuxiliaryMap, MapFamily
from ladder_mcmc.ladder.auxiliary_refresh import AuxiliaryRefresh, refresh_parts
from ladder_mcmc.ladder.kernel import LadderState
from ladder_mcmc.models import IllConditionedGaussian
from ladder_mcmc.validation import SamplingWarning

jax = pytest.importorskip("jax")
jnp = jax.numpy

from ladder_mcmc.models import from_jax  # noqa: E402

VARIANCES = np.array([1.0, 10.0, 0.1])
TARGET = from_jax(lambda x: -0.5 * jnp.sum(x**2 / jnp.asarray(VARIANCES)), dim=3)
PLAIN = IllConditionedGaussian(3, log_condition=1)  # a numpy target: host-only tests
X0 = np.random.default_rng(0).normal(size=(4, 3))
MASS = np.array([1.0, 4.0, 0.5])
# small kernels (two rungs, two levels): each JAX compilation costs seconds
MAKE = {
    "state_length": lambda t, **kw: state_length_lahmc(
        t, time=1.5, max_steps=16, look_ahead=2, **kw
    ),
    "refined": lambda t, **kw: refined_lahmc(t, n_steps=3, max_level=1, look_ahead=2, **kw),
}


def _parts(kernel):
    """``(family, law, momentum refresh, α redraw)`` of an auxiliary leapfrog kernel."""
    redraw = [
        p for p in refresh_parts(kernel.refresh, inner=True) if isinstance(p, AuxiliaryRefresh)
    ]
    momentum = [p for p in refresh_parts(kernel.refresh, inner=True) if hasattr(p, "beta")]
    return kernel.map.family, kernel.map.law, momentum[0], redraw[0]


def _assert_together(kernel, step, inverse_mass):
    """Family, law and refresh hold one step and one metric (the law and the redraw: one
    object, as ``Ladder`` checks)."""
    family, law, momentum, redraw = _parts(kernel)
    assert float(family.step_size) == float(law.step_size) == step
    assert float(step_size_of(kernel)) == step
    np.testing.assert_array_equal(family.metric.inverse_mass, inverse_mass)
    assert momentum.metric is family.metric
    assert getattr(law, "metric", family.metric) is family.metric
    assert redraw.law is law


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n == "refined" else n for n in MAKE]
)
def test_defaults_warm_up_alike_on_numpy_and_jax(name):
    kernel = MAKE[name](TARGET)
    assert kernel.adapt == {"step_size", "inverse_mass"}
    run = {"seed": 3, "warmup": 60, "checks": False}
    a, b = (sample(kernel, X0, 8, backend=backend, **run) for backend in ("numpy", "jax"))
    assert (a.backend["name"], b.backend["name"]) == ("numpy", "jax")
    for warm in (a.warmup, b.warmup):
        assert warm.adapted == ("step_size", "inverse_mass") and not warm.length_set
        assert warm.step_size != 1.0 and not np.array_equal(warm.inverse_mass, np.ones(3))
    np.testing.assert_allclose(b.warmup.step_size, a.warmup.step_size, rtol=1e-10)
    np.testing.assert_allclose(b.warmup.inverse_mass, a.warmup.inverse_mass, rtol=1e-10)
    np.testing.assert_array_equal(b.warmup.grad_evals, a.warmup.grad_evals)
    np.testing.assert_allclose(b.positions, a.positions, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(b.rungs, a.rungs)
    np.testing.assert_array_equal(b.grad_evals, a.grad_evals)
    assert np.all(np.isfinite(a.positions))
    # the adapted kernel: every part at the warm-up's values, nothing left to adapt
    adapted = apply_warmup(kernel, a.warmup)
    _assert_together(adapted, a.warmup.step_size, a.warmup.inverse_mass)
    assert adapted.adapt == frozenset()
    lp = adapted.map.log_density(a.final.state)
    assert np.all(np.isfinite(lp))  # the chains' α lies in the adapted law's support


@pytest.mark.parametrize("name", list(MAKE))
def test_values_given_are_kept(name):
    make, x0 = MAKE[name], PLAIN.sample(4, np.random.default_rng(1))
    # ε given: the mass it was chosen for is kept too (as lahmc's); nothing to adapt
    kernel = make(PLAIN, step_size=0.3)
    assert kernel.adapt == frozenset()
    assert sample(kernel, x0, 3, seed=0, checks=False).warmup is None
    kept = sample(kernel, x0, 3, seed=0, warmup=30, checks=False).warmup
    assert kept.adapted == () and kept.step_size == 0.3 and kept.inverse_mass is None
    # the mass given: only ε is adapted, the mass is kept in family, law and refresh
    kernel = make(PLAIN, inverse_mass=MASS)
    assert kernel.adapt == {"step_size"}
    warm = sample(kernel, x0, 3, seed=0, warmup=30, checks=False).warmup
    assert warm.adapted == ("step_size",)
    np.testing.assert_array_equal(warm.inverse_mass, MASS)
    _assert_together(apply_warmup(kernel, warm), warm.step_size, MASS)


@pytest.mark.parametrize("name", list(MAKE))
def test_new_values_reach_the_family_the_law_and_the_refresh(name):
    kernel = MAKE[name](PLAIN)
    new = with_hmc_parameters(kernel, step_size=0.37, metric=Metric(MASS))
    _assert_together(new, 0.37, MASS)
    assert isinstance(new.map, AuxiliaryMap) and new.adapt == kernel.adapt
    # the kernel itself is left as it was
    assert float(kernel.map.law.step_size) == 1.0 and metric_of(kernel).inverse_mass is None
    # β is the inner momentum refresh's, read and set through the InnerRefresh
    assert float(_parts(with_hmc_parameters(kernel, beta=0.25))[2].beta) == 0.25


@pytest.mark.parametrize("name", list(MAKE))
def test_warm_up_counts_every_gradient(name):
    """``warmup.grad_evals`` holds every gradient warm-up spent: the first step's trials,
    the steps, and the law's redraws of ``α`` (refined: probes) at the new values."""
    x0 = PLAIN.sample(4, np.random.default_rng(1))
    outside = {}
    for warmup in (0, 40):
        counting = GradientCounter(PLAIN)
        trace = sample(MAKE[name](counting), x0, 3, seed=2, warmup=warmup, checks=False)
        warm = 0 if trace.warmup is None else int(trace.warmup.grad_evals.sum())
        outside[warmup] = counting.rows - warm - int(trace.grad_evals.sum())
    assert outside[40] == outside[0] > 0  # the chains' preparation only, the same


def test_the_first_step_is_one_plain_leapfrog_step_of_the_family():
    kernel = MAKE["refined"](PLAIN, inverse_mass=MASS)
    ks = kernel.init(X0, np.random.default_rng(0))
    plain = Ladder(Leapfrog(PLAIN, 1.0, 1, Metric(MASS)), LookAheadRule(1))
    inner = LadderState(ks.state.inner, ks.direction, ks.log_density, None)
    got = initial_step_size(kernel, ks, np.random.default_rng(5))
    assert got == initial_step_size(plain, inner, np.random.default_rng(5))
    accept = [
        [one_step_acceptance(k, s, eps, np.random.default_rng(7)) for eps in (0.5, 2.0, 8.0)]
        for k, s in ((kernel, ks), (plain, inner))
    ]
    assert accept[0] == accept[1] and len(set(accept[0])) == 3


def test_what_cannot_be_adapted_is_refused():
    kernel = MAKE["state_length"](PLAIN)
    with pytest.raises(ValueError, match="no fixed number of leapfrog steps"):
        sample(kernel, X0, 3, seed=0, warmup=Warmup(30, trajectory_length=1.0))
    with pytest.raises(ValueError, match="no fixed number of leapfrog steps"):
        with_hmc_parameters(kernel, n_steps=4)
    with pytest.warns(SamplingWarning, match="leaves step_size to adapt"):
        sample(kernel, X0, 2, seed=0, warmup=0)

    class Shift(MapFamily):
        def forward(self, state, alpha):
            return state + alpha

        def backward(self, state, alpha):
            return state - alpha

        def log_density(self, state):
            return np.zeros(len(state))

    class One(AuxiliaryLaw):
        def log_prob(self, alpha, state):
            return np.zeros(len(state))

        def sample(self, state, rng):
            return np.ones(len(state))

    law = One()
    other = Ladder(AuxiliaryMap(Shift(), law), LookAheadRule(2), AuxiliaryRefresh(law))
    assert other.map.adaptation is None  # a family without a warm-up
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="warm-up adaptation needs"):
            sample(other, np.zeros(4), 3, seed=0, warmup=30)
