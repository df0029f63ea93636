"""The figures of one run: efficiency, convergence, and accuracy against the reference.

* efficiency: ``min_ess``, the smallest over coordinates of the bulk ESS of ``x_i`` and of
  ``x_i²`` (:func:`~ladder_mcmc.diagnostics.min_bulk_ess`, unconstrained scale), per 1000
  gradient evaluations of all chains (sampling alone; warm-up counted too) and per second
  (warm-up and sampling, compile time left out);
* convergence: the largest rank-normalised split R̂ over coordinates
  (:func:`~ladder_mcmc.diagnostics.rank_rhat`); the chains that are frozen (a coordinate
  whose draws never change); the non-finite draws;
* accuracy: over the model's quantities, the largest ``|mean − reference| / sd``
  (reference sd) and the largest ``|z|``, ``z = (mean − reference) / √(MCSE² +
  MCSE_ref²)`` with our MCSE of the mean from the bulk ESS of the mean
  (:func:`~ladder_mcmc.diagnostics.posterior_statistics`); the same for the standard
  deviations, ``z_sd = (sd − sd_ref) / √(MCSE_sd² + MCSE_sd,ref²)``; and the largest
  ``|sd / sd_ref − 1|``.

The MCSE of an sd (:func:`mcse_sds`, :func:`reference_mcse_sd`; docs/design.md §7.4) is
the delta method's, ``MCSE = sd · √((κ − 1) / (4 ESS))``, each sd's own (ours for our
sd, the reference's for its) with ``κ`` the reference's kurtosis
(:attr:`Moments.kurtosis`: exact for the analytic models, from the reference draws for
posteriordb's) and ``ESS``, for ours, the ESS of ``(x − x̄)²`` in the run judged, for
the reference's, its run's ESS (its MCSE zero for exact moments). ``κ`` is not taken from
the draws judged: a sampler that misses the tails underestimates it, and with it the
MCSE, the very failure the sd's z is there to catch; for heavy tails (the funnel's
``x_i``, kurtosis ``3 e⁹``) even exact draws underestimate it almost always. Where the
reference's kurtosis is unknown (NaN), the draws' own stands in for it.

The second moments are judged through the sd rather than ``E[x²] = mean² + sd²``: for
a quantity whose mean is far from zero against its sd (``sblrc``'s coefficients: mean
1.0, sd 0.001), ``x²`` is ``2·mean·x`` plus a constant to within rounding, and its z
says nothing the mean's does not; the sd's z sees a scale off by a few MCSEs whatever
the location.

A figure that cannot be computed (too few draws, non-finite draws) is NaN.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.bench.moments import Moments
from ladder_mcmc.bench.runs import SamplerRun
from ladder_mcmc.diagnostics.ess import effective_sample_size, posterior_statistics, rank_rhat
from ladder_mcmc.diagnostics.summary import min_bulk_ess

NAN = float("nan")


@attrs.frozen
class Figures:
    """One run's figures (see the module docstring); NaN where they cannot be computed.

    Attributes
    ----------
    min_ess : float
        Min over coordinates of the bulk ESS of ``x_i`` and ``x_i²`` (draws).
    ess_per_1000_grads : float
        ``1000 · min_ess / gradient evaluations`` of the sampling phase (all chains).
    ess_per_1000_grads_with_warmup : float
        The same with the warm-up's gradient evaluations counted.
    ess_per_second : float
        ``min_ess`` per second of warm-up and sampling (compile time left out).
    max_rhat : float
        Largest rank-normalised split R̂ over coordinates (NaN if a coordinate is
        constant).
    max_mean_error : float
        Largest ``|mean − reference| / reference sd`` over the quantities (in sds).
    max_abs_z : float
        Largest ``|z|`` of the means over the quantities (in standard errors).
    worst : str
        The quantity of ``max_abs_z``.
    max_sd_error : float
        Largest ``|sd / reference sd − 1|`` over the quantities (a fraction).
    max_abs_z_sd : float
        Largest ``|z|`` of the standard deviations over the quantities.
    worst_sd : str
        The quantity of ``max_abs_z_sd``.
    frozen_chains : tuple of int
        Chains with a coordinate whose draws never change.
    non_finite_draws : int
        Draws (values) that are not finite.
    """

    min_ess: float = NAN
    ess_per_1000_grads: float = NAN
    ess_per_1000_grads_with_warmup: float = NAN
    ess_per_second: float = NAN
    max_rhat: float = NAN
    max_mean_error: float = NAN
    max_abs_z: float = NAN
    worst: str = ""
    max_sd_error: float = NAN
    max_abs_z_sd: float = NAN
    worst_sd: str = ""
    frozen_chains: tuple[int, ...] = ()
    non_finite_draws: int = 0


def frozen_chains(positions: np.ndarray) -> tuple[int, ...]:
    """Chains of ``positions`` (draws, chains, dim) with a coordinate whose draws never
    change (a chain that never moves has every coordinate so); none with fewer than 2
    draws."""
    x = np.asarray(positions)
    if x.shape[0] < 2:
        return ()
    still = (x[1:] == x[0]).all(axis=0).any(axis=1)
    return tuple(int(c) for c in np.flatnonzero(still))


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den > 0 and np.isfinite(den) else NAN


def _largest(values: np.ndarray) -> float:
    """The largest value, NaN if any is NaN (a NaN hides nothing)."""
    values = np.asarray(values, dtype=float)
    return float(np.max(values)) if values.size and not np.isnan(values).any() else NAN


def _worst(z: np.ndarray, names: tuple[str, ...]) -> str:
    return "" if np.isnan(z).all() else names[int(np.nanargmax(z))]


def _kurtosis(q: np.ndarray, moments: Moments) -> np.ndarray:
    """The reference's kurtosis of each quantity (n,); where it is unknown (NaN), the
    fourth moment of ``q`` (draws, chains, n) over its variance squared."""
    known = moments.kurtosis
    if not np.isnan(known).any():
        return known
    squares = (q - q.reshape(-1, q.shape[-1]).mean(axis=0)) ** 2
    evar = squares.reshape(-1, q.shape[-1]).mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        own = (squares**2).reshape(-1, q.shape[-1]).mean(axis=0) / evar**2
    return np.where(np.isnan(known), own, known)


def _delta_mcse_sd(kurtosis: np.ndarray, sd: np.ndarray, ess: np.ndarray) -> np.ndarray:
    """``sd √((κ − 1) / (4 ESS))``: the delta method's MCSE of an sd ``sd`` estimated
    from ``ESS`` effective draws of a law of kurtosis ``κ`` (docs/design.md §7.4)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return sd * np.sqrt((kurtosis - 1.0) / (4.0 * ess))


