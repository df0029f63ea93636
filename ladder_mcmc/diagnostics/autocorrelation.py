"""The paper's autocorrelation, against gradient evaluations (figures 2 and 3).

* :func:`autocorrelation` — the autocorrelation of the paper's figures 2 and 3:
  pooled over dimensions and chains, with a known mean (zero for the paper's
  targets) or an estimated one, computed by FFT;
* :func:`autocorrelation_vs_grads` — the same against gradient evaluations per
  chain (the x axis of the paper's figure 2);
* :func:`grads_to_threshold` — gradient evaluations until the autocorrelation
  first falls to a threshold (0.5: the colour of the paper's figure 3).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ladder_mcmc.validation import positive_int

__all__ = ["autocorrelation", "autocorrelation_vs_grads", "grads_to_threshold"]

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
    >>> from ladder_mcmc.models import IllConditionedGaussian
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
