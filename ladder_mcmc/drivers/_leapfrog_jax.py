"""The leapfrog fast path compiled whole by JAX, for targets JAX can trace (private).

With a target compiled by JAX (:func:`~ladder_mcmc.models.from_jax`,
:func:`~ladder_mcmc.models.from_pymc`) a gradient is one short dispatch, and the
Python loop of :mod:`ladder_mcmc.drivers._leapfrog` around it costs more than the
gradient. This driver runs the same ragged schedule inside one compiled call per
*block* of steps:

* one ``lax.while_loop`` over iterations, each one batched gradient: every chain is
  at its own leapfrog step of its own rung of its own step, so that with jittered
  lengths no gradient is computed for a chain that has none to take (a loop over
  rungs would run every chain to the longest ``n``). Inside a rung a chain kicks and
  drifts; a chain whose rung ends (its ``n``-th gradient; a ``lax.cond`` skips this
  part when none does) applies the look-ahead rule (``u < p_a/p_0``), and if it
  decides (or is out of rungs: the flipped origin) records the step in column ``s``
  of its outputs, refreshes its momentum, takes its next length and uniform; either
  way it begins its next rung (half kick, drift) in the same iteration. The loop
  ends when every chain has taken its steps of the block. Chains that have taken
  theirs idle; once at most a half, a quarter or an eighth of the batch is still
  moving, the gradient is taken on that many rows only (gathered, a ``lax.switch``),
  so that on a costly target warm-up's short blocks do not pay for idle chains
  (the numpy path's batches shrink the same way). Per chain these are the
  operations of :meth:`Leapfrog.integrate <ladder_mcmc.hamiltonian.leapfrog.Leapfrog.integrate>`
  in their order;
* the random numbers are drawn in numpy, before the call, from each chain's own
  streams (:class:`~ladder_mcmc.drivers.streams.ChainStreams`) in the order the numpy
  fast path consumes them — per step: the momentum's ``dim`` normals, then the
  length's uniform (a ``LengthJitter``), then the next step's uniform (only if the
  chain goes on to another step of the run) — so a chain gets the same numbers for
  the same step as with every other driver; the momenta ``√β M^{1/2} z`` are computed
  in numpy, the lengths ``M − w + ⌊u (2w + 1)⌋`` in the loop, as the numpy path does;
* a call runs in sub-blocks of ``every`` steps per chain (for sampling one, the whole
  call). For warm-up (:func:`run_adapting`), after each sub-block dual averaging takes
  each of its steps' fraction of chains on the first rung and sets the next sub-block's
  ``ε`` and ``(M, w)`` (:mod:`ladder_mcmc.drivers.step_control`), the arithmetic of
  :class:`~ladder_mcmc.run.step_size.DualAveraging`: warm-up's blocks of a few steps
  cost no call each;
* ``ε``, ``K``, ``√(1−β)``, the inverse mass, the lengths and the control are traced
  arguments: warm-up's changing parameters do not recompile; a compilation is made
  per target, number of chains, dimension, kind of metric (diagonal — the identity
  as a diagonal of ones — or dense), whether the momentum is refreshed and how the
  lengths are drawn (:data:`TRACES` counts them);
* a non-finite rung (position, momentum, gradient, energy or log density) has
  density zero and is counted in the step's non-finite rungs, as in the numpy path.

The steps of a block go to the recorder when the call returns, then progress is
reported: an interrupted run keeps every block finished before the interruption,
and ``until`` (checkpoints, warm-up's windows) is honoured per chain. Its arithmetic is
XLA's, not numpy's: the positions agree with the numpy fast path to rounding, the
rung codes exactly unless a uniform falls within rounding of its threshold
(``tests/unit/drivers/test_leapfrog_jax.py``).

:func:`applies_to` says when :func:`~ladder_mcmc.drivers.contract.driver_for` picks it:
the kernel is one the numpy fast path runs (:func:`ladder_mcmc.drivers._leapfrog.declared`),
its target exposes a JAX one-point energy (``target.jax_potential``), and neither
:data:`ladder_mcmc.drivers.JAX_DRIVER` nor the environment variable
``LADDER_MCMC_JAX=0`` turns it off.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from ladder_mcmc.drivers import _leapfrog
from ladder_mcmc.drivers._jax_host import (
    control_after,
    control_argument,
    final_state,
    metric_argument,
    record_block,
)
from ladder_mcmc.drivers._leapfrog_origin import initial_origin
from ladder_mcmc.drivers.step_control import StepSizeControl
from ladder_mcmc.drivers.streams import ChainStreams
from ladder_mcmc.ladder.kernel import Ladder, LadderState

if TYPE_CHECKING:
    from ladder_mcmc.drivers.recording import StepRecorder

#: steps per chain per compiled call (fewer in the last block of a run)
BLOCK = 128

#: compilations (traces) of the block function so far, in this process
TRACES = 0

#: each chain's state between blocks (at the start of a step): its step origin, with
#: the physical momentum ``p0`` already refreshed, its step's uniform and length, and
#: its flips (the final direction is the first one times ``(−1)^flips``)
_CARRIED = ("x0", "p0", "g0", "e0", "lp0", "u", "n", "flips")


def potential_of(kernel: Ladder) -> Callable | None:
    """The JAX one-point energy ``x (dim,) -> E`` of the kernel's target, or None."""
    return getattr(getattr(kernel.map, "target", None), "jax_potential", None)


