"""The built-in targets on JAX values: written with the namespace of their input.

* every built-in target (the paper's, Neal's funnel, the Gamma target, the function
  targets, all posteriordb models and the centred eight schools) evaluated under
  ``jax.jit`` gives its numpy energy and gradient, the same non-finite values included;
* ``energy_of`` evaluates a target with a ``jax_potential`` by JAX on JAX values;
* ``sample(..., backend="jax")`` on a built-in target gives the numpy backend's trace
  (same rung codes and map applications, draws to 1e-10), and is not chosen by itself
  (a built-in target declares no ``jax_potential``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ladder_mcmc import Ladder, Leapfrog, LookAheadRule, MomentumRefresh, sample
from ladder_mcmc.engine.pytree import register
from ladder_mcmc.models import (
    FunctionTarget,
    GammaTarget,
    IllConditionedGaussian,
    LogDensityTarget,
    NealsFunnel,
    RoughWell,
    from_jax,
)
from ladder_mcmc.models import posteriors as pdb
from ladder_mcmc.models.posteriors import EightSchoolsCentered
from ladder_mcmc.models.targets import energy_and_grad, energy_of

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _builtin():
    targets = {name: lambda name=name: pdb.load(name) for name in pdb.names()}
    targets.update(
        {
            "eight_schools_centered": EightSchoolsCentered.load,
            "ill_conditioned": lambda: IllConditionedGaussian(5, 3.0),
            "rough_well": lambda: RoughWell(dim=3),
            "funnel": lambda: NealsFunnel(6),
            "gamma": lambda: GammaTarget(2.5, 1.5, dim=3),
            "log_density": lambda: LogDensityTarget(
                lambda x: -0.5 * (x * x).sum(1), lambda x: -x, dim=3
            ),
            "function": lambda: FunctionTarget(lambda x: 0.5 * (x * x).sum(1), lambda x: x, dim=3),
        }
    )
    return targets


TARGETS = _builtin()


@pytest.mark.parametrize("name", list(TARGETS))
def test_a_builtin_target_under_jit_gives_its_numpy_values(name):
    target = TARGETS[name]()
    x = np.random.default_rng(1).normal(size=(7, target.dim)) * 1.5
    if name == "gamma":
        x = np.abs(x)
        x[0, 0] = -1.0  # outside the support: infinite energy
    if name == "funnel":
        x[0, 0] = -800.0  # far down the neck: e^{-v} overflows
    with np.errstate(all="ignore"):
        e0, g0 = energy_and_grad(target, x)
    register(target)
    with jax.enable_x64(True):
        (e1, g1), e2 = jax.jit(lambda t, x: (energy_and_grad(t, x), energy_of(t, x)))(
            target, jnp.asarray(x)
        )
    e1, g1, e2 = np.asarray(e1), np.asarray(g1), np.asarray(e2)
    np.testing.assert_array_equal(e1, e2)
    np.testing.assert_array_equal(np.isfinite(e0), np.isfinite(e1))
    finite = np.isfinite(e0)
    assert (~finite).any() == (name in ("gamma", "funnel"))
    np.testing.assert_allclose(e1[finite], e0[finite], rtol=1e-12, atol=1e-12)
    rows = np.isfinite(g0).all(axis=1)
    np.testing.assert_allclose(g1[rows], g0[rows], rtol=1e-12, atol=1e-12)


def test_energy_of_evaluates_a_jax_potential_by_jax():
    target = from_jax(lambda x: -0.5 * jnp.sum(x * x), dim=2)  # a log density
    x = np.array([[1.0, 2.0], [0.0, -1.0]])
    np.testing.assert_allclose(energy_of(target, x), [2.5, 0.5])
    with jax.enable_x64(True):
        np.testing.assert_allclose(jax.jit(lambda x: energy_of(target, x))(x), [2.5, 0.5])


@pytest.mark.parametrize(
    "target",
    [
        IllConditionedGaussian(3, 2.0),
        EightSchoolsCentered.from_data(
            {"J": 3, "y": [28.0, 8.0, -3.0], "sigma": [15.0, 10.0, 16.0]}
        ),
    ],
    ids=["ill_conditioned", "eight_schools_centered"],
)
def test_sampling_a_builtin_target_on_jax_follows_numpy(target):
    kernel = Ladder(Leapfrog(target, 0.1, 4), LookAheadRule(3), MomentumRefresh(0.5))
    init = np.random.default_rng(2).uniform(-1, 1, size=(4, target.dim))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs: R-hat and ESS warnings
        default = sample(kernel, init, 3, seed=1, checks=False)
        a = sample(kernel, init, 80, seed=1, backend="numpy", checks=False)
        b = sample(kernel, init, 80, seed=1, backend="jax", checks=False)
    assert default.backend["name"] == "numpy"  # no jax_potential: numpy unless asked
    assert b.backend["name"] == "jax"
    np.testing.assert_array_equal(a.rungs, b.rungs)
    np.testing.assert_array_equal(a.n_moves, b.n_moves)
    np.testing.assert_allclose(a.positions, b.positions, rtol=1e-10, atol=1e-10)
