"""Energy diagnostics: how well the momentum refresh explores the energy levels.

:func:`e_bfmi` is the energy Bayesian fraction of missing information (Betancourt 2016):
per chain, ``Σ_n (E_n − E_{n−1})² / Σ_n (E_n − Ē)²`` over the energies ``E_n`` of
successive steps (``Trace.step_stats["energy"]``: ``−log p`` of the state after each
step and its refresh; for leapfrog the Hamiltonian), divided by the fraction ``β`` of
the momentum's variance the refresh replaces (docs/design.md §6.1). Small values (below
:data:`E_BFMI_LOW`, Stan's threshold) say the refresh changes the energy too little
from step to step to explore the target's energy levels: the tails are explored slowly.

It means that only where the energy moves because a Gaussian momentum is refreshed:
:func:`refresh_fraction` reads ``β`` from a kernel's description and gives ``None``
(E-BFMI does not apply, nothing is warned) for any other refresh — a discrete map's
direction refresh, a non-Gaussian partial refresh, a part it does not know.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: E-BFMI below this warns (Stan's threshold)
E_BFMI_LOW = 0.3

#: refresh parts that leave the momentum and ``−log p`` alone (a direction, a jittered
#: length or step size, a lift's sign)
ENERGY_NEUTRAL = frozenset(
    {"DirectionRefresh", "LengthJitter", "StepSizeJitter", "LiftResampleRefresh"}
)

#: why E-BFMI is not computed for a kernel whose refresh is not a Gaussian momentum refresh
NOT_APPLICABLE = "n/a: the refresh is not a Gaussian momentum refresh (docs/design.md §6.1)"


def e_bfmi(energy: np.ndarray, refresh_fraction: Any = 1.0) -> np.ndarray:
    """E-BFMI of each chain from energies (steps, chains), divided by ``refresh_fraction``
    (``β``, a number or one per chain, in ``(0, 1]``; docs/design.md §6.1); NaN for
    fewer than 3 steps or a chain whose energy does not vary (or is not finite).

    Raises
    ------
    ValueError
        If ``energy`` is not 2-d, or ``refresh_fraction`` is not in ``(0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> e = np.random.default_rng(0).standard_normal((1000, 2))  # independent energies
    >>> bool(np.all(np.abs(e_bfmi(e) - 2) < 0.2))
    True
    """
    e = np.asarray(energy, dtype=float)
    if e.ndim != 2:
        raise ValueError(f"energy must have shape (steps, chains), got {e.shape}")
    beta = np.asarray(refresh_fraction, dtype=float)
    if not np.all((beta > 0) & (beta <= 1)):
        raise ValueError(f"refresh_fraction must be in (0, 1], got {refresh_fraction!r}")
    try:
        beta = np.broadcast_to(beta, e.shape[1:])
    except ValueError:
        raise ValueError(
            f"refresh_fraction must be one number or one per chain ({e.shape[1]}), "
            f"got shape {beta.shape}"
        ) from None
    out = np.full(e.shape[1], np.nan)
    if e.shape[0] < 3:
        return out
    with np.errstate(all="ignore"):
        numerator = np.sum(np.diff(e, axis=0) ** 2, axis=0)
        denominator = np.sum((e - e.mean(axis=0)) ** 2, axis=0)
        ok = np.isfinite(numerator) & np.isfinite(denominator) & (denominator > 0)
        out[ok] = numerator[ok] / denominator[ok] / beta[ok]
    return out


def refresh_fraction(description: Any) -> Any:
    """The fraction ``β`` of a Gaussian momentum's variance a refresh replaces per step,
    from its description (``Refresh.describe()``, or a kernel's: ``Trace.kernel``).

    ``MomentumRefresh(β)`` gives ``β``; a full redraw (``β = 1``, also
    ``NormalizedMomentumRefresh(1, kinetic)``) gives 1; several in a row replace
    ``1 − Π(1 − β_i)``; parts in :data:`ENERGY_NEUTRAL` add nothing. ``None`` where
    E-BFMI does not apply: no momentum refresh (a discrete map), a partial refresh of a
    non-Gaussian momentum, or any other part (its effect on the energy is unknown; an
    ``AuxiliaryRefresh`` moves ``−log p(α | ζ)``). A float, or an array for ``β`` given
    per chain.
    """
    if not isinstance(description, dict):
        return None
    if not isinstance(description.get("refresh"), str):  # a kernel's: its refresh's
        description = description.get("refresh")
        if not isinstance(description, dict):
            return None
    kept = _kept_fraction(description)
    if kept is None or kept is _NEUTRAL:
        return None
    return 1.0 - kept if np.ndim(kept) else float(1.0 - kept)


_NEUTRAL = object()  # a part that leaves the momentum alone


def _kept_fraction(part: dict) -> Any:
    """``1 − β`` of one refresh description; ``_NEUTRAL``; ``None`` if unknown."""
    name = part.get("refresh")
    if name in ENERGY_NEUTRAL:
        return _NEUTRAL
    if name == "InnerRefresh" and isinstance(part.get("inner"), dict):
        return _kept_fraction(part["inner"])
    if name == "ComposedRefresh":
        kept: Any = _NEUTRAL
        for each in part.get("parts", ()):
            one = _kept_fraction(each) if isinstance(each, dict) else None
            if one is None:
                return None
            if one is not _NEUTRAL:
                kept = one if kept is _NEUTRAL else kept * one
        return kept
    if name in ("MomentumRefresh", "NormalizedMomentumRefresh") and "beta" in part:
        try:
            beta = np.asarray(part["beta"], dtype=float)
        except (TypeError, ValueError):
            return None
        if beta.size == 0 or not np.all((beta > 0) & (beta <= 1)):
            return None
        if name == "NormalizedMomentumRefresh" and not np.all(beta == 1):
            return None  # a partial blend of a non-Gaussian momentum: no known scale
        return 1.0 - beta
    return None


def trace_refresh_fraction(trace: Any) -> np.ndarray | None:
    """Each chain's ``β`` (:func:`refresh_fraction`) for a trace, from ``trace.kernel``
    (a grouped run's ``"groups"`` through ``trace.warmup.group_of_chain``); ``None``
    where E-BFMI does not apply or the kernel is not described."""
    n = np.shape(trace.rungs)[1]
    kernel = getattr(trace, "kernel", None) or {}
    groups = kernel.get("groups")
    if groups is None:
        beta = refresh_fraction(kernel)
        if beta is None:
            return None
        try:
            return np.broadcast_to(np.asarray(beta, dtype=float), (n,)).copy()
        except ValueError:
            return None
    each = [refresh_fraction(g) for g in groups]
    if any(b is None or np.ndim(b) for b in each):
        return None
    each = np.asarray(each, dtype=float)
    if np.all(each == each[0]):
        return np.full(n, each[0])
    of_chain = getattr(getattr(trace, "warmup", None), "group_of_chain", None)
    if of_chain is None or np.shape(of_chain) != (n,):
        return None
    return each[np.asarray(of_chain)]


def trace_e_bfmi(trace: Any) -> np.ndarray | None:
    """Each chain's :func:`e_bfmi` of a trace's energies, divided by its kernel's ``β``
    (:func:`trace_refresh_fraction`); ``None`` without energies or where it does not
    apply."""
    energy = getattr(trace, "step_stats", {}).get("energy")
    if energy is None:
        return None
    beta = trace_refresh_fraction(trace)
    return None if beta is None else e_bfmi(energy, beta)


__all__ = [
    "ENERGY_NEUTRAL",
    "E_BFMI_LOW",
    "NOT_APPLICABLE",
    "e_bfmi",
    "refresh_fraction",
    "trace_e_bfmi",
    "trace_refresh_fraction",
]
