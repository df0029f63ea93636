"""A tiny continuous map with a state-dependent parameter: the plumbing of §14 on floats.

``ζ = (x, v)`` with ``x`` real and a direction of travel ``v ∈ {±1}``; the family
``L_α(x, v) = (x + α v, v)`` with the flip ``F(x, v) = (x, −v)`` (``F L_α F = L_α⁻¹``,
volume preserving); target ``p(x, v) = N(x; 0, 1) / 2``. The step ``α`` is Gamma
distributed with mean ``σ(x) = 2 e^{−|x|}``: long steps at the mode, short ones in the
tails. The law reads ``x`` only, which ``F`` keeps, so it is flip-invariant. A toy,
not a sampler: it lives with the tests (``tests/statistical/test_auxiliary_walk.py``,
``tests/mutation/test_auxiliary_mutants.py``, ``tests/unit/ladder/test_auxiliary.py``);
the user-facing worked example is the free flight with a state-dependent step in
docs/tutorials/custom-map.md. :class:`LogScaleFamily` with :class:`LogStepLaw` is the same
construction on a family that changes volume (docs/design.md §13), on a Gamma target.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ladder_mcmc.ladder import (
    AuxiliaryLaw,
    AuxiliaryMap,
    AuxiliaryRefresh,
    InnerRefresh,
    Ladder,
    LogScaleState,
    LogScaleWalk,
    LookAheadRule,
    MapFamily,
    Refresh,
)
from ladder_mcmc.models import GammaTarget


@attrs.frozen(eq=False)
class WalkState:
    """``x`` (chains,) and the direction of travel ``v`` (chains,), ``±1`` as floats."""

    x: np.ndarray
    v: np.ndarray


class StepWalk(MapFamily):
    """``L_α(x, v) = (x + α v, v)``, ``F(x, v) = (x, −v)``, ``p = N(x; 0, 1) / 2``."""

    def forward(self, state, alpha):
        return WalkState(state.x + alpha * state.v, state.v)

    def flip(self, state, alpha):
        return WalkState(state.x, -state.v)

    def log_density(self, state):
        return -0.5 * state.x**2

    def prepare(self, init, rng):
        if isinstance(init, WalkState):
            return init
        x = np.asarray(init, dtype=float)
        return WalkState(x, np.where(rng.random(x.shape[0]) < 0.5, 1.0, -1.0))

    def draw(self, state):
        return state.x


@attrs.frozen
class ShortTailStepLaw(AuxiliaryLaw):
    """``α ~ Gamma(shape k, mean σ(x))``, ``σ(x) = top · e^{−|x|}``: reads ``x`` only.

    Long steps at the mode, short ones in the tails: the law moves a lot between rungs,
    so a sampler that leaves it out of the density ratio is far off (the mutant).
    """

    top: float = 2.0
    shape: float = 4.0

    def scale(self, state):
        return self.top * np.exp(-np.abs(state.x)) / self.shape

    def log_prob(self, alpha, state):
        theta, k = self.scale(state), self.shape
        with np.errstate(divide="ignore", invalid="ignore"):
            log_q = (k - 1) * np.log(alpha) - alpha / theta - k * np.log(theta) - math.lgamma(k)
        return np.where(alpha > 0, log_q, -np.inf)

    def sample(self, state, rng):
        return self.scale(state) * rng.gamma(self.shape, size=state.x.shape[0])


@attrs.frozen
class TurnRefresh(Refresh):
    """With probability ``prob`` redraw ``v`` uniformly: keeps ``p(x, v)`` (a refresh of ``ζ``)."""

    prob: float = 0.5

    def __call__(self, state, direction, rng):
        n = state.x.shape[0]
        turn = rng.random(n) < self.prob
        fresh = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        return WalkState(state.x, np.where(turn, fresh, state.v)), direction


LAW = ShortTailStepLaw()


def walk_kernel(map_class=AuxiliaryMap, max_rungs: int = 3) -> Ladder:
    """Look-ahead on the walk: turn ``v`` half the time, then redraw ``α`` (last)."""
    return Ladder(
        map_class(StepWalk(), LAW),
        LookAheadRule(max_rungs),
        InnerRefresh(TurnRefresh(0.5)) + AuxiliaryRefresh(LAW),
    )


def draw_exact(n: int, rng: np.random.Generator) -> np.ndarray:
    """Exact positions ``x ~ N(0, 1)`` (``prepare`` draws ``v`` and ``α ~ p(α | x)``)."""
    return rng.standard_normal(n)


# ---- a family that changes volume: the log-scale walk with a step drawn given x
GAMMA = GammaTarget(3.0, 2.0)


class LogScaleFamily(MapFamily):
    """``(x, v) → (x e^{α v}, v)`` on ``x > 0``: the log-scale walk with step ``α``."""

    walk = LogScaleWalk(GAMMA, 1.0)  # its density, flip and prepare

    def forward(self, state, alpha):
        return LogScaleState(state.x * np.exp(alpha[:, None] * state.v), state.v)

    def flip(self, state, alpha):
        return self.walk.flip(state)

    def log_density(self, state):
        return self.walk.log_density(state)

    def log_det_jacobian(self, state, alpha):
        return alpha * state.v.sum(axis=1)

    def prepare(self, init, rng):
        return self.walk.prepare(init, rng)

    def draw(self, state):
        return state.x


@attrs.frozen
class LogStepLaw(AuxiliaryLaw):
    """``α ~ Gamma(4, mean 0.2 (1 + |log x|))``: longer steps far from ``x = 1``."""

    def scale(self, state):
        return 0.05 * (1.0 + np.abs(np.log(state.x[:, 0])))

    def log_prob(self, alpha, state):
        theta = self.scale(state)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_q = 3 * np.log(alpha) - alpha / theta - 4 * np.log(theta)
        return np.where(alpha > 0, log_q, -np.inf)

    def sample(self, state, rng):
        return self.scale(state) * rng.gamma(4.0, size=state.x.shape[0])
