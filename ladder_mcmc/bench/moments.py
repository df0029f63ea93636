"""Reference moments of the suite's models: what the draws' means are checked against.

A :class:`Moments` holds, for every quantity a model reports (a coordinate of a synthetic
target, a constrained parameter of a posterior), its reference mean and standard
deviation, the Monte Carlo standard error of that mean (zero for exact moments), the
effective sample size of the reference run (infinite for exact moments), and its
kurtosis ``E(q − E q)⁴ / sd⁴`` where the reference knows it (NaN where not): the
MCSE of a standard deviation is read from it (:mod:`ladder_mcmc.bench.figures`,
docs/design.md §7.4).
Exact ones come from the targets' closed forms (:meth:`Moments.exact`), by quadrature
(:func:`rough_well_moments`; eight schools, :func:`eight_schools_moments`), or from
posteriordb's long reference runs (:meth:`Moments.from_reference`, the kurtosis from its
reference draws: :mod:`ladder_mcmc.bench.reference_kurtosis`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from ladder_mcmc.bench.reference_kurtosis import reference_kurtosis
from ladder_mcmc.models.exact_targets import RoughWell
from ladder_mcmc.models.posteriors.eight_schools import conditional_moments


def _vector(value: object) -> np.ndarray:
    out = np.array(value, dtype=float).reshape(-1)
    out.setflags(write=False)
    return out


@attrs.frozen(eq=False)
class Moments:
    """Reference means, standard deviations and their errors of a model's quantities.

    Attributes
    ----------
    names : tuple of str
        The quantities, in the order of the model's ``quantities`` (e.g. ``"x[0]"``,
        ``"theta[1]"``).
    mean : float array (n,)
        Reference means, in the quantities' own units.
    sd : float array (n,)
        Reference standard deviations (``> 0``), same units.
    mcse : float array (n,)
        Monte Carlo standard errors of ``mean`` (same units); zeros for exact moments.
    ess : float array (n,)
        Effective sample sizes of the reference runs (infinite for exact moments): the
        MCSE of the reference ``sd`` is taken from it (:mod:`ladder_mcmc.bench.figures`).
    source : str
        Where they come from (``"exact"``, ``"quadrature"``, ``"posteriordb"``).
    kurtosis : float array (n,)
        The reference kurtosis ``E(q − E q)⁴ / sd⁴`` of each quantity (3 for a normal
        law, ``≥ 1``), NaN where the reference does not know it: the MCSE of an sd is
        taken from it rather than from the fourth moment of the draws judged
        (:func:`~ladder_mcmc.bench.figures.mcse_sds`).
    """

    names: tuple[str, ...] = attrs.field(converter=tuple)
    mean: np.ndarray = attrs.field(converter=_vector)
    sd: np.ndarray = attrs.field(converter=_vector)
    mcse: np.ndarray = attrs.field(converter=_vector)
    source: str = "exact"
    ess: np.ndarray = attrs.field(
        default=attrs.Factory(lambda self: np.full(len(self.names), np.inf), takes_self=True),
        converter=_vector,
    )
    kurtosis: np.ndarray = attrs.field(
        default=attrs.Factory(lambda self: np.full(len(self.names), np.nan), takes_self=True),
        converter=_vector,
    )

    def __attrs_post_init__(self) -> None:
        n = len(self.names)
        for field in ("mean", "sd", "mcse", "ess", "kurtosis"):
            if getattr(self, field).shape != (n,):
                raise ValueError(
                    f"Moments.{field} must have one value per name ({n}), got "
                    f"{getattr(self, field).shape}"
                )
        if not (np.all(np.isfinite(self.sd)) and np.all(self.sd > 0)):
            raise ValueError("Moments.sd must be finite and > 0")
        if not (np.all(np.isfinite(self.mcse)) and np.all(self.mcse >= 0)):
            raise ValueError("Moments.mcse must be finite and >= 0")
        if not np.all(self.ess > 0):  # NaN fails too
            raise ValueError(f"Moments.ess must be > 0 (inf for exact moments), got {self.ess}")
        known = self.kurtosis[~np.isnan(self.kurtosis)]
        if not (np.all(np.isfinite(known)) and np.all(known >= 1)):
            raise ValueError(
                f"Moments.kurtosis must be finite and >= 1 (NaN if unknown), got {self.kurtosis}"
            )

    @property
    def variance(self) -> np.ndarray:
        """``sd²``, the reference variances (n,)."""
        return self.sd**2

    @property
    def second_moment(self) -> np.ndarray:
        """``E[q²] = mean² + sd²`` of each quantity (n,): the reference of ``x²``."""
        return self.mean**2 + self.sd**2

    @classmethod
    def exact(
        cls,
        names: Sequence[str],
        mean: Sequence[float] | np.ndarray,
        variance: Sequence[float] | np.ndarray,
        source: str = "exact",
        kurtosis: Sequence[float] | np.ndarray | None = None,
    ) -> Moments:
        """Exact moments: ``mean``, ``variance`` and ``kurtosis`` (``E(q − E q)⁴ /
        variance²``; None: unknown) per quantity, no Monte Carlo error.

        Examples
        --------
        >>> m = Moments.exact(["a", "b"], [0.0, 1.0], [4.0, 1.0], kurtosis=[3.0, 3.0])
        >>> m.sd, m.mcse, m.kurtosis
        (array([2., 1.]), array([0., 0.]), array([3., 3.]))
        """
        variance = _vector(variance)
        n = len(variance)
        kurt = np.full(n, np.nan) if kurtosis is None else kurtosis
        return cls(names, mean, np.sqrt(variance), np.zeros(n), source, np.full(n, np.inf), kurt)

    @classmethod
    def from_reference(cls, reference: object) -> Moments:
        """From a posteriordb :class:`~ladder_mcmc.models.posteriors.Reference`
        (constrained parameters: names, mean, sd, mcse, and the bulk ESS of its draws),
        the kurtosis of its reference draws where
        :func:`~ladder_mcmc.bench.reference_kurtosis.reference_kurtosis` knows it."""
        return cls(
            reference.names,  # type: ignore[attr-defined]
            reference.mean,  # type: ignore[attr-defined]
            reference.sd,  # type: ignore[attr-defined]
            reference.mcse,  # type: ignore[attr-defined]
            "posteriordb",
            reference.ess,  # type: ignore[attr-defined]
            reference_kurtosis(reference.names, reference.sd),  # type: ignore[attr-defined]
        )


def coordinate_names(dim: int) -> tuple[str, ...]:
    """``("x[0]", …, "x[dim-1]")``: the quantities of a target reported as its coordinates."""
    return tuple(f"x[{i}]" for i in range(dim))


def rough_well_moments(target: RoughWell, n_grid: int = 400_001) -> Moments:
    """Exact moments of :class:`~ladder_mcmc.models.RoughWell` by quadrature.

    The density factorises over coordinates, each ``∝ exp(−x²/(2σ₁²) − cos(πx/σ₂))``:
    symmetric (mean 0), its variance and fourth moment one integral each on an even grid
    of ``n_grid`` points over ``±12 σ₁`` (the ripples' period ``2σ₂`` spans hundreds of
    points).

    Examples
    --------
    >>> m = rough_well_moments(RoughWell())
    >>> m.mean, bool(9000 < m.variance[0] < 11000), bool(2.5 < m.kurtosis[0] < 3.5)
    (array([0., 0.]), True, True)
    """
    x = np.linspace(-12 * target.sigma1, 12 * target.sigma1, n_grid)
    log_w = -(x**2) / (2 * target.sigma1**2) - np.cos(np.pi * x / target.sigma2)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    variance = float(np.sum(w * x**2))
    kurtosis = float(np.sum(w * x**4)) / variance**2
    return Moments.exact(
        coordinate_names(target.dim),
        np.zeros(target.dim),
        np.full(target.dim, variance),
        "quadrature",
        np.full(target.dim, kurtosis),
    )


def eight_schools_moments(
    names: Sequence[str], y: np.ndarray, sigma: np.ndarray, n_grid: int = 20_001
) -> Moments:
    """Exact moments of eight schools' ``(theta[1..J], mu, tau)`` by quadrature, the
    kurtosis included.

    As :func:`~ladder_mcmc.models.posteriors.eight_schools.exact_moments` (the same
    conditionals on the same grid of ``log tau``,
    :func:`~ladder_mcmc.models.posteriors.eight_schools.log_tau_posterior`): given
    ``tau``, ``mu`` and each ``theta_j`` are normal with mean ``c`` and variance ``s``
    (``tau`` itself a point), so the fourth central moment about the posterior mean
    ``μ`` is ``Σ_grid w [(c − μ)⁴ + 6 (c − μ)² s + 3 s²]``.

    Examples
    --------
    >>> y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
    >>> sigma = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])
    >>> m = eight_schools_moments([f"q{i}" for i in range(10)], y, sigma)
    >>> m.sd[-2:].round(2), bool(m.kurtosis[-1] > 5)  # mu, tau: tau's tail is heavy
    (array([3.32, 3.22]), True)
    """
    w, cond_mean, cond_var = conditional_moments(y, sigma, n_grid)
    mean = w @ cond_mean
    centred = cond_mean - mean
    variance = w @ (cond_var + centred**2)
    fourth = w @ (centred**4 + 6.0 * centred**2 * cond_var + 3.0 * cond_var**2)
    return Moments.exact(names, mean, variance, "quadrature", fourth / variance**2)


__all__ = ["Moments", "coordinate_names", "eight_schools_moments", "rough_well_moments"]
