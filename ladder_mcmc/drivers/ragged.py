"""The ragged driver: every chain at its own rung of its own step (docs/design.md §9).

In batched numpy a call costs about the same for 5 chains as for 100 when the
dimension is small, so the synchronous step, which runs rung 2, 3, ... on the few
chains still undecided, pays a whole call per rung. Here every iteration calls
the map *once on the whole batch*, advancing each chain by one rung from where
it is, in its own direction. Chains whose rule has decided record their step,
refresh, draw their next uniform and start the next step in the same iteration
(a flipped chain starts from its old state). A chain that has finished all its
steps leaves the batch, so no work is wasted at the end.

For a map that changes volume, each chain also carries the log Jacobian of its
current rung, summed one map application at a time and restarted where a stage
starts from the step's origin, as :meth:`Ladder.step` does (docs/design.md §13).

The transitions are exactly those of :meth:`Ladder.step` — the same rule, the
same uniform per chain per step — and every chain draws its numbers from its own
streams in its own step order (:mod:`ladder_mcmc.drivers.streams`, docs/design.md
§11), so both schedules hand a chain the same numbers for the same step.

Implementation: every per-chain quantity is a whole-batch array updated with
``np.where`` on the mask of the chains that decided; no chain is ever gathered
or scattered by index except when it leaves the batch. The refresh is computed
for the whole batch and kept only for the chains that decided; only their
streams move on. A refresh that evaluates gradients (``Refresh.costly``), or a map
whose density at the refreshed state does (``map.log_density_cost``), runs on the
chains that decided only (gathered, then scattered back), so that no gradient is
spent on a chain still inside its step; what it spent is recorded with the step
(``Trace.step_overhead``). Steps are handed to the recorder in bulk
(:meth:`~ladder_mcmc.run.recorder.Recorder.record_masked`); the measured cost of
each piece is in ``benchmarks/results/overhead.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ladder_mcmc.drivers.streams import ChainStreams
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
from ladder_mcmc.ladder.rules import FLIP, base_for

if TYPE_CHECKING:
    from ladder_mcmc.drivers.recording import StepRecorder


def _where(mask: np.ndarray, everyone: bool, a, b):
    """``a`` where ``mask`` else ``b``, chainwise (``a`` if ``everyone``), for any state."""
    if everyone:
        return a
    return batch.where(mask, a, b)


def run_ragged(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
) -> LadderState:
    """Advance every chain of ``ks`` until the recorder holds ``until`` steps per chain.

    ``until`` defaults to the recorder's ``n_steps``; a chain that reaches it
    leaves the batch, so every chain stops exactly there (``sample`` uses this
    to checkpoint). Returns the kernel state of every chain after its last
    step. On
    ``KeyboardInterrupt`` the recorder keeps every step completed so far and
    the exception propagates (``sample`` turns it into a partial trace).

    The generic loop, for any map, rule and refresh (the
    :class:`~ladder_mcmc.drivers.contract.Driver` contract). Leapfrog look-ahead
    kernels (``lahmc``, ``hmc``) have a fast path, the same algorithm on plain
    arrays, draw for draw (:mod:`ladder_mcmc.drivers._leapfrog`), which
    :func:`~ladder_mcmc.drivers.contract.driver_for` picks for them.
    """
    try:
        # one errstate for the whole run (entering one costs microseconds): a
        # rung may overflow or be NaN, and that is handled as density zero
        with np.errstate(all="ignore"):
            return _run(kernel, ks, recorder, streams, on_progress, until)
    finally:
        recorder.flush()


def _run(kernel, ks, recorder, streams, on_progress, until):
    rule, map_ = kernel.rule, kernel.map
    positions = tuple(rule.positions)
    n_stages = len(positions)
    last = n_stages - 1
    plan = [base_for(positions, s) for s in range(n_stages)]
    # `current` holds, for every chain, the state its next rung is computed from:
    # the step's starting state at stage 0, the previous rung afterwards. A stage
    # that restarts from the starting state later in the step (e.g. the backward
    # rungs of the reduced-flip rule) "jumps" back to `origin`.
    origin_tab = np.array([p[0] for p in plan], dtype=bool)  # a stage from the starting state
    jump_tab = origin_tab & (np.arange(len(plan)) > 0)
    any_jump = bool(jump_tab.any())
    sign_tab = np.array([p[1] for p in plan], dtype=np.int8)
    all_forward = bool(np.all(sign_tab == 1))
    outcome_tab = np.array(rule.outcomes, dtype=np.int64)
    fallthrough = rule.fallthrough
    refresh = kernel.refresh
    refresh_changes = refresh is not None and refresh.changes_state
    # a refresh, or a density at the refreshed state, that costs gradients: run on the
    # chains that decided only, and its cost recorded with their steps
    counted = refresh is not None and (
        refresh.costly or (refresh_changes and map_.log_density_cost is not None)
    )
    cost_of = getattr(map_, "cost_of", None)  # a cost per chain and step: recorded
    jacobian = not map_.volume_preserving  # rung densities weighted (docs/design.md §13)

    n_steps = recorder.n_steps if until is None else min(until, recorder.n_steps)
    step = recorder.steps_done.astype(np.int64)
    chain_id = np.arange(len(step))
    origin, direction, lp0, carry = ks.state, ks.direction, ks.log_density, ks.carry
    final_parts: list[tuple[np.ndarray, LadderState]] = []

    def retire(finished: np.ndarray) -> None:
        """Move the chains in ``finished`` (a mask) out of the batch."""
        nonlocal chain_id, step, stage, origin, current, direction, lp0, carry
        nonlocal memory, u, n_moves, non_finite, in_sync, rows, logjac
        in_sync = False
        fin = np.flatnonzero(finished)
        take_carry = (lambda c, i: None) if carry is None else batch.take
        final_parts.append(
            (
                chain_id[fin],
                LadderState(
                    batch.take(origin, fin), direction[fin], lp0[fin], take_carry(carry, fin)
                ),
            )
        )
        keep = np.flatnonzero(~finished)
        chain_id, step, stage = chain_id[keep], step[keep], stage[keep]
        origin, current = batch.take(origin, keep), batch.take(current, keep)
        direction, lp0, carry = direction[keep], lp0[keep], take_carry(carry, keep)
        memory, u, logjac = memory[keep], u[keep], logjac[keep]
        n_moves, non_finite = n_moves[keep], non_finite[keep]
        rows = chain_id

    n = len(step)
    current = origin
    stage = np.zeros(n, dtype=np.int64)
    memory = np.zeros(n)
    n_moves = np.zeros(n, dtype=np.int64)
    non_finite = np.zeros(n, dtype=np.int64)
    # log |det ∂(current)/∂(origin)| per chain, when the map changes volume
    logjac = np.zeros(n)
    u = memory
    zero_int, zero_float = np.zeros(n, dtype=np.int64), np.zeros(n)
    in_sync = False
    rows = None
    if np.any(step >= n_steps):
        retire(step >= n_steps)
    # each step's uniform is drawn when the step begins (here, or when the chain
    # finished its previous step), so each chain's stream is consumed in the
    # same order with any ``until``
    rows = None if chain_id.size == streams.n_chains else chain_id  # the batch's streams
    u = rule.uniform(carry, streams.view(rows), chain_id.size)
    # all chains at the same step, in order: record whole rows while it lasts
    in_sync = chain_id.size == len(step) == recorder.n_chains and bool(np.all(step == step[0]))
    sync_step = int(step[0]) if in_sync else -1
    # a step takes at least one iteration: no chain can finish before this one
    iteration, check_from = 0, n_steps - (int(step.max()) if step.size else 0)

    while chain_id.size:
        n = chain_id.size
        iteration += 1
        # ---- one map call: every chain advances one rung --------------------
        if any_jump:
            jump = jump_tab[stage]
            base = batch.where(jump, origin, current) if jump.any() else current
        else:
            base = current
        dirs = direction if all_forward else sign_tab[stage] * direction
        rung = map_.move(base, dirs)
        lp, bad = quiet_log_density_of(map_, rung)
        if jacobian:
            # summed along the ladder, restarted where a stage starts from the origin
            step_jac = map_.move_log_det_jacobian(base, rung, dirs)
            logjac = np.where(origin_tab[stage], step_jac, logjac + step_jac)
            lp_w, bad = jacobian_weighted(lp, bad, logjac)
            ratio = np.exp(lp_w - lp0)
        else:
            ratio = np.exp(lp - lp0)  # ladder.density_ratio, without its errstate
        n_moves = n_moves + 1
        non_finite = non_finite + bad
        memory, cum = rule.update(memory, stage, ratio)
        memory = np.asarray(memory)
        stop = u < cum
        if n_stages == 1:
            done, n_done = None, n
        else:
            done = stop | (stage == last)
            n_done = int(np.count_nonzero(done))
        if n_done == 0:
            current, stage = rung, stage + 1
            continue
        everyone = n_done == n
        # ---- the chains that decided: move, flip or stay ---------------------
        code = np.where(stop, outcome_tab[0] if n_stages == 1 else outcome_tab[stage], fallthrough)
        accept = code > 0
        if fallthrough > 0 and not everyone:
            accept &= done
        keep_old = ~accept if everyone else done & ~accept
        # the new state on the chains that decided, the rung on the others
        nxt = batch.where(keep_old, origin, rung)
        nxt_lp = np.where(keep_old, lp0, lp)
        flip = code == FLIP
        if not everyone:
            flip &= done
        new_dir = np.where(flip, -direction, direction)
        if carry is not None:
            new_carry = rule.next_carry(carry, u, code, np.where(accept, ratio, 1.0))
            carry = _where(done, everyone, new_carry, carry)
        # the decided chains' streams (the others are handed numbers they do not keep)
        decided = streams.view(rows, None if everyone else done)
        # Ladder.apply_refresh, inline (no errstate)
        overhead = None
        if refresh is None:
            ref, ref_dir, ref_lp = nxt, new_dir, nxt_lp
        elif counted:
            ids = None if everyone else np.flatnonzero(done)
            ref, ref_dir, ref_lp, overhead = _refresh_decided(
                map_, refresh, nxt, new_dir, nxt_lp, ids, streams, rows
            )
        else:
            ref, ref_dir = refresh(nxt, new_dir, decided)
            ref_dir = np.asarray(ref_dir, dtype=np.int8)
            # `nxt` is finite (made of finite rungs), so only leaves the refresh
            # replaced are checked
            ref_lp = quiet_log_density_of(map_, ref, nxt)[0] if refresh_changes else nxt_lp
        cost = None if cost_of is None else np.asarray(cost_of(origin))  # the step's origin
        if everyone and in_sync:  # every chain at the same step: whole rows
            recorder.record_row(
                sync_step, map_.draw(ref), code, n_moves, non_finite, cost, overhead
            )
            sync_step += 1
            flushed = iteration % recorder.flush_every == 0
        else:
            in_sync = False
            flushed = recorder.record_masked(
                None if everyone else done,
                chain_id,
                step,
                map_.draw(ref),
                code,
                n_moves,
                non_finite,
                cost,
                overhead,
            )
        # the next step's uniform, for the chains that go on to one (all of them
        # until a chain can reach the last step)
        if iteration >= check_from:
            going_on = step + 1 < n_steps
            decided = streams.view(rows, going_on if everyone else done & going_on)
        fresh_u = rule.uniform(carry, decided, n)

        if everyone:
            origin = current = ref
            direction, lp0, u = ref_dir, ref_lp, fresh_u
            step = step + 1
            if zero_int.size != n:
                zero_int, zero_float = np.zeros(n, dtype=np.int64), np.zeros(n)
            # shared zero arrays: per-chain arrays are never modified in place
            stage = n_moves = non_finite = zero_int
            memory = zero_float
        else:
            # `nxt` equals `origin` off `done` and shares the leaves the refresh
            # left alone with `ref`, so only the refreshed leaves cost a `where`
            current = batch.where(done, ref, nxt)
            origin = batch.where(done, ref, origin)
            direction = np.where(done, ref_dir, direction)
            lp0 = np.where(done, ref_lp, lp0)
            u = np.where(done, fresh_u, u)
            step = step + done
            stage = np.where(done, 0, stage + 1)
            memory = np.where(done, 0.0, memory)
            n_moves = np.where(done, 0, n_moves)
            non_finite = np.where(done, 0, non_finite)
        if iteration >= check_from:
            finished = step >= n_steps
            if finished.any():
                retire(finished)
        if on_progress is not None and flushed:
            on_progress(recorder.completed())
    recorder.flush()
    if on_progress is not None:
        on_progress(recorder.completed())
    if not final_parts:
        return ks
    return _assemble(ks, final_parts)


def _refresh_decided(map_, refresh, nxt, new_dir, nxt_lp, ids, streams, rows):
    """The refresh and the log density after it, on the chains ``ids`` (positions in
    the batch; all if None) only: ``(state, direction, log p, overhead)`` of the whole
    batch, the others' entries those before the refresh (overhead 0). ``overhead``: the
    gradients the refresh reports plus the density's (``map.log_density_cost``).

    Each chain draws from its own streams (``rows``: the batch's stream indices, None
    for all), so the decided chains get the numbers the whole-batch refresh hands them.
    """
    changes = refresh.changes_state
    if ids is None:
        ref, ref_dir, spent = refresh.with_cost(nxt, new_dir, streams.view(rows))
        spent = refresh_cost(refresh, spent, len(new_dir))
        ref_dir = np.asarray(ref_dir, dtype=np.int8)
        if not changes:
            return ref, ref_dir, nxt_lp, _counts(spent, len(new_dir))
        lp = quiet_log_density_of(map_, ref, nxt)[0]
        return ref, ref_dir, lp, _counts(add_costs(spent, density_cost(map_, ref)), len(new_dir))
    sub = batch.take(nxt, ids)
    view = streams.view(ids if rows is None else rows[ids])
    ref_sub, dir_sub, spent = refresh.with_cost(sub, new_dir[ids], view)
    spent = refresh_cost(refresh, spent, ids.size)
    lp = nxt_lp.copy()
    if changes:
        lp[ids] = quiet_log_density_of(map_, ref_sub, sub)[0]
        spent = add_costs(spent, density_cost(map_, ref_sub))
    ref_dir = new_dir.copy()
    ref_dir[ids] = np.asarray(dir_sub, dtype=np.int8)
    overhead = np.zeros(len(new_dir), dtype=np.int64)
    overhead[ids] = _counts(spent, ids.size)
    return batch.put(nxt, ids, ref_sub), ref_dir, lp, overhead


def _counts(cost, n: int) -> np.ndarray:
    """Per-chain gradient counts, zeros for ``None``."""
    return np.zeros(n, dtype=np.int64) if cost is None else np.asarray(cost, dtype=np.int64)


def _assemble(template: LadderState, parts: list[tuple[np.ndarray, LadderState]]) -> LadderState:
    """Put the per-chain final states back in chain order."""
    ids = np.concatenate([p[0] for p in parts])
    order = np.argsort(ids)
    merged = [p[1] for p in parts]

    def cat(*leaves):
        return np.concatenate(leaves)[order]

    state = batch.tree_map(cat, *[m.state for m in merged])
    direction = np.concatenate([m.direction for m in merged])[order]
    lp = np.concatenate([m.log_density for m in merged])[order]
    carry = None if template.carry is None else batch.tree_map(cat, *[m.carry for m in merged])
    return LadderState(state, direction, lp, carry)
