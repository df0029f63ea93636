"""Diagnostics against analytic cases: AR(1) autocorrelation and ESS, exact small cases.

Tolerances are derived from Monte Carlo standard errors, stated beside each test.
"""

from __future__ import annotations

import importlib
import types

import numpy as np
import pytest

from ladder_mcmc.diagnostics import (
    autocorrelation,
    autocorrelation_vs_grads,
    effective_sample_size,
    grads_to_threshold,
    split_rhat,
    transition_table,
)


def ar1(rho: float, steps: int, chains: int, dim: int | None = None, seed: int = 0) -> np.ndarray:
    """Stationary AR(1) series ``x_t = ρ x_{t-1} + sqrt(1-ρ²) e_t`` (unit variance, zero mean)."""
    rng = np.random.default_rng(seed)
    shape = (steps, chains) if dim is None else (steps, chains, dim)
    e = rng.standard_normal(shape)
    x = np.empty(shape)
    x[0] = e[0]
    s = np.sqrt(1 - rho**2)
    for t in range(1, steps):
        x[t] = rho * x[t - 1] + s * e[t]
    return x


def brute_autocorrelation(x: np.ndarray, max_lag: int, mean) -> np.ndarray:
    """The definition, with loops: mean lag-k product over pairs / mean square."""
    y = x - (x.mean(axis=(0, 1)) if mean is None else mean)
    n = y.shape[0]
    c = np.array([np.mean(y[: n - k] * y[k:]) for k in range(max_lag + 1)])
    return c / c[0]


@pytest.mark.parametrize("mean", [None, 0.0, np.array([0.5, -1.0, 2.0])])
def test_autocorrelation_equals_the_definition(mean):
    x = np.random.default_rng(1).standard_normal((37, 5, 3)).cumsum(axis=0)
    np.testing.assert_allclose(autocorrelation(x, 30, mean), brute_autocorrelation(x, 30, mean))


def test_autocorrelation_fft_blocks_agree(monkeypatch):
    """Summing periodograms in blocks of columns changes nothing."""
    # the module (the function ladder_mcmc.diagnostics.autocorrelation shadows it)
    d = importlib.import_module("ladder_mcmc.diagnostics.autocorrelation")

    x = np.random.default_rng(2).standard_normal((50, 7, 3))
    whole = autocorrelation(x, 20, 0.0)
    monkeypatch.setattr(d, "_FFT_BLOCK_ELEMENTS", 128)  # 1 column per block
    np.testing.assert_allclose(autocorrelation(x, 20, 0.0), whole)


def test_autocorrelation_of_ar1_is_rho_to_the_k():
    rho, steps, chains, dim = 0.9, 2000, 100, 2
    x = ar1(rho, steps, chains, dim, seed=3)
    r = autocorrelation(x, 20, mean=0.0)
    k = np.arange(21)
    # Bartlett's variance of the lag-k sample autocorrelation of an AR(1) series of
    # length N: [(1+ρ²)(1-ρ^{2k})/(1-ρ²) - 2kρ^{2k}] / N, with N = steps·chains·dim
    # independent-series points (chains and dimensions are independent). Allow 5 SE.
    n_total = steps * chains * dim
    var = ((1 + rho**2) * (1 - rho ** (2 * k)) / (1 - rho**2) - 2 * k * rho ** (2 * k)) / n_total
    se = np.sqrt(var)
    assert r[0] == 1.0
    assert np.all(np.abs(r[1:] - rho ** k[1:]) < 5 * se[1:]), (r, rho**k, se)


def test_autocorrelation_pools_dimensions_by_variance():
    """The paper's pooling: a wide dimension dominates a narrow one."""
    slow = ar1(0.99, 500, 20, seed=4)
    fast = ar1(0.0, 500, 20, seed=5)
    x = np.stack([1000 * slow, fast], axis=2)
    np.testing.assert_allclose(
        autocorrelation(x, 10, 0.0), autocorrelation(slow, 10, 0.0), atol=1e-5
    )


