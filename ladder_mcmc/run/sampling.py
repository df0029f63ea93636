"""``sample``: run a ladder kernel on a batch of chains, collect a :class:`Trace`.

A run is set up here — its settings checked, the chains' random streams
(:mod:`ladder_mcmc.engine.streams`), the kernel state, an optional warm-up (the
kernel's adaptation, run by :mod:`ladder_mcmc.engine.warmup`), the
:class:`~ladder_mcmc.run.recorder.Recorder` — and executed in blocks
(:mod:`ladder_mcmc.run.execution`), or its chains split over an executor
(:mod:`ladder_mcmc.run.parallel`). Before sampling the target's gradient is checked,
after it the trace (:mod:`ladder_mcmc.diagnostics.checks`).
"""

from __future__ import annotations

import os
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.diagnostics.checks import check_trace
from ladder_mcmc.diagnostics.gradient import check_kernel_gradient
from ladder_mcmc.engine.backend import choose_chains
from ladder_mcmc.engine.contract import SCHEDULES, Schedule
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.engine.warmup import Adaptation, Warmup, adaptation_for, run_warmup
from ladder_mcmc.ladder import batch
from ladder_mcmc.ladder.kernel import Ladder, LadderState
from ladder_mcmc.run.checkpoint import fingerprint as kernel_fingerprint
from ladder_mcmc.run.draws_files import check_draws_file, memmap_allocator
from ladder_mcmc.run.execution import (
    Run,
    backend_for,
    check_checkpoint_target,
    initial_state,
    json_roundtrip,
    trace_of,
)
from ladder_mcmc.run.parallel import sample_on_executor
from ladder_mcmc.run.progress import Progress, interactive
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.run.settings import (
    Checkpoint,
    Parallel,
    as_checkpoint,
    as_parallel,
    as_warmup,
)
from ladder_mcmc.run.switching import (
    finish,
    not_checked,
    run_switching,
    why_not,
)
from ladder_mcmc.run.trace import Trace
from ladder_mcmc.validation import boolean, positive_int

Seed = int | np.random.SeedSequence | np.random.Generator | ChainStreams | None


