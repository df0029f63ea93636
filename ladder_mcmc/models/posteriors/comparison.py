"""Compare draws of a posterior target with its reference summaries.

For each constrained parameter: our mean, sd, Monte Carlo standard error of the
mean (``sd / sqrt(ESS)``) and the z-score against the reference mean,

    z = (mean - ref_mean) / sqrt(MCSE_ours² + MCSE_ref²),

which is approximately standard normal when both runs are correct. The ESS is
:func:`ladder_mcmc.diagnostics.ess.effective_sample_size` when that module is
available, else a batch-means estimate.
"""

from __future__ import annotations

import attrs
import numpy as np


def batch_means_ess(draws: np.ndarray) -> np.ndarray:
    """ESS of the mean per quantity by batch means, ``draws`` (steps, chains, p).

    Each chain is cut into ``b = floor(sqrt(steps))`` batches; the variance of the
    batch means, times the batch length, estimates the asymptotic variance ``σ²τ``,
    and ``ESS = (steps · chains) σ² / (σ²τ)``.
    """
    x = np.asarray(draws, dtype=float)
    n, m, p = x.shape
    n_batches = max(2, int(np.sqrt(n)))
    size = n // n_batches
    means = x[: n_batches * size].reshape(n_batches, size, m, p).mean(axis=1)
    asym_var = size * means.reshape(-1, p).var(axis=0, ddof=1)
    var = x.reshape(-1, p).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return n * m * var / asym_var


def effective_sample_size(draws: np.ndarray) -> tuple[np.ndarray, str]:
    """ESS per quantity of ``draws`` (steps, chains, p) and the method used."""
    try:
        from ladder_mcmc.diagnostics.ess import effective_sample_size as ess
    except ImportError:  # pragma: no cover - diagnostics is part of the package now
        return batch_means_ess(draws), "batch means"
    return np.asarray(ess(draws), dtype=float).reshape(-1), "Geyer initial monotone (split)"


def split_rhat(draws: np.ndarray) -> np.ndarray:
    """Split R-hat per quantity of ``draws`` (steps, chains, p); ``nan`` if unavailable."""
    try:
        from ladder_mcmc.diagnostics.ess import split_rhat as rhat
    except ImportError:  # pragma: no cover
        return np.full(draws.shape[-1], np.nan)
    return np.asarray(rhat(draws), dtype=float).reshape(-1)


@attrs.frozen(eq=False)
class Comparison:
    """Our summaries of a posterior next to the reference (constrained scale).

    Attributes
    ----------
    names : tuple of str
        Parameter names.
    mean, sd, mcse, ess : arrays (n_params,)
        Ours.
    z : array (n_params,)
        ``(mean - ref_mean) / sqrt(mcse² + ref_mcse²)``.
    sd_ratio : array (n_params,)
        ``sd / ref_sd``.
    rhat : array (n_params,)
        Split R-hat (``nan`` if :mod:`ladder_mcmc.diagnostics.ess` is unavailable); far
        above 1 when chains sit in different modes.
    ess_method : str
        How the ESS was estimated.
    """

    names: tuple[str, ...]
    mean: np.ndarray
    sd: np.ndarray
    mcse: np.ndarray
    ess: np.ndarray
    z: np.ndarray
    sd_ratio: np.ndarray
    rhat: np.ndarray
    ess_method: str

    @property
    def max_abs_z(self) -> float:
        return float(np.max(np.abs(self.z)))

    @property
    def min_ess(self) -> float:
        return float(np.min(self.ess))

    @property
    def max_rhat(self) -> float:
        return float(np.max(self.rhat))


def compare(target, positions: np.ndarray) -> Comparison:
    """Compare unconstrained draws ``positions`` (steps, chains, dim) with ``target.reference``.

    Raises
    ------
    ValueError
        If the target has no reference or the draws have the wrong shape.
    """
    ref = getattr(target, "reference", None)
    if ref is None:
        raise ValueError(f"{target!r} has no reference summaries (build it with load(name))")
    positions = np.asarray(positions, dtype=float)
    if positions.ndim != 3 or positions.shape[2] != target.dim:
        raise ValueError(
            f"positions must have shape (steps, chains, {target.dim}), got {positions.shape}"
        )
    theta = target.constrain(positions)
    flat = theta.reshape(-1, theta.shape[-1])
    mean, sd = flat.mean(axis=0), flat.std(axis=0, ddof=1)
    ess, method = effective_sample_size(theta)
    mcse = sd / np.sqrt(ess)
    z = (mean - ref.mean) / np.sqrt(mcse**2 + ref.mcse**2)
    return Comparison(
        names=tuple(target.param_names),
        mean=mean,
        sd=sd,
        mcse=mcse,
        ess=ess,
        z=z,
        sd_ratio=sd / ref.sd,
        rhat=split_rhat(theta),
        ess_method=method,
    )
