"""The host loop: the ragged step (:mod:`ladder_mcmc.engine.ragged`) on numpy arrays.

:func:`run_numpy` keeps the :class:`~ladder_mcmc.engine.contract.Driver` contract: it
calls :func:`~ladder_mcmc.engine.ragged.iterate` until every chain has taken its steps,
hands the steps that ended to the recorder, and moves a chain that has taken its last
step out of the batch, so that no map call is spent on it. Each chain's random numbers
come from its own streams (:class:`~ladder_mcmc.engine.streams.ChainStreams`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ladder_mcmc.engine.ragged import (
    Plan,
    iterate,
    start,
    step_stats,
)
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import Ladder, LadderState

if TYPE_CHECKING:
    from ladder_mcmc.engine.recording import StepRecorder


class StreamDraws:
    """The :class:`~ladder_mcmc.engine.ragged.Draws` of a batch of chains on the host: views
    of their :class:`ChainStreams` (``rows``: the batch's stream indices, None for all)."""

    __slots__ = ("streams", "rows")

    def __init__(self, streams: ChainStreams, rows: np.ndarray | None) -> None:
        self.streams, self.rows = streams, rows

    def view(self, advance: Any) -> Any:
        return self.streams.view(self.rows, advance)

    def subset(self, ids: np.ndarray) -> StreamDraws:
        return StreamDraws(self.streams, ids if self.rows is None else self.rows[ids])


def run_numpy(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
) -> LadderState:
    """Advance every chain of ``ks`` until the recorder holds ``until`` steps per chain
    (default: its ``n_steps``); the :class:`~ladder_mcmc.engine.contract.Driver` contract.

    On ``KeyboardInterrupt`` the recorder keeps every step completed so far and the
    exception propagates (``sample`` turns it into a partial trace).
    """
    try:
        # one errstate for the whole run (entering one costs microseconds): a rung may
        # overflow or be NaN, and that is handled as density zero
        with np.errstate(all="ignore"):
            return _run(kernel, ks, recorder, streams, on_progress, until)
    finally:
        recorder.flush()


def _run(kernel, ks, recorder, streams, on_progress, until):
    plan = Plan.of(kernel.rule)
    n_steps = recorder.n_steps if until is None else min(until, recorder.n_steps)
    steps_done = recorder.steps_done.astype(np.int64)
    chain_id = np.arange(len(steps_done))
    finals: list[tuple[np.ndarray, LadderState]] = []
    waiting = steps_done >= n_steps
    if waiting.any():  # chains with nothing to do keep their state
        finals.append((chain_id[waiting], batch.take(ks, np.flatnonzero(waiting))))
        keep = np.flatnonzero(~waiting)
        chain_id, ks = chain_id[keep], batch.take(ks, keep)
    if not chain_id.size:
        return _assemble(finals) if finals else ks
    rows = None if chain_id.size == streams.n_chains else chain_id
    draws = StreamDraws(streams, rows)
    rs = start(kernel, ks, steps_done[chain_id], draws)
    # every chain at the same step, in order: whole rows for the recorder while it lasts
    in_sync = chain_id.size == recorder.n_chains and bool(np.all(rs.step == rs.step[0]))
    # a step takes at least one iteration: no chain can finish before this one
    iteration, check_from = 0, n_steps - int(rs.step.max())
    while chain_id.size:
        iteration += 1
        rs, rec = iterate(kernel, plan, rs, draws, n_steps)
        if rec is None:
            continue
        decided = rec.decided  # (all decided: the one mask iterate keeps per size)
        everyone = decided is batch.constant_mask(decided.shape, True) or bool(decided.all())
        if everyone and in_sync:
            recorder.record_row(
                int(rec.step[0]), rec.draw, rec.rung, rec.n_moves, rec.non_finite,
                rec.cost, rec.overhead, step_stats(rec),
            )  # fmt: skip
            flushed = iteration % recorder.flush_every == 0
        else:
            in_sync = False
            flushed = recorder.record_masked(
                None if everyone else rec.decided, chain_id, rec.step, rec.draw, rec.rung,
                rec.n_moves, rec.non_finite, rec.cost, rec.overhead, step_stats(rec),
            )  # fmt: skip
        if iteration >= check_from:
            finished = rs.step >= n_steps
            if finished.any():
                fin = np.flatnonzero(finished)
                finals.append((chain_id[fin], batch.take(rs.ladder_state(), fin)))
                keep = np.flatnonzero(~finished)
                chain_id, rs = chain_id[keep], batch.take(rs, keep)
                draws = StreamDraws(streams, chain_id)
                in_sync = False
        if on_progress is not None and flushed:
            on_progress(recorder.completed())
    recorder.flush()
    if on_progress is not None:
        on_progress(recorder.completed())
    return _assemble(finals)


def _assemble(parts: list[tuple[np.ndarray, LadderState]]) -> LadderState:
    """Put the chains' final states back in chain order."""
    order = np.argsort(np.concatenate([p[0] for p in parts]))
    return batch.tree_map(lambda *leaves: np.concatenate(leaves)[order], *[p[1] for p in parts])


__all__ = ["StreamDraws", "run_numpy"]
