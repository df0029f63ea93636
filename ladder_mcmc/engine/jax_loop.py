"""The compiled loop: the ragged step (:mod:`ladder_mcmc.engine.ragged`) under ``jax.jit``.

:func:`run_jax` keeps the :class:`~ladder_mcmc.engine.contract.Driver` contract. It runs
the steps in *blocks*: one compiled call takes every chain through up to :data:`BLOCK`
steps, inside a ``lax.while_loop`` whose body is one
:func:`~ladder_mcmc.engine.ragged.iterate` — one map call on the whole batch, every chain
at its own rung of its own step. A chain that has taken its steps of the block idles
(``active``) until the others have. Each chain writes its step ``s`` into column ``s``
of the block's outputs (draw, rung code, map applications, non-finite rungs, first-stage
probability, costs), packed as one row (:class:`~ladder_mcmc.engine.pytree.Packing`: one
scatter per iteration); the host hands them to the recorder, in one call, while the next
block runs (its numbers drawn meanwhile too), then reports progress. An interrupted run
keeps every block recorded before it. The small
per-chain fields of the carried state are packed too, so that the loop's work besides the
map stays a few operations (:func:`ladder_mcmc.engine.hlo.loop_operations` counts them).

Warm-up runs on the same loop: sampling is the loop with no adaptation (``_loop``'s
``adaptation=None``, the kernel fixed); :func:`run_adapting` runs it with a warm-up's
:class:`~ladder_mcmc.engine.warmup.Adaptation`, whose ``update`` runs inside the loop
as the slowest chain finishes a sub-block, on rung codes and draws read from the
outputs, the chains ragged across sub-blocks.

The kernel is an argument of the compiled function (a pytree, :mod:`ladder_mcmc.engine.pytree`):
its array and ``TRACED`` fields are traced values, so a new step size or mass reuses the
compilation; its structure (the parts, the rule's plan, the target) is compiled in. A
compilation is made per kernel structure, number of chains, state shapes and block
width (:data:`compilations` counts them).

The random numbers are each chain's own streams, drawn on the host for the block
(:mod:`ladder_mcmc.engine.block_draws`): the numpy loop's numbers, so the two backends
agree to rounding, with the same rung codes unless a uniform falls within rounding of
its threshold. The arithmetic is XLA's, in float64.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from ladder_mcmc.engine.block_draws import BlockDraws, consumption, draw_block
from ladder_mcmc.engine.pytree import Carried, Packing, register
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

_COUNT = {"compilations": 0, "calls": 0, "iterations": 0, "moves": 0.0}

#: a record's integer counts (carried as floats inside the loop)
_COUNTS = ("rung", "n_moves", "non_finite", "cost", "overhead")


def compilations() -> int:
    """How many times the compiled loop has been compiled (traced) in this process."""
    return _COUNT["compilations"]


def count_compilation() -> None:
    """Count one compilation (called where a compiled function's body is traced)."""
    _COUNT["compilations"] += 1


def segment_calls() -> tuple[int, int, float]:
    """Compiled warm-up calls (host round-trips), their loops' iterations (map calls on
    the batch) and their steps' map calls per chain, so far in this process: a loop in
    which no chain waits makes as many iterations as map calls per chain."""
    return _COUNT["calls"], _COUNT["iterations"], _COUNT["moves"]


def _adapted(kernel0, state, adaptation):
    """The leaves of ``adaptation.kernel(kernel0, state)`` that are not ``kernel0``'s (its
    adapted values), their indices, ``kernel0``'s leaves and tree."""
    import jax

    leaves, tree = jax.tree_util.tree_flatten(kernel0)
    new = jax.tree_util.tree_leaves(adaptation.kernel(kernel0, state))
    at = tuple(i for i, (a, b) in enumerate(zip(leaves, new, strict=True)) if a is not b)
    return tuple(new[i] for i in at), at, leaves, tree


def _loop(kernel0, ks, state, lagged, uniforms, normals, steps, first, width, adaptation):
    """Every chain through ``steps[i]`` steps: ``(ks, state, lagged, outputs, iterations)``,
    the outputs (chains, width, …) with each chain's step ``s`` in column ``s``.

    ``adaptation`` ``None`` (sampling): the kernel is ``kernel0``, ``state`` and ``lagged``
    pass through. Else (warm-up, the call's first step warm-up step ``first``): every
    chain runs at the kernel of its own sub-block of ``adaptation.every`` steps, sub-block
    ``b`` at the state after sub-block ``b − 2`` (``lagged``: the adapted values,
    :func:`_adapted`, before the last update), the step under ``jax.vmap`` with the
    adapted leaves chosen per chain; a chain waits only when a whole sub-block ahead of
    the slowest, and when the slowest finishes one ``adaptation.update`` reads its rung
    codes and draws from the outputs."""
    import jax
    import jax.numpy as jnp

    count_compilation()  # runs when JAX traces: once per compilation
    plan = Plan.of(kernel0.rule)
    n = ks.direction.shape[0]
    rows = jnp.arange(n)
    kernel = kernel0 if adaptation is None else adaptation.kernel(kernel0, state)
    draws = BlockDraws(uniforms, normals, jnp.zeros((n, 2), dtype=jnp.int64))
    rs = start(kernel, ks, jnp.zeros(n, dtype=jnp.int64), _Advancing(draws, steps > 0))

    def record_fields(rec: StepRecord) -> dict:
        # the counts as floats (exact): one packed row per chain for the whole record
        out = {"draw": rec.draw, **step_stats(rec)}
        for name in _COUNTS:
            value = getattr(rec, name)
            if value is not None:
                out[name] = value.astype(jnp.float64)
        return out

    if adaptation is None:

        def one(rs, offsets, extra):
            d = BlockDraws(uniforms, normals, offsets)
            rs, rec = iterate(kernel, plan, rs, d, steps, rs.step < steps)
            return rs, d.offsets, record_fields(rec), rec.decided, rec.step

        extra = ()
    else:
        every = adaptation.every
        _, varying, leaves, tree = _adapted(kernel0, state, adaptation)

        def one_chain(values, rs, u, z, offsets, limit, active):
            chain_leaves = list(leaves)
            for i, v in zip(varying, values, strict=True):
                chain_leaves[i] = v
            kernel = jax.tree_util.tree_unflatten(tree, chain_leaves)
            d = BlockDraws(u[None], z[None], offsets[None])
            one_row = jax.tree_util.tree_map(lambda x: x[None], rs)
            rs, rec = iterate(kernel, plan, one_row, d, limit, active[None])
            if rec.cost is None:  # the warm-up's cost per map call varies with the kernel
                rec = attrs.evolve(rec, cost=jnp.full(1, kernel.map.cost, dtype=jnp.int64))
            return jax.tree_util.tree_map(lambda x: x[0], (rs, d.offsets, rec))

        def one(rs, offsets, extra):
            current, lagged, done, _ = extra
            block = rs.step // every
            active = (rs.step < steps) & (block <= done + 1)
            new = _adapted(kernel0, current, adaptation)[0]
            newer = block > done  # the chains a sub-block ahead: at the newer values
            values = [
                jnp.where(newer.reshape((n,) + (1,) * jnp.ndim(b)), b, a)
                for a, b in zip(lagged, new, strict=True)
            ]
            rs, offsets, rec = jax.vmap(one_chain)(
                values, rs, uniforms, normals, offsets, steps, active
            )
            return rs, offsets, record_fields(rec), rec.decided, rec.step

        zero = jnp.zeros((), dtype=jnp.int64)
        extra = (state, lagged, zero, zero)

    record = Packing(jax.eval_shape(one, rs, draws.offsets, extra)[2])
    carried = Carried((rs, draws.offsets))
    # the record a few flat (chains · (width + 1), …) arrays: chain i's step s in row
    # i·(width + 1) + s (column ``width`` a bin for the chains that did not decide), so that
    # a write is a scatter of whole rows along one axis, which XLA does cheaply; the state
    # carried packed too (one ``where`` per packed array, not one per field)
    outputs = record.zeros(n * (width + 1))

    def columns(outputs, cols):
        return record.unpack(
            tuple(b.reshape((n, width + 1) + b.shape[1:])[:, cols] for b in outputs)
        )

    def update(current, outputs, done, valid):
        """The sub-block ``done`` (its columns of the outputs) fed to the adaptation."""
        cols = jnp.minimum(done * every + jnp.arange(every), jnp.max(steps) - 1)
        buf = columns(outputs, cols)
        rungs = buf["rung"].astype(jnp.int64).T
        sub = jnp.swapaxes(buf["draw"], 0, 1) if adaptation.keeps_draws else None
        new = adaptation.update(current, rungs, sub, first + done * every, valid)
        return new, _adapted(kernel0, current, adaptation)[0]

    def cond(carry):
        rs, _ = carried.unpack(carry[0])
        return jnp.any(rs.step < steps)

    def body(carry):
        packed, outputs, extra = carry
        rs, offsets, fields, decided, step = one(*carried.unpack(packed), extra)
        column = jnp.where(decided, step, width)
        at = rows * (width + 1) + column
        outputs = record.write(outputs, at, fields)
        if adaptation is not None:
            current, lagged, done, k = extra
            finished = jnp.min(rs.step) >= (done + 1) * every
            current, lagged = jax.lax.cond(
                finished,
                lambda: update(current, outputs, done, every),
                lambda: (current, lagged),
            )
            extra = (current, lagged, done + finished, k + 1)
        return carried.pack((rs, offsets)), outputs, extra

    init = (carried.pack((rs, draws.offsets)), outputs, extra)
    packed, outputs, extra = jax.lax.while_loop(cond, body, init)
    iterations = 0
    if adaptation is not None:  # a last sub-block cut short by the call's end
        state, lagged, done, iterations = extra
        count = jnp.max(steps)
        state, lagged = jax.lax.cond(
            done * every < count,
            lambda: update(state, outputs, done, count - done * every),
            lambda: (state, lagged),
        )
    rs, _ = carried.unpack(packed)
    outputs = columns(outputs, slice(0, width))
    for name in _COUNTS:
        if name in outputs:
            outputs[name] = outputs[name].astype(jnp.int64)
    if adaptation is not None:  # a warm-up's draws stay on the device
        outputs["draw"] = None
    return rs.ladder_state(), state, lagged, outputs, iterations


class _Advancing:
    """Draws whose whole-batch views advance only the chains of ``mask``."""

    def __init__(self, draws: BlockDraws, mask: Any) -> None:
        self.draws, self.mask = draws, mask

    def view(self, advance: Any) -> Any:
        return self.draws.view(self.mask if advance is None else advance & self.mask)


@lru_cache(maxsize=1)
def _compiled() -> Callable:
    import jax

    return jax.jit(_loop, static_argnames=("width", "adaptation"))


@lru_cache(maxsize=1)
def _compiled_values() -> Callable:
    import jax

    def values(kernel0, state, adaptation):
        return _adapted(kernel0, state, adaptation)[0]

    return jax.jit(values, static_argnames=("adaptation",))


def prepare(kernel: Ladder, ks: LadderState, state: Any = None) -> None:
    """Make the kernel's and the states' classes pytrees (before any compiled call)."""
    register(RaggedState, StepRecord, LadderState, kernel, ks, state)


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
    return run_adapting(kernel, ks, recorder, streams, None, None, 0, on_progress, until)[0]


def run_adapting(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    adaptation: Any,
    state: Any,
    first: int,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
) -> tuple[LadderState, Any]:
    """:func:`run_jax` with an :class:`~ladder_mcmc.engine.warmup.Adaptation` (``None``:
    sampling) at ``state``, the recorder's first step warm-up step ``first``:
    ``(LadderState, the adaptation's state)``. A warm-up's calls are whole sub-blocks,
    so that its updates fall on the steps the host loop's do."""
    import jax

    stop = recorder.n_steps if until is None else min(until, recorder.n_steps)
    prepare(kernel, ks, state)
    most = BLOCK if adaptation is None else BLOCK - BLOCK % adaptation.every
    out: Any = ks
    with jax.enable_x64(True):
        per_step = consumption(kernel, ks)
        fn = _compiled()
        lagged: Any = ()
        if adaptation is not None:  # a segment's first two sub-blocks run at its first state
            lagged = _compiled_values()(kernel, state, adaptation=adaptation)
        done = recorder.steps_done.astype(np.int64)
        steps = np.clip(stop - done, 0, most)
        numbers = _numbers(streams, steps, per_step)
        pending = None
        while steps.any():
            # dispatched, not waited for: meanwhile the next block's numbers are drawn and
            # the previous block's steps recorded (an interrupt then leaves the streams
            # ahead of the recorded steps, which no continuation reads: a checkpoint
            # stores them only after a finished call)
            at = first + int(done.min())
            out, state, lagged, outputs, iterations = fn(
                kernel, out, state, lagged, *numbers, steps, at, width=BLOCK, adaptation=adaptation
            )
            following = np.clip(stop - done - steps, 0, most)
            numbers = _numbers(streams, following, per_step) if following.any() else None
            if pending is not None:
                _finish(recorder, *pending, adaptation is not None, on_progress)
            pending = (outputs, iterations, steps, done)
            done, steps = done + steps, following
        if pending is not None:
            _finish(recorder, *pending, adaptation is not None, on_progress)
        state = jax.tree_util.tree_map(np.asarray, state)  # (None stays None)
    return (ks if out is ks else to_numpy(out)), state


def _finish(recorder, outputs, iterations, steps, before, warming, on_progress) -> None:
    """A finished block's steps to the recorder (and a warm-up's counts), then progress."""
    import jax

    outputs = jax.device_get(outputs)
    _record(recorder, outputs, steps, before)
    if warming:
        _COUNT["calls"] += 1
        _COUNT["iterations"] += int(iterations)
        _COUNT["moves"] += float(outputs["n_moves"].sum(axis=1).mean())
    if on_progress is not None:
        on_progress(recorder.completed())


def _numbers(streams: ChainStreams, steps: np.ndarray, per_step: tuple[int, int]):
    """``(uniforms, normals)`` of a block of ``steps`` per chain. Every block has the width
    :data:`BLOCK` (fewer steps leave columns unused): one compiled function, hence the
    same floating-point code, whatever the blocks a run is cut into (checkpoints)."""
    return draw_block(streams, steps, per_step[0], per_step[1], BLOCK)


def call(kernel: Ladder, ks: Any, numbers: tuple, steps: np.ndarray) -> tuple[Any, dict]:
    """One compiled sampling block (no adaptation): ``(ks, outputs)``."""
    out = _compiled()(kernel, ks, None, (), *numbers, steps, 0, width=BLOCK, adaptation=None)
    return out[0], out[3]


def to_numpy(ks: LadderState) -> LadderState:
    """A kernel state with numpy leaves (after a compiled call)."""
    return batch.tree_map(np.asarray, ks)


def _record(recorder: StepRecorder, outputs: dict, steps: np.ndarray, before: np.ndarray) -> None:
    """Hand the block's steps to the recorder: chain ``i``'s first ``steps[i]`` columns,
    in one call."""
    cost, overhead = outputs.get("cost"), outputs.get("overhead")
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


__all__ = [
    "BLOCK",
    "compilations",
    "count_compilation",
    "call",
    "run_adapting",
    "run_jax",
    "segment_calls",
    "to_numpy",
]
