"""``hamiltonian.kinetic``: the exponential-power kinetic energy and its exact partial refresh.

Statistical checks use fixed seeds and Kolmogorov–Smirnov tests at a Bonferroni-corrected
level (a correct implementation fails with probability ≤ 1e-4 per test for a random
seed; with the fixed seed the outcome is deterministic), or z-scores against the Monte
Carlo standard error.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ladder_mcmc import Ladder, Leapfrog, LookAheadRule, MomentumRefresh, PhaseState, Refresh
from ladder_mcmc.hamiltonian import Metric, NormalizedMomentumRefresh, PowerKinetic
from ladder_mcmc.models import IllConditionedGaussian, RoughWell
from ladder_mcmc.verify import assert_map, assert_one_step_invariance

INV_MASS = np.array([0.5, 4.0])


@pytest.mark.parametrize("a", [0.5, 1.0, 2.5, np.nan, True, "x"])
def test_bad_power_is_refused(a):
    with pytest.raises(ValueError, match="^a must be"):
        PowerKinetic(a, INV_MASS)


@pytest.mark.parametrize("m", [[1.0, -1.0], [[1.0, 0.0], [0.0, 1.0]], [np.inf], []])
def test_bad_inverse_mass_is_refused(m):
    with pytest.raises(ValueError, match="inverse_mass"):
        PowerKinetic(1.5, m)


def test_bad_refresh_parameters_are_refused():
    kin = PowerKinetic(1.5, INV_MASS)
    with pytest.raises(ValueError, match="beta"):
        NormalizedMomentumRefresh(1.5, kin)
    with pytest.raises(ValueError, match="kinetic must provide to_normal"):
        NormalizedMomentumRefresh(0.5, Metric(INV_MASS))


@pytest.mark.parametrize("a", [1.25, 1.5, 2.0])
def test_normal_transform_round_trips_and_is_odd(a):
    kin = PowerKinetic(a, INV_MASS)
    rng = np.random.default_rng(1)
    v = kin.sample_momentum(rng, (20_000, 2))
    z = kin.to_normal(v)
    np.testing.assert_allclose(kin.from_normal(z), v, rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(kin.to_normal(-v), -z)
    # far tails and tiny values survive the round trip (upper-tail / erf branches)
    zz = np.array([[1e-12, -1e-9], [8.0, -30.0], [0.0, 0.5]])
    np.testing.assert_allclose(kin.to_normal(kin.from_normal(zz)), zz, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("a", [1.25, 1.5])
def test_momenta_and_their_normal_transform_have_the_right_law(a):
    kin = PowerKinetic(a, INV_MASS)
    rng = np.random.default_rng(2)
    v = kin.sample_momentum(rng, (50_000, 2))
    y = np.abs(v * np.sqrt(INV_MASS)) ** a / a  # Gamma(1/a, 1) by construction
    for k in range(2):
        assert stats.kstest(y[:, k], stats.gamma(1 / a).cdf).pvalue > 1e-4
        assert stats.kstest(kin.to_normal(v)[:, k], "norm").pvalue > 1e-4


def test_power_two_is_the_gaussian_metric_and_refresh():
    """a = 2: same velocity, kinetic energy and — draw for draw — the same partial refresh."""
    kin, metric = PowerKinetic(2.0, INV_MASS), Metric(INV_MASS)
    rng = np.random.default_rng(3)
    v = rng.standard_normal((6, 2))
    np.testing.assert_allclose(kin.velocity(v), metric.velocity(v), rtol=1e-14)
    np.testing.assert_allclose(kin.kinetic(v), metric.kinetic(v), rtol=1e-14)
    state = Leapfrog(IllConditionedGaussian(2), 0.1, 1, metric).prepare(v, rng)
    d = np.array([1, -1, 1, -1, 1, 1], dtype=np.int8)
    ours, _ = NormalizedMomentumRefresh(0.3, kin)(state, d, np.random.default_rng(9))
    theirs, _ = MomentumRefresh(0.3, metric)(state, d, np.random.default_rng(9))
    np.testing.assert_allclose(ours.v, theirs.v, rtol=1e-12)


@pytest.mark.parametrize("beta", [0.1, 0.5])
def test_partial_refresh_keeps_the_momentum_law_and_persists(beta):
    """Three refreshes from exact draws: still exp(-K) (KS on |w|^a/a and on the signed
    momentum); corr(z, z') = √(1-β) per refresh, within 5 standard errors."""
    a, n = 1.5, 50_000
    kin = PowerKinetic(a, INV_MASS)
    rng = np.random.default_rng(4)
    lf = Leapfrog(IllConditionedGaussian(2), 0.1, 1, kin)
    state = lf.prepare(np.zeros((n, 2)), rng)
    d = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    refresh = NormalizedMomentumRefresh(beta, kin)
    z0 = kin.to_normal(d[:, None] * state.v)
    for _ in range(3):
        state, d = refresh(state, d, rng)
    z3 = kin.to_normal(d[:, None] * state.v)
    y = np.abs(state.v * np.sqrt(INV_MASS)) ** a / a
    for k in range(2):
        assert stats.kstest(y[:, k], stats.gamma(1 / a).cdf).pvalue > 1e-4
        assert stats.kstest(z3[:, k], "norm").pvalue > 1e-4
    corr = np.mean(z0 * z3, axis=0)
    expected = (1 - beta) ** 1.5
    se = np.sqrt((1 + expected**2) / n)
    assert np.all(np.abs(corr - expected) < 5 * se), (corr, expected, se)


@pytest.mark.parametrize("a", [1.25, 1.5])
@pytest.mark.parametrize("target", [RoughWell(), IllConditionedGaussian(2, log_condition=1)])
def test_power_leapfrog_is_a_valid_map(a, target):
    """Reversible and volume preserving. The velocity |w|^(a-1) is not differentiable at
    w = 0, where finite differences cannot measure the Jacobian (the shears preserve
    volume there too), so the momenta are chosen with |w| ≥ 1 and the trajectories are
    short enough not to bring any coordinate's momentum through 0."""
    m = np.asarray(getattr(target, "variances", [1e4, 1e4]), dtype=float)
    kin = PowerKinetic(a, m)
    lf = Leapfrog(target, 0.002 / np.sqrt(m.min()), 3, kin)
    rng = np.random.default_rng(5)
    w = rng.uniform(1.0, 2.0, (6, 2)) * np.where(rng.random((6, 2)) < 0.5, 1, -1)
    x = rng.normal(0, 1, (6, 2)) * np.sqrt(m)
    state = lf.prepare(PhaseState(x, w / np.sqrt(m), np.zeros(6), np.zeros((6, 2))), rng)
    assert_map(lf, state)


def test_power_lahmc_with_partial_refresh_keeps_the_target():
    """One step of LAHMC with K(v)=Σ|w|^1.5/1.5 and the normalised partial refresh."""
    target = IllConditionedGaussian(2, log_condition=1)
    kin = PowerKinetic(1.5, np.asarray(target.variances, dtype=float))
    kernel = Ladder(
        Leapfrog(target, 0.4, 3, kin), LookAheadRule(4), NormalizedMomentumRefresh(0.3, kin)
    )
    report = assert_one_step_invariance(kernel, target.sample, n_chains=40_000, seed=6)
    assert report.ok


class _UndeclaredRefresh(Refresh):
    """A refresh that declares no kinetic energy (so ``Ladder`` cannot check it)."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, state, direction, rng):
        return self.inner(state, direction, rng)


def test_gaussian_refresh_with_power_momenta_is_caught():
    """Gaussian momenta for a power kinetic energy are wrong: ``Ladder`` refuses them, and
    the invariance check catches them where the refresh declares nothing."""
    target = IllConditionedGaussian(2, log_condition=1)
    kin = PowerKinetic(1.5, np.asarray(target.variances, dtype=float))
    gaussian = MomentumRefresh(1.0, Metric(np.asarray(target.variances, dtype=float)))
    map_ = Leapfrog(target, 0.4, 3, kin)
    with pytest.raises(ValueError, match=r"draws momenta for Metric.*integrates PowerKinetic"):
        Ladder(map_, LookAheadRule(4), gaussian)
    wrong = Ladder(map_, LookAheadRule(4), _UndeclaredRefresh(gaussian))
    with pytest.raises(AssertionError, match="d·v"):
        assert_one_step_invariance(wrong, target.sample, n_chains=40_000, seed=6)


def test_refresh_describes_itself():
    kin = PowerKinetic(1.5, INV_MASS)
    d = NormalizedMomentumRefresh(0.25, kin).describe()
    assert d == {
        "refresh": "NormalizedMomentumRefresh",
        "beta": 0.25,
        "metric": "power-1.5 diagonal",
    }


def test_with_inverse_mass_keeps_the_exponent():
    kin = PowerKinetic(1.25, INV_MASS).with_inverse_mass(np.array([2.0, 3.0]))
    assert kin.a == 1.25
    np.testing.assert_array_equal(kin.inverse_mass, [2.0, 3.0])
    with pytest.raises(ValueError, match="inverse_mass"):
        kin.with_inverse_mass(np.eye(2))
