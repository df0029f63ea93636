"""Warm-up: adapt what the user left unset, on the run's own driver.

What is adapted is the kernel's :attr:`~ladder_mcmc.ladder.kernel.Ladder.adapt` (what
:func:`~ladder_mcmc.lahmc` and its kin were not given); for a kernel put together by
hand, the step size and the mass matrix, from the values it holds.

* **Step size** ``ε``: a first guess (:func:`~ladder_mcmc.run.step_size.initial_step_size`),
  then dual averaging of the probability of taking the first rung towards
  ``target_prob`` (:class:`~ladder_mcmc.run.step_size.DualAveraging`).
* **Mass matrix**: the positions' variance (diagonal) or covariance (dense) over slow
  windows pooled over chains, regularised towards ``10⁻³ I``; the windows double in
  length between a fast initial and a fast terminal buffer (Stan's schedule,
  :func:`stan_windows`).
* **Leapfrog steps per rung** ``M`` and **refresh** ``β``: at the end of each window,
  from the spectrum of the window's covariance in the coordinates of unit mass
  (:mod:`ladder_mcmc.run.trajectory`: a ChEES criterion and MEADS's damping); ``M``
  follows ``ε`` between windows so that the trajectory length ``εM`` stays put.

The chains run in short blocks on the driver :func:`~ladder_mcmc.engine.contract.driver_for`
picks, each chain on its own random stream, ``ε`` updated between blocks
(``docs/design.md`` §12). The statistics are read from the records. Warm-up draws are dropped; what was
adapted and what it cost is a :class:`WarmupResult` (``docs/sampling.md``).
"""

from __future__ import annotations

import math
import time
import warnings

import attrs
import numpy as np

from ladder_mcmc.diagnostics.checks import SamplingWarning
from ladder_mcmc.engine.contract import driver_for
from ladder_mcmc.engine.streams import ChainStreams
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.ladder.kernel import Ladder, LadderState, log_density_of
from ladder_mcmc.run.kernel_parameters import (
    ADAPTABLE,
    apply_warmup,
    check_adaptable,
    check_mass_adaptation,
    current_beta,
    length_jitter,
    with_hmc_parameters,
)
from ladder_mcmc.run.progress import Progress
from ladder_mcmc.run.recorder import Recorder
from ladder_mcmc.run.step_size import MIN_STEP_SIZE, DualAveraging, initial_step_size
from ladder_mcmc.run.trajectory import (
    MAX_N_LEAPFROG,
    chees_n_leapfrog,
    meads_beta,
    whitened_eigenvalues,
)
from ladder_mcmc.run.warmup_result import GroupedWarmup, WarmupResult
from ladder_mcmc.validation import positive_finite, positive_int

#: a warm-up that adapts the mass, the length or β needs a slow window between its
#: two buffers (Stan's schedule has one from this many steps on); dual averaging of
#: the step size needs as many steps to come down from its first, deliberately large,
#: iterates
MIN_WINDOWED_WARMUP = 20
#: the shortest warm-up whose last quarter tells flips at the adapted step from the
#: excursions of dual averaging's iterates (shorter ones: the run's own checks tell)
MIN_FLIP_CHECK_WARMUP = 100
#: steps per block (at least; each block is one driver call) times chains
BLOCK_CHAIN_STEPS = 16
#: the most leapfrog steps per rung during warm-up: before the mass fits, a window's
#: covariance may hold the chains' way in from their starts, which asks for a tiny
#: step, and the length ``εM`` a well-fitted mass would want would then cost
#: thousands of gradients per rung (the final ``M`` is not capped by this)
MAX_WARMUP_N_LEAPFROG = 64


def stan_windows(n_warmup: int) -> tuple[int, int, list[int]]:
    """Stan's warm-up schedule: (initial buffer, terminal buffer, slow window ends)."""
    init, term, base = 75, 50, 25
    if n_warmup < 20:
        return n_warmup, 0, []
    if init + term + base > n_warmup:
        init, term = int(0.15 * n_warmup), int(0.1 * n_warmup)
        base = n_warmup - init - term
    ends, start, size = [], init, base
    while start < n_warmup - term:
        end = start + size
        if end + 2 * size > n_warmup - term:
            end = n_warmup - term
        ends.append(end)
        start, size = end, 2 * size
    return init, term, ends


