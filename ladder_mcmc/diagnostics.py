"""Diagnostics: the paper's autocorrelation, gradients to a threshold, ESS, R-hat, rung tables.

* :func:`autocorrelation` — the autocorrelation of the paper's figures 2 and 3:
  pooled over dimensions and chains, with a known mean (zero for the paper's
  targets) or an estimated one, computed by FFT;
* :func:`autocorrelation_vs_grads` — the same against gradient evaluations per
  chain (the x axis of the paper's figure 2);
* :func:`grads_to_threshold` — gradient evaluations until the autocorrelation
  first falls to a threshold (0.5: the colour of the paper's figure 3);
* :func:`effective_sample_size` — multi-chain ESS with Geyer's initial monotone
  sequence (Geyer 1992; the estimator of Stan and ArviZ, Vehtari et al. 2021);
* :func:`split_rhat` — the split potential scale reduction factor (Gelman et al.,
  BDA3, section 11.4);
* :func:`transition_table` — the fractions of the paper's table 1 with batch-means
  standard errors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ladder_mcmc.validation import positive_int

__all__ = [
    "autocorrelation",
    "autocorrelation_vs_grads",
    "effective_sample_size",
    "grads_to_threshold",
    "split_rhat",
    "transition_table",
]

# Bound on the complex FFT workspace (elements) when pooling many series.
_FFT_BLOCK_ELEMENTS = 1 << 24


def _lagged_sums(series: np.ndarray, max_lag: int, centre: np.ndarray | None = None) -> np.ndarray:
    """``S_k = Σ_j Σ_{t < T-k} y_{t,j} y_{t+k,j}`` for ``k = 0..max_lag`` (series on axis 0).

    ``y = series - centre`` (``centre`` broadcast over the trailing axes),
    formed one block of columns at a time, so that no centred copy of the
    whole series is made. By FFT: the periodogram of each zero-padded column
    (length ≥ 2T, so no wrap-around), summed over columns in blocks, then one
    inverse transform.
    """
    n = series.shape[0]
    cols = series.reshape(n, -1)
    shift = None
    if centre is not None:
        shift = np.broadcast_to(centre, series.shape[1:]).reshape(-1)
    n_fft = 1 << int(math.ceil(math.log2(2 * n)))
    power = np.zeros(n_fft // 2 + 1)
    block = max(1, _FFT_BLOCK_ELEMENTS // n_fft)
    for start in range(0, cols.shape[1], block):
        part = cols[:, start : start + block]
        if shift is not None:
            part = part - shift[start : start + block]
        f = np.fft.rfft(part, n=n_fft, axis=0)
        power += (f.real**2 + f.imag**2).sum(axis=1)
    return np.fft.irfft(power, n=n_fft)[: max_lag + 1]


def autocorrelation(
    positions: np.ndarray,
    max_lag: int | None = None,
    mean: float | np.ndarray | None = None,
) -> np.ndarray:
    """The paper's autocorrelation, pooled over dimensions and chains.

    With ``y = x - μ``,

    ``ρ(k) = [Σ_{c,i} Σ_{t<T-k} y_{t,c,i} y_{t+k,c,i} / (T-k)] / [Σ_{c,i} Σ_t y²_{t,c,i} / T]``,

    i.e. the mean lag-``k`` product over every chain, dimension and available
    pair, divided by the mean square. This is the estimator of the authors'
    code for figure 2 (``calc_corr``, with ``μ = 0``): dimensions are weighted
    by their variance, so for an ill-conditioned Gaussian ``ρ`` follows the
    slow, wide directions.

    Parameters
    ----------
    positions : array (steps, chains, dim) or (steps, chains)
        Draws, one row per kept step (lags are counted in rows).
    max_lag : int, optional
        Largest lag returned (rows); default ``steps - 1``.
    mean : float or array (dim,), optional
        The known mean ``μ`` (``0`` for the paper's targets, which is what the
        paper uses). If omitted, ``μ`` is estimated per dimension from all
        chains and steps.

    Returns
    -------
    array (max_lag + 1,)
        ``ρ(0) = 1``, ``ρ(1)``, …; ``NaN`` everywhere if the draws are constant.

    Raises
    ------
    ValueError
        If ``positions`` is not 2- or 3-dimensional with at least 2 rows, or
        ``max_lag`` is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = np.cumsum(rng.standard_normal((1000, 8, 2)), axis=0)  # random walks
    >>> rho = autocorrelation(x, max_lag=10)
    >>> rho.shape, float(rho[0])
    ((11,), 1.0)
    >>> bool(rho[10] > 0.5)
    True
    """
    x = np.asarray(positions, dtype=float)
    if x.ndim == 2:
        x = x[:, :, None]
    if x.ndim != 3 or x.shape[0] < 2:
        raise ValueError(
            f"positions must have shape (steps, chains[, dim]) with steps >= 2, got {x.shape}"
        )
    n = x.shape[0]
    if max_lag is None:
        max_lag = n - 1
    max_lag = positive_int("max_lag", max_lag, minimum=0)
    if max_lag > n - 1:
        raise ValueError(f"max_lag must be <= steps - 1 = {n - 1}, got {max_lag}")
    centre = x.mean(axis=(0, 1)) if mean is None else np.asarray(mean, dtype=float)
    sums = _lagged_sums(x, max_lag, centre)  # centred block by block: no copy of x
    pairs = (n - np.arange(max_lag + 1)) * x.shape[1] * x.shape[2]
    cov = sums / pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        return cov / cov[0]


def autocorrelation_vs_grads(
    trace: Any,
    max_lag: int | None = None,
    mean: float | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The autocorrelation of a trace against gradient evaluations per chain (paper, figure 2).

    Lag ``k`` sampling steps is placed at ``k · ḡ`` gradient evaluations, where
    ``ḡ`` is the mean number of gradient evaluations per step and chain over
    the run (``trace.grad_evals_per_step.mean()``), as in the authors' code.

    Parameters
    ----------
    trace : Trace
        A run of a leapfrog kernel (positions recorded every ``trace.thin`` steps).
    max_lag : int, optional
        Largest lag in *sampling steps* (rounded down to a multiple of
        ``trace.thin``); default: the whole recorded run.
    mean : float or array (dim,), optional
        Known mean (see :func:`autocorrelation`); estimated if omitted.

    Returns
    -------
    grad_evals : array (n_lags,)
        Gradient evaluations per chain at each lag.
    autocorr : array (n_lags,)
        :func:`autocorrelation` at lags ``0, thin, 2·thin, …``.

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import hmc, sample
    >>> from ladder_mcmc.targets import IllConditionedGaussian
    >>> target = IllConditionedGaussian(2, log_condition=2)
    >>> x0 = target.sample(10, np.random.default_rng(0))
    >>> trace = sample(hmc(target, 0.5, 5, beta=1.0), x0, 200, seed=1)
    >>> grads, rho = autocorrelation_vs_grads(trace, max_lag=20, mean=0.0)
    >>> grads[:3]
    array([ 0.,  5., 10.])
    """
    positions = trace.positions
    thin = int(trace.thin)
    rows = positions.shape[0] - 1 if max_lag is None else int(max_lag) // thin
    rho = autocorrelation(positions, rows, mean)
    per_step = float(np.mean(trace.grad_evals_per_step))
    return np.arange(rows + 1) * thin * per_step, rho


