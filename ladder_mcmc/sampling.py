"""``sample``: run a ladder kernel on a batch of chains and collect a :class:`Trace`."""

from __future__ import annotations

import time
from typing import Any, Literal

import numpy as np

from ladder_mcmc import batch
from ladder_mcmc.adaptation import warmup as run_warmup
from ladder_mcmc.ladder import Ladder, LadderState
from ladder_mcmc.progress import Progress
from ladder_mcmc.ragged import run_ragged
from ladder_mcmc.trace import Recorder, Trace
from ladder_mcmc.validation import positive_int

Schedule = Literal["ragged", "synchronous"]


def run_synchronous(kernel: Ladder, ks: LadderState, recorder: Recorder, rng, on_progress=None):
    """Step every chain together with :meth:`Ladder.step` until ``n_steps``."""
    chains = np.arange(recorder.n_chains)
    for t in range(recorder.completed(), recorder.n_steps):
        ks, info = kernel.step(ks, rng)
        recorder.record(
            chains,
            np.full(recorder.n_chains, t),
            kernel.map.draw(ks.state),
            info.rung,
            info.n_moves,
            info.non_finite,
        )
        if on_progress is not None:
            on_progress(t + 1)
    return ks


def sample(
    kernel: Ladder,
    init: Any,
    n_steps: int,
    seed: int | np.random.SeedSequence | np.random.Generator | None = None,
    *,
    schedule: Schedule = "ragged",
    thin: int = 1,
    progress: bool = False,
    warmup: int = 0,
    target_prob: float = 0.8,
    adapt_mass: bool = True,
    dense_mass: bool = False,
) -> Trace:
    """Run ``kernel`` for ``n_steps`` steps on every chain.

    Parameters
    ----------
    kernel : Ladder
        E.g. from :func:`~ladder_mcmc.lahmc`, :func:`~ladder_mcmc.hmc` or
        :func:`~ladder_mcmc.LookAhead`.
    init : State or LadderState
        Initial values, chains on the leading axis (for leapfrog kernels:
        positions of shape (chains, dim)); or a kernel state to continue from
        (e.g. ``trace.final``).
    n_steps : int
        Steps per chain (each step = one ladder transition + refresh).
    seed : int, SeedSequence or Generator, optional
        Seeds the numpy Generator that drives everything: the same seed gives a
        bit-identical trace.
    schedule : {"ragged", "synchronous"}
        ``"ragged"`` (default): every map call advances every chain by one rung
        (``ladder_mcmc.ragged``). ``"synchronous"``: all chains step together
        (the reference; same chain in law, different random stream).
    thin : int
        Keep the draw of every ``thin``-th step (statistics keep every step).
    progress : bool
        Show a progress bar on stderr.
    warmup : int
        Warm-up steps before sampling (HMC-family kernels): the step size is
        adapted by dual averaging towards ``target_prob``, the probability of
        taking the first rung, and (``adapt_mass``) a diagonal — or
        ``dense_mass`` — inverse mass matrix from windowed variance estimates,
        as in Stan (``ladder_mcmc.adaptation``). Warm-up draws are dropped;
        ``trace.warmup`` holds the adapted values and the warm-up's gradient
        evaluations; ``trace.grad_evals`` counts the sampling phase only.
    target_prob, adapt_mass, dense_mass
        See ``warmup``.

    Returns
    -------
    Trace
        If interrupted by Ctrl-C (``KeyboardInterrupt``, also from inside the
        target), the steps completed by every chain so far, with
        ``trace.interrupted = True``.

    Raises
    ------
    ValueError
        On invalid ``n_steps``, ``thin``, ``schedule`` or ``init``.
    """
    n_steps = positive_int("n_steps", n_steps)
    thin = positive_int("thin", thin)
    if schedule not in ("ragged", "synchronous"):
        raise ValueError(f"schedule must be 'ragged' or 'synchronous', got {schedule!r}")
    if not isinstance(kernel, Ladder):
        raise ValueError(f"kernel must be a Ladder kernel, got {type(kernel).__name__}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    ks = init if isinstance(init, LadderState) else kernel.init(init, rng)
    warm = None
    if warmup:
        kernel, ks, warm = run_warmup(
            kernel,
            ks,
            warmup,
            rng,
            target_prob=target_prob,
            adapt_mass=adapt_mass,
            dense=dense_mass,
            progress=progress,
        )
    recorder = Recorder(n_steps, len(ks.direction), thin)
    bar = Progress(n_steps, enabled=progress)
    start = time.perf_counter()
    interrupted = False
    final = None
    driver = run_ragged if schedule == "ragged" else run_synchronous
    try:
        final = driver(kernel, ks, recorder, rng, bar.update)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    wall = time.perf_counter() - start
    done = recorder.completed()
    kept = done // thin
    draws = recorder.draws
    if draws is not None and kept < recorder.n_kept:
        draws = batch.tree_map(lambda leaf: leaf[:kept], draws)
    return Trace(
        states=draws,
        rungs=recorder.rungs[:done],
        n_moves=recorder.n_moves[:done],
        non_finite_rungs=recorder.non_finite[:done],
        cost=kernel.map.cost,
        max_rung=kernel.max_rung,
        thin=thin,
        final=final,
        interrupted=interrupted,
        wall_time=wall,
        kernel=kernel.describe(),
        warmup=warm,
    )
