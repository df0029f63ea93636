"""Chains one after another in the compiled loop, and the measured rule that offers it.

A batched gradient can cost more per chain than one chain's (XLA's batched Cholesky
factorisations and triangular solves on the CPU). :func:`run_sequential` then runs the
chains one after another: in each round every chain takes its next block of steps
through the compiled block of :mod:`ladder_mcmc.engine.jax_loop`, as a batch of one
(compiled once, for one chain; no chain idles while another finishes its step). The
block's numbers are drawn for every chain at once from the chains' own streams, as the
batched loop draws them, so each chain makes the batched run's transitions: the draws
agree with it to rounding. Warm-up stays batched.

:func:`probe` times the target's gradient, as the compiled loop calls it, on the run's
chains at once and on one chain; :func:`chains_rule` chooses from the two timings
(``"sequential"`` when the batched call costs more than :data:`MARGIN` times one chain's,
per chain). :func:`~ladder_mcmc.engine.backend.choose_backend` applies them and records
the choice, its reason and the timings in ``Trace.backend``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
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

#: chains run one after another when the batched gradient costs more than this many
#: times one chain's, per chain: the probe times the gradient alone, while chains run one
#: after another also pay the loop's own work once per chain instead of once per batch,
#: and a loaded machine blurs a small difference, so only a clear win switches
MARGIN = 2.0

#: the probe times each call this many times at most (the fastest counts), and stops
#: repeating after :data:`PROBE_BUDGET` seconds (at least one call each)
REPEATS = 7
PROBE_BUDGET = 0.5


def check_chains(chains: str) -> str:
    """``chains`` if it is one of :data:`CHAINS`, else ``ValueError`` naming it."""
    if chains not in CHAINS:
        raise ValueError(f"chains must be 'auto', 'vectorized' or 'sequential', got {chains!r}")
    return chains


def chains_rule(vectorized: float, sequential: float, margin: float = MARGIN) -> tuple[str, str]:
    """``(choice, reason)`` from the gradient's seconds per chain batched (``vectorized``)
    and for one chain alone (``sequential``): sequential when the first exceeds
    ``margin`` times the second."""
    ratio = vectorized / sequential if sequential > 0 else math.inf
    timings = f"{vectorized:.3g} s per chain batched, {sequential:.3g} s for one chain"
    if ratio > margin:
        return "sequential", (
            f"the batched gradient costs {ratio:.3g}× one chain's per chain ({timings}; "
            f"more than {margin}×): chains one after another"
        )
    return "vectorized", (
        f"the batched gradient costs {ratio:.3g}× one chain's per chain ({timings}; "
        f"at most {margin}×): chains batched"
    )


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
    """Seconds per chain of the target's gradient on the positions ``x`` (chains, dim): all
    at once (``"vectorized"``), and each chain alone, averaged (``"sequential"``); each
    call compiled first and the fastest of a few; and the probe's own seconds
    (``"probe"``, compilations included). Measured once per target, number of chains and
    dimension."""
    import jax

    try:
        key: Any = (hash(target), target, x.shape)
    except TypeError:  # an unhashable target: by identity (kept alive by the cache)
        key = (id(target), x.shape)
    found = _PROBED.get(key)
    if found is not None:
        return found[1]
    began = time.perf_counter()
    n = x.shape[0]
    with jax.enable_x64(True):
        f = jax.jit(gradient_function(target))
        batched = jax.numpy.asarray(x)
        alone = [batched[i : i + 1] for i in range(n)]
        for arg in (batched, alone[0]):  # compile both
            jax.block_until_ready(f(arg))
        best = [math.inf] * (n + 1)  # the batch, then each chain alone: fastest of a few
        for repeat in range(REPEATS):
            if repeat and time.perf_counter() - began > PROBE_BUDGET:
                break
            for i, arg in enumerate([batched, *alone]):
                start = time.perf_counter()
                jax.block_until_ready(f(arg))
                best[i] = min(best[i], time.perf_counter() - start)
    timings = {
        "vectorized": best[0] / n,
        "sequential": sum(best[1:]) / n,
        "probe": time.perf_counter() - began,
    }
    _PROBED[key] = (target, timings)
    return timings


def run_sequential(
    kernel: Ladder,
    ks: LadderState,
    recorder: StepRecorder,
    streams: ChainStreams,
    on_progress: Callable[[int], None] | None = None,
    until: int | None = None,
) -> LadderState:
    """Advance every chain of ``ks`` until the recorder holds ``until`` steps per chain, a
    block of steps of one chain per compiled call; the
    :class:`~ladder_mcmc.engine.contract.Driver` contract."""
    import jax

    stop = recorder.n_steps if until is None else min(until, recorder.n_steps)
    prepare(kernel, ks)
    n = int(ks.direction.shape[0])
    states: list[Any] = [batch.tree_map(lambda leaf, i=i: leaf[i : i + 1], ks) for i in range(n)]
    moved = False
    with jax.enable_x64(True):
        per_step = consumption(kernel, states[0])
        done = recorder.steps_done.astype(np.int64)
        steps = np.clip(stop - done, 0, jax_loop.BLOCK)
        while steps.any():
            uniforms, normals = _numbers(streams, steps, per_step)
            calls = {}
            for i in np.flatnonzero(steps):  # dispatched one after another, then read
                row = slice(i, i + 1)
                numbers = (uniforms[row], normals[row])
                states[i], calls[i] = call(kernel, states[i], numbers, steps[row])
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
    "MARGIN",
    "chains_rule",
    "check_chains",
    "gradient_function",
    "probe",
    "run_sequential",
]
