"""The posteriordb reference file: where it is, what it holds, and reference statistics.

The file ``posteriordb_refs.json`` (seven posteriors from posteriordb, BSD-3)
holds, per posterior, the Stan code, the data and summaries of long reference
runs of Stan's NUTS: means, standard deviations and Monte Carlo standard errors
of every constrained parameter. Targets read them from this file when they are
built.

The file ships with the package, in ``ladder_mcmc/models/posteriors/data/``. It was
taken from posteriordb (https://github.com/stan-dev/posteriordb, commit
28f8d3d6, by the posteriordb developers; BSD 3-Clause License): Stan code and
data as posteriordb has them, summaries computed from its reference draws. The
licence and provenance are in ``data/NOTICE.txt`` next to it, and the file's
``_source`` entry.

The file is looked for, in order, at an explicit ``path``, at the path in the
environment variable ``LADDER_MCMC_POSTERIORDB``, and at the copy inside the
package (:data:`DEFAULT_PATH`).
"""

from __future__ import annotations

import functools
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

import attrs
import numpy as np

ENV_VAR = "LADDER_MCMC_POSTERIORDB"
"""Environment variable naming the reference file."""

_DATA = resources.files("ladder_mcmc.models.posteriors") / "data"
DEFAULT_PATH = Path(str(_DATA / "posteriordb_refs.json"))
"""The copy shipped with the package (``ladder_mcmc/models/posteriors/data/``)."""


def find_database(path: str | os.PathLike | None = None) -> Path:
    """Locate the reference file.

    Parameters
    ----------
    path : path-like, optional
        Explicit location; if given it must exist.

    Returns
    -------
    Path
        The first of ``path``, ``$LADDER_MCMC_POSTERIORDB``, :data:`DEFAULT_PATH`
        that is given.

    Raises
    ------
    FileNotFoundError
        If the chosen file does not exist, naming every place looked at.
    """
    if path is not None:
        candidates = [("path argument", Path(path))]
    elif os.environ.get(ENV_VAR):
        candidates = [(f"${ENV_VAR}", Path(os.environ[ENV_VAR]))]
    else:
        candidates = [("default location", DEFAULT_PATH)]
    for _, candidate in candidates:
        if candidate.is_file():
            return candidate
    where = "; ".join(f"{how}: {c}" for how, c in candidates)
    raise FileNotFoundError(
        f"posteriordb reference file not found ({where}). Pass path=..., set ${ENV_VAR}, "
        f"or reinstall ladder_mcmc (its copy belongs at {DEFAULT_PATH})"
    )


@functools.lru_cache(maxsize=4)
def _read(resolved: str, mtime: float) -> dict:
    with open(resolved, encoding="utf-8") as fh:
        content = json.load(fh)
    if not isinstance(content, dict) or not isinstance(content.get("posteriors"), dict):
        raise ValueError(f"{resolved} is not a posteriordb reference file (no 'posteriors' table)")
    return content


def read_database(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The ``posteriors`` table of the reference file: name -> record (see :func:`find_database`).

    The parsed file is cached; do not modify the returned records.
    """
    found = find_database(path).resolve()
    return _read(str(found), found.stat().st_mtime)["posteriors"]


@attrs.frozen(eq=False)
class Reference:
    """Reference summaries of a posterior (constrained scale), from long Stan runs.

    Attributes
    ----------
    names : tuple of str
        Constrained parameter names in the reference's order (``"theta[1]"``, ...).
    mean, sd, mcse : arrays (n_params,)
        Posterior means, standard deviations, and Monte Carlo standard errors of
        the means (``sd / sqrt(bulk ESS)``).
    ess : array (n_params,)
        Bulk effective sample sizes of the reference draws.
    unconstrained : dict
        Name -> ``{"mean", "sd"}`` of the unconstrained parameters (no MCSE given).
    method : dict
        How the reference draws were made (Stan's sampler settings).
    """

    names: tuple[str, ...]
    mean: np.ndarray
    sd: np.ndarray
    mcse: np.ndarray
    ess: np.ndarray
    unconstrained: dict = attrs.field(factory=dict)
    method: dict = attrs.field(factory=dict)

    @classmethod
    def from_record(cls, record: dict) -> Reference:
        """Read a record of the reference file's ``posteriors`` table."""
        summary = record["reference_summary_constrained"]
        names = tuple(summary)

        def column(key: str) -> np.ndarray:
            return np.array([float(summary[n][key]) for n in names])

        return cls(
            names=names,
            mean=column("mean"),
            sd=column("sd"),
            mcse=column("mcse_mean"),
            ess=column("ess_bulk"),
            unconstrained={
                k: {"mean": float(v["mean"]), "sd": float(v["sd"])}
                for k, v in record.get("reference_summary_unconstrained", {}).items()
            },
            method=dict(record.get("reference_method", {})),
        )
