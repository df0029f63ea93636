"""Warm-up inside the compiled loop: the chains ragged, the updates inside the loop.

:func:`run_segment` runs one segment of an :class:`~ladder_mcmc.engine.warmup.Adaptation`'s
schedule in calls of up to :data:`~ladder_mcmc.engine.jax_loop.BLOCK` steps. A call is
one ``lax.while_loop`` over iterations of the ragged step
(:func:`~ladder_mcmc.engine.ragged.iterate`), every chain at the kernel of its own
sub-block of ``adaptation.every`` steps: sub-block ``b`` runs at the adaptation's state
after sub-block ``b − 2``, so two states are in use, the leaves of their kernels
(``adaptation.kernel``) that differ are chosen per chain, and the step runs under
``jax.vmap`` over the chains. A chain a sub-block ahead of the slowest waits; when the
slowest finishes a sub-block, ``adaptation.update`` takes its rung codes and draws
(a ring of two sub-blocks) inside the loop. The numpy warm-up runs the same sub-blocks
at the same states on the host loop, with the same random numbers and the same
``update``.
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
from ladder_mcmc.engine.recording import gradients
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder.kernel import Ladder, LadderState

_CALLS = {"calls": 0, "iterations": 0, "moves": 0.0}


def segment_calls() -> tuple[int, int, float]:
    """Compiled warm-up calls (host round-trips), their loops' iterations (map calls on
    the batch) and their steps' map calls per chain, so far in this process: a loop in
    which no chain waits makes as many iterations as map calls per chain."""
    return _CALLS["calls"], _CALLS["iterations"], _CALLS["moves"]


def _adapted(kernel0, state, adaptation):
    """The leaves of ``adaptation.kernel(kernel0, state)`` that are not ``kernel0``'s (its
    adapted values), their indices, ``kernel0``'s leaves and tree."""
    import jax

    leaves, tree = jax.tree_util.tree_flatten(kernel0)
    new = jax.tree_util.tree_leaves(adaptation.kernel(kernel0, state))
    at = tuple(i for i, (a, b) in enumerate(zip(leaves, new, strict=True)) if a is not b)
    return tuple(new[i] for i in at), at, leaves, tree


def _lagged_values(kernel0, state, adaptation):
    return _adapted(kernel0, state, adaptation)[0]


