"""``sample``: run a ladder kernel on a batch of chains, collect a :class:`Trace`.

A run is set up here — the chains' random streams (:mod:`ladder_mcmc.engine.streams`),
the kernel state, an optional warm-up (:mod:`ladder_mcmc.hamiltonian.warmup.adaptation`), the
:class:`~ladder_mcmc.run.recorder.Recorder` — and executed in blocks by the driver
that :func:`~ladder_mcmc.engine.contract.driver_for` picks for the kernel and the
schedule, with a checkpoint after each block (:mod:`ladder_mcmc.run.checkpoint`;
:func:`~ladder_mcmc.run.resume.resume` continues one). Before sampling the target's
gradient is checked, after it the trace (:mod:`ladder_mcmc.diagnostics.checks`).
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.diagnostics.checks import check_trace
from ladder_mcmc.diagnostics.gradient import check_kernel_gradient
from ladder_mcmc.engine.backend import Backend, choose_backend
from ladder_mcmc.engine.contract import SCHEDULES, Schedule, driver_for
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.engine.warmup import Warmup, adaptation_for, run_warmup
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import Ladder, LadderState
from ladder_mcmc.models.parameters import parameters_of
from ladder_mcmc.run import checkpoint
from ladder_mcmc.run.checkpoint import fingerprint as kernel_fingerprint
from ladder_mcmc.run.draws_files import check_draws_file, check_writable_folder, memmap_allocator
from ladder_mcmc.run.progress import Progress, interactive
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.run.trace import Trace
from ladder_mcmc.validation import boolean, positive_int


@attrs.define
class _Run:
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


def _check_checkpoint_target(path: Path) -> None:
    """Refuse, before any sampling, a checkpoint path that would overwrite a file or fail."""
    if path.exists():
        raise ValueError(
            f"checkpoint {str(path)!r} already exists: continue it with "
            "ladder_mcmc.resume(path, kernel), or remove it first"
        )
    check_writable_folder("checkpoint", path)


def _save(run: _Run) -> None:
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


def _execute(run: _Run, progress: bool) -> Trace:
    """Run blocks until the recorder is full; checkpoint after each block."""
    rec = run.recorder
    driver = driver_for(run.kernel, run.schedule, run.backend.name)
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
                _save(run)
        final = run.ks
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    run.wall_time += time.perf_counter() - start
    return _trace(run, final, interrupted)


def _trace(run: _Run, final: LadderState | None, interrupted: bool) -> Trace:
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


def _initial_state(kernel: Ladder, init: Any, rng: Any) -> LadderState:
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


def _json_roundtrip(description: dict) -> dict:
    return json.loads(json.dumps(description))


def sample(
    kernel: Ladder,
    init: Any,
    n_steps: int,
    seed: int | np.random.SeedSequence | np.random.Generator | ChainStreams | None = None,
    *,
    schedule: Schedule = "ragged",
    backend: str | None = None,
    thin: int = 1,
    draws_file: str | os.PathLike | None = None,
    progress: bool | None = None,
    warmup: int | None = None,
    target_prob: float = 0.8,
    adapt_mass: bool = True,
    dense_mass: bool = False,
    trajectory_length: float | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
    executor: Executor | None = None,
    n_groups: int | None = None,
    checks: bool = True,
) -> Trace:
    """Run ``kernel`` for ``n_steps`` steps on every chain.

    Parameters
    ----------
    kernel : Ladder
        E.g. from :func:`~ladder_mcmc.lahmc`, :func:`~ladder_mcmc.hamiltonian.leapfrog` or
        :func:`~ladder_mcmc.LookAhead`.
    init : State or LadderState
        Initial values, chains on the leading axis (for leapfrog kernels:
        positions of shape (chains, dim)); or a kernel state to continue from
        (e.g. ``trace.final``).
    n_steps : int
        Steps per chain (each step = one ladder transition + refresh).
    seed : int, SeedSequence, Generator or ChainStreams, optional
        The run's root seed. Every chain draws from its own random stream,
        keyed by the seed and the chain's index (:mod:`ladder_mcmc.engine.streams`),
        in its own step order: on each backend the same seed gives a bit-identical
        trace with or without checkpoints (any ``checkpoint_every``), and under
        any grouping of the chains over an executor (without warm-up, which
        adapts on each group's chains) — provided the target computes each
        chain's row on its own (elementwise numpy, ``einsum``; a BLAS product
        ``@`` can round a row differently in a batch of another size, and so can
        XLA's code for another number of chains: then the traces agree to
        rounding only). The numpy and JAX backends draw the same numbers: their
        traces agree to rounding. A ``Generator`` is
        used once, to draw the root seed; ``ChainStreams`` gives the streams
        directly. To continue a run from ``trace.final``, pass another seed:
        the same one hands every chain the same numbers again.
    schedule : {"ragged", "synchronous"}
        ``"ragged"`` (default): every map call advances every chain by one rung
        (``ladder_mcmc.engine.ragged``). ``"synchronous"``: all chains step together
        (the reference). Both hand each chain the same random numbers for the
        same step, so for maps with exact arithmetic (``CycleShift``) they give
        the same trace; for floating-point maps they agree to rounding.
    backend : {None, "numpy", "jax"}
        What runs the ragged steps (:mod:`ladder_mcmc.engine.backend`): ``None`` (default)
        chooses JAX for a JAX target (:func:`~ladder_mcmc.models.from_jax`,
        :func:`~ladder_mcmc.models.from_pymc`) whose kernel's parts all trace, numpy
        otherwise; ``"jax"`` refuses a kernel with a part JAX cannot trace (naming it).
        Both draw the same random numbers: their draws agree to rounding.
        ``trace.backend`` records what ran and why.
    thin : int
        Keep the draw of every ``thin``-th step (statistics keep every step);
        at most ``n_steps``.
    draws_file : path, optional
        Stream the draws to this ``.npy`` file (memory-mapped; must not exist)
        instead of holding them in memory: ``trace.states`` is then a
        ``numpy.memmap`` on it, and the pages of finished rows are released as
        the run goes, so resident memory stays bounded at any length
        (``benchmarks/results/memory.md``). Per-step statistics stay in memory.
        Draws with several leaves (attrs states) go to ``<stem>.<i>.npy``
        (none of these files may exist). With ``checkpoint``, the checkpoint
        records the file instead of copying the draws, and :func:`resume`
        goes on writing it (``docs/how-to/checkpoints.md``).
    progress : bool, optional
        Show progress on stderr (``ladder_mcmc.run.progress``): tqdm bars for warm-up
        and sampling steps on a terminal or in a notebook; elsewhere (stderr
        redirected) one line per phase when it ends. ``None`` (default): shown on a
        terminal or in a notebook, quiet when stderr is redirected.
    warmup : int, optional
        Warm-up steps before sampling (HMC-family kernels), which adapt what the
        kernel left unset (:attr:`~ladder_mcmc.ladder.kernel.Ladder.adapt`: for
        ``lahmc(target)``, the step size, a diagonal — or ``dense_mass`` — inverse
        mass, the leapfrog steps per rung and ``β``; ``docs/sampling.md``,
        :mod:`ladder_mcmc.hamiltonian.warmup.adaptation`); a kernel put together by hand adapts its
        step size and mass from the values it holds. Default:
        :data:`~ladder_mcmc.hamiltonian.warmup.adaptation.DEFAULT_WARMUP`
        steps when the kernel leaves something to adapt, else none; ``0``: none.
        Warm-up draws are dropped;
        ``trace.warmup`` holds the adapted values and the warm-up's gradient
        evaluations; ``trace.grad_evals`` counts the sampling phase only. With
        ``executor``, each group of chains adapts its own kernel:
        ``trace.warmup`` is then a :class:`~ladder_mcmc.hamiltonian.warmup.result.GroupedWarmup`
        (``.groups``, one ``WarmupResult`` each; the same attribute names, one
        entry per group: ``step_size[g]``, ``inverse_mass[g]``; ``grad_evals``
        per chain) and ``trace.kernel`` the entries the groups' adapted kernels
        share, with each group's description under ``"groups"``.
    target_prob, adapt_mass, dense_mass, trajectory_length
        See ``warmup`` and :class:`ladder_mcmc.engine.warmup.Warmup`: the target
        probability of taking the first rung (0.8), whether to adapt the mass (if the
        kernel leaves it unset) and densely; ``trajectory_length`` ``T``: instead of
        adapting the leapfrog steps per rung, keep ``M = round(T / ε)``.
    checkpoint : path, optional
        Write the run's full state (draws so far, kernel state, generator
        state) to this ``.npz`` file every ``checkpoint_every`` steps,
        atomically; continue it with :func:`resume`. The file must not exist.
        With ``draws_file``, the draws stay in that file (flushed to disk
        before each checkpoint) and the checkpoint records its path instead of
        copying them.
    checkpoint_every : int, optional
        Steps between checkpoints (default: ``n_steps // 10``). Every chain
        reaches each checkpoint step before any goes on; the draws do not depend
        on it.
    executor : concurrent.futures.Executor, optional
        Split the chains into ``n_groups`` groups run through the executor (a
        process pool; Dask's ``Client.get_executor()``); each chain keeps its
        own stream (``ladder_mcmc.run.parallel``).
    n_groups : int, optional
        Groups of chains for ``executor`` (default: 2).
    checks : bool
        Before sampling, compare the target's gradient with finite differences of
        its energy at up to 4 initial points (leapfrog kernels;
        :func:`ladder_mcmc.check_gradient`: a clearly wrong gradient raises
        ``ValueError``); after sampling, warn (:class:`ladder_mcmc.SamplingWarning`)
        about a run that went bad: most steps flipped or a chain never moved,
        R̂ > 1.01, bulk or tail ESS < 100 per chain, non-finite energies
        (:func:`ladder_mcmc.diagnostics.checks.check_trace`; not counted in ``trace.wall_time``);
        and warn of a warm-up that ended badly
        (:func:`~ladder_mcmc.hamiltonian.warmup.adaptation.check_warmup`) or of ``warmup=0`` on a
        kernel that leaves its step, length or ``β`` to adapt. ``False`` turns all of
        these off.

    Returns
    -------
    Trace
        If interrupted by Ctrl-C (``KeyboardInterrupt``, also from inside the
        target), the steps completed by every chain so far, with
        ``trace.interrupted = True`` — none if it came during warm-up (whose
        draws are dropped anyway; then ``trace.warmup`` is None and no
        checkpoint has been written).

    Raises
    ------
    ValueError
        On invalid ``n_steps``, ``thin`` (also ``thin > n_steps``), ``schedule``, ``init`` or
        ``checkpoint`` (an existing file is never overwritten), or (``checks``) a
        gradient that disagrees with the energy, before sampling.
    """
    n_steps = positive_int("n_steps", n_steps)
    thin = positive_int("thin", thin)
    if thin > n_steps:
        raise ValueError(
            f"thin={thin} exceeds n_steps={n_steps}: no draw would be kept "
            "(thin must be at most n_steps)"
        )
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be 'ragged' or 'synchronous', got {schedule!r}")
    if not isinstance(kernel, Ladder):
        raise ValueError(f"kernel must be a Ladder kernel, got {type(kernel).__name__}")
    checks = boolean("checks", checks)
    progress = interactive() if progress is None else boolean("progress", progress)
    # warm-up's settings are checked even when warmup=0 (a typo must not pass silently)
    settings = Warmup(warmup, target_prob, adapt_mass, dense_mass, trajectory_length)
    if n_groups is not None:
        n_groups = positive_int("n_groups", n_groups)
    if isinstance(seed, ChainStreams) and executor is not None:
        raise ValueError(
            "seed: a ChainStreams cannot be split over an executor's groups; pass the run's "
            "seed (an int or a SeedSequence) and each group gets its chains' streams"
        )
    n_chains = batch.n_chains(init.state if isinstance(init, LadderState) else init)
    adaptation = adaptation_for(kernel, settings, init, checks)
    warmup = 0 if adaptation is None else adaptation.n_warmup
    if draws_file is not None:
        draws_file = check_draws_file(draws_file, executor)
    if checks:
        check_kernel_gradient(kernel, init)
    if executor is not None:
        if checkpoint is not None:
            raise ValueError("checkpoint cannot be combined with executor")
        from ladder_mcmc.run.parallel import sample_on_executor

        trace = sample_on_executor(
            executor,
            kernel,
            init,
            n_steps,
            seed,
            n_groups if n_groups is not None else 2,
            schedule=schedule,
            backend=backend,
            thin=thin,
            warmup=warmup,
            target_prob=settings.target_prob,
            adapt_mass=settings.adapt_mass,
            dense_mass=settings.dense_mass,
            trajectory_length=settings.trajectory_length,
            checks=False,  # checked here, once, on all the chains
        )
        if checks:
            if adaptation is not None and trace.warmup is not None:
                adaptation.check(trace.warmup, stacklevel=3)
            check_trace(trace, stacklevel=3)
        return trace
    path = None
    block = n_steps
    if checkpoint is not None:
        path = Path(checkpoint)
        _check_checkpoint_target(path)
        if draws_file is not None and draws_file.resolve() == path.resolve():
            raise ValueError(f"draws_file and checkpoint are the same file {str(path)!r}")
        every = checkpoint_every if checkpoint_every is not None else max(1, n_steps // 10)
        block = positive_int("checkpoint_every", every)
    elif checkpoint_every is not None:
        block = positive_int("checkpoint_every", checkpoint_every)
    if isinstance(seed, ChainStreams):
        if seed.n_chains != n_chains:
            raise ValueError(f"seed has streams for {seed.n_chains} chains but init has {n_chains}")
        streams = seed
    else:
        streams = ChainStreams.for_chains(seed, n_chains)
    rng = streams.view()
    # the kernel as given (before warm-up), as a checkpoint records it: its
    # description, and (only when there are checkpoints: it hashes the target's
    # data) a fingerprint of the parameters the description leaves out
    user_kernel = _json_roundtrip(kernel.describe())
    if path is not None:
        user_kernel["parameters_sha256"] = kernel_fingerprint(kernel)
    ks = _initial_state(kernel, init, rng)
    if schedule == "synchronous":
        if backend not in (None, "numpy"):
            raise ValueError(
                f"backend={backend!r}: schedule='synchronous' runs on numpy only (the "
                "reference Ladder.step)"
            )
        chosen = Backend("numpy", "the synchronous schedule (Ladder.step) runs on numpy")
    else:
        chosen = choose_backend(kernel, ks, backend)
    if draws_file is not None:  # every leaf's file, now that the draws' structure is known
        check_draws_file(draws_file, None, len(batch.leaves(kernel.map.draw(ks.state))))
    warm = None
    warmup_interrupted = False
    if adaptation is not None:
        bar = Progress(warmup, label="warm-up", enabled=progress)
        try:
            kernel, ks, warm = run_warmup(
                kernel,
                ks,
                adaptation,
                warmup,
                streams,
                recorder=Recorder,
                schedule=schedule,
                backend=chosen.name,
                on_progress=bar.update if progress else None,
            )
        except KeyboardInterrupt as err:  # the warm-up's draws are dropped; its state kept
            warmup_interrupted = True
            ks = getattr(err, "state", ks)
        finally:
            bar.close()
    allocate = None if draws_file is None else memmap_allocator(draws_file)
    recorder = Recorder(n_steps, len(ks.direction), thin, allocate, max_rung=kernel.max_rung)
    run = _Run(
        kernel,
        user_kernel,
        ks,
        recorder,
        streams,
        schedule,
        chosen,
        block,
        warm,
        path,
        draws_file=None if draws_file is None else draws_file.resolve(),
    )
    if warmup_interrupted:  # the warm-up's last state, to go on from
        return _trace(run, ks, interrupted=True)
    trace = _execute(run, progress)
    if checks:
        check_trace(trace, stacklevel=3)
    return trace
