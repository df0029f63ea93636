"""``resume``: continue a checkpointed run where it stopped, bit for bit.

The checkpoint (:mod:`ladder_mcmc.run.checkpoint`) holds the run's data — the
kernel state, the steps so far, the chains' random streams, the warm-up's
adaptation — and the kernel is passed again (it holds the target's code). The
draws so far come back in memory, or from the run's draws file, grown in place or
copied to a new one (:mod:`ladder_mcmc.run.draws_files`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ladder_mcmc.diagnostics.checks import check_trace
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import Ladder, LadderState
from ladder_mcmc.run import checkpoint
from ladder_mcmc.run.checkpoint import fingerprint as kernel_fingerprint
from ladder_mcmc.run.draws_files import (
    check_draws_file,
    copy_rows,
    draws_file_path,
    grow_npy_rows,
    locate_draws_file,
    memmap_allocator,
    open_draws_files,
)
from ladder_mcmc.run.execution import Run, backend_for, execute, json_roundtrip
from ladder_mcmc.run.progress import interactive
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.run.trace import Trace
from ladder_mcmc.validation import boolean, positive_int


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
            check_draws_file(new_file, len(leaves))
            allocate = memmap_allocator(new_file)
            recorder._allocate = allocate
        else:
            allocate = recorder._allocate
        draws = batch.tree_map(lambda a: allocate((n_kept,) + a.shape[1:], a.dtype), stored_draws)
        for dest, src in zip(batch.leaves(draws), leaves, strict=True):
            copy_rows(dest, src, kept)
        recorder.adopt_draws(draws, released=kept)
        return new_file
    if stored_draws is None:
        # no draw was kept before the checkpoint: the file is made at the first kept
        # draw (a file already there is this run's own, from after the checkpoint)
        base = new_file if new_file is not None else locate_draws_file(stored, ckpt, True)
        recorder._allocate = memmap_allocator(base)
        return base
    base = locate_draws_file(stored, ckpt)
    n_leaves = len(batch.leaves(stored_draws))
    if int(stored.get("leaves", n_leaves)) != n_leaves:
        raise ValueError(f"checkpoint {str(ckpt)!r} is corrupt: draws file leaves do not match")
    sources = open_draws_files(base, stored_draws, kept, n_kept, in_place=new_file is None)
    if new_file is None:
        grown = iter([grow_npy_rows(draws_file_path(base, i), n_kept) for i in range(n_leaves)])
        recorder.adopt_draws(batch.tree_map(lambda _: next(grown), stored_draws), released=kept)
        recorder._allocate = memmap_allocator(base)
        return base
    check_draws_file(new_file, n_leaves)
    allocate = memmap_allocator(new_file)
    recorder._allocate = allocate
    draws = batch.tree_map(lambda a: allocate((n_kept,) + a.shape[1:], a.dtype), stored_draws)
    for dest, src in zip(batch.leaves(draws), sources, strict=True):
        copy_rows(dest, src, kept)
    recorder.adopt_draws(draws, released=kept)
    return new_file


def _chains(meta: dict) -> str:
    """How the checkpointed run's chains shared the compiled loop ("vectorized" if
    unrecorded: runs before the choice existed), so that the continuation takes the
    same floating-point code."""
    return meta.get("chains") or "vectorized"


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
    progress: bool | None = None,
    checks: bool = True,
) -> Trace:
    """Continue a checkpointed run; return the whole trace, first step included.

    Parameters
    ----------
    path : path
        A checkpoint written by ``sample(..., checkpoint=path)``; it is updated
        as the run goes on.
    kernel : Ladder, or a target
        The kernel the run was started with (the checkpoint holds data, not
        code, so your target comes from here). Refused unless its description
        and the fingerprint of its parameters and its target's code
        (:func:`ladder_mcmc.run.fingerprints.fingerprint`) equal the checkpoint's.
        Warm-up adaptation stored in the checkpoint is re-applied.
        :func:`ladder_mcmc.resume` also takes the target of a run that
        ``ladder_mcmc.sample(target, …)`` started (the kernel ``lahmc(target)``);
        :func:`ladder_mcmc.run.resume` takes kernels only.
    n_steps : int, optional
        Steps to add after the checkpoint's last completed step. By default,
        finish the original run. Either way the result is bit-identical to an
        uninterrupted run with the same seed, schedule and ``Checkpoint.every``
        (for ``n_steps``: one whose length is the new total, provided the
        checkpoint was at a multiple of ``every``).
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
    progress : bool, optional
        Progress bar on stderr; ``None`` (default): on a terminal or in a notebook.
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
        raise ValueError(
            "kernel must be a Ladder kernel (the one the run was started with, e.g. "
            f"lahmc(target)), got {type(kernel).__name__}"
        )
    stored = dict(meta["kernel"])
    stored_parameters = stored.pop("parameters_sha256", None)  # absent before 2026-11-26
    # what warm-up was to adapt does not change the transitions after it (the adapted
    # values are stored): a kernel that says it differently still continues the run
    stored.pop("adapt", None)
    given = json_roundtrip(kernel.describe())
    given.pop("adapt", None)
    if given != stored:
        raise ValueError(
            f"checkpoint {str(path)!r} was written by another kernel:\n"
            f"  stored: {stored}\n  given:  {given}"
        )
    given_parameters = kernel_fingerprint(kernel, warn=False)
    if stored_parameters is not None and stored_parameters != given_parameters:
        raise ValueError(
            f"checkpoint {str(path)!r} was written by another kernel: the same description "
            f"({stored}) but other parameters or code (e.g. a mass matrix's values, or the "
            "target's data, parameters or log density's code)"
        )
    warm = trees["warmup"]
    if warm is not None:
        warm = warm.restored()  # the types a checkpoint round trip loses
        kernel = warm.apply(kernel)
    done = int(meta["completed"])
    total = int(meta["n_steps"]) if n_steps is None else done + positive_int("n_steps", n_steps)
    ks: LadderState = trees["ks"]
    n_chains = len(ks.direction)
    new_file = None
    if draws_file is not None:  # a new file for every leaf of the draws
        n_leaves = len(batch.leaves(kernel.map.draw(ks.state)))
        new_file = check_draws_file(draws_file, n_leaves).resolve()
        if new_file == path.resolve():
            raise ValueError(f"draws_file and checkpoint are the same file {str(path)!r}")
    recorder = Recorder(total, n_chains, int(meta["thin"]), max_rung=kernel.max_rung)
    recorder.rungs[:done] = trees["rungs"]
    recorder.n_moves[:done] = trees["n_moves"]
    recorder.non_finite[:done] = trees["non_finite"]
    if trees.get("step_cost") is not None:  # a map whose cost varies per chain and step
        recorder.costs()[:done] = trees["step_cost"]
    if trees.get("step_overhead") is not None:  # gradients outside the map applications
        recorder.overheads()[:done] = trees["step_overhead"]
    for key, values in trees.items():  # the per-step figures (energy, acceptance, …)
        if key.startswith("stat_") and values is not None:
            recorder.stat(key[len("stat_") :])[:done] = values
    recorder.steps_done[:] = done
    kept = done // recorder.thin
    streamed_to = _restore_draws(recorder, path, meta, trees["draws"], kept, new_file)
    run = Run(
        kernel,
        meta["kernel"],
        ks,
        recorder,
        _restore_streams(path, meta, trees),
        meta["schedule"],
        backend_for(kernel, ks, meta["schedule"], meta.get("backend"), _chains(meta)),
        int(meta["block"]),
        warm,
        path,
        float(meta["wall_time"]),
        draws_file=streamed_to,
    )
    trace = execute(run, interactive() if progress is None else boolean("progress", progress))
    if checks:
        check_trace(trace)
    return trace
