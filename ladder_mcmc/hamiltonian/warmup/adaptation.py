"""Warm-up of the Hamiltonian kernels: what ``lahmc`` and its kin leave unset.

What is adapted is the kernel's :attr:`~ladder_mcmc.ladder.kernel.Ladder.adapt` (what
:func:`~ladder_mcmc.lahmc` and its kin were not given); for a kernel put together by
hand, the step size and the mass matrix, from the values it holds.

* **Step size** ``ε``: a first guess (:func:`~.dual_averaging.initial_step_size`), then
  dual averaging of the fraction of chains taking the first rung towards
  ``target_prob`` (:class:`~.dual_averaging.DualAveraging`), one update per step after
  each sub-block of ``⌈16/chains⌉`` steps (:mod:`ladder_mcmc.engine.warmup`); chains
  that stopped moving are left out of it and of the windows' moments, and moved to
  other chains' states at the windows' ends (:mod:`~.stuck`);
* **Mass matrix**: an unset one first guessed from the initial gradients, then the positions'
  variance (diagonal) or covariance (dense) over slow windows pooled over chains,
  regularised towards ``10⁻³ I`` (:mod:`~.moments`); the windows double in length
  between a fast initial and a fast terminal buffer (:func:`~.windows.stan_windows`);
* **Leapfrog steps per rung** ``M`` and **refresh** ``β``: at the end of each window,
  from the spectrum of the window's covariance in the coordinates of unit mass
  (:mod:`~.trajectory`: a ChEES criterion and MEADS's damping); ``M`` follows the
  averaged ``ε`` between windows so that the trajectory length ``εM`` stays put.

:class:`HMCAdaptation` is these pieces as the engine's
:class:`~ladder_mcmc.engine.warmup.Adaptation`: ``update`` (dual averaging, the window's
moments, the length) and ``kernel`` (the kernel at the current values) are pure and
written with the namespace of their values, so the compiled loop runs them inside its
loop; the window ends and the first step size run on the host (``docs/design.md`` §12).

A map made of a leapfrog family and a law (``state_length_lahmc``) is adapted the same way,
its values set in the family, the law and the refresh together (:mod:`~.parameters`), the
chains' ``α`` redrawn whenever the host changes ``ε`` or the mass; its first mass is 1.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import fori_loop, namespace
from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.hamiltonian.warmup import moments, stuck
from ladder_mcmc.hamiltonian.warmup.checks import check_warmup, warn_unadapted
from ladder_mcmc.hamiltonian.warmup.dual_averaging import (
    DualAveraging,
    DualAveragingState,
    dual_averaging_gain,
    initial_step_size,
)
from ladder_mcmc.hamiltonian.warmup.parameters import (
    ADAPTABLE,
    check_adaptable,
    check_mass_adaptation,
    current_beta,
    length_jitter,
    metric_of,
    n_steps_of,
    restart_chains,
    step_size_of,
    with_hmc_parameters,
)
from ladder_mcmc.hamiltonian.warmup.result import WarmupResult
from ladder_mcmc.hamiltonian.warmup.trajectory import (
    MAX_N_LEAPFROG,
    chees_n_leapfrog,
    meads_beta,
    whitened_eigenvalues,
)
from ladder_mcmc.hamiltonian.warmup.windows import stan_windows
from ladder_mcmc.ladder.kernel import Ladder, LadderState

#: warm-up steps ``sample`` takes by default for a kernel that leaves something to adapt
DEFAULT_WARMUP = 1000
#: a warm-up that adapts the mass, the length or β needs a slow window between its two
#: buffers (Stan's has one from this many steps on), and dual averaging as many steps
MIN_WINDOWED_WARMUP = 20
#: before the first window, the target's largest scale (in the coordinates of the first
#: mass) is taken to be this many first step sizes, at most 1: a first step far below 1
#: says the target is narrow there
INITIAL_SCALE_STEPS = 2.0
#: steps per sub-block (at least) times chains
BLOCK_CHAIN_STEPS = 16
#: the most leapfrog steps per rung during warm-up (not the final ``M``): before the mass
#: fits, a tiny step with the length ``εM`` held would cost tens to thousands of
#: gradients per rung; why 16 and not 32 or 8: `benchmarks/results/bench.md`, 11:07 block
MAX_WARMUP_N_LEAPFROG = 16


@attrs.frozen(eq=False)
class HMCWarmupState:
    """The adaptation's state between sub-blocks (a pytree of float64/int64 scalars and
    arrays: numpy's on the host, JAX's inside the compiled loop).

    Attributes
    ----------
    dual : DualAveragingState
        Dual averaging of ``log ε``.
    moments : Moments
        The current window's positions (a dense sum of squares: the spectrum needs it).
    step_size : float
        The step the kernel runs at (dual averaging's iterate).
    n_leapfrog : int
        The leapfrog steps per rung the kernel runs at.
    time : float
        ``εM`` kept while ``ε`` moves (set at the first refit).
    eigenvalues : array (dim,)
        The last window's whitened spectrum (descending; zeros pad an unknown one).
    spent : int array (chains,)
        Gradients spent at the window ends (an auxiliary law's redraw of ``α``).
    idle : int array (chains,)
        Each chain's steps in a row without a rung (:mod:`~.stuck`).
    relocated : int array (chains,)
        How often each chain was moved to another's state at a window's end.
    """

    dual: DualAveragingState
    moments: moments.Moments
    step_size: Any
    n_leapfrog: Any
    time: Any
    eigenvalues: Any
    spent: Any
    idle: Any
    relocated: Any


@attrs.frozen
class HMCAdaptation:
    """The warm-up of an HMC-family kernel (module docstring), for ``n_warmup`` steps
    of ``n_chains`` chains: the engine's :class:`~ladder_mcmc.engine.warmup.Adaptation`.

    Build it with :meth:`for_kernel`, which checks the settings.
    """

    adapted: tuple[str, ...]
    n_warmup: int
    n_chains: int
    dim: int
    target_prob: float = 0.8
    dense: bool = False
    trajectory_length: float | None = None
    jitter: float = 0.0
    checks: bool = True

    # ---- construction ------------------------------------------------------------------
    @classmethod
    def for_kernel(
        cls, kernel: Ladder, settings: Any, n_chains: int, dim: int, checks: bool = True
    ) -> HMCAdaptation | None:
        """The warm-up ``settings`` (:class:`~ladder_mcmc.engine.warmup.Warmup`) ask for
        on ``kernel``, or ``None`` when it has no steps (then, with ``checks``, a warning
        if the kernel leaves its step, length or ``β`` to adapt).

        Raises
        ------
        ValueError
            A kernel that names what warm-up cannot adapt; a ``trajectory_length`` for a
            kernel whose ``n_leapfrog`` was given, or without warm-up; a warm-up too short
            for what it adapts; a mass the kinetic energy cannot take; ``dense_mass``
            without mass adaptation.
        """
        length = settings.trajectory_length
        steps = settings.steps
        if steps is None:
            steps = DEFAULT_WARMUP if kernel.adapt and _to_adapt(kernel, settings) else 0
        if not steps:
            if length is not None:
                raise ValueError(
                    f"trajectory_length={length!r} sets M = round(T / ε) during warm-up, but "
                    "this run has none (warmup=0, or nothing to adapt): pass warmup > 0, or "
                    "give n_leapfrog to the kernel"
                )
            if checks and kernel.adapt:
                warn_unadapted(kernel)
            return None
        check_adaptable(kernel)
        adapted = _to_adapt(kernel, settings)
        if adapted and steps < MIN_WINDOWED_WARMUP:
            raise ValueError(
                f"warmup={steps} is too short to adapt {', '.join(adapted)}: it needs at "
                f"least {MIN_WINDOWED_WARMUP} steps (a slow window between two buffers, and "
                "dual averaging's first steps; 1000 is the default); pass a longer warmup, "
                "or give these values to the kernel"
            )
        check_mass_adaptation(kernel, steps, settings.adapt_mass, settings.dense_mass)
        if settings.dense_mass and "inverse_mass" not in adapted:
            raise ValueError(
                "dense_mass=True, but this warm-up adapts no mass (the kernel's inverse_mass "
                "was given, or adapt_mass=False): leave inverse_mass unset, or drop dense_mass"
            )
        return cls(
            adapted=tuple(adapted),
            n_warmup=int(steps),
            n_chains=int(n_chains),
            dim=int(dim),
            target_prob=settings.target_prob,
            dense=settings.dense_mass,
            trajectory_length=length,
            jitter=length_jitter(kernel),
            checks=checks,
        )

    def check(self, found: Any) -> None:
        """:func:`check_warmup`."""
        check_warmup(found)

    # ---- the schedule --------------------------------------------------------------------
    @property
    def every(self) -> int:
        """Steps per sub-block: ``⌈16/chains⌉``."""
        return max(1, math.ceil(BLOCK_CHAIN_STEPS / self.n_chains))

    @property
    def windowed(self) -> bool:
        return any(n in self.adapted for n in ("inverse_mass", "n_leapfrog", "beta"))

    @property
    def keeps_draws(self) -> bool:
        return self.windowed

    def segments(self) -> list[tuple[int, bool]]:
        """One segment per slow window (ending it), then the terminal buffer."""
        if not self.windowed:
            return [(self.n_warmup, False)]
        _, _, ends = stan_windows(self.n_warmup)
        out = [(end, True) for end in ends]
        if not ends or ends[-1] < self.n_warmup:
            out.append((self.n_warmup, False))
        return out

    def _collected(self) -> tuple[np.ndarray, np.ndarray]:
        """``(from, to)`` of the steps whose draws each window pools: the sub-blocks that
        start in it (the first window skips the initial buffer's)."""
        if not self.windowed:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        init, _, ends = stan_windows(self.n_warmup)
        lo, hi, start, block = [], [], 0, self.every
        for end in ends:
            skip = -(-max(0, init - start) // block) * block
            lo.append(start + skip)
            hi.append(end)
            start = end
        return np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)

    # ---- the pieces ----------------------------------------------------------------------
    @property
    def _dual(self) -> DualAveraging:
        return DualAveraging(self.target_prob, dual_averaging_gain(self.n_chains))

    def begin(self, kernel: Ladder, ks: LadderState, rng: Any):
        """A first step size (if adapted), the first length and β; an unset mass guessed from
        the initial gradients (the identity for a map with a law: design §12)."""
        grads = np.zeros(self.n_chains, dtype=np.int64)
        unset = getattr(metric_of(kernel), "inverse_mass", 0) is None
        unset = unset and "inverse_mass" in self.adapted
        guess = unset and getattr(kernel.map, "law", None) is None
        if unset:  # explicit now, so that the kernel's structure stays put
            first = moments.initial_inverse_mass(
                getattr(ks.state, "grad", None) if guess else None, self.dim, self.dense
            )
            kernel = with_hmc_parameters(kernel, metric=Metric(first))
        eps = float(step_size_of(kernel))
        if "step_size" in self.adapted:
            eps, calls = initial_step_size(kernel, ks, rng, self.target_prob)
            grads += calls
            kernel = with_hmc_parameters(kernel, step_size=eps)
        ks, calls = restart_chains(kernel, ks, rng, momentum=guess)
        grads += calls
        eigenvalues = np.zeros(self.dim)
        eigenvalues[0] = min(1.0, (INITIAL_SCALE_STEPS * eps) ** 2)
        state = HMCWarmupState(
            dual=self._dual.init(np.float64(eps)),
            moments=moments.init(self.dim, True, np),
            step_size=np.float64(eps),
            n_leapfrog=np.int64(_n_steps(kernel)),
            time=np.float64(np.nan),
            eigenvalues=eigenvalues,
            spent=np.zeros(self.n_chains, dtype=np.int64),
            idle=np.zeros(self.n_chains, dtype=np.int64),
            relocated=np.zeros(self.n_chains, dtype=np.int64),
        )
        kernel, state = self._refit(kernel, state)
        return kernel, ks, state, grads

    def kernel(self, kernel: Ladder, state: HMCWarmupState) -> Ladder:
        """The kernel at the state's step size and length."""
        sets_length = "n_leapfrog" in self.adapted or self.trajectory_length is not None
        return with_hmc_parameters(
            kernel,
            step_size=state.step_size,
            n_steps=state.n_leapfrog if sets_length else None,
        )

    def update(
        self, state: HMCWarmupState, rungs: Any, draws: Any, first: Any, valid: Any
    ) -> HMCWarmupState:
        """Dual averaging, one update per step on the fraction of chains that took the
        first rung (those not idle: :mod:`~.stuck`); the window's moments (one batch);
        then the step (the iterate) and the length (for the averaged step)."""
        xp = namespace(state.step_size, rungs)
        adapt_step = "step_size" in self.adapted
        lo, hi = self._collected()
        dual = self._dual
        pooled = draws is not None and lo.size > 0
        rows = rungs.shape[0]
        row = xp.arange(rows)[:, None]

        def one(j, carry):
            d, idle, weights = carry
            keep = j < valid
            if adapt_step:
                statistic = stuck.first_rung_fraction(rungs[j], idle, xp)
                d = _select(keep, dual.update(d, statistic), d, xp)
            if pooled:
                t = first + j
                inside = xp.any((t >= lo) & (t < hi))
                taken = keep & inside & (idle < stuck.STUCK_STEPS)
                weights = xp.where(row == j, taken[None, :], weights)
            return d, stuck.count_idle(idle, rungs[j], keep, xp), weights

        weights = xp.zeros(rungs.shape, dtype=bool)
        d, idle, weights = fori_loop(0, rows, one, (state.dual, state.idle, weights))
        m = state.moments
        if pooled:  # the sub-block's draws at once (Chan's pairwise update)
            x = xp.asarray(draws, dtype=xp.float64)
            x = xp.reshape(x, (rows * x.shape[1], x.shape[2]))
            m = moments.update(m, x, True, xp.reshape(weights, (-1,)))
        step = DualAveraging.step_size(d) if adapt_step else state.step_size
        final = DualAveraging.final(d) if adapt_step else state.step_size
        n_leapfrog = state.n_leapfrog
        if self.trajectory_length is not None:
            n_leapfrog = self._clip(xp.round(self.trajectory_length / final), xp)
        elif "n_leapfrog" in self.adapted:
            n_leapfrog = self._clip(xp.round(state.time / final), xp)
        return attrs.evolve(
            state, dual=d, moments=m, step_size=step, n_leapfrog=n_leapfrog, idle=idle
        )

    @staticmethod
    def _clip(m: Any, xp: Any, cap: int = MAX_WARMUP_N_LEAPFROG) -> Any:
        return xp.clip(m, 1, cap).astype(xp.int64)

    def window_end(self, kernel: Ladder, ks: LadderState, state: HMCWarmupState, rng: Any):
        """Idle chains moved to others' states (:mod:`~.stuck`); new mass (fresh momenta
        from it), spectrum, step (averaged; dual averaging restarted from it), length and
        β; the next window starts empty."""
        ks, moved = stuck.relocate_idle(ks, state.idle, rng)
        state = attrs.evolve(
            state,
            idle=np.where(moved, 0, np.asarray(state.idle)),
            relocated=np.asarray(state.relocated) + moved,
        )
        window = _numpy(state.moments)
        if "inverse_mass" in self.adapted:
            inverse = moments.regularised(window)
            if not self.dense:
                inverse = np.diag(inverse).copy()
            kernel = with_hmc_parameters(kernel, metric=Metric(inverse))
        eigenvalues = np.asarray(state.eigenvalues)
        if window.count > 1:
            eigenvalues = whitened_eigenvalues(
                moments.covariance(window), metric_of(kernel).inverse_mass
            )
        dual = _numpy(state.dual)
        eps = float(state.step_size)
        if "step_size" in self.adapted:  # from the averaged step, as the iterate is noisy
            eps = float(DualAveraging.final(dual))
            dual = self._dual.init(np.float64(eps), explore=1.0)
        state = attrs.evolve(
            state,
            dual=dual,
            moments=moments.init(self.dim, True, np),
            step_size=np.float64(eps),
            eigenvalues=eigenvalues,
        )
        kernel = with_hmc_parameters(kernel, step_size=eps)
        kernel, state = self._refit(kernel, state)
        ks, calls = restart_chains(kernel, ks, rng, momentum="inverse_mass" in self.adapted)
        state = attrs.evolve(state, spent=np.asarray(state.spent) + calls)
        return kernel, ks, state

    def _refit(self, kernel: Ladder, state: HMCWarmupState, final: bool = False):
        """Length and β for the current ε and spectrum: at the start, at a window's end,
        and (``final``) at the end, where ``M`` may exceed :data:`MAX_WARMUP_N_LEAPFROG` and
        ``β`` leaves 1 for MEADS's value."""
        cap = MAX_N_LEAPFROG if final else MAX_WARMUP_N_LEAPFROG
        eps = float(state.step_size)
        eigenvalues = np.asarray(state.eigenvalues)
        m = None
        time = float(state.time)
        if "n_leapfrog" in self.adapted:
            m = chees_n_leapfrog(eigenvalues, eps, self.jitter, cap)
            time = eps * m
        elif self.trajectory_length is not None:
            m = int(min(max(1, round(self.trajectory_length / eps)), cap))
        beta = None
        if "beta" in self.adapted:  # a full refresh until the end of warm-up
            n = m if m is not None else _n_steps(kernel)
            beta = meads_beta(float(eigenvalues[0]), eps, n) if final else 1.0
        kernel = with_hmc_parameters(kernel, n_steps=m, beta=beta)
        state = attrs.evolve(state, n_leapfrog=np.int64(_n_steps(kernel)), time=np.float64(time))
        return kernel, state

    def final(self, kernel: Ladder, state: HMCWarmupState, record: Any):
        """The averaged step, the final length and β; what warm-up found."""
        state = _numpy(state)
        if "step_size" in self.adapted:
            eps = float(DualAveraging.final(state.dual))
            kernel = with_hmc_parameters(kernel, step_size=eps)
            state = attrs.evolve(state, step_size=np.float64(eps))
        kernel, state = self._refit(kernel, state, final=True)
        kernel = attrs.evolve(kernel, adapt=frozenset())  # nothing left to adapt
        tail = max(1, self.n_warmup // 4)
        first_rung = (record.rungs == 1).mean(axis=1)
        flips = (record.rungs == 0).mean(axis=1)
        result = WarmupResult(
            step_size=float(step_size_of(kernel)),
            inverse_mass=metric_of(kernel).inverse_mass,
            grad_evals=record.grad_evals.sum(axis=0) + record.begin_grads + state.spent,
            n_steps=self.n_warmup,
            first_stage_prob=float(first_rung[-tail:].mean()),
            n_leapfrog=_n_steps(kernel),
            beta=current_beta(kernel),
            largest_eigenvalue=(
                float(np.asarray(state.eigenvalues)[0]) if self.windowed else None
            ),  # no window measured it: its starting guess is not a finding
            adapted=self.adapted,
            length_set="n_leapfrog" in self.adapted or self.trajectory_length is not None,
            wall_time=record.wall_time,
            flip_fraction=float(flips[-tail:].mean()),
            relocated=np.asarray(state.relocated, dtype=np.int64),
        )
        if self.checks:
            check_warmup(result)
        return kernel, result


def _select(keep: Any, new: Any, old: Any, xp: Any) -> Any:
    """``new`` where ``keep`` else ``old``, field by field (scalars of an attrs state)."""
    fields = attrs.fields(type(new))
    return type(new)(
        **{f.name: xp.where(keep, getattr(new, f.name), getattr(old, f.name)) for f in fields}
    )


def _numpy(tree: Any) -> Any:
    """A state's leaves as numpy values (after the compiled loop)."""
    if attrs.has(type(tree)):
        return type(tree)(
            **{f.name: _numpy(getattr(tree, f.name)) for f in attrs.fields(type(tree))}
        )
    return np.asarray(tree)


def _to_adapt(kernel: Ladder, settings: Any) -> list[str]:
    """What a warm-up of ``kernel`` adapts, in :data:`ADAPTABLE`'s order."""
    unknown = sorted(set(kernel.adapt or ()) - set(ADAPTABLE))
    if unknown:
        raise ValueError(
            f"kernel.adapt names {unknown}, which warm-up cannot adapt (it adapts "
            f"{', '.join(ADAPTABLE)})"
        )
    length = settings.trajectory_length
    if length is not None and n_steps_of(kernel) is None:
        raise ValueError(
            f"trajectory_length={length!r}, but the kernel's {type(kernel.map).__name__} has no "
            "fixed number of leapfrog steps (its law draws the length): leave "
            "trajectory_length unset"
        )
    if length is not None and kernel.adapt is not None and "n_leapfrog" not in kernel.adapt:
        raise ValueError(
            f"trajectory_length={length!r}, but the kernel's n_leapfrog was given "
            f"(n_steps={kernel.map.describe().get('n_steps')}) and is kept as given; leave "
            "n_leapfrog unset to have M = round(trajectory_length / step_size)"
        )
    names = set(kernel.adapt) if kernel.adapt is not None else {"step_size", "inverse_mass"}
    if not settings.adapt_mass:
        names.discard("inverse_mass")
    if length is not None:
        names.discard("n_leapfrog")  # M follows ε for the given length instead
    if current_beta(kernel) is None:
        names.discard("beta")
    return [name for name in ADAPTABLE if name in names]


def _n_steps(kernel: Ladder) -> int:
    """The kernel's leapfrog steps per rung; 1 for a map whose law draws them."""
    n = n_steps_of(kernel)
    return 1 if n is None else int(n)


__all__ = [
    "DEFAULT_WARMUP",
    "MIN_WINDOWED_WARMUP",
    "HMCAdaptation",
    "HMCWarmupState",
    "check_warmup",
    "warn_unadapted",
]
