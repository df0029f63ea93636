"""Run a kernel on every model of the suite, and NumPyro's NUTS beside it.

:func:`run_suite` runs any kernel factory ``target -> kernel`` (default
:func:`~ladder_mcmc.lahmc`, the tuning-free default) on each model of
:mod:`ladder_mcmc.bench.registry`, for each seed: ``chains`` chains from the model's
initial points, ``warmup`` steps of warm-up, ``draws`` kept steps. Every run gets its
figures (:mod:`ladder_mcmc.bench.figures`) and its verdict
(:mod:`ladder_mcmc.bench.verdict`); with ``nuts=True`` and NumPyro installed, NUTS runs
from the same points with the same warm-up and draws (:mod:`ladder_mcmc.bench.nuts`).
A run cut short by Ctrl-C is marked ``interrupted`` (never passed), and the suite stops
there.
:mod:`ladder_mcmc.bench.report` writes the result as JSON and Markdown.
"""

from __future__ import annotations

import functools
import os
import platform
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.bench.figures import Figures, figures_of
from ladder_mcmc.bench.moments import Moments
from ladder_mcmc.bench.nuts import DEFAULT_NUTS, NUTS_LABEL, NutsSettings, nuts_version, run_nuts
from ladder_mcmc.bench.registry import SuiteModel, select
from ladder_mcmc.bench.runs import KernelFactory, SamplerRun, run_kernel
from ladder_mcmc.bench.verdict import Verdict, judge, median_step_sizes
from ladder_mcmc.bench.warm_cache import cold_and_warm
from ladder_mcmc.hamiltonian.geometry import GeometrySwitch
from ladder_mcmc.hamiltonian.samplers import lahmc
from ladder_mcmc.validation import positive_int

BACKENDS = (None, "numpy", "jax")
COMPILE_OUT = ("subtract", "warm")
"""How a run's compile time is left out of its seconds: ``"subtract"`` its compile events
from one run's wall time; ``"warm"`` time the run again with JAX's persistent cache warm
(:func:`~ladder_mcmc.bench.warm_cache.cold_and_warm`, three runs of each)."""


def _seeds(value: Any) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    seeds = tuple(int(positive_int("seeds", s, minimum=0)) for s in value)
    if not seeds:
        raise ValueError("seeds: give at least one seed")
    return seeds


def _compile_out(value: Any) -> str:
    if value not in COMPILE_OUT:
        raise ValueError(f"compile_out must be 'subtract' or 'warm', got {value!r}")
    return value


def _backend(value: Any) -> str | None:
    if value not in BACKENDS:
        raise ValueError(f"backend must be None, 'numpy' or 'jax', got {value!r}")
    return value


@attrs.frozen
class SuiteSettings:
    """How the suite runs.

    Attributes
    ----------
    models : tuple of str
        The models (names of :data:`~ladder_mcmc.bench.registry.SUITE`).
    seeds : tuple of int
        One run per model, sampler and seed.
    chains : int
        Chains per run (at least 2, for R̂).
    warmup : int
        Warm-up steps (iterations, for NUTS) per chain.
    draws : int
        Kept steps per chain after warm-up (at least 4).
    kernel : str
        The name of the kernel factory.
    nuts : bool
        Whether NumPyro's NUTS ran beside it.
    nuts_models : tuple of str or None
        The models NUTS ran on (None: all of them).
    backend : str or None
        ``sample``'s backend: None (the package's numpy targets, numpy loop), ``"numpy"``,
        or ``"jax"`` (the models' JAX targets, ``from_jax``, on the compiled loop).
    nuts_settings : NutsSettings
        NUTS's settings.
    compile_out : {"subtract", "warm"}
        How compile time is left out of the seconds (:data:`COMPILE_OUT`): ``"warm"``
        makes each run that compiles three times (NUTS's; the package's with ``backend =
        "jax"``); ``"subtract"`` flatters NumPyro's sequential chains, which sample
        while they compile, and ``"warm"`` much less.
    """

    models: tuple[str, ...] = attrs.field(converter=tuple)
    seeds: tuple[int, ...] = attrs.field(converter=_seeds)
    chains: int = attrs.field(default=4)
    warmup: int = attrs.field(default=1000)
    draws: int = attrs.field(default=2000)
    kernel: str = "lahmc"
    nuts: bool = False
    backend: str | None = attrs.field(default=None, converter=_backend)
    nuts_settings: NutsSettings = DEFAULT_NUTS
    nuts_models: tuple[str, ...] | None = attrs.field(
        default=None, converter=attrs.converters.optional(tuple)
    )
    compile_out: str = attrs.field(default="subtract", converter=_compile_out)

    def __attrs_post_init__(self) -> None:
        positive_int("chains", self.chains, minimum=2)
        positive_int("warmup", self.warmup, minimum=0)
        positive_int("draws", self.draws, minimum=4)


