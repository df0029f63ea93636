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
from ladder_mcmc.adaptation import WarmupResult, check_mass_adaptation, with_hmc_parameters
from ladder_mcmc.adaptation import warmup as run_warmup
from ladder_mcmc.checkpoint import fingerprint as kernel_fingerprint
from ladder_mcmc.checks import check_kernel_gradient, check_trace
from ladder_mcmc.ladder import Ladder, LadderState
from ladder_mcmc.metrics import Metric
from ladder_mcmc.progress import Progress
from ladder_mcmc.ragged import run_ragged
from ladder_mcmc.streams import ChainStreams
from ladder_mcmc.trace import (
    RELEASE_BYTES,
    Recorder,
    Trace,
    _release_rows,
    draws_file_path,
    grow_npy_rows,
    memmap_allocator,
)
from ladder_mcmc.validation import positive_int

Schedule = Literal["ragged", "synchronous"]


def run_synchronous(
    kernel: Ladder,
    ks: LadderState,
    recorder: Recorder,
    streams: ChainStreams,
    on_progress=None,
    until: int | None = None,
) -> LadderState:
    """Step every chain together with :meth:`Ladder.step` until step ``until``."""
    stop = recorder.n_steps if until is None else until
    rng = streams.view()
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
    streams: ChainStreams
    schedule: str
    block: int
    warm: WarmupResult | None
    checkpoint: Path | None
    wall_time: float = 0.0
    draws_file: Path | None = None  # where the draws are streamed (sample(draws_file=...))


def _check_writable_folder(what: str, path: Path) -> None:
    """Refuse a file ``path`` whose folder does not exist or cannot be written to."""
    if not path.parent.is_dir():
        raise ValueError(f"{what} folder {str(path.parent)!r} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise ValueError(f"{what} folder {str(path.parent)!r} is not writable")


def _check_checkpoint_target(path: Path) -> None:
    """Refuse, before any sampling, a checkpoint path that would overwrite a file or fail."""
    if path.exists():
        raise ValueError(
            f"checkpoint {str(path)!r} already exists: continue it with "
            "ladder_mcmc.resume(path, kernel), or remove it first"
        )
    _check_writable_folder("checkpoint", path)


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
        "warmup": run.warm,
        **{f"streams_{name}": array for name, array in streams_arrays.items()},
    }
    checkpoint.save(run.checkpoint, meta, trees)


