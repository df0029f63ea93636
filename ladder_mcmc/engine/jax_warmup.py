"""Warm-up inside the compiled loop: sub-blocks, their updates and kernel rebuilds in one call.

:func:`run_segment` runs one segment of an :class:`~ladder_mcmc.engine.warmup.Adaptation`'s
schedule in calls of up to :data:`~ladder_mcmc.engine.jax_loop.BLOCK` steps. Inside a
call, a ``lax.while_loop`` over sub-blocks of ``adaptation.every`` steps: the kernel at
the adaptation's current values (``adaptation.kernel``, its adapted values traced), every
chain through the sub-block's steps on the ragged step
(:func:`~ladder_mcmc.engine.ragged.iterate`, an inner ``lax.while_loop``), then
``adaptation.update`` on the sub-block's rung codes and draws. The numpy warm-up runs the
same sub-blocks on the host loop, with the same random numbers and the same ``update``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from ladder_mcmc.engine import jax_loop
from ladder_mcmc.engine.block_draws import BlockDraws, consumption, draw_block
from ladder_mcmc.engine.pytree import Packing, register
from ladder_mcmc.engine.ragged import Plan, RaggedState, StepRecord, iterate, start
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder.kernel import Ladder, LadderState


def _segment(kernel0, ks, state, uniforms, normals, count, first, width, adaptation):
    """``count`` warm-up steps (the first is warm-up step ``first``) in sub-blocks:
    ``(ks, state, outputs)``, outputs (chains, width) rung codes and gradient counts."""
    import jax
    import jax.numpy as jnp

    jax_loop.count_compilation()
    every = adaptation.every
    plan = Plan.of(kernel0.rule)
    n = ks.direction.shape[0]
    rows = jnp.arange(n)
    keeps = adaptation.keeps_draws

    def grads_of(kernel: Ladder, rec: StepRecord):
        per_move = kernel.map.cost if rec.cost is None else rec.cost
        out = rec.n_moves * per_move
        return out if rec.overhead is None else out + rec.overhead

    def run_sub(kernel, ks, offsets, out, lo, hi):
        """Every chain from step ``lo`` to ``hi`` at ``kernel``; the steps written into the
        call's outputs ``out`` and a sub-block buffer of rung codes and draws (packed rows,
        :class:`~ladder_mcmc.engine.pytree.Packing`: one scatter each per iteration)."""
        d = BlockDraws(uniforms, normals, offsets)
        rs = start(kernel, ks, jnp.full(n, lo, dtype=jnp.int64), d)
        carried = jax_loop.Carried((rs, d.offsets))
        draw_shape = jax.eval_shape(kernel.map.draw, ks.state) if keeps else None
        sub_rows = Packing({"rung": rows.astype(jnp.float64), "draw": draw_shape})
        sub = sub_rows.zeros(n * (every + 1))

        def cond(c):
            rs, _ = carried.unpack(c[0])
            return jnp.any(rs.step < hi)

        def body(c):
            packed, sub, out = c
            rs, offsets = carried.unpack(packed)
            d = BlockDraws(uniforms, normals, offsets)
            rs, rec = iterate(kernel, plan, rs, d, hi, rs.step < hi)
            rung = rec.rung.astype(jnp.float64)  # exact: one float row per chain
            column = jnp.where(rec.decided, rec.step - lo, every)
            kept = {"rung": rung, "draw": rec.draw if keeps else None}
            sub = sub_rows.write(sub, rows * (every + 1) + column, kept)
            at = jnp.where(rec.decided, rec.step, width)
            grads = grads_of(kernel, rec).astype(jnp.float64)
            out = out_rows.write(out, rows * (width + 1) + at, {"rung": rung, "grads": grads})
            return carried.pack((rs, d.offsets)), sub, out

        packed, sub, out = jax.lax.while_loop(cond, body, (carried.pack((rs, d.offsets)), sub, out))
        rs, offsets = carried.unpack(packed)
        sub = sub_rows.unpack(tuple(buf.reshape((n, every + 1) + buf.shape[1:]) for buf in sub))
        return rs.ladder_state(), offsets, sub["rung"].astype(jnp.int64), sub["draw"], out

    def cond(c):
        return c[4] < count

    def body(c):
        ks, state, offsets, out, lo = c
        kernel = adaptation.kernel(kernel0, state)
        hi = jnp.minimum(lo + every, count)
        ks, offsets, rungs, draws, out = run_sub(kernel, ks, offsets, out, lo, hi)
        draws = jnp.swapaxes(draws[:, :every], 0, 1) if keeps else None
        state = adaptation.update(state, rungs[:, :every].T, draws, first + lo, hi - lo)
        return ks, state, offsets, out, hi

    # the call's rung codes and gradient counts, as floats (exact) in one packed array
    out_rows = Packing({"rung": rows.astype(jnp.float64), "grads": rows.astype(jnp.float64)})
    out = out_rows.zeros(n * (width + 1))
    offsets = jnp.zeros((n, 2), dtype=jnp.int64)
    carry = (ks, state, offsets, out, jnp.zeros((), dtype=jnp.int64))
    ks, state, _, out, _ = jax.lax.while_loop(cond, body, carry)
    out = out_rows.unpack(tuple(buf.reshape((n, width + 1) + buf.shape[1:]) for buf in out))
    return ks, state, {k: v[:, :width].astype(jnp.int64) for k, v in out.items()}


@lru_cache(maxsize=1)
def _compiled() -> Callable:
    import jax

    return jax.jit(_segment, static_argnames=("width", "adaptation"))


def run_segment(
    kernel: Ladder,
    ks: LadderState,
    state: Any,
    adaptation: Any,
    streams: ChainStreams,
    start_step: int,
    stop: int,
    rungs: np.ndarray,
    grads: np.ndarray,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[LadderState, Any]:
    """Warm-up steps ``start_step … stop − 1`` in compiled calls; their rung codes and
    gradient counts written into ``rungs`` and ``grads`` (steps, chains)."""
    import jax

    register(RaggedState, StepRecord, LadderState, kernel, ks, state)
    n = len(ks.direction)
    with jax.enable_x64(True):
        per_step = consumption(kernel, ks)
        fn = _compiled()
        t = start_step
        while t < stop:
            # calls of whole sub-blocks: the updates fall on the steps the host's fall on
            count = min(jax_loop.BLOCK - jax_loop.BLOCK % adaptation.every, stop - t)
            width = jax_loop.BLOCK  # one width: one compilation for every segment
            steps = np.full(n, count, dtype=np.int64)
            numbers = draw_block(streams, steps, per_step[0], per_step[1], width)
            ks, state, out = fn(
                kernel, ks, state, *numbers, count, t, width=width, adaptation=adaptation
            )
            out = jax.device_get(out)
            rungs[t : t + count] = out["rung"][:, :count].T
            grads[t : t + count] = out["grads"][:, :count].T
            t += count
            if on_progress is not None:
                on_progress(t)
        ks = jax_loop.to_numpy(ks)
        state = jax.tree_util.tree_map(np.asarray, state)
    return ks, state


__all__ = ["run_segment"]
