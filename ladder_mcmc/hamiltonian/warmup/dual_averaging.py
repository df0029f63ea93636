"""The leapfrog step size in warm-up: a first guess, then dual averaging.

* :func:`initial_step_size` — Stan's and NumPyro's heuristic (Hoffman & Gelman 2014,
  algorithm 4): from the kernel's step, double or halve ``ε`` until the mean
  probability of accepting one leapfrog step from fresh momenta crosses the target
  (on the host, before the loop).
* :class:`DualAveraging` — Nesterov's dual averaging of ``log ε`` (Hoffman & Gelman
  2014, algorithm 5) on the probability of taking the first rung ``L ζ``: pure
  ``init``, ``update`` and ``final`` on a :class:`DualAveragingState`, written with the
  namespace of its values, so that the compiled loop runs the updates between its
  blocks of steps.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ladder_mcmc.arrays import namespace
from ladder_mcmc.hamiltonian.leapfrog import Leapfrog
from ladder_mcmc.hamiltonian.warmup.parameters import leapfrog_of, step_size_of
from ladder_mcmc.ladder.kernel import Ladder, LadderState, log_density_of
from ladder_mcmc.ladder.maps import log_det_jacobian_of

#: ``ε`` is searched in ``[MIN_STEP_SIZE, MAX_STEP_SIZE]``
MIN_STEP_SIZE, MAX_STEP_SIZE = 1e-10, 1e10


@attrs.frozen(eq=False)
class DualAveragingState:
    """Dual averaging's iterate: ``t`` updates so far, the averaged error ``h̄``, the
    iterate ``log ε``, its weighted average ``log ε̄`` and the shrinkage point ``μ``
    (float64 scalars, numpy's or JAX's)."""

    t: Any
    h_bar: Any
    log_eps: Any
    log_eps_bar: Any
    mu: Any


@attrs.frozen
class DualAveraging:
    """Dual averaging of ``log ε`` towards a mean statistic ``target`` (Hoffman & Gelman
    2014, algorithm 5); ``gamma``, ``t0``, ``kappa`` its gains."""

    target: float = 0.8
    gamma: float = 0.05
    t0: float = 10.0
    kappa: float = 0.75

    def init(self, step_size: Any, explore: float = 10.0) -> DualAveragingState:
        """Start from ``step_size``, shrinking towards ``explore × step_size``.

        Stan's ``explore = 10`` favours larger steps at the start; a restart from a step
        already averaged (at a window's end) uses ``explore = 1``, so that a short
        terminal buffer does not end far above it.
        """
        xp = namespace(step_size)
        eps = xp.asarray(step_size, dtype=xp.float64)
        zero = xp.zeros((), dtype=xp.float64)
        return DualAveragingState(zero, zero, xp.log(eps), xp.log(eps), xp.log(explore * eps))

    def update(self, s: DualAveragingState, statistic: Any) -> DualAveragingState:
        """Feed one mean acceptance statistic."""
        xp = namespace(s.log_eps, statistic)
        t = s.t + 1.0
        eta = 1.0 / (t + self.t0)
        h_bar = (1.0 - eta) * s.h_bar + eta * (self.target - statistic)
        log_eps = s.mu - xp.sqrt(t) / self.gamma * h_bar
        w = t ** (-self.kappa)
        log_eps_bar = w * log_eps + (1.0 - w) * s.log_eps_bar
        return DualAveragingState(t, h_bar, log_eps, log_eps_bar, s.mu)

    @staticmethod
    def step_size(s: DualAveragingState) -> Any:
        """The iterate ``ε``."""
        return namespace(s.log_eps).exp(s.log_eps)

    @staticmethod
    def final(s: DualAveragingState) -> Any:
        """The averaged ``ε̄`` (what warm-up ends with)."""
        return namespace(s.log_eps_bar).exp(s.log_eps_bar)


def one_step_acceptance(
    kernel: Ladder,
    ks: LadderState,
    step_size: float,
    rng: np.random.Generator,
    reduce: Any = np.mean,
) -> float:
    """``reduce`` (the mean) over chains of ``min(1, p(L ζ)/p(ζ))`` for one leapfrog step
    of ``step_size``
    from fresh momenta (a state's auxiliary lengths or step factors set to one step);
    weighted by ``|det ∂Lζ/∂ζ|`` for a map that declares it (docs/design.md §13).

    For a map made of a leapfrog family and a law
    (:func:`~.parameters.leapfrog_of`), one plain
    :class:`~ladder_mcmc.hamiltonian.leapfrog.Leapfrog` step of the family's target and
    metric from the chains' inner states (the law is left out)."""
    leapfrog = leapfrog_of(kernel.map)
    state = ks.state
    if leapfrog is kernel.map:
        map_ = attrs.evolve(kernel.map, step_size=float(step_size), n_steps=1)
    else:
        map_ = Leapfrog(leapfrog.target, float(step_size), 1, leapfrog.metric)
        state = state.inner
    n = state.x.shape[0]
    if hasattr(state, "n_leapfrog"):
        state = attrs.evolve(state, n_leapfrog=np.ones(n, dtype=np.int64))
    if hasattr(state, "step_scale"):
        state = attrs.evolve(state, step_scale=np.ones(n))
    state = attrs.evolve(state, v=map_.metric.sample_momentum(rng, state.v.shape))
    lp0, _ = log_density_of(map_, state)
    lp1, _ = log_density_of(map_, map_.forward(state))
    if not map_.volume_preserving:
        lp1 = lp1 + log_det_jacobian_of(map_, state)
    with np.errstate(all="ignore"):
        accept = np.exp(np.minimum(0.0, lp1 - lp0))
    return float(reduce(np.nan_to_num(accept, nan=0.0)))


def initial_step_size(
    kernel: Ladder, ks: LadderState, rng: np.random.Generator, target: float = 0.8
) -> tuple[float, int]:
    """A first ``ε`` and the gradient evaluations per chain it took.

    From the kernel's step (:func:`~.parameters.step_size_of`), doubled while one step is
    accepted with a probability above ``target``, or halved while below (at most 100
    times; within [:data:`MIN_STEP_SIZE`, :data:`MAX_STEP_SIZE`]). The probability is the
    median over chains, so that a chain started far in the tails, which accepts nothing
    at any step the others can use, does not drag the first step down
    (:mod:`~.stuck`).
    """
    eps = float(step_size_of(kernel))
    up = one_step_acceptance(kernel, ks, eps, rng, np.median) > target
    calls = 1
    for _ in range(100):
        nxt = eps * 2.0 if up else eps / 2.0
        if not MIN_STEP_SIZE <= nxt <= MAX_STEP_SIZE:
            break
        calls += 1
        if (one_step_acceptance(kernel, ks, nxt, rng, np.median) > target) != up:
            return (eps if up else nxt), calls
        eps = nxt
    return eps, calls


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


__all__ = [
    "MAX_STEP_SIZE",
    "MIN_STEP_SIZE",
    "DualAveraging",
    "DualAveragingState",
    "dual_averaging_gain",
    "initial_step_size",
    "one_step_acceptance",
]
