"""The compiled loop: the ragged step (:mod:`ladder_mcmc.engine.ragged`) under ``jax.jit``.

:func:`run_jax` keeps the :class:`~ladder_mcmc.engine.contract.Driver` contract. It runs
the steps in *blocks*: one compiled call takes every chain through up to :data:`BLOCK`
steps, inside a ``lax.while_loop`` whose body is one
:func:`~ladder_mcmc.engine.ragged.iterate` — one map call on the whole batch, every chain
at its own rung of its own step. A chain that has taken its steps of the block idles
(``active``) until the others have. Each chain writes its step ``s`` into column ``s``
of the block's outputs (draw, rung code, map applications, non-finite rungs, first-stage
probability, costs); the host hands them to the recorder when the call returns, then
reports progress. An interrupted run keeps every block finished before it.

The kernel is an argument of the compiled function (a pytree, :mod:`ladder_mcmc.engine.pytree`):
its array and ``TRACED`` fields are traced values, so a new step size or mass reuses the
compilation; its structure (the parts, the rule's plan, the target) is compiled in. A
compilation is made per kernel structure, number of chains, state shapes and block
width (:data:`compilations` counts them).

The random numbers are each chain's own streams, drawn on the host for the block
(:mod:`ladder_mcmc.engine.block_draws`): the numpy loop's
numbers, so the two backends agree to rounding, with the same rung codes unless a
uniform falls within rounding of its threshold. The arithmetic is XLA's, in float64.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ladder_mcmc.engine.block_draws import BlockDraws, consumption, draw_block
from ladder_mcmc.engine.pytree import register
from ladder_mcmc.engine.ragged import (
    STEP_STATS,
    Plan,
    RaggedState,
    StepRecord,
    iterate,
    start,
    step_stats,
)
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import Ladder, LadderState

if TYPE_CHECKING:
    from ladder_mcmc.engine.recording import StepRecorder

#: steps per chain per compiled call (fewer in the last block of a run)
BLOCK = 128

_COUNT = {"compilations": 0}


def compilations() -> int:
    """How many times the compiled loops (sampling, warm-up) have been compiled (traced) in
    this process (for benchmarks: a run should compile each once)."""
    return _COUNT["compilations"]


def count_compilation() -> None:
    """Count one compilation (called where a compiled function's body is traced)."""
    _COUNT["compilations"] += 1


def _block(kernel: Ladder, ks: LadderState, uniforms, normals, width: int, steps):
    """Every chain through ``steps[i]`` steps: ``(final LadderState, outputs)``, the outputs
    (chains, width, …) with each chain's step ``s`` in column ``s``."""
    import jax
    import jax.numpy as jnp

    count_compilation()  # runs when JAX traces: once per compilation
    plan = Plan.of(kernel.rule)
    n = ks.direction.shape[0]
    rows = jnp.arange(n)
    draws = BlockDraws(uniforms, normals, jnp.zeros((n, 2), dtype=jnp.int64))
    rs = start(kernel, ks, jnp.zeros(n, dtype=jnp.int64), _Advancing(draws, steps > 0))

    def record_fields(rec: StepRecord) -> dict:
        out = {
            "draw": rec.draw,
            "rung": rec.rung,
            "n_moves": rec.n_moves,
            "non_finite": rec.non_finite,
            **step_stats(rec),
        }
        if rec.cost is not None:
            out["cost"] = rec.cost
        if rec.overhead is not None:
            out["overhead"] = rec.overhead
        return out

    def one(rs, offsets):
        d = BlockDraws(uniforms, normals, offsets)
        rs, rec = iterate(kernel, plan, rs, d, steps, rs.step < steps)
        return rs, d.offsets, record_fields(rec), rec.decided, rec.step

    shapes = jax.eval_shape(one, rs, draws.offsets)[2]
    # each output a flat (chains · (width + 1), …) array: chain i's step s in row
    # i·(width + 1) + s (column ``width`` a bin for the chains that did not decide), so that
    # a write is a scatter of whole rows along one axis, which XLA does cheaply
    outputs = jax.tree_util.tree_map(
        lambda s: jnp.zeros((n * (width + 1),) + s.shape[1:], dtype=s.dtype), shapes
    )

    def cond(carry):
        rs, _, _ = carry
        return jnp.any(rs.step < steps)

    def body(carry):
        rs, offsets, outputs = carry
        rs, offsets, fields, decided, step = one(rs, offsets)
        column = jnp.where(decided, step, width)
        at = rows * (width + 1) + column
        outputs = jax.tree_util.tree_map(lambda buf, value: buf.at[at].set(value), outputs, fields)
        return rs, offsets, outputs

    rs, _, outputs = jax.lax.while_loop(cond, body, (rs, draws.offsets, outputs))
    outputs = jax.tree_util.tree_map(
        lambda buf: buf.reshape((n, width + 1) + buf.shape[1:])[:, :width], outputs
    )
    return rs.ladder_state(), outputs


class _Advancing:
    """Draws whose whole-batch views advance only the chains of ``mask``."""

    def __init__(self, draws: BlockDraws, mask: Any) -> None:
        self.draws, self.mask = draws, mask

    def view(self, advance: Any) -> Any:
        return self.draws.view(self.mask if advance is None else advance & self.mask)


@lru_cache(maxsize=1)
def _compiled() -> Callable:
    import jax

    return jax.jit(_block, static_argnums=(4,))


def prepare(kernel: Ladder, ks: LadderState) -> None:
    """Make the kernel's and the state's classes pytrees (before any compiled call)."""
    register(RaggedState, StepRecord, LadderState, kernel, ks)


def run_jax(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
) -> LadderState:
    """Advance every chain of ``ks`` until the recorder holds ``until`` steps per chain, in
    compiled blocks; the :class:`~ladder_mcmc.engine.contract.Driver` contract."""
    import jax

    stop = recorder.n_steps if until is None else min(until, recorder.n_steps)
    prepare(kernel, ks)
    state: Any = ks
    with jax.enable_x64(True):
        per_step = consumption(kernel, ks)
        fn = _compiled()
        done = recorder.steps_done.astype(np.int64)
        steps = np.clip(stop - done, 0, BLOCK)
        numbers = _numbers(streams, steps, per_step)
        while steps.any():
            # dispatched, not waited for: the next block's numbers are drawn meanwhile (an
            # interrupt then leaves the streams ahead of the recorded steps, which no
            # continuation reads: a checkpoint stores them only after a finished call)
            state, outputs = fn(kernel, state, *numbers, steps)
            following = np.clip(stop - done - steps, 0, BLOCK)
            numbers = _numbers(streams, following, per_step) if following.any() else None
            _record(recorder, jax.device_get(outputs), steps, done)
            done, steps = done + steps, following
            if on_progress is not None:
                on_progress(recorder.completed())
    return ks if state is ks else to_numpy(state)


def _numbers(streams: ChainStreams, steps: np.ndarray, per_step: tuple[int, int]):
    """``(uniforms, normals, width)`` of a block of ``steps`` per chain. Every block has the
    width :data:`BLOCK` (fewer steps leave columns unused): one compiled function, hence the
    same floating-point code, whatever the blocks a run is cut into (checkpoints)."""
    return (*draw_block(streams, steps, per_step[0], per_step[1], BLOCK), BLOCK)


def to_numpy(ks: LadderState) -> LadderState:
    """A kernel state with numpy leaves (after a compiled call)."""
    carry = None if ks.carry is None else batch.tree_map(np.asarray, ks.carry)
    return LadderState(
        batch.tree_map(np.asarray, ks.state),
        np.asarray(ks.direction),
        np.asarray(ks.log_density),
        carry,
    )


def _record(recorder: StepRecorder, outputs: dict, steps: np.ndarray, before: np.ndarray) -> None:
    """Hand the block's steps to the recorder: chain ``i``'s first ``steps[i]`` columns
    (whole rows, step by step, when every chain took the same steps)."""
    cost, overhead = outputs.get("cost"), outputs.get("overhead")
    if np.all(steps == steps[0]) and np.all(before == before[0]):
        first = int(before[0])
        for j in range(int(steps[0])):
            recorder.record_row(
                first + j,
                batch.tree_map(lambda leaf, j=j: leaf[:, j], outputs["draw"]),
                outputs["rung"][:, j],
                outputs["n_moves"][:, j],
                outputs["non_finite"][:, j],
                None if cost is None else cost[:, j],
                None if overhead is None else overhead[:, j],
                {name: outputs[name][:, j] for name in STEP_STATS},
            )
        return
    n, width = steps.shape[0], outputs["rung"].shape[1]
    taken = np.arange(width)[None, :] < steps[:, None]
    chains = np.broadcast_to(np.arange(n)[:, None], taken.shape)[taken]
    index = np.broadcast_to(np.arange(width)[None, :], taken.shape)[taken]

    def flat(leaf):
        return None if leaf is None else np.asarray(leaf)[taken]

    recorder.record(
        chains,
        before[chains] + index,
        batch.tree_map(flat, outputs["draw"]),
        flat(outputs["rung"]),
        flat(outputs["n_moves"]),
        flat(outputs["non_finite"]),
        flat(cost),
        flat(overhead),
        {name: flat(outputs[name]) for name in STEP_STATS},
    )


__all__ = ["BLOCK", "compilations", "count_compilation", "run_jax", "to_numpy"]
