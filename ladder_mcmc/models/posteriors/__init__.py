"""Seven real posteriors from posteriordb as targets, on Stan's unconstrained scale.

Each target computes, for a batch of unconstrained positions ``x`` (chains, dim),
the energy ``E(x) = -log p(θ(x) | data) - log |dθ/dx|`` (Stan's Jacobian
adjustment; normalising constants dropped) and its hand-derived gradient, and
maps draws back to the constrained parameters with ``constrain``. Data and
reference statistics are read from the posteriordb reference file at load time
(see :mod:`ladder_mcmc.models.posteriors.references` for where it is looked for).
:func:`jax_log_density` gives the same log densities as JAX functions (optional
extra ``jax``).

Examples
--------
>>> from ladder_mcmc.models import posteriors
>>> len(posteriors.names())
7
>>> target = posteriors.load("kidiq-kidscore_momiq")  # doctest: +SKIP
>>> target.dim, target.param_names  # doctest: +SKIP
(3, ('beta[1]', 'beta[2]', 'sigma'))
"""

from __future__ import annotations

import os

from ladder_mcmc.models.posteriors.ark import ArK
from ladder_mcmc.models.posteriors.arma import Arma11
from ladder_mcmc.models.posteriors.blr import Blr
from ladder_mcmc.models.posteriors.eight_schools import (
    EightSchoolsCentered,
    EightSchoolsNoncentered,
)
from ladder_mcmc.models.posteriors.garch import Garch11
from ladder_mcmc.models.posteriors.gauss_mix import LowDimGaussMix
from ladder_mcmc.models.posteriors.jax_densities import jax_log_density
from ladder_mcmc.models.posteriors.kidiq import KidscoreMomiq
from ladder_mcmc.models.posteriors.posterior import Posterior
from ladder_mcmc.models.posteriors.references import (
    DEFAULT_PATH,
    ENV_VAR,
    Reference,
    find_database,
    read_database,
)

MODELS: dict[str, type[Posterior]] = {
    cls.name: cls
    for cls in (
        EightSchoolsNoncentered,
        ArK,
        Garch11,
        LowDimGaussMix,
        Blr,
        Arma11,
        KidscoreMomiq,
    )
}
"""posteriordb name -> target class: the posteriors with a reference record of their own.
:class:`EightSchoolsCentered` is not here: it borrows the non-centred model's record
(``EightSchoolsCentered.load()``)."""


def names() -> tuple[str, ...]:
    """The posteriordb names of the available posteriors."""
    return tuple(MODELS)


def load(name: str, path: str | os.PathLike | None = None) -> Posterior:
    """Build the target ``name`` with data and reference statistics from the reference file.

    Parameters
    ----------
    name : str
        One of :func:`names`.
    path : path-like, optional
        The reference file; else ``$LADDER_MCMC_POSTERIORDB``, else the copy
        shipped in ``ladder_mcmc/models/posteriors/data/``.

    Raises
    ------
    ValueError
        For an unknown name, a name absent from the file, or data or reference
        names that do not match the model.
    FileNotFoundError
        If the reference file cannot be found.
    """
    if name not in MODELS:
        raise ValueError(f"unknown posterior {name!r}; available: {', '.join(MODELS)}")
    table = read_database(path)
    if name not in table:
        raise ValueError(f"posterior {name!r} is not in the reference file {find_database(path)}")
    record = table[name]
    reference = Reference.from_record(record)
    target = MODELS[name].from_data(record["data"], reference)
    if reference.names != tuple(target.param_names):
        raise ValueError(
            f"{name}: reference parameters {reference.names} do not match the model's "
            f"{tuple(target.param_names)}"
        )
    return target


__all__ = [
    "DEFAULT_PATH",
    "ENV_VAR",
    "MODELS",
    "ArK",
    "Arma11",
    "Blr",
    "EightSchoolsCentered",
    "EightSchoolsNoncentered",
    "Garch11",
    "KidscoreMomiq",
    "LowDimGaussMix",
    "Posterior",
    "Reference",
    "find_database",
    "jax_log_density",
    "load",
    "names",
]
