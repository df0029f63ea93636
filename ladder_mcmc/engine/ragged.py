"""The ragged step, written once: every undecided chain moves one rung (docs/design.md §9).

In batched arithmetic a map call costs about as much for a few chains as for the
whole batch, so the synchronous step (:meth:`Ladder.step
<ladder_mcmc.ladder.kernel.Ladder.step>`), which computes rung 2, 3, … for the few
chains still undecided, pays a whole call per rung. Here every chain is at its own
rung of its own step, and one :func:`iterate` is *one* ``map.move`` on the whole batch:

1. every chain computes the rung its rule's plan asks for next, from its current rung
   or from its step's origin (:class:`Plan`), and the density ratio ``r_s`` of that
   rung to the origin (Jacobian-weighted for a map that changes volume, design §13);
2. ``rule.update`` gives ``C_s``; a chain whose uniform is below it, or that has run
   out of stages, *decides*: it moves to the rung, flips or stays (the rule's
   outcome), and the refresh runs on it;
3. a chain that decided records its step (a :class:`StepRecord`), draws the next
   step's uniform, and starts that step in the same iteration.

The same function runs on numpy arrays (the host loop, :mod:`ladder_mcmc.engine.numpy_loop`)
and on JAX values inside one compiled ``lax.while_loop``
(:mod:`ladder_mcmc.engine.jax_loop`): it is written against the namespace of its inputs
(:mod:`ladder_mcmc.arrays`), and its per-chain state :class:`RaggedState` is a pytree
of arrays, chains on axis 0. Its transitions are those of ``Ladder.step``, with the
same random numbers: the refresh and the next uniform are drawn for the whole batch,
and only the chains that decided take them from their streams (``draws.view(mask)``),
so each chain consumes its numbers in its own step order (docs/design.md §11). On the
host, a refresh that spends gradients (``Refresh.costly``, or a density after it that
does) runs on the decided chains alone, so that the gradient counts are exact; compiled,
it runs on the batch and its other rows are discarded (time, not counted gradients).

``active`` (for the compiled loop, whose batch cannot shrink) marks the chains still
taking steps; the others keep their state. The numpy loop removes finished chains
instead, and takes a few shortcuts :func:`ladder_mcmc.arrays.known` allows on the host
(no chain decided, every chain decided), which change the time, not the values.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import known, namespace, set_rows
from ladder_mcmc.engine.step_state import (
    STEP_STATS,
    Draws,
    Plan,
    RaggedState,
    StepRecord,
    step_stats,
)
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import (
    Ladder,
    LadderState,
    add_costs,
    density_cost,
    jacobian_weighted,
    quiet_log_density_of,
    refresh_cost,
)
from ladder_mcmc.ladder.rules import FLIP


def start(kernel: Ladder, ks: LadderState, steps_done: Any, draws: Draws) -> RaggedState:
    """Every chain at stage 0 of its next step, with its uniform drawn
    (``rule.uniform``, from the streams of all chains)."""
    xp = namespace(ks.log_density)
    n = ks.direction.shape[0]
    zeros_int = xp.zeros(n, dtype=xp.int64)
    zeros = xp.zeros(n, dtype=xp.float64)
    u = kernel.rule.uniform(ks.carry, draws.view(None), n)
    return RaggedState(
        origin=ks.state,
        current=ks.state,
        direction=ks.direction,
        log_density=ks.log_density,
        carry=ks.carry,
        u=xp.asarray(u, dtype=xp.float64),
        stage=zeros_int,
        memory=zeros,
        n_moves=zeros_int,
        non_finite=zeros_int,
        log_jacobian=zeros,
        first_prob=zeros,
        energy_error=xp.full(n, -xp.inf),
        step=xp.asarray(steps_done, dtype=xp.int64),
    )


def _refresh(kernel: Ladder, state: Any, direction: Any, log_p: Any, rng: Any):
    """The refresh on the whole batch and ``log p`` after it: ``(state, direction, log p,
    gradients spent per chain or None)``."""
    refresh = kernel.refresh
    if refresh is None:
        return state, direction, log_p, None
    n = direction.shape[0]
    new, new_dir, spent = refresh.with_cost(state, direction, rng)
    spent = refresh_cost(refresh, spent, n)
    if refresh.changes_state:
        # `state` is finite (its rungs were): only the leaves the refresh replaced are checked
        log_p = quiet_log_density_of(kernel.map, new, state)[0]
        spent = add_costs(spent, density_cost(kernel.map, new))
    if type(new_dir) is not np.ndarray or new_dir.dtype != np.int8:  # (else: as it is)
        xp = namespace(direction)
        new_dir = xp.asarray(new_dir, dtype=xp.int8)
    return new, new_dir, log_p, spent


def _costly(kernel: Ladder) -> bool:
    """Whether the refresh, or the density after it, spends gradients."""
    refresh = kernel.refresh
    return refresh is not None and (
        refresh.costly or (refresh.changes_state and kernel.map.log_density_cost is not None)
    )


def _at(xp: Any, table: np.ndarray, stage: Any) -> Any:
    """``table[stage]`` for a plan's table: indexed on the host; compiled, a select per
    stage (XLA fuses them with their neighbours, a gather it runs apart)."""
    if xp is np:
        return table[stage]
    out = xp.full(stage.shape, table[-1], dtype=table.dtype)
    for s in range(len(table) - 1):
        out = xp.where(stage == s, table[s], out)
    return out


_count = np.count_nonzero  # on the host: a mask's any() and all() without their wrappers


def iterate(
    kernel: Ladder,
    plan: Plan,
    rs: RaggedState,
    draws: Draws,
    limit: Any,
    active: Any = None,
) -> tuple[RaggedState, StepRecord | None]:
    """One map call on the whole batch: every chain moves one rung, and the chains that
    decide end their step (see the module docstring).

    Parameters
    ----------
    kernel, plan
        The kernel and its rule's :class:`Plan`.
    rs : RaggedState
        Every chain's place in its step.
    draws : Draws
        The chains' random numbers.
    limit : int or int array
        The step count at which a chain stops: a chain that completes step ``limit − 1``
        draws no next uniform (its next step, if any, draws it when it starts).
    active : bool array, optional
        The chains taking steps; the others keep their state (``None``: all).

    Returns
    -------
    RaggedState, StepRecord or None
        The new state; what the chains that decided recorded (``None`` on the host when
        no chain decided).
    """
    rule, map_ = kernel.rule, kernel.map
    xp = namespace(rs.log_density)
    host = xp is np  # a few shortcuts on the host below (the same values)
    stage = rs.stage
    # ---- one map call: every chain advances one rung --------------------------------
    if plan.any_jump:
        base = batch.where(_at(xp, plan.jump, stage), rs.origin, rs.current)
    else:
        base = rs.current
    if plan.all_forward:
        dirs = rs.direction
    else:
        dirs = _at(xp, plan.sign, stage) * rs.direction
    rung = map_.move(base, dirs)
    lp, bad = quiet_log_density_of(map_, rung)
    log_jacobian = rs.log_jacobian
    if not map_.volume_preserving:
        # summed along the ladder, restarted where a stage starts from the origin
        step_jac = map_.move_log_det_jacobian(base, rung, dirs)
        log_jacobian = xp.where(_at(xp, plan.from_origin, stage), step_jac, log_jacobian + step_jac)
        weighted, bad = jacobian_weighted(lp, bad, log_jacobian)
    else:
        weighted = lp
    ratio = xp.exp(weighted - rs.log_density)
    n_moves = rs.n_moves + 1
    non_finite = rs.non_finite + bad
    energy_error = xp.maximum(rs.energy_error, rs.log_density - weighted)
    memory, cumulative = rule.update(rs.memory, stage, ratio)
    memory = xp.asarray(memory, dtype=xp.float64)
    cumulative = xp.asarray(cumulative, dtype=xp.float64)
    one = host and plan.last == 0  # one stage, on the host: every chain is at stage 0
    first_prob = cumulative if one else xp.where(stage == 0, cumulative, rs.first_prob)
    stop = rs.u < cumulative
    if plan.last == 0 and active is None:  # one stage: every chain decides
        done = batch.constant_mask(stop.shape, True) if host else xp.ones(stop.shape, dtype=bool)
        everyone = True
    else:
        done = stop | (stage == plan.last)
        if active is not None:
            done = done & active
        everyone = None
    if everyone is None and host and not _count(done):  # on the host, no chain decided
        return attrs.evolve(
            rs,
            current=rung,
            stage=stage + 1,
            memory=memory,
            n_moves=n_moves,
            non_finite=non_finite,
            log_jacobian=log_jacobian,
            first_prob=first_prob,
            energy_error=energy_error,
        ), None
    if everyone is None:
        everyone = bool(_count(done) == done.size) if host else known(done.all())
    advance = None if everyone else done
    # ---- the chains that decided: move, flip or stay ----------------------------------
    code = xp.where(stop, _at(xp, plan.outcome, stage), plan.fallthrough)
    accept = code > 0 if host and everyone else done & (code > 0)  # host: no `done &` needed
    keep_old = ~accept if host and everyone else done & ~accept
    if host and not _count(keep_old):  # no chain goes back to its origin
        nxt, nxt_lp = rung, lp
    else:
        nxt = batch.where(keep_old, rs.origin, rung)  # the rung on the chains still undecided
        nxt_lp = xp.where(keep_old, rs.log_density, lp)
    flip = code == FLIP if host and everyone else done & (code == FLIP)
    new_direction = xp.where(flip, -rs.direction, rs.direction)
    carry = rs.carry
    if carry is not None:
        new_carry = rule.next_carry(carry, rs.u, code, xp.where(accept, ratio, 1.0))
        carry = new_carry if everyone else batch.where(done, new_carry, carry)
    if everyone is False and _costly(kernel):
        # on the host, a refresh that spends gradients runs on the chains that decided
        # only: none is spent on a chain still inside its step (what the counts record)
        ids = np.flatnonzero(done)
        ref, ref_dir, ref_lp, spent = _refresh(
            kernel, batch.take(nxt, ids), new_direction[ids], nxt_lp[ids],
            draws.subset(ids).view(None),
        )  # fmt: skip
        ref = batch.put(nxt, ids, ref)
        ref_dir = set_rows(new_direction, ids, ref_dir)
        ref_lp = set_rows(nxt_lp, ids, ref_lp)
        overhead = set_rows(
            np.zeros(done.shape[0], dtype=np.int64), ids, 0 if spent is None else spent
        )
    else:
        ref, ref_dir, ref_lp, overhead = _refresh(
            kernel, nxt, new_direction, nxt_lp, draws.view(advance)
        )
        if overhead is not None and not everyone:
            overhead = xp.where(done, overhead, 0)
    cost = None if map_.cost_of is None else xp.asarray(map_.cost_of(rs.origin), dtype=xp.int64)
    record = StepRecord(
        decided=done,
        step=rs.step,
        draw=map_.draw(ref),
        rung=code,
        n_moves=n_moves,
        non_finite=non_finite,
        first_prob=first_prob,
        energy=-ref_lp,
        energy_error=energy_error,
        cost=cost,
        overhead=overhead,
    )
    # ---- the next step: its uniform, for the chains that go on to one ------------------
    next_step = rs.step + 1
    going_on = next_step < limit if host and everyone else done & (next_step < limit)
    all_on = host and _count(going_on) == going_on.size
    fresh_u = rule.uniform(carry, draws.view(None if all_on else going_on), done.shape[0])
    fresh_u = xp.asarray(fresh_u, dtype=xp.float64)
    if everyone:
        if host:
            n = n_moves.shape[0]
            zeros_int, zeros = np.zeros(n, n_moves.dtype), np.zeros(n, memory.dtype)
            no_error = zeros - np.inf
        else:
            zeros_int, zeros = xp.zeros_like(n_moves), xp.zeros_like(memory)
            no_error = xp.full_like(memory, -xp.inf)
        new = RaggedState(
            origin=ref,
            current=ref,
            direction=ref_dir,
            log_density=ref_lp,
            carry=carry,
            u=fresh_u,
            stage=zeros_int,
            memory=zeros,
            n_moves=zeros_int,
            non_finite=zeros_int,
            log_jacobian=zeros,
            first_prob=first_prob,
            energy_error=no_error,
            step=next_step,
        )
        return new, record
    new = RaggedState(
        # `nxt` is the origin off `done` and shares the leaves the refresh left alone
        # with `ref`, so only the refreshed leaves cost a `where`
        origin=batch.where(done, ref, rs.origin),
        current=batch.where(done, ref, nxt),
        direction=xp.where(done, ref_dir, rs.direction),
        log_density=xp.where(done, ref_lp, rs.log_density),
        carry=carry,
        u=xp.where(done, fresh_u, rs.u),
        stage=xp.where(done, 0, stage + 1),
        memory=xp.where(done, 0.0, memory),
        n_moves=xp.where(done, 0, n_moves),
        non_finite=xp.where(done, 0, non_finite),
        log_jacobian=xp.where(done, 0.0, log_jacobian),
        first_prob=first_prob,
        energy_error=xp.where(done, -xp.inf, energy_error),
        step=rs.step + done,
    )
    if active is not None:
        new = batch.where(active, new, rs)
    return new, record


__all__ = [
    "STEP_STATS",
    "Draws",
    "Plan",
    "RaggedState",
    "StepRecord",
    "iterate",
    "start",
    "step_stats",
]
