"""``ladder_mcmc.hamiltonian.TemperedLeapfrog``: a valid ladder map that keeps the target."""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc import Leapfrog, LookAhead, MomentumRefresh, PhaseState
from ladder_mcmc.hamiltonian import (
    Metric,
    NormalizedMomentumRefresh,
    PowerKinetic,
    TemperedLeapfrog,
)
from ladder_mcmc.models import IllConditionedGaussian, RoughWell
from ladder_mcmc.verify import assert_map, assert_one_step_invariance


@pytest.mark.parametrize("heat", [0.5, 0.0, -1.0, np.nan, np.inf, "hot"])
def test_bad_heat_is_refused(heat):
    with pytest.raises(ValueError, match="heat"):
        TemperedLeapfrog(RoughWell(), 0.1, 10, heat=heat)


@pytest.mark.parametrize("n_steps", [1, 2, 7, 20])
def test_tempered_rung_is_reversible_and_volume_preserving(n_steps):
    """On a Gaussian (linear dynamics: finite differences are exact) and on the rough
    well with short rungs (longer ones are chaotic there, beyond finite differences)."""
    rng = np.random.default_rng(n_steps)
    gauss = IllConditionedGaussian(3, log_condition=2)
    lf = TemperedLeapfrog(gauss, 0.3, n_steps, heat=4.0)
    assert_map(lf, lf.prepare(gauss.sample(6, rng), rng))
    well = RoughWell()
    lf = TemperedLeapfrog(well, 0.002, min(n_steps, 4), Metric(np.array([1e4, 1e4])), heat=4.0)
    assert_map(lf, lf.prepare(rng.normal(0, 60, (6, 2)), rng))


def test_tempered_power_rung_is_reversible_and_volume_preserving():
    """With the power kinetic energy, away from w = 0 (see test_kinetic_power.py)."""
    target = IllConditionedGaussian(2, log_condition=1)
    m = np.asarray(target.variances, dtype=float)
    lf = TemperedLeapfrog(target, 0.002, 4, PowerKinetic(1.5, m), heat=4.0)
    rng = np.random.default_rng(7)
    w = rng.uniform(1.0, 2.0, (6, 2)) * np.where(rng.random((6, 2)) < 0.5, 1, -1)
    x = target.sample(6, rng)
    state = lf.prepare(PhaseState(x, w / np.sqrt(m), np.zeros(6), np.zeros((6, 2))), rng)
    assert_map(lf, state)


def test_heat_one_is_leapfrog():
    target = RoughWell()
    rng = np.random.default_rng(0)
    plain = Leapfrog(target, 0.3, 9)
    tempered = TemperedLeapfrog(target, 0.3, 9, heat=1.0)
    state = plain.prepare(rng.normal(0, 50, (5, 2)), rng)
    a, b = plain.forward(state), tempered.forward(state)
    np.testing.assert_allclose(b.x, a.x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.v, a.v, rtol=1e-12, atol=1e-12)


def test_the_middle_of_the_rung_is_hot():
    """With no force, the momentum is multiplied by √heat by the middle and restored."""

    class Flat:
        dim = 1

        def energy(self, x):
            return np.zeros(len(x))

        def grad(self, x):
            return np.zeros_like(x)

    lf = TemperedLeapfrog(Flat(), 1.0, 10, heat=9.0)
    rng = np.random.default_rng(0)
    s = lf.prepare(np.zeros((1, 1)), rng)
    end = lf.forward(s)
    np.testing.assert_allclose(end.v, s.v, rtol=1e-14)
    # drift per step: v·√α^k for k = 1..5 then 5..1 (√α = 9^(1/10)); total displacement
    up = 9.0**0.1
    steps = [up**k for k in range(1, 6)] + [up**k for k in range(5, 0, -1)]
    np.testing.assert_allclose(end.x, s.v * sum(steps), rtol=1e-12)
    assert lf.describe()["heat"] == 9.0


@pytest.mark.parametrize("refresh", ["gauss", "power"])
def test_tempered_lahmc_keeps_the_target(refresh):
    target = IllConditionedGaussian(2, log_condition=1)
    var = np.asarray(target.variances, dtype=float)
    if refresh == "gauss":
        kin, ref = Metric(var), MomentumRefresh(0.5, Metric(var))
    else:
        kin = PowerKinetic(1.5, var)
        ref = NormalizedMomentumRefresh(0.5, kin)
    kernel = LookAhead(TemperedLeapfrog(target, 0.3, 6, kin, heat=3.0), 4, ref)
    report = assert_one_step_invariance(kernel, target.sample, n_chains=40_000, seed=11)
    assert report.ok
