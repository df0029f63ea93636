"""The tunable parameters of an HMC-family ladder kernel: read, change, check.

A leapfrog-like map has ``step_size``, ``n_steps`` and ``metric``; its refresh may hold
``β`` (:class:`~ladder_mcmc.hamiltonian.momentum.MomentumRefresh` and its kin), the
kinetic energy (a ``metric`` or ``kinetic`` field) and the centre of a jittered length
(a ``n_leapfrog`` field, :class:`~ladder_mcmc.hamiltonian.jittered_length.LengthJitter`).
A map with a leapfrog family and a law (:class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryMap`
of a :class:`~ladder_mcmc.hamiltonian.leapfrog_family.LeapfrogFamily`) holds them in its
family (:func:`leapfrog_of`); its law may hold ``step_size`` and ``metric`` too, and its
refresh wraps the momentum refresh in an
:class:`~ladder_mcmc.ladder.auxiliary_refresh.InnerRefresh` and redraws ``α`` from the law.
Warm-up reads them through :func:`step_size_of`, :func:`metric_of`, :func:`n_steps_of`
and changes them only through :func:`with_hmc_parameters`, so map, law and refresh
never disagree; :func:`restart_chains` puts the chains at the new values (fresh momenta,
a fresh ``α``).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import is_traced
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.ladder.auxiliary_refresh import InnerRefresh, refresh_parts
from ladder_mcmc.ladder.kernel import Ladder, LadderState, log_density_of
from ladder_mcmc.ladder.refresh import ComposedRefresh, Refresh

#: the names :attr:`Ladder.adapt` may hold, in the order warm-up reports them
ADAPTABLE = ("step_size", "inverse_mass", "n_leapfrog", "beta")


def _leapfrog_like(part: Any) -> bool:
    return hasattr(part, "step_size") and hasattr(part, "metric")


def leapfrog_of(map_: Any) -> Any:
    """The part of ``map_`` that holds the leapfrog's ``step_size`` and ``metric`` (and
    ``n_steps``, if it has one): the map itself, or the family of a map that has one
    (:class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryMap`)."""
    family = getattr(map_, "family", None)
    if not _leapfrog_like(map_) and _leapfrog_like(family):
        return family
    return map_


def step_size_of(kernel: Ladder) -> Any:
    """The kernel's leapfrog step ``ε``."""
    return leapfrog_of(kernel.map).step_size


def metric_of(kernel: Ladder) -> Any:
    """The kernel's kinetic energy (its leapfrog's ``metric``), or None."""
    return getattr(leapfrog_of(kernel.map), "metric", None)


def n_steps_of(kernel: Ladder) -> Any:
    """The kernel's leapfrog steps per rung ``M``, or None for a map that has no fixed
    number (:class:`~ladder_mcmc.hamiltonian.state_length.StateLengthLeapfrog`: its law
    draws it)."""
    return getattr(leapfrog_of(kernel.map), "n_steps", None)


def check_adaptable(kernel: Ladder) -> None:
    """Refuse, naming the map, a kernel whose map (or its family) has no ``step_size``
    and ``metric``."""
    if not _leapfrog_like(leapfrog_of(kernel.map)):
        raise ValueError(
            "warm-up adaptation needs a leapfrog-like map with step_size and metric "
            f"(or an AuxiliaryMap of a leapfrog family); got {type(kernel.map).__name__}"
        )


def current_beta(kernel: Ladder) -> float | None:
    """``β`` of the kernel's partial momentum refresh (its first part with ``beta``), or None."""
    for part in refresh_parts(kernel.refresh, inner=True):
        if attrs.has(type(part)) and "beta" in attrs.fields_dict(type(part)):
            return float(part.beta)
    return None


def length_jitter(kernel: Ladder) -> float:
    """The ``jitter`` of the refresh part that draws the leapfrog length, 0 if none."""
    for part in refresh_parts(kernel.refresh, inner=True):
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
    part; ``beta`` the ``beta`` of every refresh part that has one. For an
    :class:`~ladder_mcmc.ladder.auxiliary.AuxiliaryMap` the family (:func:`leapfrog_of`)
    takes the values, its law its ``step_size`` and ``metric`` fields, the refresh an
    :class:`~ladder_mcmc.ladder.auxiliary_refresh.InnerRefresh` wraps the same, and
    every part that redraws ``α`` the map's new law (one object: ``Ladder``'s check).
    The values may be traced (the compiled warm-up rebuilds the kernel with them).

    Raises
    ------
    ValueError
        A kernel :func:`check_adaptable` refuses; a mass for a kinetic energy that cannot
        be rescaled; ``n_steps`` for a map without a fixed number of steps.
    """
    check_adaptable(kernel)
    leapfrog = leapfrog_of(kernel.map)
    current = leapfrog.metric
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
        if not hasattr(leapfrog, "n_steps"):
            raise ValueError(
                f"{type(leapfrog).__name__} has no fixed number of leapfrog steps to set "
                "(its law draws the length)"
            )
        n_steps = changes["n_steps"] = _number(n_steps, int)
    new_leapfrog = attrs.evolve(leapfrog, **changes)
    law = None
    if leapfrog is kernel.map:
        new_map = new_leapfrog
    else:  # a family: the law's copies of ε and the metric follow it
        old_law = kernel.map.law
        fields = attrs.fields_dict(type(old_law)) if attrs.has(type(old_law)) else {}
        own = {k: v for k, v in changes.items() if k in ("step_size", "metric") and k in fields}
        law = attrs.evolve(old_law, **own) if own else old_law
        new_map = attrs.evolve(kernel.map, family=new_leapfrog, law=law)

    def update(refresh: Refresh | None) -> Refresh | None:
        if refresh is None:
            return None
        if isinstance(refresh, ComposedRefresh):
            return ComposedRefresh(tuple(update(p) for p in refresh.parts))
        if isinstance(refresh, InnerRefresh):
            return attrs.evolve(refresh, refresh=update(refresh.refresh))
        if not attrs.has(type(refresh)):
            return refresh
        fields = attrs.fields_dict(type(refresh))
        new: dict[str, Any] = {}
        if (
            law is not None
            and "law" in fields
            and getattr(refresh, "auxiliary_law", None) is not None
        ):
            new["law"] = law  # the map's own law object (Ladder checks they are one)
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


def restart_chains(
    kernel: Ladder, ks: LadderState, rng: Any, momentum: bool
) -> tuple[LadderState, Any]:
    """The chains at the (new) kernel: fresh momenta from its metric (``momentum``; warm-up
    need not keep the old ones), a fresh ``α`` from its law (an auxiliary map's: the old
    one was drawn at the old ``ε`` or momentum), the log density at the new values; and
    the gradients per chain the law's draw and density spent (0 for a law that declares
    none)."""
    state = ks.state
    law = getattr(kernel.map, "law", None)
    inner = getattr(state, "inner", None) if law is not None else None
    n = len(ks.direction)
    if not momentum and inner is None:
        return ks, 0
    metric = metric_of(kernel)
    cost = np.zeros(n, dtype=np.int64)
    if inner is None:
        state = attrs.evolve(state, v=metric.sample_momentum(rng, state.v.shape))
    else:
        if momentum:
            inner = attrs.evolve(inner, v=metric.sample_momentum(rng, inner.v.shape))
        if law.sample_with_cost is None:
            alpha = law.sample(inner, rng)
        else:
            alpha, drawn = law.sample_with_cost(inner, rng)
            cost += np.asarray(drawn, dtype=np.int64)
        state = attrs.evolve(state, inner=inner, alpha=alpha)
    lp, _ = log_density_of(kernel.map, state)
    if kernel.map.log_density_cost is not None:
        cost += np.asarray(kernel.map.log_density_cost(state), dtype=np.int64)
    return attrs.evolve(ks, state=state, log_density=lp), cost


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
    metric = metric_of(kernel)
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
    "leapfrog_of",
    "length_jitter",
    "metric_of",
    "n_steps_of",
    "restart_chains",
    "step_size_of",
    "with_hmc_parameters",
]