def mcse_sds(quantities: np.ndarray, moments: Moments, sd: np.ndarray | None = None) -> np.ndarray:
    """Our MCSE of each quantity's sd (n,): ``sd √((κ − 1) / (4 ESS))``, ``sd`` that of
    ``quantities`` (draws, chains, n) (``ddof = 1``; given if already computed), ``κ`` the
    reference's kurtosis (the draws' own where it is unknown), ``ESS`` that of
    ``(x − x̄)²``, split chains (docs/design.md §7.4)."""
    q = np.asarray(quantities, dtype=float)
    flat = q.reshape(-1, q.shape[-1])
    if sd is None:
        sd = flat.std(axis=0, ddof=1)
    ess = np.asarray(effective_sample_size((q - flat.mean(axis=0)) ** 2), dtype=float)
    return _delta_mcse_sd(_kurtosis(q, moments), sd, ess.reshape(-1))


def reference_mcse_sd(quantities: np.ndarray, moments: Moments) -> np.ndarray:
    """The MCSE of the reference sds (n,): ``sd_ref √((κ − 1) / (4 ESS_ref))``, the
    delta-method MCSE of an sd from ``moments.ess`` draws of the reference's law, ``κ``
    its kurtosis (where unknown, that of ``quantities`` (draws, chains, n)); zero where
    the reference is exact (``ess`` infinite)."""
    q = np.asarray(quantities, dtype=float).reshape(-1, len(moments.names))
    mcse = _delta_mcse_sd(_kurtosis(q[:, None, :], moments), moments.sd, moments.ess)
    return np.where(np.isinf(moments.ess), 0.0, mcse)


