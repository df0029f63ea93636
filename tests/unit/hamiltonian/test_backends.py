"""Every Hamiltonian part on both backends: the numpy loop and the compiled JAX loop.

Each kernel runs on a Gaussian JAX target (``from_jax``) with ``backend="numpy"`` and
``backend="jax"`` from the same seed: the same random numbers reach every part, so the
positions agree to rounding (1e-10) and the rung codes, map applications and gradient
counts are equal. The fields warm-up adapts (step size, number of steps, a length law's
centre, ``β``, the inverse mass) are traced: new values reuse the compilation.

Short runs (30 steps): the lifted refresh with a fixed ``δ`` is a deterministic map of the
momentum, which lets a rounding difference grow from step to step (a numpy run perturbed
by one ulp drifts the same way), so long runs of it agree only for a while.
"""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc import Ladder, LookAheadRule, sample
from ladder_mcmc.hamiltonian import (
    HarmonicFlow,
    JitteredLeapfrog,
    JitteredLengthLeapfrog,
    Leapfrog,
    LengthJitter,
    LiftedLeapfrog,
    LiftedQuantileRefresh,
    LiftResampleRefresh,
    McLachlan2,
    Metric,
    MomentumRefresh,
    NormalizedMomentumRefresh,
    PowerKinetic,
    StepSizeJitter,
    TemperedLeapfrog,
    Yoshida4,
    hmc,
    lahmc,
    lifted_lahmc,
    refined_lahmc,
    span_lahmc,
    state_length_lahmc,
)

jax = pytest.importorskip("jax")
jnp = jax.numpy

from ladder_mcmc.engine import jax_loop  # noqa: E402
from ladder_mcmc.models import from_jax  # noqa: E402

VARIANCES = np.array([1.0, 10.0, 0.5])
TARGET = from_jax(lambda x: -0.5 * jnp.sum(x**2 / jnp.asarray(VARIANCES)), dim=3)
X0 = np.random.default_rng(0).normal(size=(4, 3))
DIAG = Metric(np.array([1.0, 4.0, 0.5]))
DENSE = Metric(np.array([[1.0, 0.3, 0.0], [0.3, 2.0, 0.1], [0.0, 0.1, 0.7]]))
KIN = PowerKinetic(1.5, VARIANCES)


def _ladder(map_, refresh, look_ahead=3):
    return Ladder(map_, LookAheadRule(look_ahead), refresh)


def _kernels(t):
    return {
        "leapfrog, dense": _ladder(Leapfrog(t, 0.3, 5, DENSE), MomentumRefresh(0.3, DENSE)),
        "step jitter": _ladder(
            JitteredLeapfrog(t, 0.3, 5, DIAG), MomentumRefresh(0.5, DIAG) + StepSizeJitter(0.3), 4
        ),
        "length jitter": _ladder(
            JitteredLengthLeapfrog(t, 0.3, 5, DIAG), MomentumRefresh(0.5, DIAG) + LengthJitter(5), 4
        ),
        "lifted": _ladder(
            LiftedLeapfrog(t, 0.2, 4, KIN),
            LiftedQuantileRefresh(0.1, KIN, 0.5) + LiftResampleRefresh(0.2),
        ),
        "tempered": _ladder(TemperedLeapfrog(t, 0.2, 5, heat=2.0), MomentumRefresh(0.5)),
        "yoshida": _ladder(Yoshida4(t, 0.3, 3), MomentumRefresh(0.5)),
        "mclachlan": _ladder(McLachlan2(t, 0.3, 3, DIAG), MomentumRefresh(0.5, DIAG)),
        "harmonic": _ladder(HarmonicFlow(t, 0.8, 1.0), MomentumRefresh(0.5)),
        "power, normalized refresh": _ladder(
            Leapfrog(t, 0.2, 4, KIN), NormalizedMomentumRefresh(0.3, KIN)
        ),
        "power, full redraw": _ladder(
            Leapfrog(t, 0.2, 4, KIN), NormalizedMomentumRefresh(1.0, KIN)
        ),
        "hmc": hmc(t, 0.3, 5, 1.0),
        "lifted_lahmc": lifted_lahmc(t, 0.2, 6),
        "state_length_lahmc": state_length_lahmc(t, 0.2, time=1.5, max_steps=16, beta=0.5),
        "refined_lahmc": refined_lahmc(t, 0.6, n_steps=3, max_level=3, threshold=0.3, beta=0.5),
        "span_lahmc": span_lahmc(t, 0.6, n_steps=3, beta=0.5, min_level=-2, max_level=3),
    }


def _both(kernel, n=30, seed=3):
    run = {"seed": seed, "checks": False, "warmup": 0}
    return [sample(kernel, X0, n, backend=b, **run) for b in ("numpy", "jax")]


def _assert_same(a, b):
    assert a.backend["name"] == "numpy" and b.backend["name"] == "jax"
    np.testing.assert_allclose(b.positions, a.positions, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(b.rungs, a.rungs)
    np.testing.assert_array_equal(b.n_moves, a.n_moves)
    np.testing.assert_array_equal(b.grad_evals, a.grad_evals)


#: compared in the slow run only (each compilation costs seconds; the composition
#: property of tests/unit/engine compares compositions of these parts by default)
SLOW = {"lifted", "lifted_lahmc", "power, normalized refresh", "power, full redraw",
        "refined_lahmc", "span_lahmc", "yoshida", "mclachlan", "step jitter",
        "harmonic"}  # fmt: skip


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in _kernels(TARGET)],
)
def test_numpy_and_jax_take_the_same_steps(name):
    _assert_same(*_both(_kernels(TARGET)[name]))


def _lahmc(step_size, n_leapfrog, beta, inverse_mass):
    return lahmc(TARGET, step_size, n_leapfrog, beta, length_jitter=1.0, inverse_mass=inverse_mass)


def test_adapted_fields_are_traced_and_reuse_the_compilation():
    """The step size, length, its jitter's centre, β and the inverse mass are arguments
    of the compiled loop: three settings, one compilation, each the numpy loop's steps."""
    settings = [
        (0.3, 5, 0.5, np.ones(3)),
        (0.25, 7, 0.7, np.array([1.0, 9.0, 0.4])),
        (0.2, 3, 1.0, np.array([2.0, 9.0, 0.4])),
    ]
    _assert_same(*_both(_lahmc(*settings[0])))  # compiled here (or earlier, same structure)
    before = jax_loop.compilations()
    for setting in settings[1:]:
        _assert_same(*_both(_lahmc(*setting)))
    assert jax_loop.compilations() == before


@pytest.mark.parametrize(
    "make",  # lahmc, the default, in the default run; the others in the slow run
    [
        lahmc,
        pytest.param(hmc, marks=pytest.mark.slow),
        pytest.param(lifted_lahmc, marks=pytest.mark.slow),
    ],
)
def test_the_samplers_warm_up_and_run_on_jax(make):
    trace = sample(make(TARGET), X0, 20, seed=1, warmup=40, backend="jax", checks=False)
    assert trace.backend["name"] == "jax"
    assert trace.positions.shape == (20, 4, 3) and np.all(np.isfinite(trace.positions))
