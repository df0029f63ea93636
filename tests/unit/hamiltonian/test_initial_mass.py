"""Warm-up's first mass: the inverse of the gradient's size at the initial points, at most 1
(``hamiltonian/warmup/moments.py``, docs/design/warmup.md §12).

The guess is checked where it is made (``initial_inverse_mass``), where warm-up takes it
(``HMCAdaptation.begin``: the kernel's first metric, before the first step size), and by
what it is for: on a Gaussian of widths 0.01, 0.1 and 1 started at uniform(-2, 2)
points, warm-up spends fewer gradients than from the unit mass. Two broken
variants (the gradient's size for its inverse; no cap at 1) are caught.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ladder_mcmc import Warmup, lahmc, sample
from ladder_mcmc.hamiltonian.warmup import moments
from ladder_mcmc.hamiltonian.warmup.adaptation import HMCAdaptation
from ladder_mcmc.hamiltonian.warmup.parameters import metric_of
from ladder_mcmc.models.targets import FunctionTarget

GRAD = np.array(
    [
        [4.0, -0.25, 0.0, np.inf, 1e6],
        [-2.0, 0.25, 0.0, 1.0, -1e6],
    ]
)


def _check_values(guess) -> None:
    # |g| averaged: 3 → 1/3; 0.25 → 4, capped at 1; 0 → 1; not finite → 1; 1e6 → 1e-3
    got = guess(GRAD, False)
    np.testing.assert_allclose(got, [1 / 3, 1.0, 1.0, 1.0, 1e-3])
    np.testing.assert_allclose(guess(GRAD, True), np.diag(got))


def test_the_guess_is_the_inverse_gradient_size_averaged_over_chains_and_clipped():
    _check_values(moments.initial_inverse_mass)


#: a Gaussian of widths 0.01, 0.1 and 1 along the axes, the regime of a posterior's
#: unconstrained coordinates started at uniform(-2, 2) points (Stan's)
WIDTHS = np.array([0.01, 0.1, 1.0])
TARGET = FunctionTarget(
    lambda x: 0.5 * np.sum(x * x / WIDTHS**2, axis=1), lambda x: x / WIDTHS**2, len(WIDTHS)
)


def _points(seed: int, chains: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, (chains, len(WIDTHS)))


def _begin(kernel, x, dense=False):
    adapt = HMCAdaptation.for_kernel(kernel, Warmup(100, dense_mass=dense), *x.shape)
    rng = np.random.default_rng(0)
    ks = kernel.init(x, rng)
    return ks, adapt.begin(kernel, ks, rng)


@pytest.mark.parametrize("dense", [False, True])
def test_warm_up_starts_from_the_guess_at_the_initial_points(dense):
    ks, (kernel, _, _, _) = _begin(lahmc(TARGET), _points(0), dense)
    want = moments.initial_inverse_mass(ks.state.grad, dense)
    np.testing.assert_allclose(metric_of(kernel).inverse_mass, want)
    diag = np.diag(want) if dense else want
    assert diag[0] < diag[1] < diag[2]  # the narrow coordinates are shrunk most


def test_a_given_mass_is_kept():
    given = np.array([2.0, 3.0, 4.0])
    _, (kernel, _, _, _) = _begin(lahmc(TARGET, inverse_mass=given), _points(0))
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


def _unit(grad, dense):
    n = np.asarray(grad).shape[1]
    return np.eye(n) if dense else np.ones(n)


#: warm-up steps of the comparison: the guess spent 0.54–0.66 of the unit mass's
#: gradients on seeds 0–3 (0.80–0.82 at 1000 steps, where the initial buffer's share is
#: smaller)
WARMUP = 300


@pytest.mark.parametrize("seed", [0, 1])
def test_the_guess_saves_warm_up_gradients_on_coordinates_of_different_widths(monkeypatch, seed):
    _assert_saves(monkeypatch, seed, moments.initial_inverse_mass)


def _assert_saves(monkeypatch, seed: int, guess) -> None:
    guessed = _warmup_gradients(monkeypatch, guess, seed)
    unit = _warmup_gradients(monkeypatch, _unit, seed)
    assert guessed < 0.9 * unit, (guessed, unit)


def _no_cap(grad, dense):
    with np.errstate(divide="ignore"):
        inverse = np.clip(1.0 / np.mean(np.abs(grad), axis=0), 1e-3, 1e3)
    return np.diag(inverse) if dense else inverse


def _size(grad, dense):
    inverse = np.clip(np.mean(np.abs(grad), axis=0), 1e-3, 1.0)
    return np.diag(inverse) if dense else inverse


def test_a_guess_without_the_cap_is_caught():
    with pytest.raises(AssertionError):
        _check_values(_no_cap)


def test_the_gradient_size_for_its_inverse_is_caught(monkeypatch):
    # it spent 1.00 of the unit mass's gradients on seeds 0-3
    with pytest.raises(AssertionError):
        _assert_saves(monkeypatch, 0, _size)