def grads_to_threshold(
    grad_axis: np.ndarray, autocorr: np.ndarray, threshold: float = 0.5
) -> float:
    """Gradient evaluations until the autocorrelation first falls to ``threshold``.

    Linear interpolation between the last point above and the first point at
    or below the threshold (the metric of the paper's figure 3, threshold 0.5).

    Parameters
    ----------
    grad_axis, autocorr : arrays (n,)
        From :func:`autocorrelation_vs_grads`.
    threshold : float
        Level to reach.

    Returns
    -------
    float
        ``inf`` if the autocorrelation never reaches the threshold within the
        lags given; ``nan`` if it is undefined (NaN before any crossing).

    Examples
    --------
    >>> grads_to_threshold(np.array([0.0, 10.0, 20.0]), np.array([1.0, 0.6, 0.4]))
    15.0
    >>> grads_to_threshold(np.array([0.0, 10.0]), np.array([1.0, 0.9]))
    inf
    """
    g = np.asarray(grad_axis, dtype=float)
    r = np.asarray(autocorr, dtype=float)
    if g.shape != r.shape or g.ndim != 1:
        raise ValueError(
            f"grad_axis and autocorr must be 1-d of equal length, got {g.shape}, {r.shape}"
        )
    below = np.flatnonzero(r <= threshold)
    nans = np.flatnonzero(np.isnan(r))
    if below.size == 0:
        return float("nan") if nans.size else float("inf")
    i = int(below[0])
    if nans.size and nans[0] < i:
        return float("nan")
    if i == 0:
        return float(g[0])
    r0, r1 = r[i - 1], r[i]
    frac = (r0 - threshold) / (r0 - r1) if r0 != r1 else 1.0
    return float(g[i - 1] + frac * (g[i] - g[i - 1]))


