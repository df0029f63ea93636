"""The leapfrog step size in warm-up: a first guess, then dual averaging.

* :func:`initial_step_size` — Stan's and NumPyro's heuristic (Hoffman & Gelman 2014,
  algorithm 4): from the kernel's step, double or halve ``ε`` until the mean
  probability of accepting one leapfrog step from fresh momenta crosses the target.
* :class:`DualAveraging` — Nesterov's dual averaging of ``log ε`` (Hoffman & Gelman
  2014, algorithm 5) on the probability of taking the first rung ``L ζ`` (for the
  look-ahead rule, HMC's acceptance probability ``C_0``).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ladder_mcmc.ladder.kernel import Ladder, LadderState, log_density_of
from ladder_mcmc.ladder.maps import log_det_jacobian_of

#: ``ε`` is searched in ``[MIN_STEP_SIZE, MAX_STEP_SIZE]``
MIN_STEP_SIZE, MAX_STEP_SIZE = 1e-10, 1e10


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

    def restart(self, step_size: float, explore: float = 10.0) -> None:
        """Start again from ``step_size``, shrinking towards ``explore × step_size``.

        Stan's ``explore = 10`` favours larger steps at the start; a restart from a
        step already averaged (at a window's end) uses ``explore = 1``, so that a short
        terminal buffer does not end far above it.
        """
        self.mu = math.log(explore * step_size)
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


def one_step_acceptance(
    kernel: Ladder, ks: LadderState, step_size: float, rng: np.random.Generator
) -> float:
    """Mean over chains of ``min(1, p(L ζ)/p(ζ))`` for one leapfrog step of ``step_size``
    from fresh momenta (a state's auxiliary lengths or step factors set to one step);
    weighted by ``|det ∂Lζ/∂ζ|`` for a map that declares it (docs/design.md §13)."""
    map_ = attrs.evolve(kernel.map, step_size=float(step_size), n_steps=1)
    state = ks.state
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
    return float(np.mean(np.nan_to_num(accept, nan=0.0)))


def initial_step_size(
    kernel: Ladder, ks: LadderState, rng: np.random.Generator, target: float = 0.8
) -> tuple[float, int]:
    """A first ``ε`` and the gradient evaluations per chain it took.

    From ``kernel.map.step_size``, doubled while one step is accepted with mean
    probability above ``target``, or halved while below (at most 100 times; within
    [:data:`MIN_STEP_SIZE`, :data:`MAX_STEP_SIZE`]).
    """
    eps = float(kernel.map.step_size)
    up = one_step_acceptance(kernel, ks, eps, rng) > target
    calls = 1
    for _ in range(100):
        nxt = eps * 2.0 if up else eps / 2.0
        if not MIN_STEP_SIZE <= nxt <= MAX_STEP_SIZE:
            break
        calls += 1
        if (one_step_acceptance(kernel, ks, nxt, rng) > target) != up:
            return (eps if up else nxt), calls
        eps = nxt
    return eps, calls


__all__ = ["DualAveraging", "initial_step_size", "one_step_acceptance"]