def test_autocorrelation_rejects_bad_input():
    with pytest.raises(ValueError, match="positions"):
        autocorrelation(np.zeros(5))
    with pytest.raises(ValueError, match="max_lag"):
        autocorrelation(np.zeros((5, 2, 1)), 5)


def test_autocorrelation_vs_grads_uses_thin_and_mean_cost():
    positions = ar1(0.5, 40, 3, 2, seed=6)
    trace = types.SimpleNamespace(
        positions=positions,
        thin=5,
        grad_evals_per_step=np.array([[10, 20], [10, 20]]),  # mean 15 per step
    )
    grads, rho = autocorrelation_vs_grads(trace, max_lag=52, mean=0.0)
    assert len(grads) == 11  # lags 0, 5, ..., 50 steps (52 rounded down to a multiple of 5)
    np.testing.assert_allclose(grads, np.arange(11) * 5 * 15.0)
    np.testing.assert_allclose(rho, autocorrelation(positions, 10, 0.0))


def test_grads_to_threshold_interpolates():
    g = np.array([0.0, 10.0, 20.0, 30.0])
    assert grads_to_threshold(g, np.array([1.0, 0.8, 0.4, 0.1])) == pytest.approx(17.5)
    assert grads_to_threshold(g, np.array([1.0, 0.5, 0.4, 0.1])) == 10.0
    # the first crossing counts, not a later one
    assert grads_to_threshold(g, np.array([1.0, 0.3, 0.9, 0.1])) == pytest.approx(10 * 0.5 / 0.7)
    assert grads_to_threshold(g, np.array([1.0, 0.9, 0.8, 0.7])) == np.inf
    assert np.isnan(grads_to_threshold(g, np.array([1.0, np.nan, 0.8, 0.7])))
    assert grads_to_threshold(g, np.array([1.0, 0.9, 0.3, 0.1]), threshold=0.9) == 10.0


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9, -0.5])
def test_ess_of_ar1(rho):
    steps, chains = 20000, 8
    x = ar1(rho, steps, chains, seed=7)
    truth = steps * chains * (1 - rho) / (1 + rho)
    ess = effective_sample_size(x)
    # Sokal's approximation: var(τ̂)/τ² ≈ 2(2W+1)/N for a truncation window W. Geyer's
    # sequence stops at W ≲ 60 lags here even for ρ = 0.9 (where ρ^60 < 0.002), so
    # the relative SD of the ESS is at most sqrt(2·121/160000) ≈ 3.9%; allow 4 SD.
    assert abs(ess / truth - 1) < 4 * np.sqrt(2 * 121 / (steps * chains)), (ess, truth)


def test_ess_shapes_and_split():
    x = ar1(0.5, 400, 4, 3, seed=8)
    out = effective_sample_size(x)
    assert out.shape == (3,)
    assert effective_sample_size(x[:, :, 0]) == pytest.approx(out[0])
    # a drift within every chain: splitting sees it, the unsplit estimate does not
    drift = x[:, :, 0] + np.linspace(0, 3, 400)[:, None]
    assert effective_sample_size(drift) < 0.5 * effective_sample_size(drift, split=False)


def test_split_rhat_exact_small_case():
    x = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 6.0], [1.0, 0.0]])
    # halves: [0,2],[1,3],[4,1],[6,0] (steps × 4 half-chains)
    halves = np.array([[0.0, 1.0, 4.0, 6.0], [2.0, 3.0, 1.0, 0.0]])
    n = 2
    w = halves.var(axis=0, ddof=1).mean()
    b_over_n = halves.mean(axis=0).var(ddof=1)
    expected = np.sqrt(((n - 1) / n * w + b_over_n) / w)
    assert split_rhat(x) == pytest.approx(expected)


def test_split_rhat_flags_disagreeing_chains():
    x = ar1(0.5, 2000, 4, seed=9)
    assert abs(split_rhat(x) - 1) < 0.01
    assert split_rhat(x + np.array([0, 0, 0, 2.0])) > 1.1


