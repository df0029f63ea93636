"""Chains that stop moving during warm-up: kept out of the step size's statistic, and
moved at a window's end to where another chain is.

A chain started far in the tails (or caught where the density is all but zero) can take
no rung at any step size the other chains can use. Dual averaging on the fraction of
*all* chains taking the first rung then aims at a target it cannot reach — with one of
four chains at 0, the others would have to exceed 100 % — and drives the shared ``ε``
towards zero for everyone (one stuck chain freezes the run). So:

* a chain is **idle** after :data:`STUCK_STEPS` steps in a row without taking a rung (a
  flip or a stay each time; a healthy chain at the target probability 0.8 does this with
  probability below ``0.2²⁰ ≈ 10⁻¹⁴``);
* the statistic is the fraction of the chains that are not idle taking the first rung
  (of all chains when every chain is idle: then the step is too large for all), and a
  window's moments (the mass) pool the chains that are not idle;
* at the end of each slow window, an idle chain is moved to the full state of a chain that
  is not (position, momentum, direction, the rule's carry), chosen uniformly with one
  uniform of the idle chain's own stream; warm-up's draws are discarded, so this changes
  where sampling starts, not what it samples. ``WarmupResult.relocated`` counts the moves
  per chain, and ``summary`` reports them.

A chain in a region the others never visit but where it still moves (a minor mode) is not
idle and is never moved.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import LadderState

#: steps in a row without a rung after which a chain counts as idle
STUCK_STEPS = 20


def count_idle(idle: Any, rungs: Any, keep: Any, xp: Any) -> Any:
    """Each chain's steps in a row without a rung, after a step with rung codes ``rungs``
    (counted only where ``keep``: padding rows of a compiled block are not steps)."""
    moved = rungs >= 1
    return xp.where(keep, xp.where(moved, 0, idle + 1), idle)


def first_rung_fraction(rungs: Any, idle: Any, xp: Any) -> Any:
    """The fraction of the chains that are not idle (:data:`STUCK_STEPS`) whose step took
    the first rung; of all chains when all are idle."""
    took = xp.asarray(rungs == 1, dtype=xp.float64)
    active = xp.asarray(idle < STUCK_STEPS, dtype=xp.float64)
    n_active = xp.sum(active)
    return xp.where(n_active > 0, xp.sum(took * active) / xp.maximum(n_active, 1.0), xp.mean(took))


def relocate_idle(ks: LadderState, idle: Any, rng: Any) -> tuple[LadderState, np.ndarray]:
    """``ks`` with each idle chain replaced by a copy of a chain that is not, and which
    chains moved (a boolean per chain); nothing drawn, and ``ks`` unchanged, unless some
    but not all chains are idle."""
    idle = np.asarray(idle)
    stuck = idle >= STUCK_STEPS
    if not stuck.any() or stuck.all():
        return ks, np.zeros(stuck.shape, dtype=bool)
    active = np.flatnonzero(~stuck)
    u = np.asarray(rng.random(stuck.size))
    source = np.arange(stuck.size)
    pick = np.minimum((u[stuck] * active.size).astype(np.int64), active.size - 1)
    source[stuck] = active[pick]

    def take(leaf: Any) -> Any:
        return leaf[source]

    moved = LadderState(
        batch.tree_map(take, ks.state),
        take(ks.direction),
        take(ks.log_density),
        None if ks.carry is None else batch.tree_map(take, ks.carry),
    )
    return moved, stuck


__all__ = ["STUCK_STEPS", "count_idle", "first_rung_fraction", "relocate_idle"]
