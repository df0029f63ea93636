"""``ladder_mcmc.hamiltonian.lifted``: the lifted refresh of the kinetic-energy quantile.

Statistical checks use fixed seeds: Kolmogorov–Smirnov tests at Bonferroni-corrected
levels, or z-scores against the Monte Carlo standard error (independent draws: the
standard deviation over √n; a chain: the standard deviation over √ESS) with the
threshold 4.5 (two-sided tail 7e-6 per quantity).
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from scipy import stats

from ladder_mcmc import Ladder, LookAheadRule, Warmup, sample
from ladder_mcmc.diagnostics import effective_sample_size
from ladder_mcmc.hamiltonian import (
    Leapfrog,
    LiftedLeapfrog,
    LiftedPhaseState,
    LiftedQuantileRefresh,
    LiftResampleRefresh,
    Metric,
    NormalizedMomentumRefresh,
    PowerKinetic,
    lifted_lahmc,
)
from ladder_mcmc.hamiltonian.lifted import lifted_uniform_step, quantiles
from ladder_mcmc.hamiltonian.warmup.parameters import with_hmc_parameters
from ladder_mcmc.ladder import Refresh
from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian, RoughWell
from ladder_mcmc.verify import assert_map, assert_one_step_invariance

TARGET = IllConditionedGaussian(2, log_condition=1)
VARIANCES = np.asarray(TARGET.variances, dtype=float)
Z_MAX = 4.5


@attrs.frozen
class NoFlipRefresh(LiftedQuantileRefresh):
    """A broken variant: reflects at the ends of (0, 1) but keeps the lift."""

    def __call__(self, state, direction, rng):
        new, d = super().__call__(state, direction, rng)
        u, _ = quantiles(self.kinetic.to_normal(state.v))
        reflected = np.where(state.lift > 0, u + self.delta > 1, u < self.delta)
        return attrs.evolve(new, lift=np.where(reflected, -new.lift, new.lift)), d


def _features(kin):
    """Position, physical momentum, lift and lift × quantile: the joint law of (x, v, s)."""

    def features(ks):
        st = ks.state
        d = ks.direction[:, None].astype(float)
        u, _ = quantiles(kin.to_normal(st.v))
        return np.concatenate([st.x, d * st.v, st.lift, st.lift * (u - 0.5)], axis=1)

    return features


def _kernel(refresh_cls=LiftedQuantileRefresh, a=1.5, delta=0.3, jitter=0.0, extra=None):
    kin = PowerKinetic(a, VARIANCES)
    refresh: Refresh = refresh_cls(delta, kin, jitter)
    if extra is not None:
        refresh = extra(kin) + refresh
    return Ladder(LiftedLeapfrog(TARGET, 0.4, 3, kin), LookAheadRule(4), refresh), kin


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("delta", [0.0, -0.1, 1.5, np.nan, True, "x", None])
def test_bad_delta_is_refused(delta):
    with pytest.raises(ValueError, match="^delta must be"):
        LiftedQuantileRefresh(delta, PowerKinetic(1.5, VARIANCES))


@pytest.mark.parametrize("jitter", [-0.1, 1.5, np.nan, True, "x"])
def test_bad_jitter_is_refused(jitter):
    with pytest.raises(ValueError, match="^jitter must be"):
        LiftedQuantileRefresh(0.1, PowerKinetic(1.5, VARIANCES), jitter)


def test_delta_too_large_for_its_jitter_is_refused():
    with pytest.raises(ValueError, match="delta \\* \\(1 \\+ jitter\\)"):
        LiftedQuantileRefresh(0.8, PowerKinetic(1.5, VARIANCES), 0.5)


def test_kinetic_without_normal_transform_is_refused():
    with pytest.raises(ValueError, match="kinetic must provide to_normal"):
        LiftedQuantileRefresh(0.1, Metric(VARIANCES))


@pytest.mark.parametrize("prob", [-0.1, 1.5, np.nan])
def test_bad_resample_probability_is_refused(prob):
    with pytest.raises(ValueError, match="prob"):
        LiftResampleRefresh(prob)


def test_refresh_needs_a_lifted_state():
    kin = PowerKinetic(1.5, VARIANCES)
    rng = np.random.default_rng(0)
    plain = Leapfrog(TARGET, 0.4, 3, kin).prepare(np.zeros((3, 2)), rng)
    d = np.ones(3, dtype=np.int8)
    with pytest.raises(ValueError, match="lift"):
        LiftedQuantileRefresh(0.1, kin)(plain, d, rng)
    with pytest.raises(ValueError, match="lift"):
        LiftResampleRefresh(0.1)(plain, d, rng)


def test_bad_initial_lift_is_refused():
    kin = PowerKinetic(1.5, VARIANCES)
    lf = LiftedLeapfrog(TARGET, 0.4, 3, kin)
    rng = np.random.default_rng(0)
    st = lf.prepare(np.zeros((3, 2)), rng)
    with pytest.raises(ValueError, match="init.lift"):
        lf.prepare(attrs.evolve(st, lift=np.zeros((3, 2))), rng)
    with pytest.raises(ValueError, match="init.lift"):
        lf.prepare(attrs.evolve(st, lift=np.ones((3, 1))), rng)


# ------------------------------------------------------------------ exact properties


def test_step_is_a_bijection_inverted_by_flipping_the_lift():
    """T⁻¹ = S T S with S (u, s) = (u, -s): to rounding, for δ up to ~1 and u near 0 and 1."""
    rng = np.random.default_rng(1)
    n = 100_000
    u = rng.random(n)
    u[:4] = [1e-17, 1 - 1e-16, 0.5, 1e-300]
    q = 1.0 - u
    s = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    for delta in (0.01, 0.3, rng.random(n), 0.999):
        u1, q1, s1 = lifted_uniform_step(u, q, s, delta)
        assert np.all((u1 >= 0) & (u1 <= 1)) and np.all(np.abs(s1) == 1)
        np.testing.assert_allclose(u1 + q1, 1.0, atol=1e-15)
        u2, q2, s2 = lifted_uniform_step(u1, q1, -s1, delta)
        np.testing.assert_allclose(u2, u, atol=1e-15)
        # u within rounding of 0 or 1 (below the resolution of u ± δ): the sign of the
        # way back is decided by rounding there, a null set
        resolved = np.minimum(u, q) > 1e-12
        np.testing.assert_array_equal(-s2[resolved], s[resolved])


def test_refresh_keeps_sign_and_moves_the_quantile_by_delta():
    kin = PowerKinetic(1.25, VARIANCES)
    lf = LiftedLeapfrog(TARGET, 0.4, 3, kin)
    rng = np.random.default_rng(2)
    st = lf.prepare(np.zeros((1000, 2)), rng)
    d = np.ones(1000, dtype=np.int8)
    new, _ = LiftedQuantileRefresh(0.1, kin)(st, d, rng)
    np.testing.assert_array_equal(np.sign(new.v), np.sign(st.v))
    u0, _ = quantiles(kin.to_normal(st.v))
    u1, _ = quantiles(kin.to_normal(new.v))
    inside = (u0 + st.lift * 0.1 > 0) & (u0 + st.lift * 0.1 < 1)
    np.testing.assert_allclose(u1[inside], (u0 + 0.1 * st.lift)[inside], atol=1e-9)
    np.testing.assert_array_equal(new.lift[inside], st.lift[inside])
    np.testing.assert_array_equal(new.lift[~inside], -st.lift[~inside])


@pytest.mark.parametrize("a", [1.25, 2.0])
def test_lifted_leapfrog_is_a_valid_map_and_carries_the_lift(a):
    kin = PowerKinetic(a, VARIANCES)
    lf = LiftedLeapfrog(TARGET, 0.05, 3, kin)
    rng = np.random.default_rng(3)
    w = rng.uniform(1.0, 2.0, (6, 2)) * np.where(rng.random((6, 2)) < 0.5, 1, -1)
    st = lf.prepare(TARGET.sample(6, rng), rng)
    st = lf.prepare(attrs.evolve(st, v=w / np.sqrt(VARIANCES)), rng)
    assert isinstance(st, LiftedPhaseState)
    assert_map(lf, st)
    moved = lf.move(st, np.array([1, -1, 1, -1, 1, 1]))
    np.testing.assert_array_equal(moved.lift, st.lift)
    np.testing.assert_array_equal(lf.forward(st).lift, st.lift)
    np.testing.assert_array_equal(lf.flip(st).lift, st.lift)
    plain = Leapfrog(TARGET, 0.05, 3, kin).move(st, np.ones(6))
    np.testing.assert_array_equal(lf.move(st, np.ones(6)).x, plain.x)


# ------------------------------------------------------------------ invariance


def test_refresh_alone_keeps_uniform_quantile_and_lift():
    """Five refreshes from exact draws: u still uniform (KS, Bonferroni over 4 tests at
    1e-4), and the means of s, s·(u − ½) and sign(v) still 0 within 4.5 standard errors."""
    kin = PowerKinetic(1.25, VARIANCES)
    lf = LiftedLeapfrog(TARGET, 0.4, 3, kin)
    rng = np.random.default_rng(4)
    n = 50_000
    st = lf.prepare(np.zeros((n, 2)), rng)
    d = np.ones(n, dtype=np.int8)
    refresh = LiftedQuantileRefresh(0.37, kin, jitter=0.5)
    for _ in range(5):
        st, d = refresh(st, d, rng)
    u, _ = quantiles(kin.to_normal(st.v))
    for k in range(2):
        assert stats.kstest(u[:, k], "uniform").pvalue > 1e-4 / 4
        assert stats.kstest(u[st.lift[:, k] > 0, k], "uniform").pvalue > 1e-4 / 4
    for f, sd in ((st.lift, 1.0), (st.lift * (u - 0.5), np.sqrt(1 / 12)), (np.sign(st.v), 1.0)):
        z = f.mean(axis=0) / (sd / np.sqrt(n))
        assert np.all(np.abs(z) < Z_MAX), z


@pytest.mark.parametrize("jitter", [0.0, 0.5])
@pytest.mark.parametrize("a", [1.5, 2.0])
def test_lifted_lahmc_keeps_the_extended_target(a, jitter):
    kernel, kin = _kernel(a=a, jitter=jitter)
    report = assert_one_step_invariance(
        kernel, TARGET.sample, n_chains=40_000, seed=6, features=_features(kin)
    )
    assert report.ok


def test_composed_with_partial_refresh_and_resampling_keeps_the_target():
    kin = PowerKinetic(1.5, VARIANCES)
    refresh = (
        NormalizedMomentumRefresh(0.1, kin)
        + LiftedQuantileRefresh(0.3, kin, 0.5)
        + LiftResampleRefresh(0.2)
    )
    kernel = Ladder(LiftedLeapfrog(TARGET, 0.4, 3, kin), LookAheadRule(4), refresh)
    report = assert_one_step_invariance(
        kernel, TARGET.sample, n_chains=40_000, seed=7, features=_features(kin)
    )
    assert report.ok


def test_the_invariance_check_catches_a_reflection_without_flip():
    """Power of the check: reflecting without flipping s puts mass 2 on (1-δ, 1) for
    s = +1 and none on (0, δ)."""
    kernel, kin = _kernel(refresh_cls=NoFlipRefresh)
    with pytest.raises(AssertionError, match="one step changed"):
        assert_one_step_invariance(
            kernel, TARGET.sample, n_chains=40_000, seed=6, features=_features(kin)
        )


def test_long_run_moments_on_a_gaussian():
    """4 chains × 3000 steps of the lifted kernel on a 2-d Gaussian (fixed δ, the
    rough-well setting's δ): mean and variance of each coordinate within 4.5 MCSE,
    MCSE from the chain's ESS (Bonferroni over 4 quantities: 2.8e-5 in all)."""
    kin = PowerKinetic(1.25, VARIANCES)
    kernel = Ladder(
        LiftedLeapfrog(TARGET, 0.5, 3, kin), LookAheadRule(4), LiftedQuantileRefresh(0.06, kin)
    )
    rng = np.random.default_rng(8)
    trace = sample(kernel, TARGET.sample(4, rng), 3000, seed=rng, warmup=0)
    x = trace.positions  # (steps, chains, dim)
    for f, truth in ((x, 0.0), (x * x, VARIANCES)):
        ess = effective_sample_size(f)
        mcse = f.reshape(-1, 2).std(axis=0) / np.sqrt(ess)
        z = (f.reshape(-1, 2).mean(axis=0) - truth) / mcse
        assert np.all(np.abs(z) < Z_MAX), (z, ess)


def test_rough_well_kernel_runs_and_describes_itself():
    kin = PowerKinetic(1.25, np.full(2, 1e4))
    refresh = LiftedQuantileRefresh(0.06, kin)
    kernel = Ladder(LiftedLeapfrog(RoughWell(), 0.01, 30, kin), LookAheadRule(4), refresh)
    trace = sample(kernel, np.zeros((2, 2)), 20, seed=0, warmup=0)
    assert np.all(np.isfinite(trace.positions))
    assert refresh.describe() == {
        "refresh": "LiftedQuantileRefresh",
        "delta": 0.06,
        "jitter": 0.0,
        "metric": "power-1.25 diagonal",
    }
    assert kernel.map.describe()["map"] == "LiftedLeapfrog"


# ------------------------------------------------------------------ lifted_lahmc


def test_lifted_lahmc_is_the_hand_built_kernel_draw_for_draw():
    kin = PowerKinetic(1.5, VARIANCES)
    by_hand = Ladder(
        LiftedLeapfrog(TARGET, 0.4, 3, kin), LookAheadRule(2), LiftedQuantileRefresh(0.2, kin)
    )
    built = lifted_lahmc(TARGET, 0.4, 3, delta=0.2, look_ahead=2, a=1.5, inverse_mass=VARIANCES)
    assert built.describe() == by_hand.describe()
    init = TARGET.sample(3, np.random.default_rng(0))
    a, b = sample(built, init, 30, seed=1, warmup=0), sample(by_hand, init, 30, seed=1, warmup=0)
    np.testing.assert_array_equal(a.positions, b.positions)


def test_lifted_lahmc_defaults_and_warm_up_adapt_its_kinetic_energy():
    kernel = lifted_lahmc(RoughWell(), n_leapfrog=30)  # ε and the mass left to warm-up
    assert kernel.map.metric.a == 1.25 and kernel.rule.max_rungs == 4
    assert kernel.refresh.delta == 0.06
    np.testing.assert_array_equal(kernel.map.metric.inverse_mass, np.ones(2))
    trace = sample(kernel, np.zeros((4, 2)), 50, seed=0, warmup=Warmup(200, target_prob=0.7))
    m = trace.warmup.inverse_mass
    assert m.shape == (2,) and np.all(np.isfinite(m)) and not np.array_equal(m, np.ones(2))
    adapted = with_hmc_parameters(kernel, trace.warmup.step_size, Metric(m))
    for kin in (adapted.map.metric, adapted.refresh.kinetic):
        assert isinstance(kin, PowerKinetic) and kin.a == 1.25
        np.testing.assert_array_equal(kin.inverse_mass, m)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"a": 2.5}, "a"),
        ({"delta": 0.0}, "delta"),
        ({"look_ahead": 0}, "look_ahead"),
        ({"n_leapfrog": 0}, "n_leapfrog"),
        ({"inverse_mass": [1.0, -1.0]}, "inverse_mass"),
    ],
)
def test_lifted_lahmc_refuses_bad_settings(kwargs, name):
    args = {"target": RoughWell(), "step_size": 0.5, "n_leapfrog": 30, **kwargs}
    with pytest.raises(ValueError, match=name):
        lifted_lahmc(**args)


