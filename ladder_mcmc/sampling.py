"""``sample`` and ``resume``: run a ladder kernel on a batch of chains, collect a :class:`Trace`."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Literal

import attrs
import numpy as np

from ladder_mcmc import batch, checkpoint
from ladder_mcmc.adaptation import WarmupResult, with_hmc_parameters
from ladder_mcmc.adaptation import warmup as run_warmup
from ladder_mcmc.ladder import Ladder, LadderState
from ladder_mcmc.metrics import Metric
from ladder_mcmc.progress import Progress
from ladder_mcmc.ragged import run_ragged
from ladder_mcmc.trace import Recorder, Trace, memmap_allocator
from ladder_mcmc.validation import positive_int

Schedule = Literal["ragged", "synchronous"]


def run_synchronous(
    kernel: Ladder,
    ks: LadderState,
    recorder: Recorder,
    rng: np.random.Generator,
    on_progress=None,
    until: int | None = None,
) -> LadderState:
    """Step every chain together with :meth:`Ladder.step` until step ``until``."""
    stop = recorder.n_steps if until is None else until
    for t in range(recorder.completed(), stop):
        ks, info = kernel.step(ks, rng)
        recorder.record_row(t, kernel.map.draw(ks.state), info.rung, info.n_moves, info.non_finite)
        if on_progress is not None:
            on_progress(t + 1)
    return ks


DRIVERS = {"ragged": run_ragged, "synchronous": run_synchronous}


@attrs.define
class _Run:
    """Everything a run needs to go on: what a checkpoint stores."""

    kernel: Ladder
    user_kernel: dict  # description of the kernel as the user passed it (before warm-up)
    ks: LadderState
    recorder: Recorder
    rng: np.random.Generator
    schedule: str
    block: int
    warm: WarmupResult | None
    checkpoint: Path | None
    wall_time: float = 0.0


def _check_checkpoint_target(path: Path) -> None:
    """Refuse, before any sampling, a checkpoint path that would overwrite a file or fail."""
    if path.exists():
        raise ValueError(
            f"checkpoint {str(path)!r} already exists: continue it with "
            "ladder_mcmc.resume(path, kernel), or remove it first"
        )
    if not path.parent.is_dir():
        raise ValueError(f"checkpoint folder {str(path.parent)!r} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise ValueError(f"checkpoint folder {str(path.parent)!r} is not writable")


def _save(run: _Run) -> None:
    rec = run.recorder
    done = rec.completed()
    kept = done // rec.thin
    draws = None if rec.draws is None else batch.tree_map(lambda a: a[:kept], rec.draws)
    meta = {
        "kernel": run.user_kernel,
        "schedule": run.schedule,
        "block": run.block,
        "n_steps": rec.n_steps,
        "thin": rec.thin,
        "completed": done,
        "generator": checkpoint.generator_state(run.rng),
        "wall_time": run.wall_time,
    }
    trees = {
        "ks": run.ks,
        "draws": draws,
        "rungs": rec.rungs[:done],
        "n_moves": rec.n_moves[:done],
        "non_finite": rec.non_finite[:done],
        "warmup": run.warm,
    }
    checkpoint.save(run.checkpoint, meta, trees)


def _check_draws_file(path: str | os.PathLike, executor: Executor | None) -> Path:
    """Refuse, before sampling, a draws file that exists or cannot be written."""
    path = Path(path)
    if executor is not None:
        raise ValueError("draws_file cannot be combined with executor")
    if path.exists():
        raise ValueError(f"draws_file {str(path)!r} already exists; remove it or choose another")
    if not path.parent.is_dir():
        raise ValueError(f"draws_file folder {str(path.parent)!r} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise ValueError(f"draws_file folder {str(path.parent)!r} is not writable")
    return path


def _execute(run: _Run, progress: bool) -> Trace:
    """Run blocks until the recorder is full; checkpoint after each block."""
    rec = run.recorder
    driver = DRIVERS[run.schedule]
    bar = Progress(rec.n_steps, enabled=progress)
    bar.update(rec.completed())
    interrupted = False
    final: LadderState | None = None
    start = time.perf_counter()
    try:
        while rec.completed() < rec.n_steps:
            until = min(rec.n_steps, (rec.completed() // run.block + 1) * run.block)
            run.ks = driver(run.kernel, run.ks, rec, run.rng, bar.update, until=until)
            if run.checkpoint is not None:
                run.wall_time += time.perf_counter() - start
                start = time.perf_counter()
                _save(run)
        final = run.ks
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    run.wall_time += time.perf_counter() - start
    done = rec.completed()
    kept = done // rec.thin
    draws = rec.draws
    if draws is not None and kept < rec.n_kept:
        draws = batch.tree_map(lambda leaf: leaf[:kept], draws)
    return Trace(
        states=draws,
        rungs=rec.rungs[:done],
        n_moves=rec.n_moves[:done],
        non_finite_rungs=rec.non_finite[:done],
        cost=run.kernel.map.cost,
        max_rung=run.kernel.max_rung,
        thin=rec.thin,
        final=final,
        interrupted=interrupted,
        wall_time=run.wall_time,
        kernel=run.kernel.describe(),
        warmup=run.warm,
    )


def _json_roundtrip(description: dict) -> dict:
    return json.loads(json.dumps(description))


def sample(
    kernel: Ladder,
    init: Any,
    n_steps: int,
    seed: int | np.random.SeedSequence | np.random.Generator | None = None,
    *,
    schedule: Schedule = "ragged",
    thin: int = 1,
    draws_file: str | os.PathLike | None = None,
    progress: bool = False,
    warmup: int = 0,
    target_prob: float = 0.8,
    adapt_mass: bool = True,
    dense_mass: bool = False,
    trajectory_length: float | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
    executor: Executor | None = None,
    n_groups: int | None = None,
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
        Seeds the numpy Generator that drives everything: the same seed (and
        the same ``schedule`` and ``checkpoint_every``) gives a bit-identical trace.
    schedule : {"ragged", "synchronous"}
        ``"ragged"`` (default): every map call advances every chain by one rung
        (``ladder_mcmc.ragged``). ``"synchronous"``: all chains step together
        (the reference; same chain in law, different random stream).
    thin : int
        Keep the draw of every ``thin``-th step (statistics keep every step).
    draws_file : path, optional
        Stream the draws to this ``.npy`` file (memory-mapped; must not exist)
        instead of holding them in memory: ``trace.states`` is then a
        ``numpy.memmap`` on it, and the pages of finished rows are released as
        the run goes, so resident memory stays bounded at any length
        (``docs/performance.md``). Per-step statistics stay in memory.
        Draws with several leaves (attrs states) go to ``<stem>.<i>.npy``.
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
    target_prob, adapt_mass, dense_mass, trajectory_length
        See ``warmup`` and :func:`ladder_mcmc.adaptation.warmup` (``trajectory_length``:
        adapt the leapfrog steps per rung to ``round(T / ε)``; ``π/2`` is a good
        choice in the adapted metric).
    checkpoint : path, optional
        Write the run's full state (draws so far, kernel state, generator
        state) to this ``.npz`` file every ``checkpoint_every`` steps,
        atomically; continue it with :func:`resume`. The file must not exist.
    checkpoint_every : int, optional
        Steps between checkpoints (default: ``n_steps // 10``). The ragged
        driver lets every chain reach each checkpoint step before going on, so
        this value is part of what makes a run reproducible.
    executor : concurrent.futures.Executor, optional
        Split the chains into ``n_groups`` groups run through the executor (a
        process pool; Dask's ``Client.get_executor()``), seeded by
        ``SeedSequence(seed).spawn(n_groups)`` (``ladder_mcmc.parallel``).
    n_groups : int, optional
        Groups of chains for ``executor`` (default: 2).

    Returns
    -------
    Trace
        If interrupted by Ctrl-C (``KeyboardInterrupt``, also from inside the
        target), the steps completed by every chain so far, with
        ``trace.interrupted = True``.

    Raises
    ------
    ValueError
        On invalid ``n_steps``, ``thin``, ``schedule``, ``init`` or
        ``checkpoint`` (an existing file is never overwritten), before sampling.
    """
    n_steps = positive_int("n_steps", n_steps)
    thin = positive_int("thin", thin)
    if schedule not in DRIVERS:
        raise ValueError(f"schedule must be 'ragged' or 'synchronous', got {schedule!r}")
    if not isinstance(kernel, Ladder):
        raise ValueError(f"kernel must be a Ladder kernel, got {type(kernel).__name__}")
    if warmup != 0:
        positive_int("warmup", warmup)
    if draws_file is not None:
        draws_file = _check_draws_file(draws_file, executor)
    if executor is not None:
        if checkpoint is not None:
            raise ValueError("checkpoint cannot be combined with executor")
        from ladder_mcmc.parallel import sample_on_executor

        return sample_on_executor(
            executor,
            kernel,
            init,
            n_steps,
            seed,
            n_groups if n_groups is not None else 2,
            schedule=schedule,
            thin=thin,
            warmup=warmup,
            target_prob=target_prob,
            adapt_mass=adapt_mass,
            dense_mass=dense_mass,
            trajectory_length=trajectory_length,
        )
    path = None
    block = n_steps
    if checkpoint is not None:
        path = Path(checkpoint)
        _check_checkpoint_target(path)
        every = checkpoint_every if checkpoint_every is not None else max(1, n_steps // 10)
        block = positive_int("checkpoint_every", every)
    elif checkpoint_every is not None:
        block = positive_int("checkpoint_every", checkpoint_every)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    user_kernel = _json_roundtrip(kernel.describe())
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
            trajectory_length=trajectory_length,
            progress=progress,
        )
    allocate = None if draws_file is None else memmap_allocator(draws_file)
    recorder = Recorder(n_steps, len(ks.direction), thin, allocate)
    run = _Run(kernel, user_kernel, ks, recorder, rng, schedule, block, warm, path)
    return _execute(run, progress)