def regularised_covariance(x: np.ndarray, dense: bool) -> np.ndarray:
    """Stan's shrinkage: ``(n/(n+5)) Σ̂ + 10⁻³ (5/(n+5)) I`` from draws (n, dim)."""
    n = x.shape[0]
    if dense:
        cov = np.atleast_2d(np.cov(x, rowvar=False))
        cov = (cov + cov.T) / 2  # exactly symmetric, whatever the rounding of np.cov
        return (n / (n + 5.0)) * cov + 1e-3 * (5.0 / (n + 5.0)) * np.eye(x.shape[1])
    return (n / (n + 5.0)) * x.var(axis=0, ddof=1) + 1e-3 * (5.0 / (n + 5.0))


def to_adapt(kernel: Ladder, adapt_mass: bool, trajectory_length: float | None) -> list[str]:
    """What a warm-up of ``kernel`` adapts, in :data:`ADAPTABLE`'s order.

    Raises
    ------
    ValueError
        If ``kernel.adapt`` names something warm-up cannot adapt, or
        ``trajectory_length`` is given for a kernel whose ``n_leapfrog`` was given.
    """
    unknown = sorted(set(kernel.adapt or ()) - set(ADAPTABLE))
    if unknown:
        raise ValueError(
            f"kernel.adapt names {unknown}, which warm-up cannot adapt (it adapts "
            f"{', '.join(ADAPTABLE)})"
        )
    if (
        trajectory_length is not None
        and kernel.adapt is not None
        and "n_leapfrog" not in kernel.adapt
    ):
        raise ValueError(
            f"trajectory_length={trajectory_length!r}, but the kernel's n_leapfrog was given "
            f"(n_steps={kernel.map.describe().get('n_steps')}) and is kept as given; leave "
            "n_leapfrog unset to have M = round(trajectory_length / step_size)"
        )
    names = set(kernel.adapt) if kernel.adapt is not None else {"step_size", "inverse_mass"}
    if not adapt_mass:
        names.discard("inverse_mass")
    if trajectory_length is not None:
        names.discard("n_leapfrog")  # M follows ε for the given length instead
    if current_beta(kernel) is None:
        names.discard("beta")
    return [name for name in ADAPTABLE if name in names]


def check_warmup_length(n_warmup: int, adapted: list[str]) -> None:
    """Refuse a warm-up too short for what it adapts (:data:`MIN_WINDOWED_WARMUP`)."""
    if adapted and n_warmup < MIN_WINDOWED_WARMUP:
        raise ValueError(
            f"warmup={n_warmup} is too short to adapt {', '.join(adapted)}: it needs at "
            f"least {MIN_WINDOWED_WARMUP} steps (a slow window between two buffers, and "
            "dual averaging's first steps; 1000 is the default); pass a longer warmup, or "
            "give these values to the kernel"
        )


def dual_averaging_gain(n_chains: int) -> float:
    """Dual averaging's ``γ`` for a statistic averaged over ``n_chains`` indicators.

    The iterate ``log ε`` carries the statistic's noise times ``1/γ``. Stan's
    ``γ = 0.05`` suits NUTS's statistic, an average over a whole trajectory; here
    each step gives the fraction of ``n_chains`` chains that took the first rung,
    whose standard deviation is about ``0.4/√n_chains``. ``γ = 0.8/√n_chains``
    (at least 0.05) keeps the iterate's noise near ``e^{±0.5}`` for any number of
    chains.
    """
    return max(0.05, 0.8 / math.sqrt(n_chains))


def _redraw_momentum(kernel: Ladder, ks: LadderState, rng) -> LadderState:
    """Fresh momenta from the (new) metric; warm-up need not keep the old ones."""
    state = ks.state
    state = attrs.evolve(state, v=kernel.map.metric.sample_momentum(rng, state.v.shape))
    lp, _ = log_density_of(kernel.map, state)
    return attrs.evolve(ks, state=state, log_density=lp)