def test_lifted_lahmc_needs_a_dimension():
    target = FunctionTarget(lambda x: 0.5 * (x**2).sum(1), lambda x: x)
    with pytest.raises(ValueError, match="inverse_mass is needed"):
        lifted_lahmc(target, 0.5, 10)
    assert lifted_lahmc(target, 0.5, 10, inverse_mass=np.ones(3)).map.metric.dim == 3


def _rough_well_second_moment() -> float:
    """E[x_i²] of the rough well's (independent) coordinates, by quadrature."""
    t = RoughWell()
    x = np.linspace(-800.0, 800.0, 1_600_001)
    w = np.exp(-(x**2) / (2 * t.sigma1**2) - np.cos(np.pi * x / t.sigma2))
    return float((w * x**2).sum() / w.sum())


@pytest.mark.slow
def test_rough_well_setting_draws_the_right_moments():
    """The benchmark's lifted setting (a = 1.25, fixed δ = 0.06, M = 30, K = 4) at the
    adapted scale (inverse mass 10⁴, ε = 0.01), 4 chains × 4000 steps from exact draws:
    mean and second moment of both coordinates within 4.5 MCSE (ESS of each quantity;
    Bonferroni over 4 quantities: a correct run fails with probability ≤ 3e-5)."""
    target = RoughWell()
    kin = PowerKinetic(1.25, np.full(2, 1e4))
    kernel = Ladder(
        LiftedLeapfrog(target, 0.01, 30, kin), LookAheadRule(4), LiftedQuantileRefresh(0.06, kin)
    )
    rng = np.random.default_rng(11)
    trace = sample(kernel, target.sample(4, rng), 4000, seed=rng, warmup=0)
    x = trace.positions
    for f, truth in ((x, 0.0), (x * x, _rough_well_second_moment())):
        ess = effective_sample_size(f)
        flat = f.reshape(-1, 2)
        z = (flat.mean(axis=0) - truth) / (flat.std(axis=0, ddof=1) / np.sqrt(ess))
        assert np.all(np.abs(z) < Z_MAX), (z, ess)
