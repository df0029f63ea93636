"""The tunable parameters of an HMC-family ladder kernel: read, change, check.

A leapfrog-like map has ``step_size``, ``n_steps`` and ``metric``; its refresh may hold
``β`` (:class:`~ladder_mcmc.hamiltonian.momentum.MomentumRefresh` and its kin), the
kinetic energy (a ``metric`` or ``kinetic`` field) and the centre of a jittered length
(a ``n_leapfrog`` field, :class:`~ladder_mcmc.hamiltonian.jittered_length.LengthJitter`).
Warm-up changes them only through :func:`with_hmc_parameters`, so map and refresh
never disagree.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import is_traced
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.ladder.kernel import Ladder
from ladder_mcmc.ladder.refresh import ComposedRefresh, Refresh

#: the names :attr:`Ladder.adapt` may hold, in the order warm-up reports them
ADAPTABLE = ("step_size", "inverse_mass", "n_leapfrog", "beta")


def check_adaptable(kernel: Ladder) -> None:
    """Refuse, naming the map, a kernel whose map has no ``step_size`` and ``metric``."""
    if not (hasattr(kernel.map, "step_size") and hasattr(kernel.map, "metric")):
        raise ValueError(
            "warm-up adaptation needs a leapfrog-like map with step_size and metric; "
            f"got {type(kernel.map).__name__}"
        )


def refresh_parts(refresh: Refresh | None) -> tuple[Refresh, ...]:
    """The refresh's parts in order (one part for a plain refresh, none for None)."""
    if refresh is None:
        return ()
    if isinstance(refresh, ComposedRefresh):
        return tuple(p for part in refresh.parts for p in refresh_parts(part))
    return (refresh,)


def current_beta(kernel: Ladder) -> float | None:
    """``β`` of the kernel's partial momentum refresh (its first part with ``beta``), or None."""
    for part in refresh_parts(kernel.refresh):
        if attrs.has(type(part)) and "beta" in attrs.fields_dict(type(part)):
            return float(part.beta)
    return None


def length_jitter(kernel: Ladder) -> float:
    """The ``jitter`` of the refresh part that draws the leapfrog length, 0 if none."""
    for part in refresh_parts(kernel.refresh):
        if attrs.has(type(part)) and "n_leapfrog" in attrs.fields_dict(type(part)):
            return float(getattr(part, "jitter", 0.0))
    return 0.0


def _number(value: Any, kind: type) -> Any:
    """``kind(value)`` on the host; a traced value (inside the compiled warm-up) as it is."""
    return value if is_traced(value) else kind(value)


def with_hmc_parameters(
    kernel: Ladder,
    step_size: float | None = None,
    metric: Metric | None = None,
    n_steps: int | None = None,
    beta: float | None = None,
) -> Ladder:
    """The same kernel with a new step size, metric, leapfrog length or ``β``.

    A ``metric`` given as a :class:`Metric` is applied to a map whose kinetic
    energy is of another family (e.g. :class:`~ladder_mcmc.hamiltonian.kinetic.PowerKinetic`)
    through that energy's ``with_inverse_mass``, so the family is kept; a
    refresh with a ``metric`` or ``kinetic`` field follows the map. ``n_steps`` sets
    the map's ``n_steps`` and the centre ``n_leapfrog`` of a length-drawing refresh
    part; ``beta`` the ``beta`` of every refresh part that has one. The values may be
    traced (the compiled warm-up rebuilds the kernel with them).
    """
    check_adaptable(kernel)
    current = kernel.map.metric
    if metric is not None and not isinstance(current, Metric):
        rescale = getattr(current, "with_inverse_mass", None)
        if rescale is None:
            raise ValueError(
                f"cannot adapt the mass of a {type(current).__name__} kinetic energy "
                "(it has no with_inverse_mass)"
            )
        metric = rescale(metric.inverse_mass)
    changes: dict[str, Any] = {}
    if step_size is not None:
        changes["step_size"] = _number(step_size, float)
    if metric is not None:
        changes["metric"] = metric
    if n_steps is not None:
        n_steps = changes["n_steps"] = _number(n_steps, int)
    new_map = attrs.evolve(kernel.map, **changes)

    def update(refresh: Refresh | None) -> Refresh | None:
        if refresh is None:
            return None
        if isinstance(refresh, ComposedRefresh):
            return ComposedRefresh(tuple(update(p) for p in refresh.parts))
        if not attrs.has(type(refresh)):
            return refresh
        fields = attrs.fields_dict(type(refresh))
        new: dict[str, Any] = {}
        if metric is not None and "metric" in fields:
            new["metric"] = metric
        elif metric is not None and "kinetic" in fields:
            new["kinetic"] = metric
        if n_steps is not None and "n_leapfrog" in fields:
            new["n_leapfrog"] = n_steps
        if beta is not None and "beta" in fields:
            new["beta"] = _number(beta, float)
        return attrs.evolve(refresh, **new) if new else refresh

    return attrs.evolve(kernel, map=new_map, refresh=update(kernel.refresh))