def _segment(kernel0, ks, state, lagged, uniforms, normals, count, first, width, adaptation):
    """``count`` warm-up steps (the first is warm-up step ``first``), the chains ragged:
    ``(ks, state, lagged, outputs, iterations)``, outputs (chains, width) rung codes,
    gradient and map call counts. ``state``: after the updates of every finished
    sub-block; ``lagged``: the adapted values (:func:`_adapted`) of the kernel at the
    state before the last of them (what the sub-block after it runs at)."""
    import jax
    import jax.numpy as jnp

    jax_loop.count_compilation()
    every = adaptation.every
    ring = 2 * every  # the sub-blocks in flight: the oldest unfinished one and the next
    plan = Plan.of(kernel0.rule)
    n = ks.direction.shape[0]
    rows = jnp.arange(n)
    keeps = adaptation.keeps_draws
    draw_shape = jax.eval_shape(kernel0.map.draw, ks.state) if keeps else None
    sub_rows = Packing({"rung": rows.astype(jnp.float64), "draw": draw_shape})
    floats = rows.astype(jnp.float64)
    out_rows = Packing({"rung": floats, "grads": floats, "moves": floats})

    _, varying, leaves, tree = _adapted(kernel0, state, adaptation)

    def per_chain(current, lagged, newer):
        """The adapted values at ``lagged`` or at ``current`` (``newer``), per chain."""
        new = _adapted(kernel0, current, adaptation)[0]
        return [
            jnp.where(newer.reshape((n,) + (1,) * jnp.ndim(b)), b, a)
            for a, b in zip(lagged, new, strict=True)
        ]

    def one_chain():
        def one(values, rs, u, z, offsets, active):
            leaves_c = list(leaves)
            for i, v in zip(varying, values, strict=True):
                leaves_c[i] = v
            kernel = jax.tree_util.tree_unflatten(tree, leaves_c)
            d = BlockDraws(u[None], z[None], offsets[None])
            rs, rec = iterate(
                kernel, plan, jax.tree_util.tree_map(lambda x: x[None], rs), d, count, active[None]
            )
            per_move = kernel.map.cost if rec.cost is None else rec.cost
            grads = gradients(rec.n_moves, per_move, rec.overhead)
            kept = (rs, d.offsets, rec, grads)
            return jax.tree_util.tree_map(lambda x: x[0], kept)

        return one

    def update(current, lagged, sub, done, valid):
        """The sub-block ``done`` (its rows in the ring) fed to the adaptation."""
        buf = sub_rows.unpack(tuple(b.reshape((n, ring + 1) + b.shape[1:]) for b in sub))
        cols = (done % 2) * every + jnp.arange(every)
        rungs = buf["rung"][:, cols].astype(jnp.int64).T
        draws = jnp.swapaxes(buf["draw"][:, cols], 0, 1) if keeps else None
        new = adaptation.update(current, rungs, draws, first + done * every, valid)
        return new, _adapted(kernel0, current, adaptation)[0]

    def cond(c):
        rs, _ = carried.unpack(c[0])
        return jnp.any(rs.step < count)

    def body(c):
        packed, sub, out, current, lagged, done, k = c
        rs, offsets = carried.unpack(packed)
        block = rs.step // every
        # a chain runs sub-block b at the state after sub-block b − 2: it waits only when
        # a whole sub-block ahead of the slowest chain
        active = (rs.step < count) & (block <= done + 1)
        values = per_chain(current, lagged, block > done)
        one = one_chain()
        rs, offsets, rec, grads = jax.vmap(one)(values, rs, uniforms, normals, offsets, active)
        rung = rec.rung.astype(jnp.float64)  # exact: one float row per chain
        column = jnp.where(rec.decided, rec.step % ring, ring)
        draw = rec.draw if keeps else None
        sub = sub_rows.write(sub, rows * (ring + 1) + column, {"rung": rung, "draw": draw})
        at = jnp.where(rec.decided, rec.step, width)
        counts = {"grads": grads, "moves": rec.n_moves}
        out = out_rows.write(
            out,
            rows * (width + 1) + at,
            {"rung": rung, **{k: v.astype(jnp.float64) for k, v in counts.items()}},
        )
        finished = jnp.min(rs.step) >= (done + 1) * every
        current, lagged = jax.lax.cond(
            finished,
            lambda: update(current, lagged, sub, done, every),
            lambda: (current, lagged),
        )
        return carried.pack((rs, offsets)), sub, out, current, lagged, done + finished, k + 1

    kernel = adaptation.kernel(kernel0, state)  # the rule's uniform: no adapted value
    d = BlockDraws(uniforms, normals, jnp.zeros((n, 2), dtype=jnp.int64))
    rs = start(kernel, ks, jnp.zeros(n, dtype=jnp.int64), d)
    offsets = d.offsets
    carried = jax_loop.Carried((rs, offsets))
    sub = sub_rows.zeros(n * (ring + 1))
    out = out_rows.zeros(n * (width + 1))
    done = jnp.zeros((), dtype=jnp.int64)
    carry = (carried.pack((rs, offsets)), sub, out, state, lagged, done, done)
    packed, sub, out, state, lagged, done, iterations = jax.lax.while_loop(cond, body, carry)
    # a last sub-block cut short by the segment's end
    state, lagged = jax.lax.cond(
        done * every < count,
        lambda: update(state, lagged, sub, done, count - done * every),
        lambda: (state, lagged),
    )
    rs, _ = carried.unpack(packed)
    out = out_rows.unpack(tuple(buf.reshape((n, width + 1) + buf.shape[1:]) for buf in out))
    outputs = {k: v[:, :width].astype(jnp.int64) for k, v in out.items()}
    return rs.ladder_state(), state, lagged, outputs, iterations


def _numbers(streams: ChainStreams, n: int, count: int, per_step: tuple, width: int):
    steps = np.full(n, count, dtype=np.int64)
    return draw_block(streams, steps, per_step[0], per_step[1], width)


@lru_cache(maxsize=1)
def _compiled() -> Callable:
    import jax

    return jax.jit(_segment, static_argnames=("width", "adaptation"))


@lru_cache(maxsize=1)
def _compiled_values() -> Callable:
    import jax

    return jax.jit(_lagged_values, static_argnames=("adaptation",))


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
        # calls of whole sub-blocks (the updates fall on the steps the host's fall on), of
        # one width (one compilation for every segment)
        width = jax_loop.BLOCK
        longest = width - width % adaptation.every
        counts = [min(longest, stop - t) for t in range(start_step, stop, longest)]
        numbers = _numbers(streams, n, counts[0], per_step, width)
        t = start_step
        # a segment's first two sub-blocks run at its first state
        lagged = _compiled_values()(kernel, state, adaptation=adaptation)
        for i, count in enumerate(counts):
            _CALLS["calls"] += 1
            ks, state, lagged, out, iterations = fn(
                kernel, ks, state, lagged, *numbers, count, t, width=width, adaptation=adaptation
            )
            # dispatched, not waited for: the next call's numbers are drawn meanwhile (the
            # same numbers: the streams are read in the same order)
            if i + 1 < len(counts):
                numbers = _numbers(streams, n, counts[i + 1], per_step, width)
            out = jax.device_get(out)
            _CALLS["iterations"] += int(iterations)
            _CALLS["moves"] += float(out["moves"][:, :count].mean(axis=0).sum())
            rungs[t : t + count] = out["rung"][:, :count].T
            grads[t : t + count] = out["grads"][:, :count].T
            t += count
            if on_progress is not None:
                on_progress(t)
        ks = jax_loop.to_numpy(ks)
        state = jax.tree_util.tree_map(np.asarray, state)
    return ks, state


__all__ = ["run_segment", "segment_calls"]
