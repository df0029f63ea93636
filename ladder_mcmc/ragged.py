"""The ragged driver: every chain at its own rung of its own step (DESIGN §5).

In batched numpy a call costs about the same for 5 chains as for 100 when the
dimension is small, so the synchronous step, which runs rung 2, 3, ... on the few
chains still undecided, pays a whole call per rung. Here every iteration calls
the map *once on the whole batch*, advancing each chain by one rung from where
it is, in its own direction. Chains whose rule has decided record their step,
refresh, draw their next uniform and start the next step in the same iteration
(a flipped chain starts from its old state). A chain that has finished all its
steps leaves the batch, so no work is wasted at the end.

The transitions are exactly those of :meth:`Ladder.step` — the same rule, the
same uniform per chain per step — only the order in which random numbers are
drawn differs, so the two drivers give the same chain in law (tested), not draw
for draw.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ladder_mcmc import batch
from ladder_mcmc.ladder import Ladder, LadderState, base_for, density_ratio, log_density_of
from ladder_mcmc.rules import FLIP
from ladder_mcmc.trace import Recorder


def _take_carry(carry, idx):
    return None if carry is None else batch.take(carry, idx)


def _put_carry(carry, idx, values):
    return None if carry is None else batch.put(carry, idx, values)


def run_ragged(
    kernel: Ladder,
    ks: LadderState,
    recorder: Recorder,
    rng: np.random.Generator,
    on_progress: Callable[[int], None] | None = None,
) -> LadderState:
    """Advance every chain of ``ks`` until the recorder holds ``n_steps`` per chain.

    Returns the final kernel state (every chain after its last step). On
    ``KeyboardInterrupt`` the recorder keeps every step completed so far and
    the exception propagates (``sample`` turns it into a partial trace).
    """
    rule, map_ = kernel.rule, kernel.map
    positions = tuple(rule.positions)
    n_stages = len(positions)
    plan = [base_for(positions, s) for s in range(n_stages)]
    from_origin_tab = np.array([p[0] for p in plan])
    sign_tab = np.array([p[1] for p in plan], dtype=np.int8)
    outcome_tab = np.array(rule.outcomes, dtype=np.int64)

    n_steps = recorder.n_steps
    n_total = len(ks.direction)
    chain_id = np.arange(n_total)
    final = ks  # filled chain by chain as chains finish
    final_parts: list[tuple[np.ndarray, LadderState]] = []

    # per-chain driver state, for the chains still running
    origin, direction, lp0, carry = ks.state, ks.direction.copy(), ks.log_density.copy(), ks.carry
    step = recorder.steps_done.copy()
    current = origin
    stage = np.zeros(n_total, dtype=np.int64)
    memory = np.zeros(n_total)
    n_moves = np.zeros(n_total, dtype=np.int64)
    non_finite = np.zeros(n_total, dtype=np.int64)
    u = rule.uniform(carry, rng, n_total)

    if np.all(step >= n_steps):
        return ks
    while chain_id.size:
        from_origin = from_origin_tab[stage]
        base = current if not from_origin.any() else batch.where(from_origin, origin, current)
        with np.errstate(all="ignore"):
            rung = map_.move(base, sign_tab[stage] * direction)
        lp, bad = log_density_of(map_, rung)
        n_moves += 1
        non_finite += bad
        ratio = density_ratio(lp, lp0)
        memory, cum = rule.update(memory, stage, ratio)
        stop = u < cum
        done = stop | (stage == n_stages - 1)
        current = rung
        stage += 1
        memory = np.asarray(memory)
        if not done.any():
            continue
        idx = np.flatnonzero(done)
        code = np.where(stop[idx], outcome_tab[stage[idx] - 1], rule.fallthrough)
        accept = code > 0
        new_state = batch.where(accept, batch.take(rung, idx), batch.take(origin, idx))
        new_lp = np.where(accept, lp[idx], lp0[idx])
        new_dir = np.where(code == FLIP, -direction[idx], direction[idx]).astype(np.int8)
        new_carry = rule.next_carry(
            _take_carry(carry, idx), u[idx], code, np.where(accept, ratio[idx], 1.0)
        )
        new_state, new_dir, new_lp = kernel.apply_refresh(new_state, new_dir, new_lp, rng)
        recorder.record(
            chain_id[idx], step[idx], map_.draw(new_state), code, n_moves[idx], non_finite[idx]
        )
        step[idx] += 1
        origin = batch.put(origin, idx, new_state)
        direction[idx] = new_dir
        lp0[idx] = new_lp
        carry = _put_carry(carry, idx, new_carry)
        stage[idx] = 0
        memory[idx] = 0
        n_moves[idx] = 0
        non_finite[idx] = 0
        finished = step >= n_steps
        running = ~finished
        fresh = idx[running[idx]]
        if fresh.size:
            u[fresh] = rule.uniform(_take_carry(carry, fresh), rng, fresh.size)
        if finished.any():
            fin = np.flatnonzero(finished)
            final_parts.append(
                (
                    chain_id[fin],
                    LadderState(
                        batch.take(origin, fin), direction[fin], lp0[fin], _take_carry(carry, fin)
                    ),
                )
            )
            keep = np.flatnonzero(running)
            chain_id, step, stage = chain_id[keep], step[keep], stage[keep]
            origin, current = batch.take(origin, keep), batch.take(current, keep)
            direction, lp0, carry = direction[keep], lp0[keep], _take_carry(carry, keep)
            memory, u = memory[keep], u[keep]
            n_moves, non_finite = n_moves[keep], non_finite[keep]
        if on_progress is not None:
            on_progress(recorder.completed())
    return _assemble(final, final_parts)


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