def resume(
    path: str | os.PathLike,
    kernel: Ladder,
    n_steps: int | None = None,
    *,
    progress: bool = False,
) -> Trace:
    """Continue a checkpointed run; return the whole trace, first step included.

    Parameters
    ----------
    path : path
        A checkpoint written by ``sample(..., checkpoint=path)``; it is updated
        as the run goes on.
    kernel : Ladder
        The kernel the run was started with (the checkpoint holds data, not
        code, so your target comes from here). Refused unless its description
        equals the checkpoint's. Warm-up adaptation stored in the checkpoint
        is re-applied.
    n_steps : int, optional
        Steps to add after the checkpoint's last completed step. By default,
        finish the original run. Either way the result is bit-identical to an
        uninterrupted run with the same seed, schedule and ``checkpoint_every``
        (for ``n_steps``: one whose length is the new total, provided the
        checkpoint was at a multiple of ``checkpoint_every``).
    progress : bool
        Progress bar on stderr.

    Raises
    ------
    ValueError
        If the file is missing, corrupt, of another format version, or from
        another kernel.
    """
    path = Path(path)
    meta, trees = checkpoint.load(path)
    if not isinstance(kernel, Ladder):
        raise ValueError(f"kernel must be a Ladder kernel, got {type(kernel).__name__}")
    if _json_roundtrip(kernel.describe()) != meta["kernel"]:
        raise ValueError(
            f"checkpoint {str(path)!r} was written by another kernel:\n"
            f"  stored: {meta['kernel']}\n  given:  {_json_roundtrip(kernel.describe())}"
        )
    warm = trees["warmup"]
    if warm is not None:
        inv = warm.inverse_mass
        warm = attrs.evolve(
            warm,
            step_size=float(warm.step_size),
            n_steps=int(warm.n_steps),
            first_stage_prob=float(warm.first_stage_prob),
            n_leapfrog=int(warm.n_leapfrog),
        )
        kernel = with_hmc_parameters(
            kernel,
            step_size=warm.step_size,
            metric=Metric(inv) if inv is not None else None,
            n_steps=int(warm.n_leapfrog),
        )
    done = int(meta["completed"])
    total = int(meta["n_steps"]) if n_steps is None else done + positive_int("n_steps", n_steps)
    ks: LadderState = trees["ks"]
    n_chains = len(ks.direction)
    recorder = Recorder(total, n_chains, int(meta["thin"]))
    recorder.rungs[:done] = trees["rungs"]
    recorder.n_moves[:done] = trees["n_moves"]
    recorder.non_finite[:done] = trees["non_finite"]
    recorder.steps_done[:] = done
    if trees["draws"] is not None:
        kept = done // recorder.thin

        def grow(old: np.ndarray) -> np.ndarray:
            new = np.empty((recorder.n_kept,) + old.shape[1:], dtype=old.dtype)
            new[:kept] = old
            return new

        recorder.draws = batch.tree_map(grow, trees["draws"])
    run = _Run(
        kernel,
        meta["kernel"],
        ks,
        recorder,
        checkpoint.restore_generator(meta["generator"]),
        meta["schedule"],
        int(meta["block"]),
        warm,
        path,
        float(meta["wall_time"]),
    )
    return _execute(run, progress)