def z_of_sds(quantities: np.ndarray, moments: Moments, stats: dict | None = None) -> np.ndarray:
    """``|z|`` of each quantity's sd against its reference (n,): ``(sd − sd_ref) /
    √(MCSE_sd² + MCSE_sd,ref²)`` (:func:`mcse_sds`, :func:`reference_mcse_sd`);
    ``stats``: the ``sd`` of :func:`~ladder_mcmc.diagnostics.posterior_statistics`, if
    already computed."""
    q = np.asarray(quantities, dtype=float)
    if stats is None:
        stats = posterior_statistics(q, ("sd",))
    with np.errstate(divide="ignore", invalid="ignore"):
        mcse = mcse_sds(q, moments, stats["sd"])
        mcse_ref = reference_mcse_sd(q, moments)
        return np.abs((stats["sd"] - moments.sd) / np.sqrt(mcse**2 + mcse_ref**2))


def accuracy(quantities: np.ndarray, moments: Moments) -> dict[str, Any]:
    """``max_mean_error``, ``max_abs_z``, ``worst``, ``max_sd_error``, ``max_abs_z_sd``,
    ``worst_sd`` of ``quantities`` (draws, chains, n) against ``moments``."""
    q = np.asarray(quantities, dtype=float)
    if q.ndim != 3 or q.shape[2] != len(moments.names):
        raise ValueError(
            f"quantities must have shape (draws, chains, {len(moments.names)}), got {q.shape}"
        )
    stats = posterior_statistics(q, ("mean", "sd", "mcse_mean"))
    with np.errstate(divide="ignore", invalid="ignore"):
        error = stats["mean"] - moments.mean
        z = np.abs(error / np.sqrt(stats["mcse_mean"] ** 2 + moments.mcse**2))
        sd_error = np.abs(stats["sd"] / moments.sd - 1.0)
    z_sd = z_of_sds(q, moments, stats)
    return {
        "max_mean_error": _largest(np.abs(error) / moments.sd),
        "max_abs_z": _largest(z),
        "worst": _worst(z, moments.names),
        "max_sd_error": _largest(sd_error),
        "max_abs_z_sd": _largest(z_sd),
        "worst_sd": _worst(z_sd, moments.names),
    }


def figures_of(run: SamplerRun, quantities: np.ndarray, moments: Moments) -> Figures:
    """The figures of ``run``, whose draws map to ``quantities`` (draws, chains, n)
    (the model's quantities of ``run.positions``), against ``moments``."""
    x = np.asarray(run.positions, dtype=float)
    non_finite = int(np.size(x) - np.count_nonzero(np.isfinite(x)))
    out: dict[str, Any] = {"frozen_chains": frozen_chains(x), "non_finite_draws": non_finite}
    if non_finite or x.shape[0] < 4:
        return Figures(**out)
    ess = min_bulk_ess(x)
    out.update(
        min_ess=ess,
        ess_per_1000_grads=1000.0 * _ratio(ess, run.grad_evals),
        ess_per_1000_grads_with_warmup=1000.0 * _ratio(ess, run.grad_evals + run.warmup_grad_evals),
        ess_per_second=_ratio(ess, run.wall_time),
        max_rhat=_largest(rank_rhat(x)) if x.shape[1] >= 2 else NAN,
        **accuracy(quantities, moments),
    )
    return Figures(**out)


__all__ = [
    "Figures",
    "accuracy",
    "figures_of",
    "frozen_chains",
    "mcse_sds",
    "reference_mcse_sd",
    "z_of_sds",
]