def _as_draws(draws: np.ndarray) -> tuple[np.ndarray, bool]:
    x = np.asarray(draws, dtype=float)
    scalar = x.ndim == 2
    if scalar:
        x = x[:, :, None]
    if x.ndim != 3:
        raise ValueError(f"draws must have shape (steps, chains[, dim]), got {x.shape}")
    return x, scalar


def _split(x: np.ndarray) -> np.ndarray:
    """Split each chain into two halves (the middle draw dropped for odd lengths)."""
    half = x.shape[0] // 2
    return np.concatenate([x[:half], x[x.shape[0] - half :]], axis=1)


def _ess_1d(x: np.ndarray) -> float:
    """Multi-chain ESS of one scalar quantity, ``x`` (steps, chains); Stan's algorithm."""
    n, m = x.shape
    if n < 4:
        return float("nan")
    y = x - x.mean(axis=0)
    n_fft = 1 << int(math.ceil(math.log2(2 * n)))
    f = np.fft.rfft(y, n=n_fft, axis=0)
    acov = np.fft.irfft(f.real**2 + f.imag**2, n=n_fft, axis=0)[:n] / n  # biased, per chain
    mean_acov = acov.mean(axis=1)
    within = mean_acov[0] * n / (n - 1.0)  # W: mean within-chain variance
    var_plus = mean_acov[0]
    if m > 1:
        var_plus += np.var(x.mean(axis=0), ddof=1)
    if not (np.isfinite(var_plus) and var_plus > 0):
        return float("nan")
    rho = 1.0 - (within - mean_acov) / var_plus
    rho[0] = 1.0
    # Geyer's initial positive sequence: sum pairs Γ_k = ρ_2k + ρ_2k+1 while positive.
    out = np.zeros(n)
    out[0], out[1] = 1.0, rho[1]
    even, odd = 1.0, rho[1]
    t = 1
    while t < n - 3 and even + odd > 0.0:
        even, odd = rho[t + 1], rho[t + 2]
        if even + odd >= 0.0:
            out[t + 1], out[t + 2] = even, odd
        t += 2
    max_t = t - 2
    if even > 0:
        out[max_t + 1] = even
    # Geyer's initial monotone sequence: the pair sums must not increase.
    t = 1
    while t <= max_t - 2:
        if out[t + 1] + out[t + 2] > out[t - 1] + out[t]:
            out[t + 1] = out[t + 2] = (out[t - 1] + out[t]) / 2.0
        t += 2
    total = n * m
    tau = -1.0 + 2.0 * out[: max_t + 1].sum() + out[max_t + 1 : max_t + 2].sum()
    tau = max(tau, 1.0 / math.log10(total))
    return float(total / tau)


def effective_sample_size(draws: np.ndarray, split: bool = True) -> float | np.ndarray:
    """Multi-chain effective sample size of the mean, Geyer's initial monotone sequence.

    ``ESS = m n / τ̂`` with ``τ̂ = -1 + 2 Σ ρ̂_t`` summed over Geyer's initial
    monotone sequence of pair sums, and ``ρ̂_t = 1 - (W - mean_c γ̂_{t,c}) / var⁺``
    combining within-chain autocovariances ``γ̂`` and the between-chain
    variance (Stan reference manual; Vehtari et al. 2021, eqs. 9-10, without
    rank normalisation). Matches ``arviz.ess(..., method="mean")``.

    Parameters
    ----------
    draws : array (steps, chains) or (steps, chains, dim)
        Draws of one quantity, or of ``dim`` quantities (one ESS each).
    split : bool
        Split each chain in halves first (default, as Stan and ArviZ do), so
        that a drift within a chain lowers the ESS.

    Returns
    -------
    float or array (dim,)
        Effective number of independent draws (``nan`` for constant draws or
        fewer than 4 steps per (split) chain).

    References
    ----------
    Geyer, C. J. (1992). Practical Markov chain Monte Carlo. Statistical Science 7.
    Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021). Rank-normalization,
    folding, and localization: an improved R-hat. Bayesian Analysis 16.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((1000, 4))  # independent draws
    >>> bool(3000 < effective_sample_size(x) < 5000)
    True
    """
    x, scalar = _as_draws(draws)
    if split:
        x = _split(x)
    out = np.array([_ess_1d(x[:, :, i]) for i in range(x.shape[2])])
    return float(out[0]) if scalar else out


