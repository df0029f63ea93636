"""The kurtosis of posteriordb's reference draws: what the MCSE of a posterior's sd is
read from (docs/design.md §7.4).

The reference file (:mod:`ladder_mcmc.models.posteriors.references`) holds posteriordb's
summaries (mean, sd, MCSE, bulk ESS) but no fourth moments. The table below is the
kurtosis ``m₄ / m₂²`` (central moments, all 10 × 1000 reference draws pooled) of every
constrained parameter of the seven bundled posteriors, computed from posteriordb's
reference draws (``posterior_database/reference_posteriors/draws/draws/<name>.json.zip``
at commit 28f8d3d6, the commit the reference file was taken from; the draws give the
file's means and sds to the last digit). posteriordb, by the posteriordb developers,
BSD 3-Clause License (``models/posteriors/data/NOTICE.txt``).

Each entry is kept with the parameter names and the first parameter's sd of the summary
it belongs to: :func:`reference_kurtosis` gives it only to a reference that matches both,
and NaN (unknown) to any other.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np


@attrs.frozen
class _Entry:
    names: tuple[str, ...]
    first_sd: float
    kurtosis: tuple[float, ...]


REFERENCE_KURTOSIS: dict[str, _Entry] = {
    "eight_schools-eight_schools_noncentered": _Entry(
        (
            "theta[1]",
            "theta[2]",
            "theta[3]",
            "theta[4]",
            "theta[5]",
            "theta[6]",
            "theta[7]",
            "theta[8]",
            "mu",
            "tau",
        ),
        5.61586,
        (
            5.806,
            4.204,
            5.523,
            4.373,
            4.211,
            4.54,
            4.456,
            6.641,
            3.062,
            8.814,
        ),
    ),
    "arK-arK": _Entry(
        (
            "alpha",
            "beta[1]",
            "beta[2]",
            "beta[3]",
            "beta[4]",
            "beta[5]",
            "sigma",
        ),
        0.0107082,
        (
            3.032,
            3.042,
            2.983,
            3.021,
            3.003,
            2.963,
            3.101,
        ),
    ),
    "garch-garch11": _Entry(
        (
            "mu",
            "alpha0",
            "alpha1",
            "beta1",
        ),
        0.124031,
        (
            3.046,
            4.022,
            2.722,
            2.387,
        ),
    ),
    "low_dim_gauss_mix-low_dim_gauss_mix": _Entry(
        (
            "mu[1]",
            "mu[2]",
            "sigma[1]",
            "sigma[2]",
            "theta",
        ),
        0.042045,
        (
            2.952,
            3.058,
            3.05,
            3.031,
            2.974,
        ),
    ),
    "sblrc-blr": _Entry(
        (
            "beta[1]",
            "beta[2]",
            "beta[3]",
            "beta[4]",
            "beta[5]",
            "sigma",
        ),
        0.000982565,
        (
            3.078,
            3.096,
            3.119,
            3.067,
            3.166,
            3.178,
        ),
    ),
    "arma-arma11": _Entry(
        (
            "mu",
            "phi",
            "theta",
            "sigma",
        ),
        0.011439,
        (
            2.934,
            3.057,
            3.013,
            3.115,
        ),
    ),
    "kidiq-kidscore_momiq": _Entry(
        (
            "beta[1]",
            "beta[2]",
            "sigma",
        ),
        5.9686,
        (
            3.032,
            3.039,
            3.08,
        ),
    ),
}
"""posteriordb name → the names, first sd and kurtosis of its reference's parameters."""


def reference_kurtosis(names: Sequence[str], sd: Sequence[float] | np.ndarray) -> np.ndarray:
    """The kurtosis of the reference draws of the posterior whose summary has parameters
    ``names`` and standard deviations ``sd`` (n,); NaN for each if none of
    :data:`REFERENCE_KURTOSIS` matches (names equal, first sd within 10⁻⁵).

    Examples
    --------
    >>> from ladder_mcmc.models import posteriors
    >>> ref = posteriors.load("kidiq-kidscore_momiq").reference
    >>> reference_kurtosis(ref.names, ref.sd)
    array([3.032, 3.039, 3.08 ])
    >>> reference_kurtosis(["a"], [1.0])
    array([nan])
    """
    names = tuple(names)
    sd = np.asarray(sd, dtype=float).reshape(-1)
    for entry in REFERENCE_KURTOSIS.values():
        if entry.names == names and abs(sd[0] / entry.first_sd - 1.0) < 1e-5:
            return np.array(entry.kurtosis)
    return np.full(len(names), np.nan)


__all__ = ["REFERENCE_KURTOSIS", "reference_kurtosis"]
