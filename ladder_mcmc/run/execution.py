"""A run in progress: what it holds, how its blocks are executed and checkpointed, and
the trace it makes.

:func:`~ladder_mcmc.run.sampling.sample` and :func:`~ladder_mcmc.run.resume.resume` both
build a :class:`Run` — the kernel, the chains' state, the
:class:`~ladder_mcmc.run.recorder.Recorder`, the random streams, the schedule and
backend — and hand it to :func:`execute`, which runs blocks of steps with the driver
:func:`~ladder_mcmc.engine.contract.driver_for` picks, writes a checkpoint after each
(:mod:`ladder_mcmc.run.checkpoint`), and returns the :class:`~ladder_mcmc.run.trace.Trace`
of what every chain completed, also when interrupted.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.engine.backend import Backend, choose_backend
from ladder_mcmc.engine.contract import driver_for
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import Ladder, LadderState
from ladder_mcmc.models.parameters import parameters_of
from ladder_mcmc.run import checkpoint
from ladder_mcmc.run.draws_files import check_writable_folder
from ladder_mcmc.run.progress import Progress
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.run.trace import Trace


@attrs.define
class Run:
    """Everything a run needs to go on: what a checkpoint stores."""

    kernel: Ladder
    user_kernel: dict  # description of the kernel as the user passed it (before warm-up)
    ks: LadderState
    recorder: Recorder
    streams: ChainStreams
    schedule: str
    backend: Backend
    block: int
    warm: Any
    checkpoint: Path | None
    wall_time: float = 0.0
    draws_file: Path | None = None  # where the draws are streamed (sample(draws_file=...))


def check_checkpoint_target(path: Path) -> None:
    """Refuse, before any sampling, a checkpoint path that would overwrite a file or fail."""
    if path.exists():
        raise ValueError(
            f"checkpoint {str(path)!r} already exists: continue it with "
            "ladder_mcmc.resume(path, kernel), or remove it first"
        )
    check_writable_folder("checkpoint", path)


def save(run: Run) -> None:
    rec = run.recorder
    done = rec.completed()
    kept = done // rec.thin
    draws_file = None
    if run.draws_file is None:
        draws = None if rec.draws is None else batch.tree_map(lambda a: a[:kept], rec.draws)
    else:
        # the draws stay in their file: write its rows to disk first (so the file
        # holds every row this checkpoint counts), then store only its path and
        # the last kept row (template of the structure, shape and dtype; fingerprint)
        draws = None
        if rec.draws is not None:
            for leaf in batch.leaves(rec.draws):
                if isinstance(leaf, np.memmap):
                    leaf.flush()
            draws = batch.tree_map(lambda a: np.array(a[max(kept - 1, 0) : kept]), rec.draws)
        absolute = run.draws_file.resolve()
        try:
            relative = os.path.relpath(absolute, run.checkpoint.resolve().parent)
        except ValueError:  # another drive (Windows)
            relative = None
        draws_file = {
            "path": str(absolute),
            "relative": relative,
            "leaves": 0 if rec.draws is None else len(batch.leaves(rec.draws)),
        }
    streams_meta, streams_arrays = run.streams.state()
    meta = {
        "kernel": run.user_kernel,
        "schedule": run.schedule,
        "backend": run.backend.name if run.backend.reason.startswith("asked") else None,
        "chains": run.backend.chains if run.backend.name == "jax" else None,
        "block": run.block,
        "n_steps": rec.n_steps,
        "thin": rec.thin,
        "completed": done,
        "streams": streams_meta,
        "wall_time": run.wall_time,
        "draws_file": draws_file,
    }
    trees = {
        "ks": run.ks,
        "draws": draws,
        "rungs": rec.rungs[:done],
        "n_moves": rec.n_moves[:done],
        "non_finite": rec.non_finite[:done],
        "step_cost": None if rec.step_cost is None else rec.step_cost[:done],
        "step_overhead": None if rec.step_overhead is None else rec.step_overhead[:done],
        **{f"stat_{name}": values[:done] for name, values in rec.step_stats.items()},
        "warmup": run.warm,
        **{f"streams_{name}": array for name, array in streams_arrays.items()},
    }
    checkpoint.save(run.checkpoint, meta, trees)


def execute(run: Run, progress: bool) -> Trace:
    """Run blocks until the recorder is full; checkpoint after each block."""
    rec = run.recorder
    driver = driver_for(
        run.kernel, run.schedule, run.backend.name, run.backend.chains, run.backend.threads
    )
    bar = Progress(rec.n_steps, enabled=progress)
    bar.update(rec.completed())
    interrupted = False
    final: LadderState | None = None
    start = time.perf_counter()
    try:
        while rec.completed() < rec.n_steps:
            until = min(rec.n_steps, (rec.completed() // run.block + 1) * run.block)
            run.ks = driver(run.kernel, run.ks, rec, run.streams, bar.update, until=until)
            if run.checkpoint is not None:
                run.wall_time += time.perf_counter() - start
                start = time.perf_counter()
                save(run)
        final = run.ks
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    run.wall_time += time.perf_counter() - start
    return trace_of(run, final, interrupted)


def trace_of(run: Run, final: LadderState | None, interrupted: bool) -> Trace:
    """The trace of the steps every chain has completed so far."""
    rec = run.recorder
    done = rec.completed()
    kept = done // rec.thin
    draws = rec.draws
    if draws is not None and kept < rec.n_kept:
        draws = batch.tree_map(lambda leaf: leaf[:kept], draws)
    if draws is None:  # no draw kept (interrupted early): empty, with the draws' shape
        draws = batch.tree_map(
            lambda leaf: np.empty((0,) + np.shape(leaf), np.asarray(leaf).dtype),
            run.kernel.map.draw(run.ks.state),
        )
    return Trace(
        states=draws,
        rungs=rec.rungs[:done],
        n_moves=rec.n_moves[:done],
        non_finite_rungs=rec.non_finite[:done],
        step_cost=None if rec.step_cost is None else rec.step_cost[:done],
        step_overhead=None if rec.step_overhead is None else rec.step_overhead[:done],
        cost=run.kernel.map.cost,
        max_rung=run.kernel.max_rung,
        thin=rec.thin,
        final=final,
        interrupted=interrupted,
        wall_time=run.wall_time,
        kernel=run.kernel.describe(),
        warmup=run.warm,
        backend=run.backend.describe(),
        step_stats={name: values[:done] for name, values in rec.step_stats.items()},
        parameters=parameters_of(target_of(run.kernel.map)),
    )


def initial_state(kernel: Ladder, init: Any, rng: Any) -> LadderState:
    """The kernel state of the initial values; a kernel state (``trace.final``) is prepared
    again by this kernel's map, keeping its directions and the rule's carry, so that
    nothing cached by another kernel (an energy, a gradient, a log density of another
    target) is reused, and a state of another shape is refused."""
    if not isinstance(init, LadderState):
        return kernel.init(init, rng)
    ks = kernel.init(init.state, rng, direction=init.direction)
    return ks if init.carry is None else attrs.evolve(ks, carry=init.carry)


def target_of(map_: Any) -> Any:
    """The target of a map (``map.target``), or of the family of an auxiliary-law map
    (``map.family.target``); None for a map without one."""
    target = getattr(map_, "target", None)
    if target is None:
        target = getattr(getattr(map_, "family", None), "target", None)
    return target


def json_roundtrip(description: dict) -> dict:
    return json.loads(json.dumps(description))


def backend_for(
    kernel: Ladder,
    ks: LadderState,
    schedule: str,
    asked: str | None,
    chains: str = "vectorized",
    threads: int | None = None,
) -> Backend:
    """What runs the steps: the synchronous schedule on numpy (the reference
    ``Ladder.step``), the ragged one on the backend
    :func:`~ladder_mcmc.engine.backend.choose_backend` picks (``asked`` and ``chains``:
    the user's)."""
    if schedule != "synchronous":
        return choose_backend(kernel, ks, asked, chains, threads)
    if chains == "sequential":
        raise ValueError("chains='sequential': schedule='synchronous' runs on numpy only")
    if asked not in (None, "numpy"):
        raise ValueError(
            f"backend={asked!r}: schedule='synchronous' runs on numpy only (the "
            "reference Ladder.step)"
        )
    return Backend("numpy", "the synchronous schedule (Ladder.step) runs on numpy")


__all__ = [
    "Run",
    "backend_for",
    "check_checkpoint_target",
    "execute",
    "initial_state",
    "json_roundtrip",
    "save",
    "target_of",
    "trace_of",
]