def environment_switch(value: str) -> bool:
    """``LADDER_MCMC_JAX`` as a switch: ``1/true/yes/on`` or ``0/false/no/off`` (any case),
    else a ``ValueError`` naming the value."""
    word = value.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"LADDER_MCMC_JAX must be 1/true/yes/on or 0/false/no/off, got {value!r}")


def compilations() -> int:
    """How many times the compiled loop has been traced (compiled) in this process."""
    return TRACES


def applies_to(kernel: Ladder) -> bool:
    """Whether :func:`run` drives ``kernel``: the numpy fast path's kernels on a target with
    a ``jax_potential``, unless switched off (:data:`ladder_mcmc.drivers.JAX_DRIVER`
    ``False``, or ``LADDER_MCMC_JAX=0`` while it is ``None``)."""
    from ladder_mcmc import drivers  # the switch, read when a run starts

    switch = drivers.JAX_DRIVER
    if switch is None:
        switch = environment_switch(os.environ.get("LADDER_MCMC_JAX", "1"))
    if not switch or potential_of(kernel) is None:
        return False
    return _leapfrog.declared(kernel) is not None and importlib.util.find_spec("jax") is not None


@lru_cache(maxsize=16)
def _block_function(potential: Callable, metric: str, refresh: str, lengths: str):
    """The jitted block of steps for ``potential``, a kind of metric, of refresh
    (``"none"``, ``"momentum"``) and of lengths (``"law"``: each step's ``n`` from its
    uniform and the current ``(M, w)``; ``"fixed"``: ``n = M``; ``"own"``: each chain
    keeps its ``n``): ``(state, params, numbers, control) -> (state, outputs, dual)``,
    in sub-blocks of ``control["every"]`` steps, ``dual`` the dual averaging's state."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    value_and_grad = jax.vmap(jax.value_and_grad(potential))

    def velocity(p, m):
        if metric == "diagonal":
            return p * m
        return jnp.einsum("ij,kj->ik", p, m)

    def minus_half_pp(p, m):
        return jnp.sum(p * velocity(p, m), axis=1) * -0.5

    def block(state, params, numbers, control):
        global TRACES
        TRACES += 1  # runs only when JAX traces: one count per compilation
        rungs, keep, m = params
        noise, u_next, u_len, limit = numbers
        n, width = noise.shape[0], noise.shape[1]
        rows = jnp.arange(n)
        dim = state["x0"].shape[1]
        # each chain's steps in its row, step s in column s (column `width`: discarded);
        # stats: rung code, map applications, non-finite rungs, leapfrog steps
        outputs = {
            "draw": jnp.zeros((n, width + 1, dim)),
            "stats": jnp.zeros((n, width + 1, 4), dtype=jnp.int64),
        }

        # the gradient on the active rows only, gathered into a batch of n/2, n/4 or n/8
        # rows when they fit (chains that have taken their steps of the block idle; on a
        # costly target they would otherwise cost as much as the others)
        sizes = [n >> k for k in range(4) if (n >> k) >= 4 and (k == 0 or n % (1 << k) == 0)]

        def on_rows(size):
            def evaluate(x, active):
                idx = jnp.nonzero(active, size=size, fill_value=0)[0]
                e_k, g_k = value_and_grad(x[idx])
                return jnp.zeros(n).at[idx].set(e_k), jnp.zeros((n, dim)).at[idx].set(g_k)

            return evaluate

        def gradients(x, active):
            if len(sizes) == 1:
                return value_and_grad(x)
            count = jnp.sum(active)
            branch = sum((count <= size).astype(jnp.int32) for size in sizes[1:])
            branches = [lambda x, active: value_and_grad(x)]
            branches += [on_rows(size) for size in sizes[1:]]
            return lax.switch(branch, branches, x, active)

        def run_to(st, out, stop, eps, centre, half_width):
            """Every chain, from the start of a step, on until it has taken its steps
            ``< stop`` at step size ``eps`` (lengths ``(centre, half_width)``)."""
            half = 0.5 * eps

            def begin(x, p, g):
                """A rung's first half kick and drift, from ``(x, p, ∂E/∂x)``."""
                p = p - half * g
                return x + eps * velocity(p, m), p

            def next_length(s_now, n_now):
                if lengths == "law":
                    width_k = 2 * half_width + 1
                    return (centre - half_width) + jnp.floor(u_len[rows, s_now] * width_k).astype(
                        jnp.int64
                    )
                if lengths == "fixed":
                    return jnp.full(n, centre, dtype=jnp.int64)
                return n_now

            def rung_end(st, out, x, p, e, g, ends):
                """The chains ``ends`` have finished a rung at ``(x, p, E, ∂E/∂x)``: the
                rule, and for the chains that decide, the record, refresh, next length and
                uniform; every such chain then begins its next rung."""
                lp = minus_half_pp(p, m) - e
                finite = (
                    jnp.isfinite(x).all(axis=1)
                    & jnp.isfinite(p).all(axis=1)
                    & jnp.isfinite(g).all(axis=1)
                    & jnp.isfinite(e)
                    & jnp.isfinite(lp)
                )
                lp = jnp.where(finite, lp, -jnp.inf)
                bad = st["nf"] + (~finite).astype(jnp.int64)
                stop_here = st["u"] < jnp.exp(lp - st["lp0"])
                done = ends & (stop_here | (st["stage"] == rungs - 1))
                goes = ends & ~done  # on to the next rung of the same step
                # the decided chains' next state: the rung, or the flipped origin
                s2 = stop_here[:, None]
                xn = jnp.where(s2, x, st["x0"])
                pn = jnp.where(s2, p, -st["p0"])
                gn = jnp.where(s2, g, st["g0"])
                en = jnp.where(stop_here, e, st["e0"])
                lpn = jnp.where(stop_here, lp, st["lp0"])
                column = jnp.where(done, st["s"], width)  # column `width`: discarded
                moves = st["stage"] + 1
                stats = jnp.stack([jnp.where(stop_here, moves, 0), moves, bad, st["n"]], axis=1)
                out = {
                    "draw": out["draw"].at[rows, column].set(xn),
                    "stats": out["stats"].at[rows, column].set(stats),
                }
                # the refresh, the next length and the next step's uniform
                s_now = jnp.minimum(st["s"], width - 1)
                if refresh == "none":
                    p_ref, lp_ref = pn, lpn
                else:
                    # (a full refresh: keep = 0, and 0·p + z is z exactly for a finite p)
                    p_ref = keep * pn + noise[rows, s_now]
                    lp_ref = minus_half_pp(p_ref, m) - en
                d2, g2 = done[:, None], goes[:, None]
                # the next rung starts from the decided state, or from this rung
                xs = jnp.where(d2, xn, x)
                gs = jnp.where(d2, gn, g)
                x_next, p_next = begin(xs, jnp.where(d2, p_ref, p), gs)
                new = {
                    "x0": jnp.where(d2, xn, st["x0"]),
                    "p0": jnp.where(d2, p_ref, st["p0"]),
                    "g0": jnp.where(d2, gn, st["g0"]),
                    "e0": jnp.where(done, en, st["e0"]),
                    "lp0": jnp.where(done, lp_ref, st["lp0"]),
                    "u": jnp.where(done, u_next[rows, s_now], st["u"]),
                    "n": jnp.where(done, next_length(s_now, st["n"]), st["n"]),
                    "x": jnp.where(ends[:, None], x_next, st["x"]),
                    "p": jnp.where(ends[:, None], p_next, st["p"]),
                    "j": jnp.where(ends, 0, st["j"]),
                    "stage": jnp.where(done, 0, jnp.where(g2[:, 0], st["stage"] + 1, st["stage"])),
                    "nf": jnp.where(done, 0, jnp.where(goes, bad, st["nf"])),
                    "s": st["s"] + done,
                    "flips": st["flips"] + (done & ~stop_here),
                }
                return new, out

            def body(carry):
                """One gradient for every chain: a kick and drift inside a rung, or its end."""
                st, out = carry
                active = st["s"] < stop
                e, g = gradients(st["x"], active)
                j = st["j"] + 1
                ends = active & (j >= st["n"])
                inside = (active & ~ends)[:, None]
                p_mid = st["p"] - eps * g
                x_mid = st["x"] + eps * velocity(p_mid, m)
                st = {
                    **st,
                    "x": jnp.where(inside, x_mid, st["x"]),
                    "p": jnp.where(inside, p_mid, st["p"]),
                    "j": jnp.where(active, j, st["j"]),
                }

                def finish_rungs(args):
                    st, out = args
                    x, p = carry[0]["x"], carry[0]["p"] - half * g
                    return rung_end(st, out, x, p, e, g, ends)

                return lax.cond(jnp.any(ends), finish_rungs, lambda args: args, (st, out))

            # every chain begins a step: its first rung from its origin
            x, p = begin(st["x0"], st["p0"], st["g0"])
            st = {**st, "x": x, "p": p}
            return lax.while_loop(lambda c: jnp.any(c[0]["s"] < stop), body, (st, out))

        def adapt_after(dual, out, first, last):
            """Dual averaging over the steps ``first .. last − 1`` (every chain's), and the
            next sub-block's ``ε`` and lengths (:mod:`ladder_mcmc.drivers.step_control`)."""

            def update(s, d):
                # count / n in float64, as numpy's mean of booleans (jnp.mean: float32)
                stat = jnp.sum(out["stats"][:, s, 0] == 1).astype(jnp.float64) / n
                t = d["t"] + 1
                eta = 1.0 / (t + control["t0"])
                h_bar = (1 - eta) * d["h_bar"] + eta * (control["target"] - stat)
                log_eps = control["mu"] - jnp.sqrt(t) / control["gamma"] * h_bar
                w = jnp.power(t.astype(jnp.float64), -control["kappa"])
                log_eps_bar = w * log_eps + (1 - w) * d["log_eps_bar"]
                centre = jnp.round(control["time"] / jnp.exp(log_eps_bar))
                centre = jnp.clip(centre, 1, control["max_n"]).astype(jnp.int64)
                half = jnp.floor(control["jitter"] * (centre - 1)).astype(jnp.int64)
                follow = control["follow"]
                return {
                    "eps": jnp.exp(log_eps),
                    "centre": jnp.where(follow, centre, d["centre"]),
                    "half": jnp.where(follow, half, d["half"]),
                    "t": t,
                    "h_bar": h_bar,
                    "log_eps": log_eps,
                    "log_eps_bar": log_eps_bar,
                }

            return lax.fori_loop(first, last, update, dual)

        def sub_block(carry):
            st, out, dual, first = carry
            stop = jnp.minimum(first + control["every"], limit)
            if lengths == "fixed":  # the next step's n is the current M
                st = {**st, "n": jnp.full(n, dual["centre"], dtype=jnp.int64)}
            st, out = run_to(st, out, stop, dual["eps"], dual["centre"], dual["half"])
            last = jnp.where(control["adapt"], jnp.max(stop), first)  # sampling: no update
            return st, out, adapt_after(dual, out, first, last), first + control["every"]

        state = {
            **state,
            "x": state["x0"],
            "p": state["p0"],
            **{k: jnp.zeros(n, dtype=jnp.int64) for k in ("j", "s", "stage", "nf")},
        }
        carry = (state, outputs, control["dual"], jnp.zeros((), dtype=jnp.int64))
        state, outputs, dual, _ = lax.while_loop(lambda c: jnp.any(c[3] < limit), sub_block, carry)
        # between blocks every chain is at the start of a step: its origin is its state
        state = {k: state[k] for k in _CARRIED}
        return state, outputs, dual

    # XLA's default optimisation: the block compiles the user's log density with it
    return jax.jit(block)