def sample(
    kernel: Ladder,
    init: Any,
    n_steps: int,
    seed: Seed = None,
    *,
    warmup: int | Warmup | None = None,
    backend: str | None = None,
    schedule: Schedule = "ragged",
    thin: int = 1,
    progress: bool | None = None,
    checks: bool = True,
    checkpoint: str | os.PathLike | Checkpoint | None = None,
    executor: Executor | Parallel | None = None,
    draws_file: str | os.PathLike | None = None,
) -> Trace:
    """Run ``kernel`` for ``n_steps`` steps on every chain.

    Parameters
    ----------
    kernel : Ladder, or a target
        E.g. from :func:`~ladder_mcmc.lahmc`, :func:`~ladder_mcmc.hmc` or
        :func:`~ladder_mcmc.LookAhead`. :func:`ladder_mcmc.sample` also takes a target
        (:class:`~ladder_mcmc.Target`, :func:`~ladder_mcmc.from_jax`, …) and runs the
        default kernel on it, ``lahmc(target)``, checking after warm-up whether the target
        is a funnel, where it switches to ``span_lahmc`` (``Warmup(switch=...)``,
        ``trace.switch``; ``docs/sampling.md``); :func:`ladder_mcmc.run.sample` takes
        kernels only.
    init : State or LadderState
        Initial values, chains on the leading axis (for leapfrog kernels:
        positions of shape (chains, dim)); or a kernel state to continue from
        (e.g. ``trace.final``), prepared again by this kernel's map.
    n_steps : int
        Steps per chain (each step = one ladder transition + refresh).
    seed : int, SeedSequence, Generator or ChainStreams, optional
        The run's root seed. Every chain draws from its own random stream,
        keyed by the seed and the chain's index (:mod:`ladder_mcmc.engine.streams`),
        in its own step order: on the numpy backend the same seed gives a bit-identical
        trace with or without checkpoints (any ``Checkpoint.every``); on JAX the same
        ``every`` (and a resume) gives it bit for bit, another ``every`` cuts the run
        into other compiled blocks and gives the same trace to rounding (a few ulp);
        and on each backend the trace is bit-identical under
        any grouping of the chains over an executor (without warm-up, which
        adapts on each group's chains) — provided the target computes each
        chain's row on its own (elementwise numpy, ``einsum``; a BLAS product
        ``@`` can round a row differently in a batch of another size, and so can
        XLA's code for another number of chains: then the traces agree to
        rounding only). The numpy and JAX backends draw the same numbers: their
        traces agree to rounding. A ``Generator`` is used once, to draw the root
        seed; ``ChainStreams`` gives the streams directly. To continue a run from
        ``trace.final``, pass another seed: the same one hands every chain the same
        numbers again.
    warmup : int or Warmup, optional
        Warm-up before sampling, which adapts what the kernel left unset
        (:attr:`~ladder_mcmc.ladder.kernel.Ladder.adapt`: for ``lahmc(target)``, the
        step size, a diagonal inverse mass, the leapfrog steps per rung and ``β``;
        ``docs/sampling.md``); a kernel put together by hand adapts its step size and
        mass from the values it holds. An int: that many steps; a
        :class:`~ladder_mcmc.Warmup`: steps and settings (target probability of the
        first rung, dense mass, a fixed trajectory length). Default: 1000 steps when
        the kernel leaves something to adapt, else none; ``0``: none. Warm-up draws
        are dropped; ``trace.warmup`` holds the adapted values and the warm-up's
        gradient evaluations; ``trace.grad_evals`` counts the sampling phase only.
        With ``executor``, each group of chains adapts its own kernel:
        ``trace.warmup`` is then a
        :class:`~ladder_mcmc.hamiltonian.warmup.result.GroupedWarmup` (one
        ``WarmupResult`` per group in ``.groups``; ``step_size[g]``) and
        ``trace.kernel`` the entries the groups' kernels share, with each group's
        description under ``"groups"``.
    backend : {None, "numpy", "jax"}
        What runs the ragged steps (:mod:`ladder_mcmc.engine.backend`): ``None`` (default)
        chooses JAX for a JAX target (:func:`~ladder_mcmc.models.from_jax`,
        :func:`~ladder_mcmc.models.from_pymc`) whose kernel's parts all trace, numpy
        otherwise; ``"jax"`` refuses a kernel with a part JAX cannot trace (naming it).
        ``trace.backend`` records what ran and why (on JAX also how the chains share
        the compiled loop: ``Parallel(chains=...)``, ``executor`` below).
    schedule : {"ragged", "synchronous"}
        ``"ragged"`` (default): every map call advances every chain by one rung
        (:mod:`ladder_mcmc.engine.ragged`). ``"synchronous"``: all chains step together
        (the reference ``Ladder.step``, numpy only and slower: kept to check the engine
        against the paper's algorithm, never chosen for a run). Both hand each chain the same
        random numbers for the same step, so for maps with exact arithmetic
        (``CycleShift``) they give the same trace; for floating-point maps they agree
        to rounding.
    thin : int
        Keep the draw of every ``thin``-th step (statistics keep every step);
        at most ``n_steps``.
    progress : bool, optional
        Show progress on stderr (:mod:`ladder_mcmc.run.progress`): bars for warm-up
        and sampling on a terminal or in a notebook, one line per phase elsewhere.
        ``None`` (default): shown on a terminal or in a notebook, quiet when stderr
        is redirected.
    checks : bool
        Before sampling, compare the target's gradient with finite differences of
        its energy at up to 4 initial points (:func:`ladder_mcmc.check_gradient`: a
        clearly wrong gradient raises ``ValueError``); after sampling, warn
        (:class:`ladder_mcmc.SamplingWarning`) about a run that went bad: most steps
        flipped or a chain never moved, R̂ > 1.01, bulk or tail ESS < 100 per chain,
        non-finite energies, a low E-BFMI (:func:`ladder_mcmc.diagnostics.check_trace`;
        not counted in ``trace.wall_time``), a warm-up that ended badly, or
        ``warmup=0`` on a kernel that leaves its step, length or ``β`` to adapt.
        ``False`` turns all of these off.
    checkpoint : path or Checkpoint, optional
        Write the run's full state (draws so far, kernel state, random streams) to
        this ``.npz`` file (which must not exist), atomically, every
        ``n_steps // 10`` steps, or as a :class:`~ladder_mcmc.Checkpoint` says;
        continue it with :func:`resume`. With ``draws_file``, the draws stay in that
        file (flushed before each checkpoint) and the checkpoint records its path.
    executor : concurrent.futures.Executor or Parallel, optional
        Split the chains into 2 groups (or a :class:`~ladder_mcmc.Parallel`'s
        ``groups``) run through the executor (a process pool; Dask's
        ``Client.get_executor()``); each chain keeps its own stream
        (:mod:`ladder_mcmc.run.parallel`). Not with ``checkpoint`` or ``draws_file``.
        ``Parallel(chains=...)`` (with or without an executor) sets how the chains share
        the compiled loop on JAX: ``"vectorized"`` (one map call on every chain),
        ``"sequential"`` (one chain after another, for a target whose batched gradient
        costs more per chain than one chain's), or ``"auto"`` (default: the gradient is
        timed both ways at the start; :mod:`ladder_mcmc.engine.sequential`). Warm-up runs
        the chains batched; the draws agree to rounding either way.
    draws_file : path, optional
        Stream the draws to this ``.npy`` file (memory-mapped; must not exist)
        instead of holding them in memory: ``trace.states`` is then a
        ``numpy.memmap`` on it, and the pages of finished rows are released as
        the run goes, so resident memory stays bounded at any length. Per-step
        statistics stay in memory. Draws with several leaves (attrs states) go to
        ``<stem>.<i>.npy`` (none of these files may exist).
    Returns
    -------
    Trace
        If interrupted by Ctrl-C (``KeyboardInterrupt``, also from inside the
        target), the steps completed by every chain so far, with
        ``trace.interrupted = True``; if that came during warm-up, no step, and
        the warm-up's last state in ``trace.final`` to go on from.

    Raises
    ------
    ValueError
        On an invalid setting (naming it and its value; an existing checkpoint or
        draws file is never overwritten), ``init`` of another shape than the kernel's
        target, or (``checks``) a gradient that disagrees with the energy; all
        before sampling.
    """
    n_steps = positive_int("n_steps", n_steps)
    thin = _as_thin(thin, n_steps)
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be 'ragged' or 'synchronous', got {schedule!r}")
    if not isinstance(kernel, Ladder):
        raise ValueError(
            "kernel must be a Ladder kernel (e.g. lahmc(target); ladder_mcmc.sample also "
            f"takes the target), got {type(kernel).__name__}"
        )
    checks = boolean("checks", checks)
    progress = interactive() if progress is None else boolean("progress", progress)
    settings, saving, parallel = as_warmup(warmup), as_checkpoint(checkpoint), as_parallel(executor)
    switch = None if settings.switch == "auto" else settings.switch
    chains = "auto" if parallel is None else parallel.chains
    threads = None if parallel is None else parallel.threads
    if parallel is not None and parallel.executor is None:
        parallel = None  # the chains' arrangement only
    if parallel is not None:
        _refuse_beside_executor(seed, saving, draws_file)
    adaptation = adaptation_for(kernel, settings, init, checks)
    draws_path = None if draws_file is None else check_draws_file(draws_file)
    if checks:
        check_kernel_gradient(kernel, init)
    if parallel is not None:
        steps = 0 if adaptation is None else adaptation.n_warmup
        trace = sample_on_executor(
            parallel,
            sample,
            kernel,
            init,
            n_steps,
            seed,
            warmup=attrs.evolve(settings, steps=steps, switch=None),  # groups keep theirs
            backend=backend,
            executor=Parallel(chains=chains, threads=threads),  # each group's, in its process
            schedule=schedule,
            thin=thin,
            checks=False,  # checked below, once, on all the chains
        )
        if checks and adaptation is not None and trace.warmup is not None:
            adaptation.check(trace.warmup)
        if switch is not None:
            trace = attrs.evolve(trace, switch=not_checked("chains run through an executor"))
    else:
        run = _start(
            kernel, init, n_steps, seed, schedule, backend, thin, saving, draws_path, chains,
            threads,
        )  # fmt: skip
        if adaptation is not None and _warm_up(run, adaptation, progress, threads):
            return trace_of(run, run.ks, interrupted=True)  # the warm-up's last state
        record = None if switch is None else not_checked(why_not(run, switch) or "")
        if switch is not None and not why_not(run, switch):

            def restart(new: Ladder, x: Any) -> Run:
                """A run of ``new`` from positions ``x`` on the same streams, warmed up."""
                follow = _start(new, x, n_steps, run.streams, schedule, backend, thin, None,
                                None, chains, threads)  # fmt: skip
                new_adaptation = adaptation_for(new, settings, x, checks)
                stopped = new_adaptation is not None and _warm_up(
                    follow, new_adaptation, progress, threads
                )
                return follow, stopped

            run, record, stopped = run_switching(run, switch, restart)
            if stopped:
                return finish(run, record, progress, interrupted=True)
        trace = finish(run, record, progress)
    if checks:
        check_trace(trace)
    return trace