def test_transition_table_exact():
    trace = types.SimpleNamespace(rungs=np.array([[1], [1], [0], [0]], dtype=np.int8), max_rung=2)
    table = transition_table(trace, n_batches=2)
    assert table["fractions"] == {"F": 0.5, "L1": 0.5, "L2": 0.0}
    # batch fractions of L1: 1 and 0 -> sd 1/sqrt(2), se = sd / sqrt(2) = 0.5
    assert table["stderr"]["L1"] == pytest.approx(0.5)
    assert table["stderr"]["L2"] == 0.0
    stay = types.SimpleNamespace(rungs=np.array([[1], [-1], [0], [-1]]), max_rung=1)
    assert transition_table(stay, n_batches=2)["fractions"]["stay"] == 0.5


def test_transition_table_stderr_matches_binomial_for_independent_steps():
    rng = np.random.default_rng(10)
    p = np.array([0.3, 0.6, 0.1])
    rungs = rng.choice(3, size=(4000, 50), p=p).astype(np.int8)
    table = transition_table(types.SimpleNamespace(rungs=rungs, max_rung=2), n_batches=20)
    n = rungs.size
    for name, q in zip(("F", "L1", "L2"), p, strict=True):
        binomial = np.sqrt(q * (1 - q) / n)
        assert abs(table["fractions"][name] - q) < 5 * binomial
        # the batch-means SE from 20 batches has relative SD 1/sqrt(2·19) ≈ 16%: allow ±50%
        assert 0.5 < table["stderr"][name] / binomial < 1.5


def test_ess_and_rhat_match_arviz():
    az = pytest.importorskip("arviz")
    x = ar1(0.7, 1001, 4, seed=11)
    x[:, 1] += 0.3  # chains that slightly disagree
    assert effective_sample_size(x) == pytest.approx(float(az.ess(x.T, method="mean")), rel=1e-10)
    assert split_rhat(x) == pytest.approx(float(az.rhat(x.T, method="split")), rel=1e-10)
    y = ar1(0.95, 300, 3, seed=12)  # strong correlation: a long Geyer sequence
    assert effective_sample_size(y) == pytest.approx(float(az.ess(y.T, method="mean")), rel=1e-10)


def geyer_ess_reference(x: np.ndarray) -> float:
    """ESS of (steps, chains) ``x`` with Geyer's sequences written as loops (ArviZ's ``_ess``)."""
    n, m = x.shape
    y = x - x.mean(axis=0)
    acov = np.array([[np.dot(y[: n - t, c], y[t:, c]) / n for c in range(m)] for t in range(n)])
    mean_acov = acov.mean(axis=1)
    mean_var = mean_acov[0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n + (np.var(x.mean(axis=0), ddof=1) if m > 1 else 0.0)
    rho = 1.0 - (mean_var - mean_acov) / var_plus
    out = np.zeros(n)
    out[0], out[1] = 1.0, rho[1]
    even, odd = 1.0, rho[1]
    t = 1
    while t < n - 3 and even + odd > 0.0:
        even, odd = rho[t + 1], rho[t + 2]
        if even + odd >= 0:
            out[t + 1], out[t + 2] = even, odd
        t += 2
    max_t = t - 2
    if even > 0:
        out[max_t + 1] = even
    t = 1
    while t <= max_t - 2:
        if out[t + 1] + out[t + 2] > out[t - 1] + out[t]:
            out[t + 1] = out[t + 2] = (out[t - 1] + out[t]) / 2.0
        t += 2
    tau = -1.0 + 2.0 * out[: max_t + 1].sum() + out[max_t + 1 : max_t + 2].sum()
    return n * m / max(tau, 1 / np.log10(n * m))


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_ess_equals_the_loops(seed):
    """Every way Geyer's sequences can end: short and long, anti-correlated and drifting."""
    rng = np.random.default_rng(seed)
    for _ in range(20):
        steps, chains = int(rng.integers(4, 120)), int(rng.integers(1, 5))
        x = ar1(float(rng.uniform(-0.9, 0.99)), steps, chains, seed=int(rng.integers(1 << 30)))
        got = effective_sample_size(x, split=False)
        want = geyer_ess_reference(x) if steps >= 4 else np.nan
        assert got == pytest.approx(want, rel=1e-10), (steps, chains)
