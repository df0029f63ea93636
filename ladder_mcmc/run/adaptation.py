"""Warm-up adaptation for HMC-family ladder kernels, in the manner of Stan.

* **Step size** by dual averaging (Nesterov 2009; Hoffman & Gelman 2014, §3.2)
  of the statistic ``C_0`` — the probability of taking the first rung ``L ζ``
  (HMC's acceptance probability) — towards a target (default 0.8).
* **Mass matrix** from windowed estimates of the positions' variance (diagonal)
  or covariance (dense), pooled over chains, regularised towards ``10⁻³ I`` as
  Stan does, over slow windows that double in length between a fast initial
  and a fast terminal buffer (Stan reference manual, "HMC algorithm parameters").

Warm-up runs the synchronous step (one shared step size moves after every
step); its draws are discarded and its gradient evaluations reported apart.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ladder_mcmc.hamiltonian.metrics import Metric
from ladder_mcmc.hamiltonian.momentum import MomentumRefresh
from ladder_mcmc.ladder.kernel import Ladder, LadderState, log_density_of
from ladder_mcmc.ladder.refresh import ComposedRefresh, Refresh
from ladder_mcmc.run.progress import Progress
from ladder_mcmc.validation import positive_finite, positive_int, probability


@attrs.frozen(eq=False)
class WarmupResult:
    """What warm-up found and what it cost.

    Attributes
    ----------
    step_size : float
        Adapted leapfrog step ``ε``.
    inverse_mass : array or None
        Adapted inverse mass matrix (vector: diagonal; matrix: dense).
    grad_evals : int array (chains,)
        Gradient evaluations spent in warm-up, per chain.
    n_steps : int
        Warm-up steps.
    first_stage_prob : float
        Mean ``C_0`` over the last quarter of warm-up (at the adapted values it
        is close to the target).
    n_leapfrog : int
        Leapfrog steps per rung after warm-up (changed only when warm-up was
        given a ``trajectory_length``).
    """

    step_size: float
    inverse_mass: np.ndarray | None
    grad_evals: np.ndarray
    n_steps: int
    first_stage_prob: float
    n_leapfrog: int


@attrs.frozen(eq=False)
class GroupedWarmup:
    """Warm-up of chains run in groups (``sample(..., executor=..., warmup=W)``).

    Each group adapted its own kernel from its own chains. The attributes are
    :class:`WarmupResult`'s, with one entry per group where groups differ.

    Attributes
    ----------
    groups : tuple of WarmupResult
        Each group's warm-up, in the order of the chains.
    step_size : float array (groups,)
    inverse_mass : array (groups, dim) or (groups, dim, dim), or None
    grad_evals : int array (chains,)
        Gradient evaluations spent in warm-up, per chain (as in :class:`WarmupResult`).
    n_steps : int
        Warm-up steps (the same in every group).
    first_stage_prob : float array (groups,)
    n_leapfrog : int array (groups,)
    group_of_chain : int array (chains,)
        The group of each chain: ``step_size[group_of_chain]`` is each chain's step.
    """

    groups: tuple[WarmupResult, ...]

    @property
    def step_size(self) -> np.ndarray:
        return np.array([g.step_size for g in self.groups], dtype=float)

    @property
    def inverse_mass(self) -> np.ndarray | None:
        masses = [g.inverse_mass for g in self.groups]
        return None if any(m is None for m in masses) else np.stack(masses)

    @property
    def grad_evals(self) -> np.ndarray:
        return np.concatenate([g.grad_evals for g in self.groups])

    @property
    def n_steps(self) -> int:
        return int(self.groups[0].n_steps)

    @property
    def first_stage_prob(self) -> np.ndarray:
        return np.array([g.first_stage_prob for g in self.groups], dtype=float)

    @property
    def n_leapfrog(self) -> np.ndarray:
        return np.array([g.n_leapfrog for g in self.groups], dtype=np.int64)

    @property
    def group_of_chain(self) -> np.ndarray:
        sizes = [len(g.grad_evals) for g in self.groups]
        return np.repeat(np.arange(len(sizes)), sizes)


def with_hmc_parameters(
    kernel: Ladder,
    step_size: float | None = None,
    metric: Metric | None = None,
    n_steps: int | None = None,
) -> Ladder:
    """The same kernel with a new leapfrog step size, metric (map and refresh) or step count.

    A ``metric`` given as a :class:`Metric` is applied to a map whose kinetic
    energy is of another family (e.g. :class:`~ladder_mcmc.hamiltonian.kinetic.PowerKinetic`)
    through that energy's ``with_inverse_mass``, so the family is kept; a
    refresh with a ``kinetic`` field (e.g.
    :class:`~ladder_mcmc.hamiltonian.momentum.NormalizedMomentumRefresh`) follows the map.
    """
    if not (hasattr(kernel.map, "step_size") and hasattr(kernel.map, "metric")):
        raise ValueError(
            "warm-up adaptation needs a leapfrog-like map with step_size and metric; "
            f"got {type(kernel.map).__name__}"
        )
    current = kernel.map.metric
    if metric is not None and not isinstance(current, Metric):
        rescale = getattr(current, "with_inverse_mass", None)
        if rescale is None:
            raise ValueError(
                f"cannot adapt the mass of a {type(current).__name__} kinetic energy "
                "(it has no with_inverse_mass)"
            )
        metric = rescale(metric.inverse_mass)
    changes = {}
    if step_size is not None:
        changes["step_size"] = float(step_size)
    if metric is not None:
        changes["metric"] = metric
    if n_steps is not None:
        changes["n_steps"] = int(n_steps)
    new_map = attrs.evolve(kernel.map, **changes)

    def update(refresh: Refresh | None) -> Refresh | None:
        if metric is None or refresh is None:
            return refresh
        if isinstance(refresh, MomentumRefresh):
            return attrs.evolve(refresh, metric=metric)
        if attrs.has(type(refresh)) and "kinetic" in attrs.fields_dict(type(refresh)):
            return attrs.evolve(refresh, kinetic=metric)
        if isinstance(refresh, ComposedRefresh):
            return ComposedRefresh(tuple(update(p) for p in refresh.parts))
        return refresh

    return attrs.evolve(kernel, map=new_map, refresh=update(kernel.refresh))


@attrs.define
class DualAveraging:
    """Dual averaging of ``log ε`` (Hoffman & Gelman 2014, algorithm 5)."""

    step_size: float
    target: float = 0.8
    gamma: float = 0.05
    t0: float = 10.0
    kappa: float = 0.75
    mu: float = attrs.field(init=False)
    t: int = attrs.field(init=False, default=0)
    h_bar: float = attrs.field(init=False, default=0.0)
    log_eps: float = attrs.field(init=False)
    log_eps_bar: float = attrs.field(init=False, default=0.0)

    def __attrs_post_init__(self) -> None:
        self.restart(self.step_size)

    def restart(self, step_size: float) -> None:
        self.mu = math.log(10 * step_size)
        self.t, self.h_bar = 0, 0.0
        self.log_eps, self.log_eps_bar = math.log(step_size), math.log(step_size)

    def update(self, statistic: float) -> float:
        """Feed one mean acceptance statistic; returns the next step size."""
        self.t += 1
        eta = 1.0 / (self.t + self.t0)
        self.h_bar = (1 - eta) * self.h_bar + eta * (self.target - statistic)
        self.log_eps = self.mu - math.sqrt(self.t) / self.gamma * self.h_bar
        w = self.t ** (-self.kappa)
        self.log_eps_bar = w * self.log_eps + (1 - w) * self.log_eps_bar
        return math.exp(self.log_eps)

    @property
    def final(self) -> float:
        return math.exp(self.log_eps_bar)


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


def check_mass_adaptation(kernel: Ladder, warmup: int, adapt_mass: bool, dense: bool) -> None:
    """Refuse, before any work, a warm-up whose mass matrix the kernel's kinetic energy
    cannot take: ``dense`` for a family with a diagonal inverse mass only (e.g.
    :class:`~ladder_mcmc.hamiltonian.kinetic.PowerKinetic`, :func:`~ladder_mcmc.lifted_lahmc`), or
    any mass for a family that cannot be rescaled.

    Raises
    ------
    ValueError
        Naming ``dense_mass`` (or ``adapt_mass``) and the kinetic energy.
    """
    metric = getattr(kernel.map, "metric", None)
    if not warmup or not adapt_mass or metric is None or isinstance(metric, Metric):
        return  # nothing adapted, or the Gaussian metric (any mass); the map is checked later
    name = type(metric).__name__
    rescale = getattr(metric, "with_inverse_mass", None)
    if rescale is None:
        raise ValueError(
            f"adapt_mass=True: the {name} kinetic energy cannot take an adapted mass "
            "(it has no with_inverse_mass); pass adapt_mass=False"
        )
    if dense:
        dim = getattr(metric, "dim", None) or 1
        try:
            rescale(np.eye(int(dim)))
        except ValueError:
            raise ValueError(
                f"dense_mass=True: the {name} kinetic energy takes only a diagonal inverse "
                "mass; pass dense_mass=False (or adapt_mass=False)"
            ) from None


def _redraw_momentum(kernel: Ladder, ks: LadderState, rng: np.random.Generator) -> LadderState:
    """Fresh momenta from the (new) metric; warm-up need not keep the old ones."""
    state = ks.state
    v = kernel.map.metric.sample_momentum(rng, state.v.shape)
    state = attrs.evolve(state, v=v)
    lp, _ = log_density_of(kernel.map, state)
    return attrs.evolve(ks, state=state, log_density=lp)


def warmup(
    kernel: Ladder,
    ks: LadderState,
    n_warmup: int,
    rng: np.random.Generator,
    *,
    target_prob: float = 0.8,
    adapt_mass: bool = True,
    dense: bool = False,
    trajectory_length: float | None = None,
    progress: bool = False,
) -> tuple[Ladder, LadderState, WarmupResult]:
    """Adapt the step size (and mass matrix) of an HMC-family kernel.

    Parameters
    ----------
    kernel : Ladder
        A kernel whose map has ``step_size`` and ``metric`` (e.g. ``lahmc``).
    ks : LadderState
        Starting kernel state.
    n_warmup : int
        Warm-up steps (Stan's default schedule for ``n_warmup ≥ 150``).
    rng : numpy.random.Generator
        Random stream.
    target_prob : float in (0, 1)
        Target mean probability of taking the first rung.
    adapt_mass : bool
        Estimate the inverse mass matrix from slow windows.
    dense : bool
        Dense instead of diagonal inverse mass matrix.
    trajectory_length : float, optional
        If given, ``T``: the number of leapfrog steps per rung is set to
        ``max(1, round(T / ε))`` at the end of every slow window and of warm-up,
        so that one rung integrates for about ``T`` time units in the adapted
        metric. ``π/2`` (a quarter period of a unit-variance Gaussian, which the
        adapted metric approximates) decorrelates both ``x`` and ``x²`` and
        avoids the half-period trap ``ε M ≈ π`` where ``x → −x`` and ``x²``
        never moves (``benchmarks/results/against_nuts.md``). By default ``M`` is kept.
    progress : bool
        Progress bar on stderr.

    Returns
    -------
    kernel, ks, WarmupResult
        The adapted kernel, its state after warm-up, and the warm-up record.
    """
    n_warmup = positive_int("warmup", n_warmup)
    probability("target_prob", target_prob)
    if not 0 < target_prob < 1:
        raise ValueError(f"target_prob must be in (0, 1), got {target_prob!r}")
    kernel = with_hmc_parameters(kernel)  # validates the map
    check_mass_adaptation(kernel, n_warmup, adapt_mass, dense)
    if trajectory_length is not None:
        trajectory_length = positive_finite("trajectory_length", trajectory_length)

    def fit_length(kernel: Ladder) -> Ladder:
        if trajectory_length is None:
            return kernel
        m = max(1, round(trajectory_length / float(kernel.map.step_size)))
        return with_hmc_parameters(kernel, n_steps=m)

    init, _term, ends = stan_windows(n_warmup) if adapt_mass else (n_warmup, 0, [])
    da = DualAveraging(float(kernel.map.step_size), target=target_prob)
    grad_evals = np.zeros(len(ks.direction), dtype=np.int64)
    window: list[np.ndarray] = []
    stats: list[float] = []
    bar = Progress(n_warmup, label="warm-up", enabled=progress)
    try:
        for t in range(n_warmup):
            ks, info = kernel.step(ks, rng)
            grad_evals += info.n_moves * kernel.map.cost
            stat = float(np.mean(info.first_stage_prob))
            stats.append(stat)
            kernel = with_hmc_parameters(kernel, step_size=da.update(stat))
            if ends and init <= t < ends[-1]:
                window.append(np.array(ks.state.x, copy=True))
            if ends and t + 1 == ends[0]:
                ends.pop(0)
                draws = np.concatenate(window)
                window = []
                metric = Metric(regularised_covariance(draws, dense))
                kernel = with_hmc_parameters(kernel, metric=metric)
                ks = _redraw_momentum(kernel, ks, rng)
                da.restart(float(kernel.map.step_size))
                kernel = fit_length(kernel)
            bar.update(t + 1)
    finally:
        bar.close()
    kernel = fit_length(with_hmc_parameters(kernel, step_size=da.final))
    tail = stats[-max(1, n_warmup // 4) :]
    result = WarmupResult(
        step_size=float(kernel.map.step_size),
        inverse_mass=kernel.map.metric.inverse_mass,
        grad_evals=grad_evals,
        n_steps=n_warmup,
        first_stage_prob=float(np.mean(tail)),
        n_leapfrog=int(kernel.map.n_steps),
    )
    return kernel, ks, result