@attrs.define
class _Adapter:
    """The quantities being adapted and their current values."""

    adapted: list[str]
    jitter: float
    target_prob: float
    trajectory_length: float | None  # given by the user: M = round(T / ε)
    dual: DualAveraging | None = None
    eigenvalues: np.ndarray = attrs.field(factory=lambda: np.ones(1))
    time: float | None = None  # εM being kept while ε moves

    def length_for(self, eps: float, cap: int = MAX_WARMUP_N_LEAPFROG) -> int | None:
        """``M`` for the step ``eps``: the given or adapted length over ``eps``."""
        if self.trajectory_length is not None:
            m = round(self.trajectory_length / eps)
        elif "n_leapfrog" not in self.adapted:
            return None
        elif self.time is None:
            m = chees_n_leapfrog(self.eigenvalues, eps, self.jitter)
        else:
            m = round(self.time / eps)
        return int(min(max(1, m), cap))

    def refit(self, kernel: Ladder, final: bool = False) -> Ladder:
        """Length and β for the current ε and eigenvalues: at a window's end, and
        (``final``) at the end of warm-up, where ``M`` may exceed
        :data:`MAX_WARMUP_N_LEAPFROG` and ``β`` leaves 1 for MEADS's value."""
        cap = MAX_N_LEAPFROG if final else MAX_WARMUP_N_LEAPFROG
        eps = float(kernel.map.step_size)
        m = None
        if "n_leapfrog" in self.adapted:
            m = chees_n_leapfrog(self.eigenvalues, eps, self.jitter, cap)
            self.time = eps * m
        elif self.trajectory_length is not None:
            m = self.length_for(eps, cap)
        beta = None
        if "beta" in self.adapted:  # a full refresh until the end of warm-up
            n = m if m is not None else int(kernel.map.n_steps)
            beta = meads_beta(float(self.eigenvalues[0]), eps, n) if final else 1.0
        return with_hmc_parameters(kernel, n_steps=m, beta=beta)


#: warm-up steps ``sample`` takes by default for a kernel that leaves something to adapt
DEFAULT_WARMUP = 1000


def resolve_warmup(
    kernel: Ladder,
    warmup: int | None,
    adapt_mass: bool = True,
    trajectory_length: float | None = None,
) -> int:
    """The warm-up steps of a run: ``warmup`` if given (checked), else
    :data:`DEFAULT_WARMUP` when the kernel leaves something to adapt (with these
    settings: not the mass when ``adapt_mass=False``), else 0."""
    if warmup is None:
        if not kernel.adapt:
            return 0
        return DEFAULT_WARMUP if to_adapt(kernel, adapt_mass, trajectory_length) else 0
    if isinstance(warmup, (bool, np.bool_)) or not isinstance(warmup, (int, np.integer)):
        raise ValueError(f"warmup must be a non-negative integer, got {warmup!r}")
    if warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer, got {warmup!r}")
    return int(warmup)


def warn_unadapted(kernel: Ladder, stacklevel: int) -> None:
    """Say that a kernel runs with starting values it meant warm-up to adapt."""
    # the identity mass is a natural default; a step, a length or a β of 1 is not
    names = ", ".join(sorted(set(kernel.adapt or ()) - {"inverse_mass"}))
    if not names:
        return
    described = kernel.map.describe()
    values = {"step_size": described.get("step_size"), "n_leapfrog": described.get("n_steps")}
    values["beta"] = current_beta(kernel)
    start = ", ".join(f"{n}={values[n]}" for n in sorted(values) if n in names)
    warnings.warn(
        f"warmup=0, but the kernel leaves {names} to adapt: it runs with their starting "
        f"values ({start}); pass warmup > 0 (the default), or give these values to the "
        "kernel",
        SamplingWarning,
        stacklevel=stacklevel + 1,
    )


