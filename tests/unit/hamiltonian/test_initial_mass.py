"""Warm-up's first mass: the inverse of the gradient's size at the initial points, at most 1
(``hamiltonian/warmup/moments.py``, docs/design/warmup.md §12).

The guess is checked where it is made (``initial_inverse_mass``, against values written
out by hand), where warm-up takes it (``HMCAdaptation.begin``: the kernel's first metric,
from the state's cached gradient, the chains restarted with momenta of that mass and their
densities recomputed; the identity for a map with a law), and by what it is for: on a
Gaussian of widths 0.01, 0.1 and 1 started at uniform(-2, 2) points, warm-up spends fewer
gradients than from the unit mass. ``tests/mutation/test_initial_mass_mutants.py`` shows
these checks catch broken variants.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ladder_mcmc import Warmup, lahmc, sample
from ladder_mcmc.hamiltonian import span_lahmc, state_length_lahmc
from ladder_mcmc.hamiltonian.warmup import moments
from ladder_mcmc.hamiltonian.warmup.adaptation import HMCAdaptation
from ladder_mcmc.hamiltonian.warmup.parameters import metric_of
from ladder_mcmc.ladder.kernel import log_density_of
from ladder_mcmc.models.targets import FunctionTarget

#: three chains' gradients: a mean that is not the median (|6|, |−2|, |1|: 3, not 2); a
#: size below 1 (capped); zeros; a chain's non-finite value (1, not the others' 1/4); a
#: size above 10³ (clipped)
GRAD = np.array(
    [
        [6.0, -0.25, 0.0, np.inf, 1e6],
        [-2.0, 0.25, 0.0, 4.0, -1e6],
        [1.0, 0.25, 0.0, 4.0, 1e6],
    ]
)
WANT = np.array([1 / 3, 1.0, 1.0, 1.0, 1e-3])


def check_values(guess) -> None:
    """``guess`` (``initial_inverse_mass``'s signature) gives :data:`WANT` on
    :data:`GRAD`, its diagonal when dense, and ones for a missing or misshapen gradient."""
    np.testing.assert_allclose(guess(GRAD, 5, False), WANT)
    np.testing.assert_allclose(guess(GRAD, 5, True), np.diag(WANT))
    np.testing.assert_array_equal(guess(None, 3, False), np.ones(3))
    np.testing.assert_array_equal(guess(np.ones((4, 5)), 3, False), np.ones(3))


def test_the_guess_is_the_inverse_gradient_size_averaged_over_chains_and_clipped():
    check_values(moments.initial_inverse_mass)


#: a Gaussian of widths 0.01, 0.1 and 1 along the axes, the regime of a posterior's
#: unconstrained coordinates started at uniform(-2, 2) points (Stan's)
WIDTHS = np.array([0.01, 0.1, 1.0])
TARGET = FunctionTarget(
    lambda x: 0.5 * np.sum(x * x / WIDTHS**2, axis=1), lambda x: x / WIDTHS**2, len(WIDTHS)
)


def _points(seed: int, chains: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, (chains, len(WIDTHS)))


def _by_hand(x: np.ndarray) -> np.ndarray:
    """The guess at points ``x`` of :data:`TARGET`, whose ``∂E/∂x`` is ``x / W²``."""
    return np.clip(1.0 / np.mean(np.abs(x / WIDTHS**2), axis=0), 1e-3, 1.0)


def begin(kernel, x, dense=False):
    """``HMCAdaptation.begin`` on ``kernel`` from the points ``x``: ``(kernel, ks)``."""
    adapt = HMCAdaptation.for_kernel(kernel, Warmup(100, dense_mass=dense), *x.shape)
    rng = np.random.default_rng(0)
    kernel, ks, _, _ = adapt.begin(kernel, kernel.init(x, rng), rng)
    return kernel, ks


@pytest.mark.parametrize("dense", [False, True])
def test_warm_up_starts_from_the_guess_at_the_initial_points(dense):
    x = _points(0)
    kernel, _ = begin(lahmc(TARGET), x, dense)
    want = _by_hand(x)
    np.testing.assert_allclose(metric_of(kernel).inverse_mass, np.diag(want) if dense else want)
    assert want[0] < want[1] < want[2]  # the narrow coordinates are shrunk most


@pytest.mark.parametrize("make", [state_length_lahmc, span_lahmc], ids=["state_length", "span"])
def test_a_map_with_a_law_starts_from_the_identity(make):
    """Its law reads the gradient in the mass's units (design §12): no guess, and the
    chains keep their momenta."""
    x = _points(0)
    kernel = make(TARGET)
    ks0 = kernel.init(x, np.random.default_rng(0))
    kernel, ks = begin(kernel, x)
    np.testing.assert_array_equal(metric_of(kernel).inverse_mass, np.ones(3))
    np.testing.assert_array_equal(ks.state.inner.v, ks0.state.inner.v)


def check_restarted(kernel, ks) -> None:
    """The chains restarted at the guessed mass: densities recomputed at it, momenta of
    its law (variance ``M_ii = 1/M⁻¹_ii``, within 5 standard errors over the chains)."""
    np.testing.assert_allclose(ks.log_density, log_density_of(kernel.map, ks.state)[0])
    inverse = metric_of(kernel).inverse_mass
    scaled = np.var(ks.state.v, axis=0) * inverse
    n = ks.state.v.shape[0]
    assert np.all(np.abs(scaled - 1.0) < 5 * np.sqrt(2.0 / n)), scaled


def test_the_chains_restart_with_momenta_of_the_guessed_mass():
    check_restarted(*begin(lahmc(TARGET), _points(1, chains=4000)))


def test_a_given_mass_is_kept():
    given = np.array([2.0, 3.0, 4.0])
    kernel, _ = begin(lahmc(TARGET, inverse_mass=given), _points(0))
    np.testing.assert_array_equal(metric_of(kernel).inverse_mass, given)


def _warmup_gradients(monkeypatch, guess, seed: int) -> float:
    monkeypatch.setattr(moments, "initial_inverse_mass", guess)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = sample(
            lahmc(TARGET), _points(seed), 10, seed=seed, warmup=WARMUP, backend="numpy",
            checks=False,
        )  # fmt: skip
    return float(trace.warmup.grad_evals.sum())


def _unit(grad, dim, dense):
    return np.eye(dim) if dense else np.ones(dim)


#: warm-up steps of the comparison (short: the initial buffer's share of the gradients is
#: largest in a short warm-up); the ratios measured: ``benchmarks/results/bench.md``
WARMUP = 300


def assert_saves(monkeypatch, seed: int, guess) -> None:
    """Warm-up from ``guess`` spends under 0.9 of the unit mass's gradients."""
    guessed = _warmup_gradients(monkeypatch, guess, seed)
    unit = _warmup_gradients(monkeypatch, _unit, seed)
    assert guessed < 0.9 * unit, (guessed, unit)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_guess_saves_warm_up_gradients_on_coordinates_of_different_widths(monkeypatch, seed):
    assert_saves(monkeypatch, seed, moments.initial_inverse_mass)