@attrs.frozen
class RunResult:
    """One run of one sampler on one model with one seed: its figures and its verdict.

    Attributes
    ----------
    model, sampler : str
        Which model; which sampler (the kernel factory's name, or ``"NUTS (NumPyro)"``).
    seed : int
        The suite's seed of the run.
    figures : Figures
        Efficiency, convergence, accuracy.
    verdict : Verdict
        Pass or fail, and why.
    grad_evals, warmup_grad_evals : float
        Gradient evaluations of sampling and of warm-up, all chains.
    wall_time, compile_time : float
        Seconds of warm-up and sampling with compile time left out, and the seconds left
        out (as :class:`~ladder_mcmc.bench.runs.SamplerRun` says, by ``compile_out``).
    step_size : float or None
        The step size after warm-up.
    backend : str
        What ran the steps.
    notes : tuple of str
        Other warnings the run raised.
    interrupted : bool
        The run was cut short (Ctrl-C): not judged, not passed.
    """

    model: str
    sampler: str
    seed: int
    figures: Figures
    verdict: Verdict
    grad_evals: float = float("nan")
    warmup_grad_evals: float = float("nan")
    wall_time: float = float("nan")
    compile_time: float = 0.0
    step_size: float | None = None
    backend: str = ""
    notes: tuple[str, ...] = ()
    interrupted: bool = False

    @property
    def passed(self) -> bool:
        return self.verdict.passed and not self.interrupted


@attrs.frozen
class SuiteResult:
    """The suite's runs and how they were made.

    Attributes
    ----------
    settings : SuiteSettings
    runs : tuple of RunResult
        Model by model, then sampler, then seed.
    meta : dict
        Versions, machine, the suite's wall time (seconds), NUTS's status.
    interrupted : bool
        Ctrl-C cut the suite short: the runs are those made until then, the last one
        marked ``interrupted``.
    """

    settings: SuiteSettings
    runs: tuple[RunResult, ...]
    meta: dict = attrs.field(factory=dict)
    interrupted: bool = False

    @property
    def passed(self) -> bool:
        """Every run passed, and the suite was not interrupted."""
        return not self.interrupted and all(r.passed for r in self.runs)

    @property
    def failed(self) -> tuple[RunResult, ...]:
        """The runs that failed."""
        return tuple(r for r in self.runs if not r.passed)

    @property
    def samplers(self) -> tuple[str, ...]:
        """The samplers, in the order they ran."""
        return tuple(dict.fromkeys(r.sampler for r in self.runs))


def _name_of(factory: Callable) -> str:
    return getattr(factory, "__name__", None) or type(factory).__name__


def _seed_sequence(seed: int, model: str) -> np.random.SeedSequence:
    """The seed of a model's runs: the same points whichever other models run."""
    return np.random.SeedSequence([seed, zlib.crc32(model.encode())])


@attrs.frozen
class _Raw:
    model: str
    sampler: str
    seed: int
    run: SamplerRun | None
    figures: Figures
    error: str | None
    interrupted: bool = False


def _measure(
    model: SuiteModel, target: Any, moments: Moments, run: Callable[[], SamplerRun]
) -> tuple[SamplerRun | None, Figures, str | None, bool]:
    """Run, and the figures of what it drew; an error as its message; whether Ctrl-C cut
    it short (then no figures)."""
    try:
        done = run()
    except KeyboardInterrupt:  # NUTS's; sample returns what it drew instead
        return None, Figures(), None, True
    except Exception as err:  # a user's kernel may fail on one model: report it, go on
        return None, Figures(), f"{type(err).__name__}: {err}", False
    if done.interrupted:
        return done, Figures(), None, True
    return done, figures_of(done, model.quantities(target, done.positions), moments), None, False