def _as_thin(thin: Any, n_steps: int) -> int:
    thin = positive_int("thin", thin)
    if thin > n_steps:
        raise ValueError(
            f"thin={thin} exceeds n_steps={n_steps}: no draw would be kept "
            "(thin must be at most n_steps)"
        )
    return thin


def _refuse_beside_executor(seed: Any, saving: Checkpoint | None, draws_file: Any) -> None:
    if isinstance(seed, ChainStreams):
        raise ValueError(
            "seed: a ChainStreams cannot be split over an executor's groups; pass the run's "
            "seed (an int or a SeedSequence) and each group gets its chains' streams"
        )
    if saving is not None:
        raise ValueError(f"checkpoint={saving!r} cannot be combined with executor")
    if draws_file is not None:
        raise ValueError(f"draws_file={str(draws_file)!r} cannot be combined with executor")


def _start(
    kernel: Ladder,
    init: Any,
    n_steps: int,
    seed: Seed,
    schedule: str,
    backend: str | None,
    thin: int,
    saving: Checkpoint | None,
    draws_file: Path | None,
    chains: str = "auto",
    threads: int | None = None,
) -> Run:
    """The run before its first step (and before warm-up)."""
    path = None if saving is None else saving.path
    if path is not None:
        check_checkpoint_target(path)
        if draws_file is not None and draws_file.resolve() == path.resolve():
            raise ValueError(f"draws_file and checkpoint are the same file {str(path)!r}")
    n_chains = batch.n_chains(init.state if isinstance(init, LadderState) else init)
    if isinstance(seed, ChainStreams):
        if seed.n_chains != n_chains:
            raise ValueError(f"seed has streams for {seed.n_chains} chains but init has {n_chains}")
        streams = seed
    else:
        streams = ChainStreams.for_chains(seed, n_chains)
    # the kernel as given (before warm-up), as a checkpoint records it: its description,
    # and (only with a checkpoint file: it hashes the target's data) a fingerprint of the
    # parameters the description leaves out
    described = json_roundtrip(kernel.describe())
    if path is not None:
        described["parameters_sha256"] = kernel_fingerprint(kernel)
    ks = initial_state(kernel, init, streams.view())
    chosen = backend_for(kernel, ks, schedule, backend, chains, threads)
    allocate = None
    if draws_file is not None:  # every leaf's file, now that the draws' structure is known
        check_draws_file(draws_file, len(batch.leaves(kernel.map.draw(ks.state))))
        allocate = memmap_allocator(draws_file)
        draws_file = draws_file.resolve()
    recorder = Recorder(n_steps, n_chains, thin, allocate, max_rung=kernel.max_rung)
    block = n_steps if saving is None else saving.block(n_steps)
    return Run(
        kernel, described, ks, recorder, streams, schedule, chosen, block, None, path,
        draws_file=draws_file,
    )  # fmt: skip


def _warm_up(run: Run, adaptation: Adaptation, progress: bool, threads: int | None) -> bool:
    """Warm the run's kernel up (its kernel, state and ``warm`` replaced); whether it was
    interrupted (the warm-up's draws are dropped, its last state kept). A JAX run whose
    chains' arrangement was measured (``"auto"``) is arranged again for the adapted
    kernel (at most ``threads`` threads)."""
    bar = Progress(adaptation.n_warmup, label="warm-up", enabled=progress)
    try:
        run.kernel, run.ks, run.warm = run_warmup(
            run.kernel,
            run.ks,
            adaptation,
            adaptation.n_warmup,
            run.streams,
            recorder=Recorder,
            schedule=run.schedule,
            backend=run.backend.name,
            on_progress=bar.update if progress else None,
        )
    except KeyboardInterrupt as err:
        run.ks = getattr(err, "state", run.ks)
        return True
    finally:
        bar.close()
    if run.backend.timings is not None:  # chosen by measurement: again, for the adapted kernel
        run.backend = choose_chains(run.kernel, run.ks, run.backend, "auto", threads)
    return False


__all__ = ["sample"]
