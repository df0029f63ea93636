"""The ragged leapfrog fast path with its per-chain bookkeeping compiled by numba (optional).

:func:`ladder_mcmc.drivers._leapfrog.run` already runs a leapfrog look-ahead
kernel on plain arrays, but what it does around each rung — the look-ahead
decision, the choice between rung and flipped origin, restarting the chains
that decided, the non-finite counters, the trace row — still costs some thirty
numpy calls per iteration, each a few microseconds on a small batch. On the
paper's 2-d targets that is as much time as the ten leapfrog steps themselves.
Here the same bookkeeping is two compiled loops over the chains per iteration
(:func:`_decide`, :func:`_restart`) and one per window of 64 iterations
(:func:`_write_window`, into the trace); everything that does floating-point
arithmetic stays in numpy, so that the result is the generic driver's, draw for
draw:

* the rung (:meth:`_Parameters.rung <ladder_mcmc.drivers._leapfrog._Parameters.rung>`,
  i.e. ``Leapfrog.integrate``), its log density ``-½pᵀM⁻¹p - E``, the ratio
  ``exp(log p_a - log p_0)`` of the look-ahead rule, the momentum refresh and
  its log density are the numpy operations of the numpy driver;
* the compiled loops only compare, select and copy, which are exact. The
  decision is ``u < p_a/p_0`` for a chain still undecided at rung ``a``, which
  is docs/design.md §4's ``u < min(1, max_{j≤a} p_j/p_0)`` (paper, section 4.3) for
  such a chain (:mod:`ladder_mcmc.drivers._leapfrog` explains why).

It runs the fixed-length kernels only: a jittered-length kernel
(``JitteredLengthLeapfrog``, :func:`ladder_mcmc.drivers._leapfrog.declared`'s
``jittered``) stays on the numpy bookkeeping of :mod:`ladder_mcmc.drivers._leapfrog`
whatever :func:`~ladder_mcmc.drivers._leapfrog.compiled` says (its rungs, which
integrate each chain's own length, dominate the time there).

numba is an optional dependency (``pip install "ladder_mcmc[fast]"``), and this
module is imported only when it is used: ``_leapfrog.run`` uses it for
runs long enough to repay loading it (:func:`ladder_mcmc.drivers._leapfrog.compiled`;
the environment variable ``LADDER_MCMC_NUMBA=1`` or ``0`` forces the choice). The
first call ever compiles the loops (cached on disk afterwards; loading the cache
and numba is paid once per process). The costs and the measured gain are in
``benchmarks/results/overhead.md``; the draw-for-draw check against the generic
driver is in ``tests/unit/drivers/test_ragged_leapfrog.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numba
import numpy as np

from ladder_mcmc.drivers._iteration_buffer import (
    DONE,
    NON_FINITE,
    START,
    STOP,
    IterationBuffer,
)
from ladder_mcmc.drivers._leapfrog import _Parameters, declared
from ladder_mcmc.drivers._leapfrog_origin import finish, initial_origin
from ladder_mcmc.drivers.streams import ChainStreams
from ladder_mcmc.ladder.kernel import Ladder, LadderState

if TYPE_CHECKING:
    from ladder_mcmc.drivers.recording import StepRecorder

_jit = numba.njit(cache=True, nogil=True)


@_jit
def _decide(ratio, lp, x, p, g, e, origin, ints, p_next, el_next, iteration, oldest):
    """The look-ahead rule on one rung for every chain; returns (decided, non-finite) counts.

    ``ints`` rows (``_iteration_buffer.START, NON_FINITE, STOP, DONE``): the
    iteration each chain's step started on, its count of non-finite rungs in
    the step, whether it stopped, whether it decided.
    A rung with a non-finite position, gradient or log density has density
    zero: its ``lp`` becomes ``-inf`` and it is never taken (``u < exp(-inf) =
    0`` is false), and the chain's count grows by one (the count restarts with
    the step, on the iteration it started). A chain decides when the rung is
    taken (``u < ratio``, ratio ``= p_a/p_0``, ``u`` the origin's last column)
    or when it was its last rung (its step started on ``oldest``).

    Also each decided chain's next momentum ``p_next`` and energy and log
    density ``el_next`` before the refresh: the flipped origin's (stored with
    its momentum negated) for a chain that ran out of rungs, the rung's for
    one that took it (and for the undecided chains, whose values are not used).
    """
    n, dim = x.shape
    cp, ce, clp, cu = dim, 3 * dim, 3 * dim + 1, 3 * dim + 2
    decided = 0
    bad_total = 0
    for i in range(n):
        bad = not math.isfinite(lp[i])
        if not bad:
            for j in range(dim):
                if not (math.isfinite(x[i, j]) and math.isfinite(g[i, j])):
                    bad = True
                    break
        if ints[START, i] == iteration:
            ints[NON_FINITE, i] = 0
        if bad:
            lp[i] = -np.inf
            ints[NON_FINITE, i] += 1
            bad_total += 1
            stop = False
        else:
            stop = origin[i, cu] < ratio[i]
        done = stop or ints[START, i] == oldest
        ints[STOP, i] = stop
        ints[DONE, i] = done
        decided += done
        if done and not stop:
            for j in range(dim):
                p_next[i, j] = origin[i, cp + j]
            el_next[0, i] = origin[i, ce]
            el_next[1, i] = origin[i, clp]
        else:
            for j in range(dim):
                p_next[i, j] = p[i, j]
            el_next[0, i] = e[i]
            el_next[1, i] = lp[i]
    return decided, bad_total


@_jit
def _restart(
    x, p, g, e, p_ref, lp_ref, u_new, origin, ints, current, iteration,
    window, row, w_draw, columns,
):  # fmt: skip
    """Record the iteration in the trace window, restart decided chains, set the next rung's start.

    A decided chain's new origin is ``[x | -p_ref | ∂E/∂x | E | lp_ref | u_new]``
    with ``x``, ``∂E/∂x``, ``E`` from its flipped origin or from the rung taken;
    it starts its next step from there (``current``: position, momentum,
    gradient) with the refreshed momentum. An undecided chain moves on from
    the rung. Row ``row`` of the window (``IterationBuffer.block``: done,
    start, stop, non-finite count) and of its draws gets each chain's values
    in the chain's column.
    """
    n, dim = x.shape
    cp, cg, ce, clp, cu = dim, 2 * dim, 3 * dim, 3 * dim + 1, 3 * dim + 2
    xc, pc, gc = current[0], current[1], current[2]
    if n < window.shape[2]:
        for k in range(window.shape[2]):
            window[DONE, row, k] = 0
    for i in range(n):
        col = columns[i]
        for r in range(4):
            window[r, row, col] = ints[r, i]
        if ints[DONE, i]:
            if not ints[STOP, i]:  # the flipped origin: x and ∂E/∂x stay
                for j in range(dim):
                    xc[i, j] = origin[i, j]
                    gc[i, j] = origin[i, cg + j]
            else:
                for j in range(dim):
                    xc[i, j] = x[i, j]
                    gc[i, j] = g[i, j]
                    origin[i, j] = x[i, j]
                    origin[i, cg + j] = g[i, j]
                origin[i, ce] = e[i]
            for j in range(dim):
                pc[i, j] = p_ref[i, j]
                origin[i, cp + j] = -p_ref[i, j]
            origin[i, clp] = lp_ref[i]
            origin[i, cu] = u_new[i]
            ints[START, i] = iteration + 1
        else:
            for j in range(dim):
                xc[i, j] = x[i, j]
                gc[i, j] = g[i, j]
                pc[i, j] = p[i, j]
        for j in range(dim):
            w_draw[row, col, j] = xc[i, j]


@_jit
def _write_window(block, iteration, draw, k, steps_done, flips, rungs, n_moves, nf, rows, thin):
    """:meth:`IterationBuffer.write` for the first ``k`` rows, straight into the recorder's arrays.

    For each chain that finished a step on row ``r`` (``block[DONE, r]``):
    its step index is its count of finished steps, ``n_moves`` the iterations
    since the step started, the rung code ``n_moves`` if it stopped and ``0``
    (a flip) otherwise; its draw goes to ``rows`` (:meth:`Recorder.draw_rows`)
    when ``thin`` keeps it. ``steps_done`` and ``flips`` (per chain) advance.
    """
    n, dim = block.shape[2], draw.shape[2]
    for r in range(k):
        for col in range(n):
            if block[DONE, r, col]:
                step = steps_done[col]
                moves = iteration[r, 0] - block[START, r, col] + 1
                stop = block[STOP, r, col]
                rungs[step, col] = moves * stop
                n_moves[step, col] = moves
                nf[step, col] = block[NON_FINITE, r, col]
                flips[col] += 1 - stop
                steps_done[col] = step + 1
                if (step + 1) % thin == 0:
                    kept = ((step + 1) // thin - 1) * n + col
                    for j in range(dim):
                        rows[kept, j] = draw[r, col, j]


def _keeps_a_draw(window: IterationBuffer, thin: int) -> bool:
    """Whether the buffered steps include one that ``thin`` keeps."""
    before = window.steps_done
    after = before + (window.done[: window.rows] != 0).sum(axis=0)
    return bool(np.any(after // thin > before // thin))


def _write(window: IterationBuffer) -> bool:
    """The compiled :meth:`IterationBuffer.write` (False: not applicable, use numpy's)."""
    recorder = window.recorder
    if recorder.draws is None and not _keeps_a_draw(window, recorder.thin):
        rows = np.empty((0, window.draw.shape[2]))  # nothing kept yet: nothing allocated
    else:
        rows = recorder.draw_rows(window.draw[0])
        if rows is None:
            return False
    steps_done, flips = window.steps_done.copy(), window.flips.copy()
    _write_window(
        window.block, window.iteration, window.draw, window.rows, steps_done, flips,
        recorder.rungs, recorder.n_moves, recorder.non_finite, rows, recorder.thin,
    )  # fmt: skip
    recorder.record_written(steps_done)
    window.steps_done, window.flips, window.rows = steps_done, flips, 0
    return True


def run(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
) -> LadderState:
    """:func:`ladder_mcmc.drivers._leapfrog.run`'s loop with the bookkeeping compiled.

    Same contract, same random numbers in the same order, same trace draw for
    draw (called inside ``_leapfrog.run``'s ``errstate`` and ``flush``). The arrays
    handed to the compiled loops are few and packed (each array argument costs a
    fraction of a microsecond to pass).
    """
    kp = _Parameters.of(kernel, declared(kernel))
    last = kp.rungs - 1
    steps_done = recorder.steps_done.astype(np.int64)
    n_steps = recorder.n_steps if until is None else min(until, recorder.n_steps)
    state = ks.state
    n, dim = state.x.shape
    clp = 3 * dim + 1
    direction = np.asarray(ks.direction, dtype=np.int8)
    origin, p_start = initial_origin(ks, streams, steps_done < n_steps)
    # the state the next rung starts from, rewritten in place on every decision
    current = np.empty((3, n, dim))
    current[0], current[1], current[2] = state.x, p_start, state.grad
    views = tuple(current)  # position, momentum, gradient: contiguous views
    xc, pc, gc = views
    ints = np.zeros((4, n), dtype=np.int64)
    ints[START] = 1
    p_next, el_next = np.empty((n, dim)), np.empty((2, n))
    chain_id = np.arange(n)
    window = IterationBuffer(recorder, dim, direct=False)
    window.writer = _write
    final_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    steps_now = None
    non_finite_seen = False

    def retire(finished: np.ndarray) -> None:
        nonlocal chain_id, direction, origin, current, views, ints, p_next, el_next, steps_now
        fin = np.flatnonzero(finished)
        final_parts.append((chain_id[fin], origin[fin], direction[fin]))
        keep = np.flatnonzero(~finished)
        chain_id, direction, origin = chain_id[keep], direction[keep], origin[keep]
        current, ints = current[:, keep], ints[:, keep]
        views = tuple(current)
        p_next, el_next = p_next[keep], el_next[:, keep]
        if steps_now is not None:
            steps_now = steps_now[keep]

    if np.any(steps_done >= n_steps):
        retire(steps_done >= n_steps)
        xc, pc, gc = views
    iteration, check_from = 0, n_steps - (int(steps_done.max()) if steps_done.size else 0)
    columns = window.all_columns if chain_id.size == recorder.n_chains else chain_id
    try:
        while chain_id.size:
            iteration += 1
            x, p, e, g = kp.rung(xc, pc, gc)
            if not g.flags.c_contiguous:
                g = np.ascontiguousarray(g)
            lp = kp.minus_half_pp(p) - e
            ratio = np.exp(lp - origin[:, clp])
            n_done, n_bad = _decide(
                ratio, lp, x, p, g, e, origin, ints, p_next, el_next, iteration, iteration - last
            )
            non_finite_seen = non_finite_seen or n_bad > 0
            if n_done == 0:
                xc, pc, gc = x, p, g
                continue
            # the decided chains' streams (a 0/1 mask moves a stream on like a boolean)
            ids = None if columns is window.all_columns else chain_id
            advance = ints[DONE] if n_done < chain_id.size else None
            if kp.refresh:
                p_ref = kp.refreshed(p_next, streams.normals.take(ids, dim, advance))
                lp_ref = kp.minus_half_pp(p_ref) - el_next[0]
            else:
                p_ref, lp_ref = p_next, el_next[1]
            # the next step's uniform, drawn by the chains that go on to one
            if iteration >= check_from:
                if steps_now is None:  # (this iteration is not in the window yet)
                    steps_now = window.pending_steps()[chain_id]
                steps_now = steps_now + ints[DONE]
                advance = ints[DONE].astype(bool) & (steps_now < n_steps)
            u_new = streams.uniforms.take(ids, 1, advance)
            _restart(
                x, p, g, e, p_ref, lp_ref, u_new, origin, ints, current, iteration,
                window.block, window.rows, window.draw, columns,
            )  # fmt: skip
            xc, pc, gc = views
            if window.pushed(iteration, non_finite_seen):
                window.write()
                if on_progress is not None:
                    on_progress(recorder.completed())
            if steps_now is not None:
                finished = steps_now >= n_steps
                if finished.any():
                    retire(finished)
                    columns = chain_id
                    xc, pc, gc = views
    except BaseException:
        window.write()  # Ctrl-C (or an error in the target) keeps every finished step
        raise
    return finish(window, on_progress, ks, final_parts)