def _prime(factory: KernelFactory, model: SuiteModel, backend: str | None) -> bool:
    """A short untimed run, so that the first timed one pays no import or first-call cost
    (errors are left to the timed runs to report); whether Ctrl-C cut it short."""
    try:
        target = model.target()
        sampled = model.jax_target(target) if backend == "jax" else target
        init = model.initial_points(target, 2, np.random.default_rng(0))
        done = run_kernel(
            factory(sampled), init, warmup=20, draws=10, seed=_seed_sequence(0, ""),
            backend=backend, switch=_switch(factory, sampled),
        )  # fmt: skip
    except Exception:
        return False  # the timed runs report what fails
    return done.interrupted


def _run_ours(
    factory: KernelFactory,
    target: Any,
    init: np.ndarray,
    warmup: int,
    draws: int,
    seed: np.random.SeedSequence,
    backend: str | None,
) -> SamplerRun:
    return run_kernel(
        factory(target), init, warmup=warmup, draws=draws, seed=seed, backend=backend,
        switch=_switch(factory, target),
    )  # fmt: skip


def _switch(factory: KernelFactory, target: Any) -> Any:
    """The default kernel runs as ``sample(target)`` does: ``lahmc`` with its geometry
    switch (:class:`~ladder_mcmc.hamiltonian.geometry.GeometrySwitch`); others without."""
    return GeometrySwitch(target) if factory is lahmc else None


def run_suite(
    kernel_factory: KernelFactory | None = None,
    models: Sequence[str] | None = None,
    seeds: Sequence[int] | int = (0, 1, 2),
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 2000,
    nuts: bool = False,
    backend: str | None = None,
    *,
    nuts_settings: NutsSettings = DEFAULT_NUTS,
    nuts_models: Sequence[str] | None = None,
    compile_out: str = "subtract",
    on_run: Callable[[RunResult], None] | None = None,
) -> SuiteResult:
    """Run ``kernel_factory`` on the suite's models, and NUTS beside it if asked.

    Parameters
    ----------
    kernel_factory : callable, optional
        ``target -> kernel`` (a :class:`~ladder_mcmc.Ladder`); default
        :func:`~ladder_mcmc.lahmc`, every setting left to warm-up.
    models : sequence of str, optional
        Names of :data:`~ladder_mcmc.bench.registry.SUITE` (or posteriordb names);
        default the default set (:data:`~ladder_mcmc.bench.registry.DEFAULT`: all but
        the hard models, :data:`~ladder_mcmc.bench.registry.HARD`).
    seeds : sequence of int, or int
        Seeds of the runs (an int: that one seed).
    chains, warmup, draws : int
        Chains per run, warm-up steps and kept steps per chain.
    nuts : bool
        Also run NumPyro's NUTS (if NumPyro is installed; else ``meta["nuts"]`` says why
        not).
    backend : {None, "numpy", "jax"}
        ``sample``'s backend; ``"jax"`` runs the models' JAX targets (``from_jax``).
    nuts_settings : NutsSettings
        NUTS's settings (NumPyro's defaults).
    nuts_models : sequence of str, optional
        With ``nuts``, run NUTS on these of the models only (default: on all).
    compile_out : {"subtract", "warm"}
        How compile time is left out of the seconds (:data:`COMPILE_OUT`).
    on_run : callable, optional
        Called with each :class:`RunResult` when it is judged (e.g. to print progress);
        verdicts on step sizes are final only in the returned result.

    Returns
    -------
    SuiteResult
        Every run's figures and verdict. If Ctrl-C cuts a run short, the suite stops: that
        run is marked ``interrupted`` (not judged, not passed) and so is the result.

    Examples
    --------
    >>> result = run_suite(models=["gauss2"], seeds=0, chains=2, warmup=100, draws=100)
    >>> [(r.model, r.sampler) for r in result.runs]
    [('gauss2', 'lahmc')]
    """
    if kernel_factory is None:
        kernel_factory = lahmc
    if not callable(kernel_factory):
        raise ValueError(
            f"kernel_factory must be a callable target -> kernel, got {kernel_factory!r}"
        )
    chosen = select(models)
    if nuts_models is not None:
        nuts_models = tuple(m.name for m in select(nuts_models))
    settings = SuiteSettings(
        models=tuple(m.name for m in chosen),
        seeds=seeds,
        chains=chains,
        warmup=warmup,
        draws=draws,
        kernel=_name_of(kernel_factory),
        nuts=False,
        backend=backend,
        nuts_settings=nuts_settings,
        nuts_models=nuts_models,
        compile_out=compile_out,
    )
    peer = nuts_version() if nuts else None
    if peer is None:
        peer_status = "not installed (pip install 'ladder_mcmc[peers]')" if nuts else "not asked"
    meta: dict[str, Any] = {
        "nuts": peer if peer else peer_status,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu_count": os.cpu_count(),
    }
    settings = attrs.evolve(settings, nuts=peer is not None)
    start = time.perf_counter()
    raw: list[_Raw] = []
    interrupted = _prime(kernel_factory, chosen[0], backend)
    try:
        for model in () if interrupted else chosen:
            interrupted = _run_model(model, settings, kernel_factory, raw, on_run)
            if interrupted:
                break
    except KeyboardInterrupt:  # outside a sampler (building a model, its figures)
        interrupted = True
    medians = {
        sampler: median_step_sizes(
            {
                m: [r.run.step_size for r in raw if r.sampler == sampler and r.model == m and r.run]
                for m in settings.models
            }
        )
        for sampler in dict.fromkeys(r.sampler for r in raw)
    }
    runs = tuple(_judged(r, medians[r.sampler]) for r in raw)
    meta["seconds"] = round(time.perf_counter() - start, 2)
    return SuiteResult(settings, runs, meta, interrupted)


