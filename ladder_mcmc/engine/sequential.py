"""Chains one after another in the compiled loop, and the measured rule that offers it.

A batched map call costs what its longest chain costs: with jittered trajectory lengths
every chain waits for the longest ``n`` of the batch, and a batched gradient can cost
more per chain than one chain's (XLA's batched Cholesky factorisations and triangular
solves on the CPU). :func:`run_sequential` then runs the chains one after another: in each
round every chain takes its next block of steps through the compiled block of
:mod:`ladder_mcmc.engine.jax_loop`, as a batch of one (compiled once, for one chain; no
chain idles while another finishes its step), the chains' calls spread over ``threads``
threads (on the CPU, its cores: each chain's call runs on one). The block's numbers are
drawn for every chain at once from the chains' own streams, as the batched loop draws
them, so each chain makes the batched run's transitions: the draws agree with it to
rounding, whatever the threads. Warm-up stays batched (its adaptation pools the chains).

:func:`probe` times the target's gradient inside a compiled loop, on the run's chains at
once and on one chain; :func:`chains_rule` predicts each arrangement's seconds per
gradient from the two timings, the refresh's law of trajectory lengths (a batched call
lasts the longest of its chains'), the loop's own cost per call and the threads, and
chooses. :func:`~ladder_mcmc.engine.backend.choose_backend` applies them before warm-up,
and again after it on the adapted kernel, and records the choice, its reason and the
timings in ``Trace.backend``.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from ladder_mcmc.engine import jax_loop
from ladder_mcmc.engine.block_draws import consumption
from ladder_mcmc.engine.jax_loop import _numbers, _record, call, prepare, to_numpy
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import Ladder, LadderState

if TYPE_CHECKING:
    from ladder_mcmc.engine.recording import StepRecorder

#: how the chains of a compiled run share the loop (``"auto"``: measured)
CHAINS = ("auto", "vectorized", "sequential")

#: chains run one after another only when that is predicted this many times faster. The
#: prediction leaves out the batched loop's ragged rungs, the host's work per block and a
#: loaded machine; on the suite's models it was off by up to this much
#: (`benchmarks/results/engine.md`, 10:15 block: arK predicted 1.3-1.4x, measured 0.96x)
MARGIN = 1.4

#: the compiled loop's own seconds per map call besides the gradients (its bookkeeping,
#: one chain or a few; the CPU's figure, 7–13 µs measured on a 2-core x86-64: engine.md,
#: 10:15 block)
LOOP_SECONDS = 1e-5

#: the probe's compiled loop runs about this many seconds per timing (best of a few)
PROBE_SECONDS = 5e-3
REPEATS = 3


def check_chains(chains: str) -> str:
    """``chains`` if it is one of :data:`CHAINS`, else ``ValueError`` naming it."""
    if chains not in CHAINS:
        raise ValueError(f"chains must be 'auto', 'vectorized' or 'sequential', got {chains!r}")
    return chains


def usable_threads(n_chains: int, asked: int | None = None) -> int:
    """The threads chains one after another run on: at most ``asked`` (None: the CPU's
    cores this process may use), at most the chains; 1 on an accelerator (one device)."""
    import jax

    if jax.default_backend() != "cpu":
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(n_chains, cores or 1, asked or cores or 1))


def batch_waste(
    length_law: tuple[np.ndarray, np.ndarray] | None, chains: int
) -> tuple[float, float]:
    """``(E[max of chains lengths] / E[length], E[length])`` for a law of gradient
    evaluations per map call (``None``: one length for all, ``(1, 1)``)."""
    if length_law is None:
        return 1.0, 1.0
    values, probs = (np.asarray(a, dtype=float) for a in length_law)
    order = np.argsort(values)
    values, probs = values[order], probs[order]
    below = np.concatenate([[0.0], np.cumsum(probs)[:-1]])  # P(n < value)
    most = float(np.sum(values * (np.minimum(below + probs, 1.0) ** chains - below**chains)))
    mean = float(np.sum(values * probs))
    return most / mean, mean


def chains_rule(
    batched: float,
    alone: float,
    *,
    chains: int,
    waste: float = 1.0,
    per_call: float = 1.0,
    threads: int = 1,
    loop: float = LOOP_SECONDS,
    margin: float = MARGIN,
) -> tuple[str, str]:
    """``(choice, reason)``: predicted seconds per gradient of each arrangement.

    ``batched``: the gradient's seconds per chain in a batch of ``chains``; ``alone``: one
    chain's. ``waste``: a batched call's gradients over the mean chain's
    (:func:`batch_waste`); ``per_call``: mean gradients per map call; ``loop``: the loop's
    own seconds per call; ``threads``: the threads chains one after another share.
    Batched, ``waste · batched + loop / (chains · per_call)``; one after another,
    ``(alone + loop / per_call) / t`` with ``t = chains / ⌈chains / threads⌉`` (a round
    lasts as many chains' blocks as the busiest thread runs); sequential when the first
    exceeds ``margin`` times the second.
    """
    vectorized = waste * batched + loop / (chains * per_call)
    sequential = (alone + loop / per_call) * math.ceil(chains / threads) / chains
    ratio = vectorized / sequential if sequential > 0 else math.inf
    said = (
        f"predicted {vectorized:.3g} s per gradient batched (the gradient {batched:.3g} s per "
        f"chain, calls {waste:.3g}× the mean chain's), {sequential:.3g} s one after another "
        f"(one chain's {alone:.3g} s, {threads} thread{'s' if threads > 1 else ''})"
    )
    if ratio > margin:
        return "sequential", f"{said}: {ratio:.3g}× faster, chains one after another"
    return "vectorized", f"{said}: {ratio:.3g}× (at most {margin}×), chains batched"


def gradient_function(target: Any) -> Callable[[Any], Any]:
    """The target's ``(energy, gradient)`` of positions (chains, dim) as the compiled loop
    evaluates it: a ``jax_potential`` differentiated and batched by JAX, else the target's
    ``energy_and_grad`` (or ``energy`` and ``grad``) on the JAX values."""
    import jax

    potential = getattr(target, "jax_potential", None)
    if potential is not None:
        return jax.vmap(jax.value_and_grad(potential))
    both = getattr(target, "energy_and_grad", None)
    if callable(both):
        return both
    return lambda x: (target.energy(x), target.grad(x))


_PROBED: dict[Any, tuple[Any, dict[str, float]]] = {}


def probe(target: Any, x: np.ndarray) -> dict[str, float]:
    """Seconds per chain of the target's energy and gradient on the positions ``x``
    (chains, dim) inside a compiled loop (no dispatch counted): all at once
    (``"vectorized"``), and each chain alone, one after another (``"sequential"``), the
    best of a few; and the probe's own seconds (``"probe"``, compilations included).
    Measured once per target, number of chains and dimension."""
    import jax

    try:
        key: Any = (hash(target), target, x.shape)
    except TypeError:  # an unhashable target: by identity (kept alive by the cache)
        key = (id(target), x.shape)
    found = _PROBED.get(key)
    if found is not None:
        return found[1]
    began = time.perf_counter()
    with jax.enable_x64(True):
        f = gradient_function(target)

        def each(x):  # every chain alone, one after another: a batch of one each
            e, g = jax.lax.map(lambda row: f(row[None]), x)
            return e.reshape(-1), g.reshape(x.shape)

        def loop(x, calls, gradient):
            def body(_, carry):
                x, total = carry
                e, g = gradient(x)  # moved by a negligible step: no call is hoisted
                return x - 1e-30 * g, total + e

            return jax.lax.fori_loop(0, calls, body, (x, jax.numpy.zeros(x.shape[0])))

        n = x.shape[0]
        batched = jax.numpy.asarray(x)
        timings = {
            "vectorized": _per_call(jax.jit(lambda x, c: loop(x, c, f)), batched) / n,
            "sequential": _per_call(jax.jit(lambda x, c: loop(x, c, each)), batched) / n,
        }
    timings["probe"] = time.perf_counter() - began
    _PROBED[key] = (target, timings)
    return timings


def _per_call(loop: Callable, x: Any) -> float:
    """Seconds per call of the probe's ``loop`` on ``x``: compiled, then timed over about
    :data:`PROBE_SECONDS` of calls, the best of :data:`REPEATS`."""
    import jax

    def timed(calls: int) -> float:
        start = time.perf_counter()
        jax.block_until_ready(loop(x, calls))
        return time.perf_counter() - start

    timed(1)  # compiles
    calls = max(1, int(PROBE_SECONDS / max(timed(4) / 4, 1e-8)))
    return min(timed(calls) for _ in range(REPEATS)) / calls


def run_sequential(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
    *,
    threads: int = 1,
) -> LadderState:
    """Advance every chain of ``ks`` until the recorder holds ``until`` steps per chain, a
    block of steps of one chain per compiled call, the calls of a round on ``threads``
    threads; the :class:`~ladder_mcmc.engine.contract.Driver` contract."""
    import jax

    stop = recorder.n_steps if until is None else min(until, recorder.n_steps)
    prepare(kernel, ks)
    n = int(ks.direction.shape[0])
    states: list[Any] = [batch.tree_map(lambda leaf, i=i: leaf[i : i + 1], ks) for i in range(n)]
    moved = False
    pool = ThreadPoolExecutor(threads) if threads > 1 else None  # one thread: this one
    with jax.enable_x64(True), pool or contextlib.nullcontext():
        per_step = consumption(kernel, states[0])
        done = recorder.steps_done.astype(np.int64)
        steps = np.clip(stop - done, 0, jax_loop.BLOCK)

        def block(i: int) -> tuple[Any, dict]:
            """Chain ``i``'s block, finished (on a worker thread: JAX's settings that hold
            per thread are not carried there, but float64 is switched on again)."""
            row = slice(i, i + 1)
            with jax.enable_x64(True):
                out = call(kernel, states[i], (uniforms[row], normals[row]), steps[row])
                return jax.block_until_ready(out)

        while steps.any():
            uniforms, normals = _numbers(streams, steps, per_step)
            chains = np.flatnonzero(steps)
            calls = {}
            if not moved and pool is not None:  # the first call compiles here, alone
                states[chains[0]], calls[chains[0]] = block(chains[0])
                chains = chains[1:]
            done_here = map(block, chains) if pool is None else pool.map(block, chains)
            for i, (state, outputs) in zip(chains, done_here, strict=True):
                states[i], calls[i] = state, outputs
            outputs = _gathered(jax.device_get(calls), n)
            _record(recorder, outputs, steps, done)
            moved = True
            done = done + steps
            steps = np.clip(stop - done, 0, jax_loop.BLOCK)
            if on_progress is not None:
                on_progress(recorder.completed())
    if not moved:
        return ks
    return batch.tree_map(lambda *leaves: np.concatenate(leaves), *map(to_numpy, states))


def _gathered(calls: dict[int, dict], n: int) -> dict:
    """One block's outputs of every chain (chains, width, …) from each chain's call (a
    chain without steps gets zeros, which :func:`_record` does not read)."""
    import jax

    blank = jax.tree.map(np.zeros_like, next(iter(calls.values())))
    rows = [calls.get(i, blank) for i in range(n)]
    return jax.tree.map(lambda *leaves: np.concatenate(leaves), *rows)


__all__ = [
    "CHAINS",
    "LOOP_SECONDS",
    "MARGIN",
    "batch_waste",
    "chains_rule",
    "check_chains",
    "gradient_function",
    "probe",
    "run_sequential",
    "usable_threads",
]