def _check_draws_file(
    path: str | os.PathLike, executor: Executor | None, n_leaves: int = 1
) -> Path:
    """Refuse, before sampling, a draws file that exists or cannot be written.

    ``n_leaves``: files the draws need (``<stem>.<i>.npy`` for leaves ``i ≥ 1``).
    """
    path = Path(path)
    if executor is not None:
        raise ValueError("draws_file cannot be combined with executor")
    for leaf in range(n_leaves):
        if draws_file_path(path, leaf).exists():
            raise ValueError(
                f"draws_file {str(draws_file_path(path, leaf))!r} already exists; "
                "remove it or choose another"
            )
    _check_writable_folder("draws_file", path)
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
    seed: int | np.random.SeedSequence | np.random.Generator | ChainStreams | None = None,
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
    checks: bool = True,
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
    seed : int, SeedSequence, Generator or ChainStreams, optional
        The run's root seed. Every chain draws from its own random stream,
        keyed by the seed and the chain's index (:mod:`ladder_mcmc.streams`),
        in its own step order: the same seed gives a bit-identical trace with
        or without checkpoints (any ``checkpoint_every``), with or without
        numba, and under any grouping of the chains over an executor (without
        warm-up, which adapts on each group's chains). A ``Generator`` is used
        once, to draw the root seed; ``ChainStreams`` gives the streams directly.
    schedule : {"ragged", "synchronous"}
        ``"ragged"`` (default): every map call advances every chain by one rung
        (``ladder_mcmc.ragged``). ``"synchronous"``: all chains step together
        (the reference). Both hand each chain the same random numbers for the
        same step, so for maps with exact arithmetic (``CycleShift``) they give
        the same trace; for floating-point maps they agree to rounding.
    thin : int
        Keep the draw of every ``thin``-th step (statistics keep every step);
        at most ``n_steps``.
    draws_file : path, optional
        Stream the draws to this ``.npy`` file (memory-mapped; must not exist)
        instead of holding them in memory: ``trace.states`` is then a
        ``numpy.memmap`` on it, and the pages of finished rows are released as
        the run goes, so resident memory stays bounded at any length
        (``docs/performance.md``). Per-step statistics stay in memory.
        Draws with several leaves (attrs states) go to ``<stem>.<i>.npy``
        (none of these files may exist). With ``checkpoint``, the checkpoint
        records the file instead of copying the draws, and :func:`resume`
        goes on writing it (``docs/sampling.md``).
    progress : bool
        Show progress on stderr (``ladder_mcmc.progress``): tqdm bars for warm-up
        and sampling steps on a terminal or in a notebook; elsewhere (stderr
        redirected) one line per phase when it ends.
    warmup : int
        Warm-up steps before sampling (HMC-family kernels): the step size is
        adapted by dual averaging towards ``target_prob``, the probability of
        taking the first rung, and (``adapt_mass``) a diagonal — or
        ``dense_mass`` — inverse mass matrix from windowed variance estimates,
        as in Stan (``ladder_mcmc.adaptation``). Warm-up draws are dropped;
        ``trace.warmup`` holds the adapted values and the warm-up's gradient
        evaluations; ``trace.grad_evals`` counts the sampling phase only. With
        ``executor``, each group of chains adapts its own kernel:
        ``trace.warmup`` is then a :class:`~ladder_mcmc.adaptation.GroupedWarmup`
        (``.groups``, one ``WarmupResult`` each; the same attribute names, one
        entry per group: ``step_size[g]``, ``inverse_mass[g]``; ``grad_evals``
        per chain) and ``trace.kernel`` the entries the groups' adapted kernels
        share, with each group's description under ``"groups"``.
    target_prob, adapt_mass, dense_mass, trajectory_length
        See ``warmup`` and :func:`ladder_mcmc.adaptation.warmup` (``trajectory_length``:
        adapt the leapfrog steps per rung to ``round(T / ε)``; ``π/2`` is a good
        choice in the adapted metric).
    checkpoint : path, optional
        Write the run's full state (draws so far, kernel state, generator
        state) to this ``.npz`` file every ``checkpoint_every`` steps,
        atomically; continue it with :func:`resume`. The file must not exist.
        With ``draws_file``, the draws stay in that file (flushed to disk
        before each checkpoint) and the checkpoint records its path instead of
        copying them.
    checkpoint_every : int, optional
        Steps between checkpoints (default: ``n_steps // 10``). The ragged
        driver lets every chain reach each checkpoint step before going on;
        the draws do not depend on it.
    executor : concurrent.futures.Executor, optional
        Split the chains into ``n_groups`` groups run through the executor (a
        process pool; Dask's ``Client.get_executor()``); each chain keeps its
        own stream (``ladder_mcmc.parallel``).
    n_groups : int, optional
        Groups of chains for ``executor`` (default: 2).
    checks : bool
        Before sampling, compare the target's gradient with finite differences of
        its energy at up to 4 initial points (leapfrog kernels;
        :func:`ladder_mcmc.check_gradient`: a clearly wrong gradient raises
        ``ValueError``); after sampling, warn (:class:`ladder_mcmc.SamplingWarning`)
        about a run that went bad: most steps flipped or a chain never moved,
        R̂ > 1.01, bulk or tail ESS < 100 per chain, non-finite energies
        (:func:`ladder_mcmc.checks.check_trace`; not counted in ``trace.wall_time``).
        ``False`` turns both off.

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
    if schedule not in DRIVERS:
        raise ValueError(f"schedule must be 'ragged' or 'synchronous', got {schedule!r}")
    if not isinstance(kernel, Ladder):
        raise ValueError(f"kernel must be a Ladder kernel, got {type(kernel).__name__}")
    if warmup != 0:
        positive_int("warmup", warmup)
        check_mass_adaptation(kernel, warmup, adapt_mass, dense_mass)
    if draws_file is not None:
        draws_file = _check_draws_file(draws_file, executor)
    if checks:
        check_kernel_gradient(kernel, init)
    if executor is not None:
        if checkpoint is not None:
            raise ValueError("checkpoint cannot be combined with executor")
        from ladder_mcmc.parallel import sample_on_executor

        trace = sample_on_executor(
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
            checks=False,  # checked here, once, on all the chains
        )
        if checks:
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
    n_chains = batch.n_chains(init.state if isinstance(init, LadderState) else init)
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
    ks = init if isinstance(init, LadderState) else kernel.init(init, rng)
    if draws_file is not None:  # every leaf's file, now that the draws' structure is known
        _check_draws_file(draws_file, None, len(batch.leaves(kernel.map.draw(ks.state))))
    warm = None
    warmup_interrupted = False
    if warmup:
        try:
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
        except KeyboardInterrupt:  # warm-up draws are dropped anyway: no step kept
            warmup_interrupted = True
    allocate = None if draws_file is None else memmap_allocator(draws_file)
    recorder = Recorder(n_steps, len(ks.direction), thin, allocate, max_rung=kernel.max_rung)
    run = _Run(
        kernel,
        user_kernel,
        ks,
        recorder,
        streams,
        schedule,
        block,
        warm,
        path,
        draws_file=None if draws_file is None else draws_file.resolve(),
    )
    if warmup_interrupted:
        return _trace(run, None, interrupted=True)
    trace = _execute(run, progress)
    if checks:
        check_trace(trace, stacklevel=3)
    return trace


def _locate_draws_file(stored: dict, ckpt: Path, to_create: bool = False) -> Path:
    """The draws file a checkpoint names: beside it as recorded (relative path, so a
    folder moved as a whole still works), else at the recorded absolute path.

    ``to_create``: the file need not exist yet (no draw kept), only its folder.
    """
    candidates = []
    if stored.get("relative") is not None:
        candidates.append(ckpt.resolve().parent / stored["relative"])
    candidates.append(Path(stored["path"]))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    for candidate in candidates if to_create else []:
        if candidate.parent.is_dir() and os.access(candidate.parent, os.W_OK):
            return candidate
    raise ValueError(
        f"the draws file of checkpoint {str(ckpt)!r} is missing: looked for "
        + " and ".join(repr(str(c)) for c in candidates)
    )


def _open_draws_files(
    base: Path, template: Any, kept: int, n_kept: int, in_place: bool
) -> list[np.memmap]:
    """Open (read-only) and check the files holding a checkpointed run's draws.

    ``template``: the checkpoint's last kept row of draws (leaves (1, chains, ...),
    or (0, chains, ...) if none was kept). Each file must be a C-ordered ``.npy``
    of the template's dtype and trailing shape, with at least ``kept`` rows,
    whose row ``kept - 1`` equals the template bit for bit (else it is not this
    run's file). ``in_place``: the resumed run will write into these files, so
    they must be writable and not longer than ``n_kept`` rows.
    """
    opened = []
    for i, want in enumerate(batch.leaves(template)):
        path = draws_file_path(base, i)
        if not path.is_file():
            raise ValueError(f"draws file {str(path)!r} of the checkpoint is missing")
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except Exception as err:  # a damaged header raises, e.g., tokenize.TokenError
            raise ValueError(
                f"draws file {str(path)!r} is not a readable .npy file: {err}"
            ) from err
        if (
            not isinstance(arr, np.memmap)
            or arr.dtype != want.dtype
            or arr.shape[1:] != want.shape[1:]
            or not arr.flags.c_contiguous
        ):
            raise ValueError(
                f"draws file {str(path)!r} holds {getattr(arr, 'dtype', '?')} of shape "
                f"{getattr(arr, 'shape', '?')}; the checkpoint's draws are {want.dtype} of "
                f"shape (rows,) + {want.shape[1:]} (C order)"
            )
        if arr.shape[0] < kept:
            raise ValueError(
                f"draws file {str(path)!r} holds {arr.shape[0]} rows; the checkpoint has {kept}"
            )
        if kept and arr[kept - 1].tobytes() != want[0].tobytes():
            raise ValueError(
                f"draws file {str(path)!r} does not hold this run's draws (row {kept - 1} "
                "differs from the checkpoint's copy): was it overwritten by another run?"
            )
        if in_place:
            if arr.shape[0] > n_kept:
                raise ValueError(
                    f"draws file {str(path)!r} holds {arr.shape[0]} rows but the resumed run "
                    f"keeps {n_kept}: it would be cut short; resume with more steps, or "
                    "give resume(..., draws_file=NEW) to write the whole run to a new file"
                )
            if not os.access(path, os.W_OK):
                raise ValueError(f"draws file {str(path)!r} is not writable")
            grow_npy_rows(path, n_kept, dry_run=True)
        opened.append(arr)
    return opened


def _copy_rows(dest: np.ndarray, src: np.ndarray, rows: int) -> None:
    """``dest[:rows] = src[:rows]`` in slices, releasing a disk-backed ``dest``'s pages."""
    row_bytes = max(1, dest.strides[0])
    chunk = max(1, RELEASE_BYTES // row_bytes)
    for lo in range(0, rows, chunk):
        hi = min(rows, lo + chunk)
        dest[lo:hi] = src[lo:hi]
        if isinstance(dest, np.memmap):
            _release_rows(dest, lo, hi)
    if isinstance(dest, np.memmap):
        dest.flush()


def _restore_draws(
    recorder: Recorder,
    ckpt: Path,
    meta: dict,
    stored_draws: Any,
    kept: int,
    new_file: Path | None,
) -> Path | None:
    """Give ``recorder`` the draws so far; return the draws file the run goes on with.

    * draws in the checkpoint (version 1, or a run without ``draws_file``): in
      memory, or copied to ``new_file``;
    * draws in a file (``meta["draws_file"]``): that file, grown in place to the
      resumed run's length, or (``new_file``) copied to a new file, the old one
      left untouched.

    Everything is checked before any file is written or grown.
    """
    stored = meta.get("draws_file")
    n_kept = recorder.n_kept
    if stored is None:
        if stored_draws is None:
            if new_file is not None:
                recorder._allocate = memmap_allocator(new_file)
            return new_file
        leaves = batch.leaves(stored_draws)
        if new_file is not None:
            _check_draws_file(new_file, None, len(leaves))
            allocate = memmap_allocator(new_file)
            recorder._allocate = allocate
        else:
            allocate = recorder._allocate
        draws = batch.tree_map(lambda a: allocate((n_kept,) + a.shape[1:], a.dtype), stored_draws)
        for dest, src in zip(batch.leaves(draws), leaves, strict=True):
            _copy_rows(dest, src, kept)
        recorder.adopt_draws(draws, released=kept)
        return new_file
    if stored_draws is None:
        # no draw was kept before the checkpoint: the file is made at the first kept
        # draw (a file already there is this run's own, from after the checkpoint)
        base = new_file if new_file is not None else _locate_draws_file(stored, ckpt, True)
        recorder._allocate = memmap_allocator(base)
        return base
    base = _locate_draws_file(stored, ckpt)
    n_leaves = len(batch.leaves(stored_draws))
    if int(stored.get("leaves", n_leaves)) != n_leaves:
        raise ValueError(f"checkpoint {str(ckpt)!r} is corrupt: draws file leaves do not match")
    sources = _open_draws_files(base, stored_draws, kept, n_kept, in_place=new_file is None)
    if new_file is None:
        grown = iter([grow_npy_rows(draws_file_path(base, i), n_kept) for i in range(n_leaves)])
        recorder.adopt_draws(batch.tree_map(lambda _: next(grown), stored_draws), released=kept)
        recorder._allocate = memmap_allocator(base)
        return base
    _check_draws_file(new_file, None, n_leaves)
    allocate = memmap_allocator(new_file)
    recorder._allocate = allocate
    draws = batch.tree_map(lambda a: allocate((n_kept,) + a.shape[1:], a.dtype), stored_draws)
    for dest, src in zip(batch.leaves(draws), sources, strict=True):
        _copy_rows(dest, src, kept)
    recorder.adopt_draws(draws, released=kept)
    return new_file


def _restore_streams(path: Path, meta: dict, trees: dict) -> ChainStreams:
    """The run's random streams as the checkpoint left them."""
    if "streams" not in meta:
        raise ValueError(
            f"checkpoint {str(path)!r} was written by an older ladder_mcmc (one random "
            "generator for all chains); its run cannot be continued with per-chain streams"
        )
    arrays = {k.removeprefix("streams_"): v for k, v in trees.items() if k.startswith("streams_")}
    try:
        return ChainStreams.from_state(meta["streams"], arrays)
    except ValueError as err:
        raise ValueError(f"checkpoint {str(path)!r} is corrupt: {err}") from err


def resume(
    path: str | os.PathLike,
    kernel: Ladder,
    n_steps: int | None = None,
    *,
    draws_file: str | os.PathLike | None = None,
    progress: bool = False,
    checks: bool = True,
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
        and the fingerprint of its parameters
        (:func:`ladder_mcmc.checkpoint.fingerprint`) equal the checkpoint's.
        Warm-up adaptation stored in the checkpoint is re-applied.
    n_steps : int, optional
        Steps to add after the checkpoint's last completed step. By default,
        finish the original run. Either way the result is bit-identical to an
        uninterrupted run with the same seed, schedule and ``checkpoint_every``
        (for ``n_steps``: one whose length is the new total, provided the
        checkpoint was at a multiple of ``checkpoint_every``).
    draws_file : path, optional
        Where the draws go. By default, where they were: in memory for a run
        without a draws file, and for a run started with
        ``sample(..., draws_file=F)`` the same file ``F`` (found beside the
        checkpoint as recorded, else at its recorded absolute path), which
        the resumed run continues writing, grown in place to the new length
        (``F``'s rows so far are not rewritten; ``F`` may not be longer than
        the resumed run, which would cut it short). Given, a new ``.npy`` file
        (must not exist) that receives a copy of the draws so far and the
        rest of the run; ``F`` is then left untouched. Either way
        ``trace.states`` is a memory map of the file holding every draw, and
        the checkpoint records that file from then on.
    progress : bool
        Progress bar on stderr.
    checks : bool
        Warn (:class:`ladder_mcmc.SamplingWarning`) about a whole run that went bad,
        as :func:`sample` does; ``False`` turns it off.

    Raises
    ------
    ValueError
        If the checkpoint is missing, corrupt, of another format version, or
        from another kernel; if the run's draws file is missing, not a
        ``.npy`` of the checkpoint's dtype and shape, holds fewer rows than
        the checkpoint counts or rows that are not this run's (its last
        checkpointed row is compared bit for bit), is not writable or longer
        than the resumed run; or if ``draws_file`` already exists. Nothing is
        written before these checks pass.
    """
    path = Path(path)
    meta, trees = checkpoint.load(path)
    if not isinstance(kernel, Ladder):
        raise ValueError(f"kernel must be a Ladder kernel, got {type(kernel).__name__}")
    stored = dict(meta["kernel"])
    stored_parameters = stored.pop("parameters_sha256", None)  # absent before 2026-11-26
    if _json_roundtrip(kernel.describe()) != stored:
        raise ValueError(
            f"checkpoint {str(path)!r} was written by another kernel:\n"
            f"  stored: {stored}\n  given:  {_json_roundtrip(kernel.describe())}"
        )
    if stored_parameters is not None and stored_parameters != kernel_fingerprint(kernel):
        raise ValueError(
            f"checkpoint {str(path)!r} was written by another kernel: the same description "
            f"({stored}) but other parameters (e.g. a mass matrix's values, or the target's "
            "data or parameters)"
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
    new_file = None
    if draws_file is not None:  # a new file for every leaf of the draws
        n_leaves = len(batch.leaves(kernel.map.draw(ks.state)))
        new_file = _check_draws_file(draws_file, None, n_leaves).resolve()
        if new_file == path.resolve():
            raise ValueError(f"draws_file and checkpoint are the same file {str(path)!r}")
    recorder = Recorder(total, n_chains, int(meta["thin"]), max_rung=kernel.max_rung)
    recorder.rungs[:done] = trees["rungs"]
    recorder.n_moves[:done] = trees["n_moves"]
    recorder.non_finite[:done] = trees["non_finite"]
    recorder.steps_done[:] = done
    kept = done // recorder.thin
    streamed_to = _restore_draws(recorder, path, meta, trees["draws"], kept, new_file)
    run = _Run(
        kernel,
        meta["kernel"],
        ks,
        recorder,
        _restore_streams(path, meta, trees),
        meta["schedule"],
        int(meta["block"]),
        warm,
        path,
        float(meta["wall_time"]),
        draws_file=streamed_to,
    )
    trace = _execute(run, progress)
    if checks:
        check_trace(trace, stacklevel=3)
    return trace