def _draw_numbers(kp, streams, limit, going_on, dim, width):
    """The block's random numbers, per chain from its streams, in the numpy path's order.

    Per step: ``dim`` normals (a refresh), a length's uniform (a ``LengthJitter``), the
    next step's uniform (unless it is the chain's last step of the run, ``going_on``
    false for its last step of the block). Returns the momenta ``√β M^{1/2} z``, the
    next uniforms and the length uniforms (zero without a length law), each
    (chains, width, ...); the compiled loop turns the last into lengths.
    """
    n = limit.size
    noise = np.zeros((n, width, dim))
    u_next = np.zeros((n, width))
    u_len = np.zeros((n, width))
    law = kp.lengths is not None
    per_step = 1 + law
    if np.all(limit == limit[0]) and np.all(going_on == going_on[0]):
        groups = [(int(limit[0]), bool(going_on[0]))]  # the usual case: one group
    else:
        keys = np.stack([limit, going_on.astype(np.int64)], axis=1)
        groups = np.unique(keys, axis=0).tolist()
    for b, go in groups:
        if b == 0:
            continue
        ids = np.flatnonzero((limit == b) & (going_on == bool(go))) if len(groups) > 1 else None
        size = n if ids is None else ids.size
        rows = slice(None) if ids is None else ids
        if kp.refresh:
            z = streams.normals.take(ids, b * dim, None).reshape(size * b, dim)
            momenta = kp.momentum_of(z)
            if kp.noise_coef is not None:
                momenta = kp.noise_coef * momenta
            noise[rows, :b] = momenta.reshape(size, b, dim)
        k = int(b * per_step - (0 if go else 1))
        if k > 0:
            u = streams.uniforms.take(ids, k, None).reshape(size, k)
            u = np.concatenate([u, np.zeros((size, b * per_step - k))], axis=1)
            u = u.reshape(size, b, per_step)
            u_next[rows, :b] = u[:, :, -1]
            if law:
                u_len[rows, :b] = u[:, :, 0]
    return noise, u_next, u_len