def split_rhat(draws: np.ndarray) -> float | np.ndarray:
    """Split-R̂: potential scale reduction over half-chains (BDA3, section 11.4).

    ``R̂ = sqrt(var⁺ / W)`` with ``var⁺ = (n-1)/n W + B/n``, ``W`` the mean
    within-(half-)chain variance and ``B/n`` the variance of the (half-)chain
    means. Close to 1 when the chains agree; above 1.01 is a warning sign.
    Matches ``arviz.rhat(..., method="split")``.

    Parameters
    ----------
    draws : array (steps, chains) or (steps, chains, dim)

    Returns
    -------
    float or array (dim,)

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((1000, 4))
    >>> bool(abs(split_rhat(x) - 1) < 0.01)
    True
    >>> bool(split_rhat(x + np.arange(4)) > 1.5)  # chains that disagree
    True
    """
    x, scalar = _as_draws(draws)
    x = _split(x)
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"split_rhat needs at least 4 steps per chain, got {2 * n}")
    within = x.var(axis=0, ddof=1).mean(axis=0)
    between_n = x.mean(axis=0).var(axis=0, ddof=1)
    var_plus = (n - 1) / n * within + between_n
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.sqrt(var_plus / within)
    return float(out[0]) if scalar else out


def transition_table(trace: Any, n_batches: int = 20) -> dict[str, dict[str, float]]:
    """The paper's table 1 for one run: fraction of steps taking each rung, with standard errors.

    Standard errors by batch means: the steps are cut into ``n_batches``
    consecutive batches, each batch's fraction is averaged over all chains,
    and ``se = sd(batch fractions) / sqrt(n_batches)``. This accounts for
    correlation between successive steps of a chain (e.g. with ``β < 1``) as
    long as a batch is much longer than that correlation.

    Parameters
    ----------
    trace : Trace
        Any run (only ``trace.rungs`` and ``trace.max_rung`` are used).
    n_batches : int
        Number of batches (at least 2; reduced to the number of steps if larger).

    Returns
    -------
    dict
        ``{"fractions": {"F": …, "L1": …, …}, "stderr": {"F": …, …}}``, keys as
        in :meth:`Trace.transition_fractions` (``"stay"`` added for rules that
        can stay).

    Examples
    --------
    >>> import numpy as np
    >>> from ladder_mcmc import lahmc, sample
    >>> from ladder_mcmc.targets import IllConditionedGaussian
    >>> target = IllConditionedGaussian(2)
    >>> x0 = target.sample(20, np.random.default_rng(0))
    >>> table = transition_table(sample(lahmc(target, 1.0, 10, beta=1.0), x0, 100, seed=1))
    >>> sorted(table["fractions"])
    ['F', 'L1', 'L2', 'L3', 'L4']
    """
    n_batches = positive_int("n_batches", n_batches, minimum=2)
    rungs = np.asarray(trace.rungs)
    n_steps = rungs.shape[0]
    if n_steps < 2:
        raise ValueError(f"transition_table needs at least 2 steps, got {n_steps}")
    b = min(n_batches, n_steps)
    edges = np.linspace(0, n_steps, b + 1).astype(int)
    codes = {"F": 0, **{f"L{a}": a for a in range(1, int(trace.max_rung) + 1)}}
    if np.any(rungs == -1):
        codes["stay"] = -1
    fractions, stderr = {}, {}
    for name, code in codes.items():
        hit = rungs == code
        per_batch = np.array(
            [hit[lo:hi].mean() for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
        )
        # batches of unequal length (n_steps not divisible) get weights by length
        weights = np.diff(edges) / n_steps
        fractions[name] = float(hit.mean())
        centred = per_batch - fractions[name]
        var_mean = float((weights**2 * centred**2).sum() * b / (b - 1))
        stderr[name] = math.sqrt(var_mean)
    return {"fractions": fractions, "stderr": stderr}
