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
* :func:`posterior_statistics` — what ``arviz.summary`` computes per parameter:
  mean, sd, quantiles, MCSE of the mean and sd, bulk and tail ESS and the
  rank-normalised split R̂ with its folded part (Vehtari et al. 2021); also one
  at a time: :func:`rank_rhat`, :func:`ess_bulk`, :func:`ess_tail`,
  :func:`mcse_mean`, :func:`mcse_sd`;
* :func:`transition_table` — the fractions of the paper's table 1 with batch-means
  standard errors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import ndtri

from ladder_mcmc.validation import positive_int

__all__ = [
    "autocorrelation",
    "autocorrelation_vs_grads",
    "effective_sample_size",
    "ess_bulk",
    "ess_tail",
    "grads_to_threshold",
    "mcse_mean",
    "mcse_sd",
    "posterior_statistics",
    "rank_rhat",
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


def _split_rows(y: np.ndarray) -> np.ndarray:
    """``y`` (k, chains, steps) → (k, 2·chains, steps // 2): each chain cut in halves
    (the middle draw dropped for odd lengths), as ArviZ's ``_split_chains``."""
    half = y.shape[2] // 2
    return np.concatenate([y[:, :, :half], y[:, :, y.shape[2] - half :]], axis=1)


def _ess_rows(y: np.ndarray) -> np.ndarray:
    """Multi-chain ESS of each row of ``y`` (k, chains, steps): ArviZ's ``_ess``, vectorised.

    ``ESS = m n / τ̂``, ``τ̂ = −1 + 2 Σ ρ̂_t`` over Geyer's initial monotone sequence of
    ``ρ̂_t = 1 − (W − mean_c γ̂_{t,c}) / var⁺`` (Vehtari et al. 2021, eqs. 9-10).
    Constant rows get ``m n`` (as ArviZ); fewer than 2 steps give NaN.
    """
    k, m, n = y.shape
    size = n * m
    if n < 2:
        return np.full(k, np.nan)
    flat = y.reshape(k, size)
    constant = (flat.max(axis=1) - flat.min(axis=1)) < np.finfo(float).resolution
    chain_mean = y.mean(axis=2)
    n_fft = 1 << int(math.ceil(math.log2(2 * n)))
    f = np.fft.rfft(y - chain_mean[:, :, None], n=n_fft, axis=2)
    # mean over chains of the biased per-chain autocovariances, one inverse transform
    power = (f.real**2 + f.imag**2).mean(axis=1)
    mean_acov = np.fft.irfft(power, n=n_fft, axis=1)[:, :n] / n  # (k, n)
    mean_var = mean_acov[:, 0] * n / (n - 1.0)  # W: mean within-chain variance
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus = var_plus + chain_mean.var(axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = 1.0 - (mean_var[:, None] - mean_acov) / var_plus[:, None]
    rho[:, 0] = 1.0
    # Geyer's initial positive sequence over pair sums P_j = ρ_2j + ρ_2j+1: pairs
    # j = 1, 2, … are examined while the previous sum is > 0 (and 2j − 1 < n − 3);
    # the last examined pair J is kept if P_J ≥ 0, else only ρ_2J if positive.
    n_pairs = n // 2
    pairs = rho[:, 0 : 2 * n_pairs : 2] + rho[:, 1 : 2 * n_pairs : 2]  # (k, n_pairs)
    j_max = (n - 1) // 2 - 1
    rows = np.arange(k)
    last = np.zeros(k, dtype=np.int64)
    head = np.zeros(k)
    if j_max >= 1:
        stop = ~(pairs[:, 1 : j_max + 1] > 0)
        first = np.where(stop.any(axis=1), stop.argmax(axis=1) + 1, j_max)
        last = np.where(pairs[:, 0] > 0, first, 0)
        # Geyer's initial monotone sequence: pair sums 0..J−1 → their running minimum
        running = np.cumsum(np.minimum.accumulate(pairs[:, :j_max], axis=1), axis=1)
        head = np.where(last > 0, running[rows, np.maximum(last - 1, 0)], 0.0)
    even = rho[rows, 2 * last]
    kept = (pairs[rows, last] >= 0) | (even > 0)
    tail = np.where(last == 0, 1.0, np.where(kept, even, 0.0))
    tau = np.maximum(-1.0 + 2.0 * head + tail, 1.0 / math.log10(size))
    out = size / tau
    out[np.isnan(rho).any(axis=1)] = np.nan
    out[constant] = size
    return out


def _rhat_rows(y: np.ndarray) -> np.ndarray:
    """``R̂ = sqrt((B/W + n − 1) / n)`` per row of ``y`` (k, chains ≥ 2, steps).

    ``W`` = mean within-chain variance, ``B = n · var(chain means)`` (ArviZ's ``_rhat``).
    """
    n = y.shape[2]
    between = n * y.mean(axis=2).var(axis=1, ddof=1)
    within = y.var(axis=2, ddof=1).mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _z_scale(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank-normalised rows: ``Φ⁻¹((r − 3/8) / (S − 3/4 + 1))``, ``r`` the rank of a draw
    among all ``S`` draws of its row (ties averaged; Vehtari et al. 2021, eq. 14).

    ``y`` (k, chains, steps). Returns the normalised draws (same shape) and each
    row's draws sorted (k, S).
    """
    k = y.shape[0]
    size = y.shape[1] * y.shape[2]
    rows = y.reshape(k, size)
    order = np.argsort(rows, axis=1)
    order += np.arange(0, k * size, size)[:, None]  # flat indices: cheaper than *_along_axis
    order = order.ravel()
    ordered = rows.ravel()[order].reshape(k, size)
    # twice the (average, 1-based) rank of the draws in sorted order, an integer:
    # 2p + 2 at position p of a row, and a + b + 2 throughout a run of ties a..b
    twice = np.tile(np.arange(2, 2 * size + 2, 2), k)
    tied = np.empty((k, size), dtype=bool)  # equal to the previous draw of its row
    tied[:, 0] = False
    np.equal(ordered[:, 1:], ordered[:, :-1], out=tied[:, 1:])
    later = np.flatnonzero(tied)  # flat positions of the second, third, … of each run
    if later.size:
        breaks = np.flatnonzero(np.diff(later) != 1) + 1
        first = later[np.r_[0, breaks]] - 1  # each run's first position
        last = later[np.r_[breaks - 1, later.size - 1]]
        row_start = first - first % size
        value = first + last + 2 - 2 * row_start
        length = last - first + 1
        at = np.repeat(first - np.cumsum(np.r_[0, length[:-1]]), length) + np.arange(length.sum())
        twice[at] = np.repeat(value, length)
    c = 3 / 8
    table = ndtri((np.arange(2 * size + 2) / 2 - c) / (size - 2 * c + 1))
    z = np.empty(k * size)
    z[order] = table[twice]
    return z.reshape(y.shape), ordered


def _type7_quantiles(
    rows: np.ndarray, probs: tuple[float, ...], ordered: bool = False
) -> list[np.ndarray]:
    """Quantiles ``probs`` of each row (k, S), R's type 7, computed exactly as
    ``scipy.stats.mstats.mquantiles(alphap=1, betap=1)`` (ArviZ's tail-ESS thresholds).

    ``ordered``: the rows are sorted already.
    """
    n = rows.shape[1]
    where = []
    for p in probs:
        aleph = n * p + (1.0 + p * (1.0 - 1.0 - 1.0))
        j = int(np.floor(np.clip(aleph, 1, n - 1)))
        where.append((j, float(np.clip(aleph - j, 0, 1))))
    if not ordered:
        rows = np.partition(rows, sorted({i for j, _ in where for i in (j - 1, j)}), axis=1)
    return [(1.0 - g) * rows[:, j - 1] + g * rows[:, j] for j, g in where]


def _median(rows: np.ndarray, ordered: np.ndarray | None) -> np.ndarray:
    """``np.median`` of each row (k, S); from the sorted rows ``ordered`` if given."""
    if ordered is None:
        return np.median(rows, axis=1)
    size = rows.shape[1]
    return np.mean(ordered[:, [(size - 1) // 2, size // 2]], axis=1)


STATISTICS = (
    "mean",
    "sd",
    "eti_5%",
    "median",
    "eti_95%",
    "mcse_mean",
    "mcse_sd",
    "ess_bulk",
    "ess_tail",
    "r_hat",
)
"""The columns of :func:`posterior_statistics`, named as ``arviz.summary`` names them."""

# Elements (steps × chains × parameters) per block of parameters: bounds the
# temporary memory of posterior_statistics on long runs (memory-mapped draws are
# read one block of columns at a time, never copied whole).
_STAT_BLOCK_ELEMENTS = 1 << 21


def _block_statistics(y: np.ndarray, wanted: set[str]) -> dict[str, np.ndarray]:
    """:func:`posterior_statistics` of each row of ``y`` (k, chains, steps), float, no NaN."""
    k, m, n = y.shape
    size = n * m
    flat = y.reshape(k, size)
    out: dict[str, np.ndarray] = {}
    if "mean" in wanted:
        out["mean"] = flat.mean(axis=1)
    if "sd" in wanted:
        out["sd"] = flat.std(axis=1, ddof=1)
    probs = {"eti_5%": 0.05, "median": 0.5, "eti_95%": 0.95}
    quantiles = [q for q in probs if q in wanted]
    if quantiles:
        values = np.quantile(flat, [probs[q] for q in quantiles], axis=1)
        out.update(zip(quantiles, values, strict=True))
    split = _split_rows(y)
    ordered = None  # all draws sorted, when the split chains hold them all (even length)
    if "ess_bulk" in wanted or "r_hat" in wanted:
        z, by_value = _z_scale(split)
        if n % 2 == 0:
            ordered = by_value
        if "ess_bulk" in wanted:
            out["ess_bulk"] = _ess_rows(z)
        if "r_hat" in wanted:
            if m < 2:
                out["r_hat"] = np.full(k, np.nan)
            else:
                bulk = _rhat_rows(z)
                del z
                folded = np.abs(y - _median(flat, ordered)[:, None, None])
                folded = _rhat_rows(_z_scale(_split_rows(folded))[0])
                # Python's max(bulk, folded), as ArviZ: a NaN bulk R-hat stays NaN
                out["r_hat"] = np.where(folded > bulk, folded, bulk)
    if "ess_tail" in wanted:
        if ordered is None:
            low, high = _type7_quantiles(flat, (0.05, 0.95))
        else:
            low, high = _type7_quantiles(ordered, (0.05, 0.95), ordered=True)
        ess = [_ess_rows(_split_rows((y <= q[:, None, None]).astype(float))) for q in (low, high)]
        out["ess_tail"] = np.minimum(ess[0], ess[1])
    if "mcse_mean" in wanted or "mcse_sd" in wanted:
        squares = (y - flat.mean(axis=1)[:, None, None]) ** 2
        total = squares.reshape(k, size).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            if "mcse_mean" in wanted:
                out["mcse_mean"] = np.sqrt(total / (size - 1) / _ess_rows(split))
            if "mcse_sd" in wanted:
                evar = total / size
                fourth = (squares**2).reshape(k, size).mean(axis=1)
                varvar = (fourth - evar**2) / _ess_rows(_split_rows(squares))
                out["mcse_sd"] = np.sqrt(varvar / evar / 4)
    return out


def posterior_statistics(
    draws: np.ndarray, statistics: tuple[str, ...] = STATISTICS
) -> dict[str, np.ndarray]:
    """Per-parameter statistics, as ``arviz.summary`` computes them (ArviZ 0.23).

    * ``mean``, ``sd`` (``ddof = 1``), ``median``, ``eti_5%``, ``eti_95%``
      (quantiles over all draws, linear interpolation: ``arviz.summary(...,
      stat_focus="median", hdi_prob=0.9)``);
    * ``ess_bulk``: ESS of the rank-normalised split chains; ``ess_tail``: the
      smaller ESS of the indicators ``x ≤ q₀.₀₅`` and ``x ≤ q₀.₉₅`` (split chains);
    * ``mcse_mean = sd / sqrt(ESS_mean)``; ``mcse_sd``: the delta-method MCSE of
      the sd, from the ESS of ``(x − x̄)²``;
    * ``r_hat``: rank-normalised split R̂, the larger of the bulk R̂ (of the
      rank-normalised split chains) and the folded R̂ (of ``|x − median|``,
      rank-normalised), so that chains with equal locations but different
      scales are flagged too. Close to 1 when the chains agree; above 1.01 is
      a warning sign.

    ESS uses Geyer's initial monotone sequence (:func:`effective_sample_size`).
    As in ArviZ: NaN for fewer than 4 steps or for a parameter with a NaN draw,
    ``r_hat`` NaN for one chain; a constant parameter has ESS ``steps · chains``.

    Parameters
    ----------
    draws : array (steps, chains) or (steps, chains, dim)
        Draws (a memory map is read one block of parameters at a time).
    statistics : tuple of str
        Which of :data:`STATISTICS` to compute (default: all).

    Returns
    -------
    dict
        Statistic name → array (dim,) (a float for 2-d ``draws``).

    References
    ----------
    Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021). Rank-normalization,
    folding, and localization: an improved R-hat for assessing convergence of
    MCMC. Bayesian Analysis 16, 667-718.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((1000, 4))
    >>> x[:, 3] *= 5  # one chain five times wider: same location, other scale
    >>> s = posterior_statistics(x)
    >>> round(s["r_hat"], 2), bool(split_rhat(x) < 1.01)  # the plain split R-hat misses it
    (1.25, True)
    """
    unknown = sorted(set(statistics) - set(STATISTICS))
    if unknown:
        raise ValueError(f"statistics must be among {STATISTICS}, got {unknown}")
    x = np.asarray(draws)
    scalar = x.ndim == 2
    if scalar:
        x = x[:, :, None]
    if x.ndim != 3:
        raise ValueError(f"draws must have shape (steps, chains[, dim]), got {x.shape}")
    n, m, dim = x.shape
    wanted = set(statistics)
    out = {name: np.full(dim, np.nan) for name in statistics}
    if n >= 4 and m >= 1:
        block = max(1, _STAT_BLOCK_ELEMENTS // max(1, n * m))
        for lo in range(0, dim, block):
            # one block of parameters, as rows (k, chains, steps): each series contiguous
            part = np.ascontiguousarray(x[:, :, lo : lo + block].transpose(2, 1, 0), dtype=float)
            finite = ~np.isnan(part).any(axis=(1, 2))
            if not finite.any():
                continue
            cols = np.arange(lo, lo + part.shape[0])[finite]
            for name, values in _block_statistics(part[finite], wanted).items():
                out[name][cols] = values
    if scalar:
        return {name: float(values[0]) for name, values in out.items()}
    return out


def rank_rhat(draws: np.ndarray) -> float | np.ndarray:
    """Rank-normalised split R̂ with its folded part (Vehtari et al. 2021); ``arviz.rhat``.

    The ``r_hat`` of :func:`posterior_statistics`; ``draws`` (steps, chains[, dim]).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((1000, 4))
    >>> bool(rank_rhat(x) < 1.01), bool(rank_rhat(x * [1, 1, 1, 5]) > 1.2)
    (True, True)
    """
    return posterior_statistics(draws, ("r_hat",))["r_hat"]


def ess_bulk(draws: np.ndarray) -> float | np.ndarray:
    """Bulk ESS: ESS of the rank-normalised split chains (Vehtari et al. 2021); ``arviz.ess``."""
    return posterior_statistics(draws, ("ess_bulk",))["ess_bulk"]


def ess_tail(draws: np.ndarray) -> float | np.ndarray:
    """Tail ESS: the smaller ESS of the 5 % and 95 % quantile indicators (Vehtari et al. 2021)."""
    return posterior_statistics(draws, ("ess_tail",))["ess_tail"]


def mcse_mean(draws: np.ndarray) -> float | np.ndarray:
    """Monte Carlo standard error of the mean, ``sd / sqrt(ESS_mean)``; ``arviz.mcse``."""
    return posterior_statistics(draws, ("mcse_mean",))["mcse_mean"]


def mcse_sd(draws: np.ndarray) -> float | np.ndarray:
    """Monte Carlo standard error of the sd (delta method on the ESS of ``(x − x̄)²``)."""
    return posterior_statistics(draws, ("mcse_sd",))["mcse_sd"]


def _var_plus(y: np.ndarray) -> np.ndarray:
    """``var⁺`` of each row of ``y`` (k, chains, steps): mean within-chain variance
    (``ddof = 0``) plus the variance of the chain means."""
    out = y.var(axis=2).mean(axis=1)
    if y.shape[1] > 1:
        out = out + y.mean(axis=2).var(axis=1, ddof=1)
    return out


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
    out = np.full(x.shape[2], np.nan)
    if x.shape[0] >= 4:
        block = max(1, _STAT_BLOCK_ELEMENTS // (x.shape[0] * x.shape[1]))
        for lo in range(0, x.shape[2], block):
            part = np.ascontiguousarray(x[:, :, lo : lo + block].transpose(2, 1, 0))
            ess = _ess_rows(part)
            ess[_var_plus(part) <= 0] = np.nan  # constant draws: no ESS (ArviZ: steps · chains)
            out[lo : lo + block] = ess
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
