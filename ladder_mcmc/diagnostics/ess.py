"""Effective sample size, R-hat and Monte Carlo standard errors: what ``arviz.summary`` computes.

* :func:`effective_sample_size` — multi-chain ESS with Geyer's initial monotone
  sequence (Geyer 1992; the estimator of Stan and ArviZ, Vehtari et al. 2021);
* :func:`split_rhat` — the split potential scale reduction factor (Gelman et al.,
  BDA3, section 11.4);
* :func:`posterior_statistics` — what ``arviz.summary`` computes per parameter:
  mean, sd, quantiles, MCSE of the mean and sd, bulk and tail ESS and the
  rank-normalised split R̂ with its folded part (Vehtari et al. 2021); also one
  at a time: :func:`rank_rhat`, :func:`ess_bulk`, :func:`ess_tail`,
  :func:`mcse_mean`, :func:`mcse_sd`.
"""

from __future__ import annotations

import math

import numpy as np

from ladder_mcmc.diagnostics.normal_quantile import normal_quantile

__all__ = [
    "STATISTICS",
    "effective_sample_size",
    "ess_bulk",
    "ess_tail",
    "mcse_mean",
    "mcse_sd",
    "posterior_statistics",
    "rank_rhat",
    "split_rhat",
]


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


def _z_scale(
    y: np.ndarray, order: np.ndarray | None = None, scores: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-normalised rows of ``y`` (k, chains, steps): :func:`_normal_scores` at each
    draw's rank among the ``S`` of its row (ties averaged; Vehtari et al. 2021). ``order``: the
    flat indices that sort each row. Returns ``z``, the rows sorted (k, S) and ``order``.
    """
    k = y.shape[0]
    size = y.shape[1] * y.shape[2]
    rows = y.reshape(k, size)
    if order is None:
        order = np.argsort(rows, axis=1)
        order += np.arange(0, k * size, size)[:, None]  # flat: cheaper than *_along_axis
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
    z = np.empty(k * size)
    z[order] = (_normal_scores(size) if scores is None else scores)[twice]
    return z.reshape(y.shape), ordered, order


def _normal_scores(size: int) -> np.ndarray:
    """``Φ⁻¹((r − 3/8) / (S + 1/4))`` at ranks ``r = i/2`` of ``S = size`` draws (eq. 14)."""
    c = 3 / 8
    return normal_quantile((np.arange(2 * size + 2) / 2 - c) / (size - 2 * c + 1))


def _folded_order(ordered: np.ndarray, order: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """:func:`_z_scale`'s ``order`` of ``|y − centre|`` from ``y``'s, in which the folds fall
    then rise: two runs, which a stable sort merges in about linear time."""
    k, size = ordered.shape
    inside = np.argsort(np.abs(ordered - centre[:, None]), axis=1, kind="stable")
    inside += np.arange(0, k * size, size)[:, None]
    return order[inside.ravel()]


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
        scores = _normal_scores(split.shape[1] * split.shape[2])
        z, by_value, order = _z_scale(split, None, scores)
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
                centre = _median(flat, ordered)
                folded = _split_rows(np.abs(y - centre[:, None, None]))
                # a centre of ±inf makes NaN folds: ranked by a sort of their own, as before
                finite = bool(np.isfinite(centre).all())
                folded_order = _folded_order(by_value, order, centre) if finite else None
                folded = _rhat_rows(_z_scale(folded, folded_order, scores)[0])
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
    As in ArviZ: ESS, MCSE and R̂ NaN for fewer than 4 steps (the mean, sd, median and
    quantiles are still those of the draws), every statistic NaN for a parameter with a
    NaN draw, ``r_hat`` NaN for one chain; a constant parameter has ESS
    ``steps · chains``.

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
    elif n * m >= 1:  # too short for ESS, R-hat and MCSE (NaN); the location and spread not
        flat = x.reshape(n * m, dim).astype(float)
        with np.errstate(all="ignore"):
            plain = {
                "mean": lambda: flat.mean(axis=0),
                "sd": lambda: flat.std(axis=0, ddof=1) if n * m > 1 else np.full(dim, np.nan),
                "median": lambda: np.median(flat, axis=0),
                "eti_5%": lambda: np.quantile(flat, 0.05, axis=0),
                "eti_95%": lambda: np.quantile(flat, 0.95, axis=0),
            }
            for name in wanted & set(plain):
                out[name] = plain[name]()
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