def _run_model(
    model: SuiteModel,
    settings: SuiteSettings,
    factory: KernelFactory,
    raw: list[_Raw],
    on_run: Callable[[RunResult], None] | None,
) -> bool:
    """Every seed's runs of ``model``, appended to ``raw``; whether one was interrupted
    (the runs after it are not made)."""
    target = model.target()
    moments = model.moments(target)
    backend = settings.backend
    sampled = model.jax_target(target) if backend == "jax" else target
    wanted = settings.nuts and (settings.nuts_models is None or model.name in settings.nuts_models)
    log_p = model.jax_log_density(target) if wanted else None
    warmup, draws = settings.warmup, settings.draws
    for seed in settings.seeds:
        init_seed, ours_seed, nuts_seed = _seed_sequence(seed, model.name).spawn(3)
        init = model.initial_points(target, settings.chains, np.random.default_rng(init_seed))
        jobs = [
            (
                settings.kernel,
                functools.partial(
                    _run_ours, factory, sampled, init, warmup, draws, ours_seed, backend
                ),
            )
        ]
        if log_p is not None:
            jobs.append(
                (
                    NUTS_LABEL,
                    functools.partial(
                        run_nuts,
                        log_p,
                        init,
                        warmup=warmup,
                        draws=draws,
                        seed=nuts_seed,
                        settings=settings.nuts_settings,
                    ),
                )
            )
        for sampler, job in _timing(jobs, settings):
            done, figures, error, cut = _measure(model, target, moments, job)
            raw.append(_Raw(model.name, sampler, seed, done, figures, error, cut))
            if on_run is not None:
                on_run(_judged(raw[-1], None))
            if cut:
                return True
    return False


def _timing(
    jobs: list[tuple[str, Callable[[], SamplerRun]]], settings: SuiteSettings
) -> list[tuple[str, Callable[[], SamplerRun]]]:
    """The jobs, each that compiles timed by ``settings.compile_out``."""
    if settings.compile_out == "subtract":
        return jobs
    compiles = {NUTS_LABEL: True, settings.kernel: settings.backend == "jax"}
    return [
        (sampler, functools.partial(cold_and_warm, job) if compiles[sampler] else job)
        for sampler, job in jobs
    ]


def _judged(raw: _Raw, median_step: float | None) -> RunResult:
    run = raw.run
    verdict = judge(
        raw.figures,
        warmup_warnings=() if run is None else run.warmup_warnings,
        step_size=None if run is None else run.step_size,
        median_step_size=median_step,
        error=raw.error,
        interrupted=raw.interrupted,
    )
    if run is None:
        return RunResult(
            raw.model, raw.sampler, raw.seed, raw.figures, verdict, interrupted=raw.interrupted
        )
    return RunResult(
        raw.model,
        raw.sampler,
        raw.seed,
        raw.figures,
        verdict,
        grad_evals=run.grad_evals,
        warmup_grad_evals=run.warmup_grad_evals,
        wall_time=run.wall_time,
        compile_time=run.compile_time,
        step_size=run.step_size,
        backend=run.backend,
        notes=run.notes,
        interrupted=raw.interrupted,
    )


__all__ = ["BACKENDS", "COMPILE_OUT", "RunResult", "SuiteResult", "SuiteSettings", "run_suite"]
