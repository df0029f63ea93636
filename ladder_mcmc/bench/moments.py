"""Reference moments of the suite's models: what the draws' means are checked against.

A :class:`Moments` holds, for every quantity a model reports (a coordinate of a synthetic
target, a constrained parameter of a posterior), its reference mean and standard
deviation, the Monte Carlo standard error of that mean (zero for exact moments), and
the effective sample size of the reference run (infinite for exact moments).
Exact ones come from the targets' closed forms (:meth:`Moments.exact`), by quadrature
(:func:`rough_well_moments`; eight schools,
:func:`~ladder_mcmc.models.posteriors.eight_schools.exact_moments`), or from posteriordb's
long reference runs (:meth:`Moments.from_reference`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from ladder_mcmc.models.exact_targets import RoughWell


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

    def __attrs_post_init__(self) -> None:
        n = len(self.names)
        for field in ("mean", "sd", "mcse", "ess"):
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
    ) -> Moments:
        """Exact moments: ``mean`` and ``variance`` per quantity, no Monte Carlo error.

        Examples
        --------
        >>> m = Moments.exact(["a", "b"], [0.0, 1.0], [4.0, 1.0])
        >>> m.sd, m.mcse
        (array([2., 1.]), array([0., 0.]))
        """
        variance = _vector(variance)
        return cls(names, mean, np.sqrt(variance), np.zeros(len(variance)), source)

    @classmethod
    def from_reference(cls, reference: object) -> Moments:
        """From a posteriordb :class:`~ladder_mcmc.models.posteriors.Reference`
        (constrained parameters: names, mean, sd, mcse, and the bulk ESS of its draws)."""
        return cls(
            reference.names,  # type: ignore[attr-defined]
            reference.mean,  # type: ignore[attr-defined]
            reference.sd,  # type: ignore[attr-defined]
            reference.mcse,  # type: ignore[attr-defined]
            "posteriordb",
            reference.ess,  # type: ignore[attr-defined]
        )


def coordinate_names(dim: int) -> tuple[str, ...]:
    """``("x[0]", …, "x[dim-1]")``: the quantities of a target reported as its coordinates."""
    return tuple(f"x[{i}]" for i in range(dim))


def rough_well_moments(target: RoughWell, n_grid: int = 400_001) -> Moments:
    """Exact moments of :class:`~ladder_mcmc.models.RoughWell` by quadrature.

    The density factorises over coordinates, each ``∝ exp(−x²/(2σ₁²) − cos(πx/σ₂))``:
    symmetric (mean 0), its variance one integral on an even grid of ``n_grid`` points over
    ``±12 σ₁`` (the ripples' period ``2σ₂`` spans hundreds of points).

    Examples
    --------
    >>> m = rough_well_moments(RoughWell())
    >>> m.mean, bool(9000 < m.variance[0] < 11000)
    (array([0., 0.]), True)
    """
    x = np.linspace(-12 * target.sigma1, 12 * target.sigma1, n_grid)
    log_w = -(x**2) / (2 * target.sigma1**2) - np.cos(np.pi * x / target.sigma2)
    w = np.exp(log_w - log_w.max())
    variance = float(np.sum(w * x**2) / np.sum(w))
    return Moments.exact(
        coordinate_names(target.dim),
        np.zeros(target.dim),
        np.full(target.dim, variance),
        "quadrature",
    )


__all__ = ["Moments", "coordinate_names", "rough_well_moments"]