def apply_warmup(kernel: Ladder, warm: Any) -> Ladder:
    """``kernel`` with the values a warm-up adapted (a :class:`WarmupResult`).

    Raises ``ValueError`` for a :class:`GroupedWarmup` (pass one of its ``groups``).

    What a run continues with after its warm-up: for :func:`~ladder_mcmc.resume`, or to
    sample more with ``sample(apply_warmup(kernel, trace.warmup), trace.final, n,
    seed=...)`` (the kernel has nothing left to adapt, so ``sample`` does not warm it
    up again).
    """
    if hasattr(warm, "groups"):
        raise ValueError(
            "warm: a GroupedWarmup holds one adapted kernel per group of chains; pass one "
            "group's warm-up, warm.groups[g]"
        )
    inv = warm.inverse_mass
    beta = getattr(warm, "beta", None)
    # the length (and a length law's centre) only if warm-up set it: a kernel whose
    # LengthJitter centre differs from its map's n_steps keeps both as they were
    set_length = getattr(warm, "length_set", True)
    adapted = with_hmc_parameters(
        kernel,
        step_size=float(warm.step_size),
        metric=Metric(inv) if inv is not None else None,
        n_steps=int(warm.n_leapfrog) if set_length else None,
        beta=None if beta is None else float(beta),
    )
    return attrs.evolve(adapted, adapt=frozenset())  # nothing left to adapt


def check_mass_adaptation(kernel: Ladder, warmup: int, adapt_mass: bool, dense: bool) -> None:
    """Refuse, before any work, a warm-up whose mass matrix the kernel's kinetic energy
    cannot take: ``dense`` for a family with a diagonal inverse mass only (e.g.
    :class:`~ladder_mcmc.hamiltonian.kinetic.PowerKinetic`, :func:`~ladder_mcmc.lifted_lahmc`), or
    any mass for a family that cannot be rescaled.

    Raises
    ------
    ValueError
        Naming ``dense_mass`` (or ``adapt_mass``) and the kinetic energy.
    """
    metric = getattr(kernel.map, "metric", None)
    if not warmup or not adapt_mass or metric is None or isinstance(metric, Metric):
        return  # nothing adapted, or the Gaussian metric (any mass); the map is checked later
    name = type(metric).__name__
    rescale = getattr(metric, "with_inverse_mass", None)
    if rescale is None:
        raise ValueError(
            f"adapt_mass=True: the {name} kinetic energy cannot take an adapted mass "
            "(it has no with_inverse_mass); pass adapt_mass=False"
        )
    if dense:
        dim = getattr(metric, "dim", None) or 1
        try:
            rescale(np.eye(int(dim)))
        except ValueError:
            raise ValueError(
                f"dense_mass=True: the {name} kinetic energy takes only a diagonal inverse "
                "mass; pass dense_mass=False (or adapt_mass=False)"
            ) from None


__all__ = [
    "ADAPTABLE",
    "apply_warmup",
    "check_adaptable",
    "check_mass_adaptation",
    "current_beta",
    "length_jitter",
    "refresh_parts",
    "with_hmc_parameters",
]