def warmup(
    kernel: Ladder,
    ks: LadderState,
    n_warmup: int,
    streams: ChainStreams | int | np.random.Generator | None,
    *,
    schedule: str = "ragged",
    backend: str = "numpy",
    target_prob: float = 0.8,
    adapt_mass: bool = True,
    dense: bool = False,
    trajectory_length: float | None = None,
    progress: bool = False,
    checks: bool = True,
) -> tuple[Ladder, LadderState, WarmupResult]:
    """Adapt an HMC-family kernel's unset parameters (see the module's docstring).

    Parameters
    ----------
    kernel : Ladder
        A kernel whose map has ``step_size`` and ``metric`` (e.g. ``lahmc(target)``).
    ks : LadderState
        Starting kernel state.
    n_warmup : int
        Warm-up steps (Stan's schedule of windows; at least :data:`MIN_WINDOWED_WARMUP`
        when anything is adapted).
    streams : ChainStreams, or a seed or Generator for :meth:`ChainStreams.for_chains`
        The chains' random streams.
    schedule : {"ragged", "synchronous"}
        The driver's schedule.
    target_prob : float in (0, 1)
        Target mean probability of taking the first rung.
    adapt_mass, dense : bool
        Adapt a (``dense``: dense) inverse mass matrix, if the kernel leaves it unset.
    trajectory_length : float, optional
        ``T``: instead of adapting ``M``, keep ``M = max(1, round(T / ε))``.
    progress : bool
        Progress bar on stderr.
    checks : bool
        Warn of a warm-up that went bad (:func:`check_warmup`).

    Returns
    -------
    kernel, ks, WarmupResult
        The adapted kernel, its state after warm-up, and the warm-up record.

    Warns
    -----
    SamplingWarning
        (``checks``) If the warm-up ends with most steps flipping or a step size below
        ``10⁻¹⁰``.
    """
    started = time.perf_counter()
    n_warmup = positive_int("warmup", n_warmup)
    check_adaptable(kernel)
    if trajectory_length is not None:
        trajectory_length = positive_finite("trajectory_length", trajectory_length)
    adapted = to_adapt(kernel, adapt_mass, trajectory_length)
    check_warmup_length(n_warmup, adapted)
    check_mass_adaptation(kernel, n_warmup, "inverse_mass" in adapted, dense)
    n_chains = len(ks.direction)
    if not isinstance(streams, ChainStreams):
        streams = ChainStreams.for_chains(streams, n_chains)
    rng = streams.view()
    grad_evals = np.zeros(n_chains, dtype=np.int64)
    ad = _Adapter(adapted, length_jitter(kernel), target_prob, trajectory_length)
    if "step_size" in adapted:
        eps, calls = initial_step_size(kernel, ks, rng, target_prob)
        grad_evals += calls
        ad.dual = DualAveraging(eps, target=target_prob, gamma=dual_averaging_gain(n_chains))
        kernel = with_hmc_parameters(kernel, step_size=eps)
    kernel = ad.refit(kernel)
    windowed = any(n in adapted for n in ("inverse_mass", "n_leapfrog", "beta"))
    init, _term, ends = stan_windows(n_warmup) if windowed else (n_warmup, 0, [])
    block = max(1, math.ceil(BLOCK_CHAIN_STEPS / n_chains))
    first_rung: list[np.ndarray] = []
    flips: list[np.ndarray] = []
    bar = Progress(n_warmup, label="warm-up", enabled=progress)
    t = 0
    try:
        while t < n_warmup:  # a segment: up to the next window's end
            stop = ends[0] if ends else n_warmup
            # the draws are kept for a window only
            thin = 1 if ends else stop - t + 1
            rec = Recorder(stop - t, n_chains, thin, max_rung=kernel.max_rung)
            shown = (lambda n, t=t: bar.update(t + n)) if progress else None  # type: ignore[misc]
            kernel, ks, grads = _run_segment(
                kernel, ks, rec, streams, ad, block, driver_for(kernel, schedule, backend), shown
            )
            grad_evals += grads
            first_rung.append((rec.rungs == 1).mean(axis=1))
            flips.append((rec.rungs == 0).mean(axis=1))
            if ends:
                # the window's draws: those of the blocks that start in it
                skip = -(-max(0, init - t) // block) * block
                x = np.asarray(rec.draws, dtype=float)[skip:]
                kernel, ks = _end_window(kernel, ks, x.reshape(-1, x.shape[-1]), ad, dense, rng)
                ends.pop(0)
            t = stop
            bar.update(t)
    finally:
        bar.close()
    if ad.dual is not None:
        eps = ad.dual.final
        kernel = with_hmc_parameters(kernel, step_size=eps)
    kernel = attrs.evolve(ad.refit(kernel, final=True), adapt=frozenset())  # nothing left
    tail = max(1, n_warmup // 4)
    result = WarmupResult(
        step_size=float(kernel.map.step_size),
        inverse_mass=kernel.map.metric.inverse_mass,
        grad_evals=grad_evals,
        n_steps=n_warmup,
        first_stage_prob=float(np.concatenate(first_rung)[-tail:].mean()),
        n_leapfrog=int(kernel.map.n_steps),
        beta=current_beta(kernel),
        largest_eigenvalue=float(ad.eigenvalues[0]),
        adapted=tuple(adapted),
        length_set="n_leapfrog" in adapted or trajectory_length is not None,
        wall_time=time.perf_counter() - started,
        flip_fraction=float(np.concatenate(flips)[-tail:].mean()),
    )
    if checks:
        check_warmup(result, stacklevel=5)
    return kernel, ks, result


def _run_segment(kernel, ks, rec, streams, ad: _Adapter, block, driver, on_progress):
    """Run the steps ``rec`` holds in blocks of ``block`` steps at one ``ε``, dual
    averaging (if adapted) after each, on the run's driver. Returns the kernel after the
    last block, the chains' state and their gradient evaluations."""
    size = rec.n_steps
    if ad.dual is None:  # nothing changes between blocks: one call
        ks = driver(kernel, ks, rec, streams, on_progress, until=size)
        return kernel, ks, _grad_evals(rec, kernel, 0, size)
    grads = np.zeros(rec.n_chains, dtype=np.int64)
    start = 0
    while start < size:
        stop = min(size, start + block)
        ks = driver(kernel, ks, rec, streams, on_progress, until=stop)
        grads += _grad_evals(rec, kernel, start, stop)
        for stat in (rec.rungs[start:stop] == 1).mean(axis=1):
            eps = ad.dual.update(float(stat))
        # the length follows the averaged step, not the noisy iterate (a few
        # chains' first-rung indicators make the iterate jump by factors of e)
        kernel = with_hmc_parameters(kernel, step_size=eps, n_steps=ad.length_for(ad.dual.final))
        start = stop
    return kernel, ks, grads


def _end_window(kernel, ks, draws, ad: _Adapter, dense: bool, rng):
    """A slow window's end: new mass, spectrum, length and β; fresh momenta; DA restarted."""
    if "inverse_mass" in ad.adapted:
        kernel = with_hmc_parameters(kernel, metric=Metric(regularised_covariance(draws, dense)))
        ks = _redraw_momentum(kernel, ks, rng)
    if draws.shape[0] > 1:
        cov = np.atleast_2d(np.cov(draws, rowvar=False))
        ad.eigenvalues = whitened_eigenvalues(cov, kernel.map.metric.inverse_mass)
    if ad.dual is not None:  # from the averaged step, as the iterate is noisy
        eps = ad.dual.final
        ad.dual.restart(eps, explore=1.0)
        kernel = with_hmc_parameters(kernel, step_size=eps)
    return ad.refit(kernel), ks


def _grad_evals(rec: Recorder, kernel: Ladder, start: int, stop: int) -> np.ndarray:
    """Gradient evaluations per chain of the recorded steps ``start .. stop − 1``."""
    return rec.grad_evals_per_step(int(kernel.map.cost), stop)[start:].sum(axis=0)


def check_warmup(result: WarmupResult | GroupedWarmup, stacklevel: int = 2) -> None:
    """Warn (:class:`~ladder_mcmc.SamplingWarning`) of a warm-up that ended with half its
    last steps flipping or a step size below ``10⁻¹⁰`` (each group of a grouped one)."""
    for one in getattr(result, "groups", (result,)):
        _warn_if_bad(one, stacklevel + 1)


def _warn_if_bad(result: WarmupResult, stacklevel: int) -> None:
    if result.step_size < MIN_STEP_SIZE:
        warnings.warn(
            f"warm-up ended with step size {result.step_size:.3g} < {MIN_STEP_SIZE:g}: the "
            "chains cannot move (a wrong gradient, a density that is not smooth, or a start "
            "far in the tails); check the target, or start the chains elsewhere",
            SamplingWarning,
            stacklevel=stacklevel + 1,
        )
    if result.flip_fraction >= 0.5 and result.n_steps >= MIN_FLIP_CHECK_WARMUP:
        warnings.warn(
            f"warm-up ended with {result.flip_fraction:.0%} of its last steps flipping: the "
            f"adapted kernel (ε={result.step_size:.3g}, M={result.n_leapfrog}) rarely moves; "
            "a longer warm-up, a dense mass (dense_mass=True) or a reparametrisation may help",
            SamplingWarning,
            stacklevel=stacklevel + 1,
        )


__all__ = [
    "DEFAULT_WARMUP",
    "MIN_WINDOWED_WARMUP",
    "resolve_warmup",
    "warn_unadapted",
    "check_warmup",
    "GroupedWarmup",
    "WarmupResult",
    "apply_warmup",
    "check_mass_adaptation",
    "regularised_covariance",
    "stan_windows",
    "to_adapt",
    "warmup",
    "with_hmc_parameters",
    "DualAveraging",
]