def run(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
) -> LadderState:
    """Advance every chain of ``ks`` until the recorder holds ``until`` steps per chain.

    The :class:`~ladder_mcmc.drivers.contract.Driver` contract, for a kernel
    :func:`applies_to`: the numpy fast path's steps (:func:`ladder_mcmc.drivers._leapfrog.run`),
    in compiled blocks of at most :data:`BLOCK` steps per chain.
    """
    return _in_x64(kernel, ks, recorder, streams, on_progress, until, None)[0]


def run_adapting(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    control: StepSizeControl,
    until: int | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[LadderState, StepSizeControl]:
    """:func:`run` in blocks of ``control.every`` steps, dual averaging of ``ε`` (and ``M``
    following it) between them, inside the compiled calls (:mod:`ladder_mcmc.drivers.step_control`).

    Every chain must have taken as many steps (``recorder.steps_done``). Returns the
    chains' state and ``control`` with its dual-averaging state after the last block; the
    recorder gets each step's cost (leapfrog steps per map application) whatever the map.

    Raises
    ------
    ValueError
        If the chains have taken different numbers of steps, or ``control.every`` is not
        in ``1 .. BLOCK``.
    """
    if not 1 <= control.every <= BLOCK:
        raise ValueError(f"control.every must be in 1 .. {BLOCK}, got {control.every!r}")
    done = np.asarray(recorder.steps_done)
    if done.size and np.any(done != done[0]):
        raise ValueError(
            f"run_adapting needs every chain at the same step, got steps_done {done.tolist()}"
        )
    return _in_x64(kernel, ks, recorder, streams, on_progress, until, control)


def _in_x64(kernel, ks, recorder, streams, on_progress, until, control):
    import jax

    if jax.config.jax_enable_x64:
        return _run(kernel, ks, recorder, streams, on_progress, until, control)
    with jax.enable_x64(True):
        return _run(kernel, ks, recorder, streams, on_progress, until, control)


def _run(kernel, ks, recorder, streams, on_progress, until, control):
    """:func:`run` (``control`` None) or :func:`run_adapting`, with JAX in float64."""
    kind = _leapfrog.declared(kernel)
    kp = _leapfrog._Parameters.of(kernel, kind)
    target = min(recorder.n_steps, recorder.n_steps if until is None else until)
    steps_done = recorder.steps_done.astype(np.int64)
    n, dim = ks.state.x.shape
    if not np.any(steps_done < target):
        return ks, control
    origin, p_start = initial_origin(ks, streams, steps_done < target, kp.jittered)
    direction = np.asarray(ks.direction, dtype=np.int8)
    inverse_mass = kind.metric.inverse_mass
    metric, m = metric_argument(inverse_mass, dim)
    refresh = "momentum" if kp.refresh else "none"
    lengths = "law" if kp.lengths is not None else ("own" if kp.jittered else "fixed")
    block = _block_function(potential_of(kernel), metric, refresh, lengths)
    # numpy arguments throughout: jit's dispatch converts them faster than jnp.asarray
    params = (np.int64(kp.rungs), np.float64(0.0 if kp.keep_coef is None else kp.keep_coef), m)
    ctl = control_argument(kp, control, BLOCK)
    # steps per call: whole sub-blocks of adaptation
    per_call = BLOCK if control is None else BLOCK // control.every * control.every
    ce = 3 * dim
    lengths0 = origin[:, ce + 3].astype(np.int64) if kp.jittered else np.full(n, kp.n_leapfrog)
    state = {"x0": origin[:, :dim], "p0": p_start, "g0": origin[:, 2 * dim : ce]}
    state.update(e0=origin[:, ce], lp0=origin[:, ce + 1], u=origin[:, ce + 2], n=lengths0)
    state["flips"] = np.zeros(n, dtype=np.int64)
    while np.any(steps_done < target):
        limit = np.minimum(target - steps_done, per_call)
        going_on = steps_done + limit < target
        noise, u_next, u_len = _draw_numbers(kp, streams, limit, going_on, dim, BLOCK)
        state, out, dual = block(state, params, (noise, u_next, u_len, limit), ctl)
        ctl["dual"] = dual
        record_block(recorder, out, steps_done, limit, kp.jittered or control is not None)
        steps_done = steps_done + limit
        if on_progress is not None:
            on_progress(recorder.completed())
    recorder.flush()
    final = final_state(state, direction, kp.jittered)
    return final, None if control is None else control_after(control, ctl["dual"])
